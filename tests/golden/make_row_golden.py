"""Writes row_golden_layer.json and row_golden_rms_ada.json: golden cases of the fused row norms, float64 references from PyTorch.

Each case holds the operator, its arguments (tensors as shape, dtype and values, the values
already rounded to the tensor's dtype: float32, float16 or bfloat16; scalars as numbers) and the
expected outputs as float64, computed with torch in float64 from the formula of the operator's
section of the issue-39 reference notes (norm_family.md; the library's JSDoc gives the argument
names). The backward operators' references are autograd gradients of the float64 forward
formula, not hand-derived gradients, so they do not depend on the library's oracle
(tests/oracle/). Inputs are seeded: the file is reproducible.

Run from the repository root:  /usr/bin/python3 tests/golden/make_row_golden.py
"""

import json
import os

import torch

torch.set_default_dtype(torch.float64)
GEN = torch.Generator().manual_seed(39)
TORCH_DTYPE = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
DTYPES = ["float32", "float16", "bfloat16"]
# Two shapes of whole vectors of 4 elements and one with a tail (13 = 3 * 4 + 1).
SHAPES = [[2, 3, 8], [4, 16], [3, 13]]
ADA_SHAPES = [[2, 3, 8], [1, 4, 16], [2, 2, 13]]  # [B, S, H]


def rounded(t, dtype):
    """t rounded to dtype (round to nearest even), back in float64."""
    return t.to(TORCH_DTYPE[dtype]).to(torch.float64)


def rand(shape, dtype, low=-2.0, high=3.0):
    t = torch.rand(shape, generator=GEN, dtype=torch.float64) * (high - low) + low
    return rounded(t, dtype)


def arg(t, dtype):
    return {"shape": list(t.shape), "dtype": dtype, "values": [float(v) for v in t.flatten()]}


def out(t, dtype):
    return {"shape": list(t.shape), "dtype": dtype, "values": [float(v) for v in t.detach().flatten()]}


def row_stats(x, dims, eps):
    """Mean and rstd over the trailing `dims` dims (biased variance), kept as size-1 dims."""
    axes = tuple(range(x.dim() - dims, x.dim()))
    mean = x.mean(dim=axes, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=axes, keepdim=True)
    return mean, 1 / torch.sqrt(var + eps)


def layer_norm(x, gamma, beta, eps):
    mean, rstd = row_stats(x, gamma.dim(), eps)
    return (x - mean) * rstd * gamma + beta, mean, rstd


def rms(x, dims, eps):
    axes = tuple(range(x.dim() - dims, x.dim()))
    return 1 / torch.sqrt((x * x).mean(dim=axes, keepdim=True) + eps)


CASES = []


def case(op, name, dtype, args, scalars, expected):
    CASES.append({"op": op, "name": name, "dtype": dtype, "args": args, "scalars": scalars,
                  "expected": expected})


def add_layer_norm():
    for shape in SHAPES:
        for dt in DTYPES:
            for with_bias in (True, False):
                h = shape[-1:]
                x1, x2 = rand(shape, dt), rand(shape, dt)
                gamma, beta = rand(h, dt, 0.5, 1.5), rand(h, dt, -1, 1)
                args = {"x1": arg(x1, dt), "x2": arg(x2, dt), "gamma": arg(gamma, dt),
                        "beta": arg(beta, dt)}
                x = x1 + x2
                if with_bias:
                    bias = rand(h, dt, -1, 1)
                    args["bias"] = arg(bias, dt)
                    x = x + bias
                eps = 1e-5
                y, mean, rstd = layer_norm(x, gamma, beta, eps)
                exp = {"y": out(y, dt), "mean": out(mean, "float32"), "rstd": out(rstd, "float32")}
                if with_bias:
                    exp["x"] = out(x, dt)  # additionalOutput
                case("addLayerNorm", f"{dt} {shape} {'bias, x' if with_bias else 'no bias'}", dt,
                     args, {"epsilon": eps, "additionalOutput": with_bias}, exp)


