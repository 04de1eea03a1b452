"""PyTorch's GroupNorm+SiLU composition on one thread (native_group_norm, then silu): the
baseline of bench/group_norm_silu.ts. Prints min and median ms per call for the same shapes.

    MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
      python3 bench/torch_group_norm_silu.py
"""
import time

import torch

torch.set_num_threads(1)
SHAPES = [(2, 320, 64, 64), (2, 640, 32, 32), (1, 128, 256, 256)]
REPS = 30


def timed(fn):
    for _ in range(3):
        fn()
    t = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    t.sort()
    return t[0], t[REPS // 2]


for shape in SHAPES:
    torch.manual_seed(1)
    x = torch.rand(shape)
    gamma, beta = torch.rand(shape[1]), torch.rand(shape[1])
    n, c = shape[0], shape[1]
    hxw = shape[2] * shape[3]

    def composite():
        y, _, _ = torch.native_group_norm(x, gamma, beta, n, c, hxw, 32, 1e-5)
        return torch.nn.functional.silu(y)

    mn, md = timed(composite)
    print(f"{'x'.join(map(str, shape))} native_group_norm+silu min {mn:.2f} ms median {md:.2f} ms")
