#!/usr/bin/env python3
"""Writes tests/nn/fixtures/torch_row_norms.json: what torch.nn.LayerNorm and an RMSNorm compute
over a few training steps, in eval mode and after a state-dict round trip. The Deno tests
(tests/nn/row_norm_modules.test.ts) replay the same steps with the package's LayerNorm and
RMSNorm modules and compare every value; CI has no torch, so the fixture is committed.

Run (Debian's python3-torch):

    /usr/bin/python3 tests/nn/make_torch_row_fixtures.py

torch 1.13 has no nn.RMSNorm (added in torch 2.4), so RMSNorm here is composed the way newer
torch defines it (torch.nn.functional.rms_norm): y = x * rsqrt(mean(x^2 over the normalized
dims) + eps) * weight, eps defaulting to torch.finfo(x.dtype).eps, weight initialised to ones,
the gradients by autograd. It is a module with the same parameter name (`weight`), so its state
dict has torch.nn.RMSNorm's keys.

Inputs, steps and the file layout are those of tests/nn/make_torch_fixtures.py (its Data, f32
and step conventions): float32 on the CPU, inputs that are exact float32 values, one training
step = forward, backward of sum(y * dy), SGD update (p <- p - lr * grad).
"""

import json
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_torch_fixtures import Data, f32  # noqa: E402 (the one copy of both)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "torch_row_norms.json")


class RMSNorm(torch.nn.Module):
    """torch.nn.RMSNorm of torch >= 2.4, composed (module doc)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True):
        super().__init__()
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        if elementwise_affine:
            self.weight = torch.nn.Parameter(torch.ones(self.normalized_shape))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        dims = tuple(range(-len(self.normalized_shape), 0))
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
        return y * self.weight if self.weight is not None else y


def make(spec):
    o = spec["options"]
    if spec["module"] == "LayerNorm":
        return torch.nn.LayerNorm(o["normalizedShape"], eps=o.get("eps", 1e-5),
                                  elementwise_affine=o.get("elementwiseAffine", True))
    return RMSNorm(o["normalizedShape"], eps=o.get("eps"),
                   elementwise_affine=o.get("elementwiseAffine", True))


def state(m):
    s = {}
    if getattr(m, "weight", None) is not None:
        s["weight"] = f32(m.weight)
    if getattr(m, "bias", None) is not None:
        s["bias"] = f32(m.bias)
    return s


def step(m, data, shape, optimizer=None):
    x = data.x(shape).requires_grad_(True)
    dy = data.dy(shape)
    y = m(x)
    y.backward(dy)
    rec = {"x": f32(x), "dy": f32(dy), "output": f32(y), "gradInput": f32(x.grad)}
    if getattr(m, "weight", None) is not None:
        rec["gradWeight"] = f32(m.weight.grad)
    if getattr(m, "bias", None) is not None:
        rec["gradBias"] = f32(m.bias.grad)
    if optimizer is not None:
        optimizer.step()
    for p in m.parameters():
        p.grad = None
    rec["after"] = state(m)
    return rec


def case(spec):
    torch.manual_seed(0)
    data = Data(spec["seed"], slope=0.5)
    shape = spec["shape"]
    m = make(spec)
    params = list(m.parameters())
    sgd = torch.optim.SGD(params, lr=spec["lr"]) if params else None
    m.train()
    steps = [step(m, data, shape, sgd) for _ in range(spec["steps"])]
    m.eval()
    evaluation = step(m, data, shape)
    sd = m.state_dict()
    fresh = make(spec)
    fresh.load_state_dict({k: v.clone() for k, v in sd.items()}, strict=True)
    fresh.eval()
    return {**spec, "steps": steps, "eval": evaluation,
            "stateDict": {k: f32(v) for k, v in sd.items()},
            "loaded": {"eval": step(fresh, data, shape)}}


SPECS = [
    {"name": "LayerNorm [6]", "module": "LayerNorm", "seed": 11, "shape": [4, 6],
     "options": {"normalizedShape": [6]}, "lr": 0.5, "steps": 3},
    {"name": "LayerNorm [3, 4], eps 1e-3", "module": "LayerNorm", "seed": 12,
     "shape": [2, 2, 3, 4], "options": {"normalizedShape": [3, 4], "eps": 1e-3}, "lr": 0.25,
     "steps": 2},
    {"name": "LayerNorm [5] without affine", "module": "LayerNorm", "seed": 13, "shape": [3, 5],
     "options": {"normalizedShape": [5], "elementwiseAffine": False}, "lr": 0.5, "steps": 2},
    {"name": "RMSNorm [6], eps = finfo(float32).eps", "module": "RMSNorm", "seed": 14,
     "shape": [4, 6], "options": {"normalizedShape": [6]}, "lr": 0.5, "steps": 3},
    {"name": "RMSNorm [2, 3], eps 1e-5", "module": "RMSNorm", "seed": 15, "shape": [3, 2, 3],
     "options": {"normalizedShape": [2, 3], "eps": 1e-5}, "lr": 0.25, "steps": 2},
    {"name": "RMSNorm [4] without affine", "module": "RMSNorm", "seed": 16, "shape": [2, 3, 4],
     "options": {"normalizedShape": [4], "elementwiseAffine": False}, "lr": 0.5, "steps": 2},
]


def main():
    torch.set_num_threads(1)
    fixture = {
        "generator": "tests/nn/make_torch_row_fixtures.py",
        "torch": torch.__version__,
        "cases": [case(s) for s in SPECS],
    }
    with open(OUT, "w") as f:
        f.write(json.dumps(fixture, indent=2) + "\n")
    try:
        subprocess.run(["deno", "fmt", "--quiet", OUT], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"run `deno fmt {OUT}` before committing ({e})", file=sys.stderr)
    print(f"wrote {OUT}: {len(fixture['cases'])} cases, {os.path.getsize(OUT)} bytes",
          file=sys.stderr)


if __name__ == "__main__":
    main()