def add_layer_norm_grad():
    for shape in SHAPES:
        for dt in DTYPES:
            for with_dsum in (True, False):
                h = shape[-1:]
                x1, x2, dy = rand(shape, dt), rand(shape, dt), rand(shape, dt, -1, 1)
                gamma, beta = rand(h, dt, 0.5, 1.5), torch.zeros(h)
                eps = 1e-5
                mean, rstd = row_stats(x1 + x2, 1, eps)
                mean, rstd = rounded(mean, "float32"), rounded(rstd, "float32")
                leaves = [t.clone().requires_grad_() for t in (x1, x2, gamma, beta)]
                y, _, _ = layer_norm(leaves[0] + leaves[1], leaves[2], leaves[3], eps)
                dx1, dx2, dgamma, dbeta = torch.autograd.grad(y, leaves, dy)
                assert torch.equal(dx1, dx2)
                args = {"dy": arg(dy, dt), "x1": arg(x1, dt), "x2": arg(x2, dt),
                        "rstd": arg(rstd, "float32"), "mean": arg(mean, "float32"),
                        "gamma": arg(gamma, dt)}
                dx = dx1
                if with_dsum:
                    dsum = rand(shape, dt, -1, 1)
                    args["dsum"] = arg(dsum, dt)
                    dx = dx + dsum  # the gradient along the residual branch, added
                case("addLayerNormGrad", f"{dt} {shape} {'dsum' if with_dsum else 'no dsum'}", dt,
                     args, {}, {"dx": out(dx, dt), "dgamma": out(dgamma, "float32"),
                                "dbeta": out(dbeta, "float32")})


ALPHAS = [0.3, 0.87, 1.5]


def deep_norm():
    for shape, alpha in zip(SHAPES, ALPHAS):
        for dt in DTYPES:
            h = shape[-1:]
            x, gx = rand(shape, dt), rand(shape, dt)
            gamma, beta = rand(h, dt, 0.5, 1.5), rand(h, dt, -1, 1)
            eps = 1e-6
            y, mean, rstd = layer_norm(alpha * x + gx, gamma, beta, eps)
            case("deepNorm", f"{dt} {shape} alpha {alpha}", dt,
                 {"x": arg(x, dt), "gx": arg(gx, dt), "beta": arg(beta, dt),
                  "gamma": arg(gamma, dt)},
                 {"alpha": alpha, "epsilon": eps},
                 {"mean": out(mean, "float32"), "rstd": out(rstd, "float32"), "y": out(y, dt)})


def deep_norm_grad():
    for shape, alpha in zip(SHAPES, ALPHAS):
        for dt in DTYPES:
            h = shape[-1:]
            x, gx, dy = rand(shape, dt), rand(shape, dt), rand(shape, dt, -1, 1)
            gamma, beta = rand(h, dt, 0.5, 1.5), torch.zeros(h)
            eps = 1e-6
            mean, rstd = row_stats(alpha * x + gx, 1, eps)
            mean, rstd = rounded(mean, "float32"), rounded(rstd, "float32")
            leaves = [t.clone().requires_grad_() for t in (x, gx, gamma, beta)]
            y, _, _ = layer_norm(alpha * leaves[0] + leaves[1], leaves[2], leaves[3], eps)
            dx, dgx, dgamma, dbeta = torch.autograd.grad(y, leaves, dy)
            case("deepNormGrad", f"{dt} {shape} alpha {alpha}", dt,
                 {"dy": arg(dy, dt), "x": arg(x, dt), "gx": arg(gx, dt), "gamma": arg(gamma, dt),
                  "mean": arg(mean, "float32"), "rstd": arg(rstd, "float32")},
                 {"alpha": alpha},
                 {"dx": out(dx, dt), "dgx": out(dgx, dt), "dbeta": out(dbeta, "float32"),
                  "dgamma": out(dgamma, "float32")})


def gemma_rms_norm():
    for shape in SHAPES:
        for dt in DTYPES:
            x, gamma = rand(shape, dt), rand(shape[-1:], dt, -0.5, 0.5)
            eps = 1e-6
            rstd = rms(x, 1, eps)
            case("gemmaRmsNorm", f"{dt} {shape}", dt, {"x": arg(x, dt), "gamma": arg(gamma, dt)},
                 {"epsilon": eps},
                 {"y": out(x * rstd * (1 + gamma), dt), "rstd": out(rstd, "float32")})


