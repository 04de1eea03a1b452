#!/usr/bin/env python3
"""PyTorch CPU baseline for the @aclnn/norm CPU backend (the bar set by issue 9).

What it measures
----------------
Wall-clock time of PyTorch's own CPU kernels for the operators this package implements, called
directly through the ATen dispatcher (``torch.ops.aten.*``, no ``nn.Module``, no autograd
graph: none of the tensors requires grad), so the number is the kernel plus dispatcher cost
only:

* ``batchNormReduceBackward`` -> ``aten.native_batch_norm_backward(..., train=True,
  output_mask=[False, True, True])``: only the per-channel reductions (grad_weight,
  grad_bias), the closest PyTorch analog of ``batch_norm_backward_reduce``.
* ``batchNormBackward`` -> the same call with ``output_mask=[True, True, True]``.
* ``groupNormBackward`` -> ``aten.native_group_norm_backward(grad_out, input, mean, rstd,
  weight, N, C, HxW, group, [True, True, True])``.
* ``batchNorm`` -> ``aten.native_batch_norm(input, weight, bias, running_mean, running_var,
  training=True, momentum=0.1, eps=1e-5)``.
* ``groupNorm`` -> ``aten.native_group_norm(input, weight, bias, N, C, HxW, group, 1e-5)``.
* ``groupNormSilu`` -> ``F.silu`` of that output: the composition the fused operator replaces.

``group`` is 32, or 4 when C == 16. save_mean/save_invstd (batch norm) and mean/rstd (group
norm) come from one forward call made before timing. Shapes [4,16,8,8], [8,64,32,32] and
[32,64,56,56]; dtypes float32, bfloat16, float16; data tensors (input, grad_out) either
contiguous (NCHW) or ``torch.channels_last``. Data is standard normal from a fixed seed.

Per-channel tensors (weight, bias, running stats, saved statistics) are given the data's dtype
when PyTorch's CPU kernel accepts that, else float32 (PyTorch's mixed-precision form); the
choice is recorded as ``stats_dtype``. ``--stats float32`` prefers float32 instead. A
combination PyTorch rejects (e.g. float16 on CPU in older releases) is recorded with an
``error`` field instead of timings.

Timing: warm-up calls for at least 3 calls and 0.05 s, then calls timed one by one with
``time.perf_counter_ns`` until at least ``--min-time`` seconds (0.3) *and* ``--min-runs`` (15)
calls, capped at ``--max-runs`` (1000). Median and minimum are reported in milliseconds. ``torch.set_num_threads(--threads)``
(default 2) is applied first, so compare against the Deno CPU backend at the same thread
count.

Why: issue 9 asks that the package's CPU backend be competitive with PyTorch's CPU kernels on
the same machine; this script produces that reference number per op/dtype/shape/layout.

How to run (Debian's ``python3-torch``; only stdlib + torch are used)::

    /usr/bin/python3 bench/torch_baseline.py --json          # JSON list on stdout
    /usr/bin/python3 bench/torch_baseline.py                 # readable table
    /usr/bin/python3 bench/torch_baseline.py --quick --ops batchNormBackward --dtypes float32
    /usr/bin/python3 bench/torch_baseline.py --shapes 1x64x128x128 --ops groupNorm

JSON rows: ``{"op", "dtype", "shape", "layout", "median_ms", "min_ms", "runs",
"stats_dtype", "torch", "threads"}``, or ``"error"`` in place of the timings.
"""

import argparse
import json
import statistics
import sys
import time

import torch

aten = torch.ops.aten

OPS = ["batchNormReduceBackward", "batchNormBackward", "groupNormBackward", "batchNorm", "groupNorm",
       "groupNormSilu"]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
SHAPES = [[4, 16, 8, 8], [8, 64, 32, 32], [32, 64, 56, 56]]
QUICK_SHAPES = SHAPES[:2]
LAYOUTS = ["contiguous", "channels_last"]
EPS = 1e-5
MOMENTUM = 0.1
SEED = 1234
WARMUP = 3
WARMUP_S = 0.05


def groups_for(c):
    return 4 if c == 16 else 32


def short_error(e):
    lines = str(e).strip().splitlines()
    return (lines[0] if lines else type(e).__name__)[:200]


def make_data(shape, dtype, layout):
    """input and grad_out: standard normal (generated in float32 from a fixed seed, then cast)."""
    g = torch.Generator().manual_seed(SEED)
    x = torch.randn(shape, generator=g).to(dtype)
    dy = torch.randn(shape, generator=g).to(dtype)
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
        dy = dy.contiguous(memory_format=torch.channels_last)
    return x, dy


