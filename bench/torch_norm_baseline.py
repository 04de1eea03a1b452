#!/usr/bin/env python3
"""PyTorch CPU baseline for the LayerNorm / RMSNorm operators of @aclnn/norm (issue 31).

What it times, per dtype (float32, bfloat16) and shape ([rows, cols], normalized over cols):

* ``layerNorm`` -> ``aten.native_layer_norm(x, [cols], weight, bias, 1e-5)``;
* ``layerNormBackward`` -> ``aten.native_layer_norm_backward(dy, x, [cols], mean, rstd, weight,
  bias, [True, True, True])``, mean/rstd from one forward made before timing;
* ``rmsNorm`` -> the composition a PyTorch 1.13 user writes (1.13 has no nn.RMSNorm):
  ``x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * gamma``, under ``torch.no_grad()``;
* ``rmsNormGrad`` -> autograd's backward of that composition:
  ``torch.autograd.grad(y, [x, gamma], dy, retain_graph=True)`` on a graph built once;
* the fused operators as the compositions they replace (x and dy as the two summands):
  ``addLayerNorm`` -> ``s = x + dy`` then ``native_layer_norm(s, ...)`` (s is an output too);
  ``deepNorm`` -> ``0.3 * x + dy`` then ``native_layer_norm``; ``addRmsNorm`` -> ``s = x + dy``
  then the RMSNorm composition; ``gemmaRmsNorm`` -> the RMSNorm composition with ``1 + gamma``;
  ``adaLayerNorm`` -> ``native_layer_norm(x, ...)[0] * (1 + scale) + shift``, scale and shift
  [1, cols] (no_grad throughout).

weight, bias and gamma have the data's dtype (what nn.LayerNorm(dtype=...) holds). Data is
standard normal from a fixed seed. Every call allocates its outputs, as the aten functions do.

Timing: warm-up (3 calls and 0.05 s), then calls timed one by one with ``time.perf_counter_ns``
until at least ``--min-time`` seconds and 15 calls (at most 1000); the median in ms.
``torch.set_num_threads(--threads)`` (default 2) first. bench/norm_compare.ts runs it and compares.

Run: ``/usr/bin/python3 bench/torch_norm_baseline.py [--json] [--threads 2] [--min-time 0.3]``

JSON rows: ``{"op", "dtype", "shape", "median_ms", "runs", "torch", "threads"}``.
"""

import argparse
import json
import statistics
import time

import torch

aten = torch.ops.aten

OPS = ["layerNorm", "layerNormBackward", "rmsNorm", "rmsNormGrad", "addLayerNorm", "deepNorm",
       "addRmsNorm", "gemmaRmsNorm", "adaLayerNorm"]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
SHAPES = [[64, 1024], [2048, 1024], [8192, 768]]


def timed(fn, min_time):
    start = time.perf_counter()
    calls = 0
    while calls < 3 or time.perf_counter() - start < 0.05:
        fn()
        calls += 1
    times = []
    total = 0.0
    while len(times) < 1000 and (len(times) < 15 or total < min_time):
        t0 = time.perf_counter_ns()
        fn()
        dt = (time.perf_counter_ns() - t0) / 1e6
        times.append(dt)
        total += dt / 1000
    return statistics.median(times), len(times)


FUSED = ["addLayerNorm", "deepNorm", "addRmsNorm", "gemmaRmsNorm", "adaLayerNorm"]


def rms(x, g):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * g


def fused(op, x, dy, w, b, cols):
    """The PyTorch composition a fused operator replaces, under no_grad."""
    scale = w.view(1, cols)
    shift = b.view(1, cols)

    def run():
        with torch.no_grad():
            if op == "addLayerNorm":
                s = x + dy
                return aten.native_layer_norm(s, [cols], w, b, 1e-5), s
            if op == "deepNorm":
                return aten.native_layer_norm(0.3 * x + dy, [cols], w, b, 1e-5)
            if op == "addRmsNorm":
                s = x + dy
                return rms(s, w), s
            if op == "gemmaRmsNorm":
                return rms(x, 1 + w)
            return aten.native_layer_norm(x, [cols], w, b, 1e-5)[0] * (1 + scale) + shift
    return run


def case(op, dtype, shape):
    g = torch.Generator().manual_seed(1234)
    rows, cols = shape
    x = torch.randn(rows, cols, generator=g).to(dtype)
    dy = torch.randn(rows, cols, generator=g).to(dtype)
    w = torch.randn(cols, generator=g).to(dtype)
    b = torch.randn(cols, generator=g).to(dtype)
    if op == "layerNorm":
        return lambda: aten.native_layer_norm(x, [cols], w, b, 1e-5)
    if op == "layerNormBackward":
        _, mean, rstd = aten.native_layer_norm(x, [cols], w, b, 1e-5)
        return lambda: aten.native_layer_norm_backward(dy, x, [cols], mean, rstd, w, b,
                                                       [True, True, True])
    if op == "rmsNorm":
        def rms():
            with torch.no_grad():
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
        return rms
    if op in FUSED:
        return fused(op, x, dy, w, b, cols)
    xr = x.clone().requires_grad_(True)
    gr = w.clone().requires_grad_(True)
    y = xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + 1e-6) * gr
    return lambda: torch.autograd.grad(y, [xr, gr], dy, retain_graph=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--min-time", type=float, default=0.3)
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--dtypes", default=",".join(DTYPES))
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    rows = []
    for op in a.ops.split(","):
        for dtype in a.dtypes.split(","):
            for shape in SHAPES:
                ms, runs = timed(case(op, DTYPES[dtype], shape), a.min_time)
                rows.append({"op": op, "dtype": dtype, "shape": shape, "median_ms": ms,
                             "runs": runs, "torch": torch.__version__, "threads": a.threads})
    if a.json:
        print(json.dumps(rows))
    else:
        for r in rows:
            print(f"{r['op']:<18} {r['dtype']:<9} {str(r['shape']):<12} {r['median_ms']:.4f} ms")


if __name__ == "__main__":
    main()
