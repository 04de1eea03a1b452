#!/usr/bin/env python3
"""PyTorch CPU side of ``deno task bench:step`` (bench/training_step.ts): the same training step.

The step (bench/step_model.ts is the library's side, layer for layer):

* forward, in order: BatchNorm in training mode on [16,64,32,32], [16,128,16,16] and
  [16,256,8,8] (``aten.native_batch_norm``, running statistics updated), GroupNorm on
  [16,64,32,32] with 32 groups (``aten.native_group_norm``), LayerNorm on [2048,768]
  (``aten.native_layer_norm``) and RMSNorm on [2048,768] as a PyTorch 1.13 user writes it,
  ``x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * gamma`` with autograd recording;
* backward, in reverse: ``torch.autograd.grad`` of the RMSNorm composition, then
  ``native_layer_norm_backward``, ``native_group_norm_backward`` and
  ``native_batch_norm_backward`` (all three outputs each), each fed a fixed upstream gradient.

Weights have the data's dtype (what ``nn.BatchNorm2d(dtype=...)`` holds); every call allocates
its outputs and refcounting frees them, as in user code. Data is standard normal from a fixed
seed.

The command line (``--dtype``, ``--threads``, ``--warmup``, ``--steps``), the timing and the JSON
line printed are bench/torch_step_timing.py's.

Run it with glibc told to keep freed memory, or every large tensor costs fresh page faults
(bench:step sets these itself)::

    MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \\
      /usr/bin/python3 bench/torch_step.py --dtype float32
"""

import torch

import torch_step_timing

aten = torch.ops.aten

BN_SHAPES = [(16, 64, 32, 32), (16, 128, 16, 16), (16, 256, 8, 8)]
GN_SHAPE, GN_GROUPS = (16, 64, 32, 32), 32
ROWS_SHAPE = (2048, 768)


def model(dtype):
    g = torch.Generator().manual_seed(1)

    def randn(*shape):
        return torch.randn(*shape, generator=g).to(dtype)

    bn = [dict(x=randn(*s), dy=randn(*s), w=torch.ones(s[1], dtype=dtype),
               b=torch.zeros(s[1], dtype=dtype), rm=torch.zeros(s[1], dtype=dtype),
               rv=torch.ones(s[1], dtype=dtype)) for s in BN_SHAPES]
    c = GN_SHAPE[1]
    gn = dict(x=randn(*GN_SHAPE), dy=randn(*GN_SHAPE), w=torch.ones(c, dtype=dtype),
              b=torch.zeros(c, dtype=dtype))
    cols = ROWS_SHAPE[1]
    ln = dict(x=randn(*ROWS_SHAPE), dy=randn(*ROWS_SHAPE), w=torch.ones(cols, dtype=dtype),
              b=torch.zeros(cols, dtype=dtype))
    rms = dict(x=randn(*ROWS_SHAPE).requires_grad_(True), dy=randn(*ROWS_SHAPE),
               w=torch.ones(cols, dtype=dtype).requires_grad_(True))
    return bn, gn, ln, rms


def step(bn, gn, ln, rms):
    saved = [aten.native_batch_norm(p["x"], p["w"], p["b"], p["rm"], p["rv"], True, 0.1, 1e-5)
             for p in bn]
    n, c, h, w = GN_SHAPE
    _, gmean, grstd = aten.native_group_norm(gn["x"], gn["w"], gn["b"], n, c, h * w, GN_GROUPS,
                                             1e-5)
    cols = ROWS_SHAPE[1]
    _, lmean, lrstd = aten.native_layer_norm(ln["x"], [cols], ln["w"], ln["b"], 1e-5)
    x = rms["x"]
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * rms["w"]

    torch.autograd.grad(y, [x, rms["w"]], rms["dy"])
    aten.native_layer_norm_backward(ln["dy"], ln["x"], [cols], lmean, lrstd, ln["w"], ln["b"],
                                    [True, True, True])
    aten.native_group_norm_backward(gn["dy"], gn["x"], gmean, grstd, gn["w"], n, c, h * w,
                                    GN_GROUPS, [True, True, True])
    for p, (_, mean, invstd) in reversed(list(zip(bn, saved))):
        aten.native_batch_norm_backward(p["dy"], p["x"], p["w"], p["rm"], p["rv"], mean, invstd,
                                        True, 1e-5, [True, True, True])


if __name__ == "__main__":
    torch_step_timing.run(__doc__.split("\n")[0], model, step)
