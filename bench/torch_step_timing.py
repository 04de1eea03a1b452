"""The command line and timing loop of the PyTorch training-step scripts of ``deno task bench:step``
(bench/training_step.ts): bench/torch_step.py and bench/torch_step_fused.py, which each give their
own step.

Command line: ``--dtype`` (float32, bfloat16 or float16; default float32), ``--threads`` (2),
``--warmup`` (5), ``--steps`` (40). ``torch.set_num_threads(--threads)`` first, then the model is
built in the dtype, ``--warmup`` steps run, and ``--steps`` steps are timed one by one with
``perf_counter_ns``. Prints one JSON object, which training_step.ts parses:
``{"dtype", "median_ms", "mean_ms", "steps", "torch", "threads"}``.
"""

import argparse
import json
import statistics
import time

import torch


def run(description, model, step):
    """Parses the command line, builds ``parts = model(dtype)``, times ``step(*parts)`` and
    prints the JSON line; ``description`` is ``--help``'s first line."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=40)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    parts = model(getattr(torch, a.dtype))
    for _ in range(a.warmup):
        step(*parts)
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter_ns()
        step(*parts)
        times.append((time.perf_counter_ns() - t0) / 1e6)
    print(json.dumps({"dtype": a.dtype, "median_ms": statistics.median(times),
                      "mean_ms": statistics.fmean(times), "steps": a.steps,
                      "torch": torch.__version__, "threads": a.threads}))
