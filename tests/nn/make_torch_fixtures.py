#!/usr/bin/env python3
"""Writes tests/nn/fixtures/torch_modules.json: what torch.nn's BatchNorm{1,2,3}d, GroupNorm and
InstanceNorm{1,2,3}d compute over a few training steps, in eval mode and after a state-dict round trip. The Deno
tests (tests/nn/torch_fixtures.test.ts) replay the same steps with the package's modules and
compare every value; CI has no torch, so the fixture is committed.

Run (Debian's python3-torch; any torch >= 1.8 should give the same values within float32
rounding):

    /usr/bin/python3 tests/nn/make_torch_fixtures.py

Everything is float32 on the CPU. Inputs are multiples of 1/16 (x) and 1/32 (dy) of small
magnitude, so their decimals are exact float32 values and the Deno side reads the very inputs
torch saw. Expected values are written with the shortest decimal that identifies their float32
value. Each array is one string of space-separated decimals (see f32); the file is then laid
out by `deno fmt`.

One training step: y = module(x); y.backward(dy) (the gradient of sum(y * dy)); record y,
x.grad, the parameter gradients, the running statistics and num_batches_tracked; then
torch.optim.SGD(lr) updates weight and bias (p <- p - lr * grad) and the updated parameters are
recorded. Then eval mode: the same forward/backward on new data (no update). Then the state
dict, loaded into a fresh module (load_state_dict, strict) that runs eval on new data, and,
where "trainAfterLoad" is set, one more training step (with SGD).
"""

import json
import os
import subprocess
import sys

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "torch_modules.json")


def f32(values):
    """float32 tensor -> its values as one string of space-separated shortest decimals (each
    identifies its float32). One string per array keeps the JSON compact once `deno fmt` has
    laid it out (it puts every element of a number array on a line of its own)."""
    arr = values.detach().to(torch.float32).reshape(-1).numpy()
    return " ".join(str(np.float32(v)) for v in arr)


class Data:
    """Exact inputs: x = k / 16 + slope * (index along dim 1) - 1, dy = k / 32, from a seeded
    generator (make_torch_row_fixtures.py uses slope 0.5)."""

    def __init__(self, seed, slope=0.75):
        self.g = torch.Generator().manual_seed(seed)
        self.slope = slope

    def x(self, shape):
        k = torch.randint(-40, 41, shape, generator=self.g).to(torch.float32) / 16
        offsets = torch.arange(shape[1], dtype=torch.float32) * self.slope - 1
        view = [1, shape[1]] + [1] * (len(shape) - 2)
        return k + offsets.reshape(view)

    def dy(self, shape):
        return torch.randint(-32, 33, shape, generator=self.g).to(torch.float32) / 32


def make(spec):
    kind = spec["module"]
    o = spec["options"]
    if kind == "BatchNorm":
        cls = {2: torch.nn.BatchNorm1d, 3: torch.nn.BatchNorm1d, 4: torch.nn.BatchNorm2d,
               5: torch.nn.BatchNorm3d}[len(spec["shape"])]
        return cls(o["numFeatures"], eps=o.get("eps", 1e-5), momentum=o.get("momentum", 0.1),
                   affine=o.get("affine", True),
                   track_running_stats=o.get("trackRunningStats", True))
    if kind == "InstanceNorm":
        cls = {3: torch.nn.InstanceNorm1d, 4: torch.nn.InstanceNorm2d,
               5: torch.nn.InstanceNorm3d}[len(spec["shape"])]
        return cls(o["numFeatures"], eps=o.get("eps", 1e-5), momentum=o.get("momentum", 0.1),
                   affine=o.get("affine", False),
                   track_running_stats=o.get("trackRunningStats", False))
    return torch.nn.GroupNorm(o["numGroups"], o["numChannels"], eps=o.get("eps", 1e-5),
                              affine=o.get("affine", True))


def state(m):
    """The module's state after a step, by the package's property names."""
    s = {}
    if getattr(m, "weight", None) is not None:
        s["weight"] = f32(m.weight)
        s["bias"] = f32(m.bias)
    if getattr(m, "running_mean", None) is not None:
        s["runningMean"] = f32(m.running_mean)
        s["runningVar"] = f32(m.running_var)
        s["numBatchesTracked"] = int(m.num_batches_tracked)
    return s


def step(m, data, shape, optimizer=None):
    x = data.x(shape).requires_grad_(True)
    dy = data.dy(shape)
    y = m(x)
    y.backward(dy)
    rec = {"x": f32(x), "dy": f32(dy), "output": f32(y), "gradInput": f32(x.grad)}
    if getattr(m, "weight", None) is not None:
        rec["gradWeight"] = f32(m.weight.grad)
        rec["gradBias"] = f32(m.bias.grad)
    if optimizer is not None:
        optimizer.step()
    for p in m.parameters():
        p.grad = None
    rec["after"] = state(m)
    return rec