def inplace_add_rms_norm():
    for shape in SHAPES:
        for dt in DTYPES:
            x1, x2, gamma = rand(shape, dt), rand(shape, dt), rand(shape[-1:], dt, 0.5, 1.5)
            eps = 1e-6
            x = x1 + x2
            rstd = rms(x, 1, eps)
            # Written in place: x1Ref <- x * rstd * gamma, x2Ref <- x.
            case("inplaceAddRmsNorm", f"{dt} {shape}", dt,
                 {"x1Ref": arg(x1, dt), "x2Ref": arg(x2, dt), "gamma": arg(gamma, dt)},
                 {"epsilon": eps},
                 {"rstd": out(rstd, "float32"), "x1Ref": out(x * rstd * gamma, dt),
                  "x2Ref": out(x, dt)})


def add_rms_norm_cast():
    for shape in SHAPES:
        for dt in ("float16", "bfloat16"):  # the operator's only dtypes
            x1, x2, gamma = rand(shape, dt), rand(shape, dt), rand(shape[-1:], dt, 0.5, 1.5)
            eps = 1e-6
            x = x1 + x2
            rstd = rms(x, 1, eps)
            y = x * rstd * gamma
            case("addRmsNormCast", f"{dt} {shape}", dt,
                 {"x1": arg(x1, dt), "x2": arg(x2, dt), "gamma": arg(gamma, dt)},
                 {"epsilon": eps},
                 {"y1": out(y, "float32"), "y2": out(y, dt), "rstd": out(rstd, "float32"),
                  "x": out(x, dt)})


def ada_inputs(shape, dt, i):
    """x [B, S, H]; scale [B, H] or [B, 1, H] (unsqueezed at -2), shift the other form."""
    b, _, h = shape
    forms = ([b, h], [b, 1, h]) if i % 2 == 0 else ([b, 1, h], [b, h])
    scale, shift = rand(forms[0], dt, -1, 1), rand(forms[1], dt, -1, 1)
    return scale, shift


def per_batch(t):
    return t if t.dim() == 3 else t.unsqueeze(-2)


def ada_layer_norm(v2):
    op = "adaLayerNormV2" if v2 else "adaLayerNorm"
    for i, shape in enumerate(ADA_SHAPES):
        for dt in DTYPES:
            h = shape[-1:]
            x = rand(shape, dt)
            scale, shift = ada_inputs(shape, dt, i)
            args = {"x": arg(x, dt), "scale": arg(scale, dt), "shift": arg(shift, dt)}
            weight, bias = torch.ones(h), torch.zeros(h)
            affine = i != 1
            if affine:
                # V2 also takes float32 weight/bias with 16-bit x: the last shape's 16-bit cases.
                wdt = "float32" if v2 and i == 2 else dt
                weight, bias = rand(h, wdt, 0.5, 1.5), rand(h, wdt, -1, 1)
                args["weight"], args["bias"] = arg(weight, wdt), arg(bias, wdt)
            eps = 1e-5
            ln, mean, rstd = layer_norm(x, weight, bias, eps)
            y = ln * (1 + per_batch(scale)) + per_batch(shift)
            exp = {"output": out(y, dt)}
            if v2:
                exp["mean"], exp["rstd"] = out(mean, dt), out(rstd, dt)  # in x's dtype
            case(op, f"{dt} {shape} scale {list(scale.shape)}{' affine' if affine else ''}", dt,
                 args, {"epsilon": eps}, exp)


