#!/usr/bin/env python3
"""PyTorch CPU side of ``deno task bench:first`` (bench/first_call.ts): the cost of a new shape.

For each case of ``CASES`` (an operator, a shape A and a shape B, as bench/first_call.ts
declares them): ``--calls`` calls on A, then the first call on B (a new shape, such as an epoch's
smaller last batch), ``--calls`` calls on B (its steady state: the median), then the first call
on A again (the shape coming back). Every call allocates its output and refcounting frees it.
Inputs are uniform [0, 1) from a fixed seed; weights ones, biases zeros.
``torch.set_num_threads(--threads)`` first, then one call of each operator on a small shape
(the process's first calls).

Each case runs ``--repeats`` times, B with 0, 1, 2, ... fewer in its first dimension (a new shape
each time). Prints one JSON list, per case, of its repeats'
``{"first_ms", "steady_ms", "return_ms", "steady_a_ms", "cold_ms"}`` (``steady_a_ms``: the median
of the calls on A before B; ``cold_ms``: the median of calls on B each after evicting the caches). Run it with glibc
told to keep freed memory (bench:first sets these itself)::

    MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \\
      /usr/bin/python3 bench/torch_first_call.py --cases '[...]'
"""

import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F


def call(op, x, groups):
    c = x.shape[1] if op != "layerNorm" else x.shape[-1]
    w, b = torch.ones(c), torch.zeros(c)
    if op == "batchNorm":
        return lambda: F.batch_norm(x, None, None, w, b, True)
    if op == "groupNorm":
        return lambda: F.group_norm(x, groups, w, b)
    return lambda: F.layer_norm(x, (c,), w, b)


COLD_CALLS = 9
EVICT = torch.ones(32 * 2**20).numpy()  # 128 MiB: more than any last-level cache here (32 MiB)


def evict_caches():
    """Reads every element of a buffer larger than the caches (the previous call's data leave),
    on this thread alone (numpy), as bench/first_call.ts does: the other threads are idle meanwhile.
    """
    return float(EVICT.sum())


def timed(f):
    t = time.perf_counter_ns()
    y = f()
    del y
    return (time.perf_counter_ns() - t) / 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", required=True, help="JSON list of [op, shapeA, shapeB, groups]")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    cases = json.loads(args.cases)
    for op, a, _b, groups in cases:
        small = [2] * (len(a) - 1) + [a[-1]] if op == "layerNorm" else [2, a[1], 2, 2]
        timed(call(op, torch.rand(small), groups))
    rows = []
    for op, a, b, groups in cases:
        fa = call(op, torch.rand(a), groups)
        runs = []
        for r in range(args.repeats):
            fb = call(op, torch.rand([b[0] - r] + b[1:]), groups)
            steady_a = statistics.median(timed(fa) for _ in range(args.calls))
            first = timed(fb)
            steady = statistics.median(timed(fb) for _ in range(args.calls))
            back = timed(fa)
            cold = []
            for _ in range(COLD_CALLS):
                evict_caches()
                cold.append(timed(fb))
            runs.append({"first_ms": first, "steady_ms": steady, "return_ms": back,
                         "steady_a_ms": steady_a, "cold_ms": statistics.median(cold)})
        rows.append(runs)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