def case(spec):
    torch.manual_seed(0)
    data = Data(spec["seed"])
    shape = spec["shape"]
    m = make(spec)
    params = [p for p in m.parameters()]
    sgd = torch.optim.SGD(params, lr=spec["lr"]) if params else None
    m.train()
    steps = [step(m, data, shape, sgd) for _ in range(spec["steps"])]
    m.eval()
    evaluation = step(m, data, shape)
    sd = m.state_dict()
    state_dict = {k: (int(v) if k == "num_batches_tracked" else f32(v)) for k, v in sd.items()}
    fresh = make(spec)
    fresh.load_state_dict({k: v.clone() for k, v in sd.items()}, strict=True)
    fresh.eval()
    loaded = {"eval": step(fresh, data, shape)}
    if spec.get("trainAfterLoad"):
        fresh.train()
        fresh_params = list(fresh.parameters())
        fresh_sgd = torch.optim.SGD(fresh_params, lr=spec["lr"]) if fresh_params else None
        loaded["train"] = step(fresh, data, shape, fresh_sgd)
    return {**spec, "steps": steps, "eval": evaluation, "stateDict": state_dict,
            "loaded": loaded}


SPECS = [
    {"name": "BatchNorm2d affine momentum 0.1", "module": "BatchNorm", "seed": 1,
     "shape": [4, 3, 3, 3], "options": {"numFeatures": 3}, "lr": 0.5, "steps": 3},
    {"name": "BatchNorm1d momentum None, affine False", "module": "BatchNorm", "seed": 2,
     "shape": [5, 4, 6], "options": {"numFeatures": 4, "momentum": None, "affine": False},
     "lr": 0.5, "steps": 3, "trainAfterLoad": True},
    {"name": "BatchNorm1d on (N, C), eps 1e-3, momentum 0.3", "module": "BatchNorm", "seed": 3,
     "shape": [8, 3], "options": {"numFeatures": 3, "eps": 1e-3, "momentum": 0.3}, "lr": 0.25,
     "steps": 2, "trainAfterLoad": True},
    {"name": "BatchNorm3d track_running_stats False", "module": "BatchNorm", "seed": 4,
     "shape": [2, 2, 2, 3, 3], "options": {"numFeatures": 2, "trackRunningStats": False},
     "lr": 0.5, "steps": 2},
    {"name": "GroupNorm 2 groups of 2 channels", "module": "GroupNorm", "seed": 5,
     "shape": [3, 4, 3, 3], "options": {"numGroups": 2, "numChannels": 4}, "lr": 0.5,
     "steps": 3},
    {"name": "GroupNorm affine False, eps 1e-3", "module": "GroupNorm", "seed": 6,
     "shape": [2, 6, 5], "options": {"numGroups": 3, "numChannels": 6, "affine": False,
                                     "eps": 1e-3},
     "lr": 0.5, "steps": 2},
    {"name": "InstanceNorm2d defaults (no affine, no running stats)", "module": "InstanceNorm",
     "seed": 7, "shape": [3, 4, 3, 3], "options": {"numFeatures": 4}, "lr": 0.5, "steps": 2},
    {"name": "InstanceNorm1d affine, running stats, momentum 0.3, eps 1e-3",
     "module": "InstanceNorm", "seed": 8, "shape": [4, 3, 6],
     "options": {"numFeatures": 3, "affine": True, "trackRunningStats": True, "momentum": 0.3,
                 "eps": 1e-3},
     "lr": 0.25, "steps": 3, "trainAfterLoad": True},
    {"name": "InstanceNorm3d affine, running stats", "module": "InstanceNorm", "seed": 9,
     "shape": [2, 2, 2, 3, 3],
     "options": {"numFeatures": 2, "affine": True, "trackRunningStats": True}, "lr": 0.5,
     "steps": 2},
]


def main():
    torch.set_num_threads(1)
    fixture = {
        "generator": "tests/nn/make_torch_fixtures.py",
        "torch": torch.__version__,
        "cases": [case(s) for s in SPECS],
    }
    with open(OUT, "w") as f:
        f.write(json.dumps(fixture, indent=2) + "\n")
    # The repository's formatter has the last word on the layout (deno task check runs
    # `deno fmt --check`).
    try:
        subprocess.run(["deno", "fmt", "--quiet", OUT], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"run `deno fmt {OUT}` before committing ({e})", file=sys.stderr)
    size = os.path.getsize(OUT)
    print(f"wrote {OUT}: {len(fixture['cases'])} cases, {size} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