def make_channel_params(c, sdt):
    g = torch.Generator().manual_seed(SEED + 1)
    weight = (torch.randn(c, generator=g) * 0.5 + 1.0).to(sdt)
    bias = torch.randn(c, generator=g).to(sdt)
    return weight, bias


def batch_norm_stats(x, sdt):
    """save_mean/save_invstd from a forward native_batch_norm; if PyTorch rejects the forward
    for this dtype, compute them in float32 so the backward's own support is still probed."""
    c = x.shape[1]
    weight, bias = make_channel_params(c, sdt)
    try:
        _, save_mean, save_invstd = aten.native_batch_norm(
            x, weight, bias, torch.zeros(c, dtype=sdt), torch.ones(c, dtype=sdt), True, MOMENTUM, EPS
        )
    except RuntimeError:
        xf = x.float()
        save_mean = xf.mean(dim=(0, 2, 3))
        save_invstd = torch.rsqrt(xf.var(dim=(0, 2, 3), unbiased=False) + EPS)
        save_mean, save_invstd = save_mean.to(sdt), save_invstd.to(sdt)
    return weight, bias, save_mean, save_invstd


def group_norm_stats(x, sdt, group):
    n, c = x.shape[0], x.shape[1]
    hxw = x.numel() // (n * c)
    weight, bias = make_channel_params(c, sdt)
    try:
        _, mean, rstd = aten.native_group_norm(x, weight, bias, n, c, hxw, group, EPS)
    except RuntimeError:
        xf = x.float().reshape(n, group, -1)
        mean = xf.mean(dim=2)
        rstd = torch.rsqrt(xf.var(dim=2, unbiased=False) + EPS)
        mean, rstd = mean.to(sdt), rstd.to(sdt)
    return weight, bias, mean, rstd


def build_call(op, x, dy, sdt):
    """Return a zero-argument closure running `op` once (setup done here, outside the timing)."""
    n, c = x.shape[0], x.shape[1]
    hxw = x.numel() // (n * c)
    group = groups_for(c)
    if op in ("batchNormReduceBackward", "batchNormBackward"):
        weight, _, save_mean, save_invstd = batch_norm_stats(x, sdt)
        mask = [False, True, True] if op == "batchNormReduceBackward" else [True, True, True]
        return lambda: aten.native_batch_norm_backward(
            dy, x, weight, None, None, save_mean, save_invstd, True, EPS, mask
        )
    if op == "groupNormBackward":
        weight, _, mean, rstd = group_norm_stats(x, sdt, group)
        return lambda: aten.native_group_norm_backward(
            dy, x, mean, rstd, weight, n, c, hxw, group, [True, True, True]
        )
    if op == "batchNorm":
        weight, bias = make_channel_params(c, sdt)
        running_mean = torch.zeros(c, dtype=sdt)
        running_var = torch.ones(c, dtype=sdt)
        return lambda: aten.native_batch_norm(
            x, weight, bias, running_mean, running_var, True, MOMENTUM, EPS
        )
    if op == "groupNorm":
        weight, bias = make_channel_params(c, sdt)
        return lambda: aten.native_group_norm(x, weight, bias, n, c, hxw, group, EPS)
    if op == "groupNormSilu":
        weight, bias = make_channel_params(c, sdt)
        return lambda: torch.nn.functional.silu(
            aten.native_group_norm(x, weight, bias, n, c, hxw, group, EPS)[0])
    raise ValueError(op)


def stats_candidates(dtype, prefer):
    if dtype == torch.float32:
        return [torch.float32]
    if prefer == "float32":
        return [torch.float32, dtype]
    return [dtype, torch.float32]


def dtype_name(dt):
    return str(dt).replace("torch.", "")


def time_call(fn, min_time_s, min_runs, max_runs):
    # Warm up for WARMUP calls and WARMUP_S seconds, as bench/cpu_compare.ts does for the
    # Deno side (whose JIT needs more than 3 calls): both sides are timed in steady state.
    start = time.perf_counter()
    warmed = 0
    while warmed < WARMUP or time.perf_counter() - start < WARMUP_S:
        fn()
        warmed += 1
    samples = []
    total = 0
    budget = int(min_time_s * 1e9)
    while len(samples) < max_runs and (len(samples) < min_runs or total < budget):
        t0 = time.perf_counter_ns()
        fn()
        dt = time.perf_counter_ns() - t0
        samples.append(dt)
        total += dt
    return statistics.median(samples) / 1e6, min(samples) / 1e6, len(samples)