def ada_layer_norm_backward():
    """The statistics are inputs in x's dtype. So that the float64 forward has exactly those
    statistics, each row is mean + pairs of +-d on a grid of 1/64 (the mean exact), and the
    forward's epsilon is chosen per row as 1/rstd^2 - var with the rounded rstd."""
    for i, shape in enumerate(ADA_SHAPES):
        for dt in DTYPES:
            b, s, h = shape
            rows = b * s
            centre = torch.round(torch.rand([rows, 1], generator=GEN) * 16 - 4) / 16
            d = torch.round(torch.rand([rows, h // 2], generator=GEN) * 128 - 64) / 64
            d = torch.cat([d, -d] + ([torch.zeros([rows, 1])] if h % 2 else []), dim=1)
            perm = torch.randperm(h, generator=GEN)
            x = rounded((centre + d[:, perm]).reshape(shape), dt)
            mean, rstd_true = row_stats(x, 1, 1e-5)
            assert torch.equal(rounded(mean, dt), mean), "the mean is exact in the dtype"
            rstd = rounded(rstd_true, dt)
            eps_row = 1 / rstd**2 - ((x - mean) ** 2).mean(dim=-1, keepdim=True)
            scale, shift = ada_inputs(shape, dt, i)
            grad_out = rand(shape, dt, -1, 1)
            affine = i != 1
            weight, bias = torch.ones([h]), torch.zeros([h])
            args = {"gradOut": arg(grad_out, dt), "input": arg(x, dt), "rstd": arg(rstd, dt),
                    "mean": arg(mean, dt), "scale": arg(scale, dt), "shift": arg(shift, dt)}
            wdt = "float32"  # gradWeight/gradBias: weight's dtype, float32 without weight
            if affine:
                wdt = dt
                weight, bias = rand([h], dt, 0.5, 1.5), rand([h], dt, -1, 1)
                args["weight"], args["bias"] = arg(weight, dt), arg(bias, dt)
            leaves = [t.clone().requires_grad_() for t in (x, scale, shift, weight, bias)]
            m, r = row_stats(leaves[0], 1, eps_row)
            assert torch.allclose(r, rstd, rtol=1e-14, atol=0) and torch.equal(m, mean)
            z = (leaves[0] - m) * r
            y = (z * leaves[3] + leaves[4]) * (1 + per_batch(leaves[1])) + per_batch(leaves[2])
            gi, gs, gsh, gw, gb = torch.autograd.grad(y, leaves, grad_out)
            case("adaLayerNormBackward",
                 f"{dt} {shape} scale {list(scale.shape)}{' affine' if affine else ''}", dt,
                 args, {"normalizedShape": [h]},
                 {"gradInput": out(gi, dt), "gradScale": out(gs, dt), "gradShift": out(gsh, dt),
                  "gradWeight": out(gw, wdt), "gradBias": out(gb, wdt)})


def fast_layer_norm():
    for i, shape in enumerate(SHAPES):
        for dt in DTYPES:
            norm = shape[-2:] if i == 0 else shape[-1:]  # [3, 8]: two normalized dims
            x = rand(shape, dt)
            args = {"input": arg(x, dt)}
            weight, bias = torch.ones(norm), torch.zeros(norm)
            if i != 1:
                weight, bias = rand(norm, dt, 0.5, 1.5), rand(norm, dt, -1, 1)
                args["weight"], args["bias"] = arg(weight, dt), arg(bias, dt)
            eps = 1e-5
            y, mean, rstd = layer_norm(x, weight, bias, eps)
            case("fastLayerNorm", f"{dt} {shape} normalized {norm}", dt, args,
                 {"normalizedShape": norm, "eps": eps},
                 {"output": out(y, dt), "mean": out(mean, "float32"),
                  "rstd": out(rstd, "float32")})


add_layer_norm()
add_layer_norm_grad()
deep_norm()
deep_norm_grad()
gemma_rms_norm()
inplace_add_rms_norm()
add_rms_norm_cast()
ada_layer_norm(v2=False)
ada_layer_norm(v2=True)
ada_layer_norm_backward()
fast_layer_norm()

# Two files (JSON is data; each stays under 300 KB): the LayerNorm family, then the RMSNorm and
# adaptive-LayerNorm operators.
FILES = {
    "row_golden_layer.json": {"addLayerNorm", "addLayerNormGrad", "deepNorm", "deepNormGrad",
                              "fastLayerNorm"},
    "row_golden_rms_ada.json": {"gemmaRmsNorm", "inplaceAddRmsNorm", "addRmsNormCast",
                                "adaLayerNorm", "adaLayerNormV2", "adaLayerNormBackward"},
}
assert sum(len(ops) for ops in FILES.values()) == len({c["op"] for c in CASES})
for name, ops in FILES.items():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    cases = [c for c in CASES if c["op"] in ops]
    head = {"generator": "tests/golden/make_row_golden.py", "torch": torch.__version__, "seed": 39}
    # One case a line (deno.json's fmt excludes these files: formatted, they would triple).
    lines = [json.dumps(c, separators=(",", ":")) for c in cases]
    with open(path, "w") as f:
        f.write(json.dumps(head)[:-1] + ', "cases": [\n' + ",\n".join(lines) + "\n]}\n")
    print(f"{name}: {len(cases)} cases, {os.path.getsize(path)} bytes")