def run_case(op, dtype, shape, layout, args):
    row = {"op": op, "dtype": dtype_name(dtype), "shape": list(shape), "layout": layout}
    x, dy = make_data(shape, dtype, layout)
    errors = []
    for sdt in stats_candidates(dtype, args.stats):
        try:
            fn = build_call(op, x, dy, sdt)
            fn()  # probe: does PyTorch accept this dtype combination at all?
        except RuntimeError as e:
            errors.append((sdt, short_error(e)))
            continue
        median_ms, min_ms, runs = time_call(fn, args.min_time, args.min_runs, args.max_runs)
        row.update(median_ms=round(median_ms, 4), min_ms=round(min_ms, 4), runs=runs,
                   stats_dtype=dtype_name(sdt))
        break
    else:
        # Report the error for the data-dtype stats (the first candidate) -- both failed.
        sdt, msg = errors[0]
        if len(errors) > 1 and errors[1][1] != msg:
            msg = f"{msg} | stats {dtype_name(errors[1][0])}: {errors[1][1]}"
        row.update(error=f"unsupported: {msg}", stats_dtype=dtype_name(sdt))
    row.update(torch=torch.__version__, threads=torch.get_num_threads())
    return row


def parse_list(value, allowed, what):
    items = [s.strip() for s in value.split(",") if s.strip()]
    bad = [s for s in items if s not in allowed]
    if bad:
        sys.exit(f"unknown {what}: {', '.join(bad)} (choose from {', '.join(allowed)})")
    return items


def print_table(rows, elapsed_s):
    cap = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    print(f"PyTorch {torch.__version__} CPU baseline, threads={torch.get_num_threads()}"
          + (f", capability={cap()}" if cap else ""))
    header = f"{'op':<24} {'dtype':<9} {'shape':<16} {'layout':<13} {'stats':<9} " \
             f"{'median ms':>10} {'min ms':>10} {'runs':>5}"
    print(header)
    print("-" * len(header))
    for r in rows:
        shape = "x".join(str(d) for d in r["shape"])
        lead = f"{r['op']:<24} {r['dtype']:<9} {shape:<16} {r['layout']:<13} {r['stats_dtype']:<9} "
        if "error" in r:
            print(lead + r["error"])
        else:
            print(lead + f"{r['median_ms']:>10.4f} {r['min_ms']:>10.4f} {r['runs']:>5}")
    print(f"\n{len(rows)} cases in {elapsed_s:.1f} s")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    p.add_argument("--json", action="store_true", help="print only a JSON list on stdout")
    p.add_argument("--quick", action="store_true", help="only the two smaller shapes")
    p.add_argument("--shapes", help="comma-separated NxCxHxW shapes in place of the three default ones")
    p.add_argument("--ops", default=",".join(OPS), help="comma-separated subset of: " + ",".join(OPS))
    p.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated subset of: " + ",".join(DTYPES))
    p.add_argument("--layouts", default=",".join(LAYOUTS), help="comma-separated subset of: " + ",".join(LAYOUTS))
    p.add_argument("--stats", choices=["auto", "float32"], default="auto",
                   help="per-channel dtype for bf16/f16 data: 'auto' = data dtype if accepted, else "
                        "float32; 'float32' = float32 if accepted, else data dtype")
    p.add_argument("--min-time", type=float, default=0.3, help="seconds of timed calls per case (0.3)")
    p.add_argument("--min-runs", type=int, default=15, help="minimum timed calls per case (15)")
    p.add_argument("--max-runs", type=int, default=1000, help="maximum timed calls per case (1000)")
    args = p.parse_args()

    ops = parse_list(args.ops, OPS, "op")
    dtypes = parse_list(args.dtypes, list(DTYPES), "dtype")
    layouts = parse_list(args.layouts, LAYOUTS, "layout")
    shapes = QUICK_SHAPES if args.quick else SHAPES
    if args.shapes:
        shapes = [[int(d) for d in shape.split("x")] for shape in args.shapes.split(",")]

    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    rows = []
    for shape in shapes:
        for dname in dtypes:
            for layout in layouts:
                for op in ops:
                    rows.append(run_case(op, DTYPES[dname], shape, layout, args))
    elapsed = time.perf_counter() - start

    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_table(rows, elapsed)


if __name__ == "__main__":
    main()
