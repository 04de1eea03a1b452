"""Writes tests/golden/channel_golden.json: golden cases of the channel-family operators.

Run from the repository root with a Python that has PyTorch and numpy:

    python3 tests/golden/make_channel_golden.py

Every case holds the operator, its inputs (shape, dtype, values already rounded to that dtype
with torch's round-to-nearest-even, so the library receives exactly these numbers), its
scalars (the float attributes CANN takes as C floats are rounded to float32 here and used so
in the reference) and the expected outputs, computed in float64 by torch from the formula of
each operator's section of the reference notes (norm_family.md). The backward operators'
references come from torch autograd through a float64 forward, not from a hand-derived
gradient, so they are independent of the library's oracle in tests/oracle.

Seeded (torch.manual_seed(39)): re-running gives the same file.
"""

import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.manual_seed(39)
D = torch.float64
TORCH_DTYPE = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "channel_golden.json")


def f32(v):
    """A C float attribute as the kernel receives it."""
    return float(torch.tensor(v, dtype=torch.float32).item())


def rnd(shape, dtype, low=-2.0, high=3.0):
    """Uniform values in [low, high), rounded to dtype, returned as float64."""
    t = torch.rand(shape, dtype=D) * (high - low) + low
    return t.to(TORCH_DTYPE[dtype]).to(D)


def rounded(t, dtype):
    return t.to(TORCH_DTYPE[dtype]).to(D)


def text(t):
    """Values as one space-separated string (the repository's fixture style): repr round-trips."""
    return " ".join(repr(float(v)) for v in t.detach().flatten())


def text32(t):
    """Inputs, exact in float32 (as float16 and bfloat16 values are): the shortest decimal that
    gives the float32 back (the test reads it with Math.fround)."""
    return " ".join(str(np.float32(v)) for v in t.flatten().tolist())


def inp(t, dtype):
    assert torch.equal(t.to(torch.float32).to(D), t), "inputs are exact in float32"
    return {"shape": list(t.shape), "dtype": dtype, "values": text32(t)}


def outp(t, dtype):
    return {"dtype": dtype, "values": text(t)}


CASES = []


def add(op, name, inputs, scalars, expected):
    CASES.append({"op": op, "name": name, "inputs": inputs, "scalars": scalars,
                  "expected": expected})


def group_norm_stats(x, G, eps):
    """Per-(n, group) mean and 1/sqrt(biased var + eps) of x [N, C, ...]."""
    xg = x.reshape(x.shape[0], G, -1)
    mean = xg.mean(-1)
    var = xg.var(-1, unbiased=False)
    return mean, 1 / torch.sqrt(var + eps)


def swish(g, s):
    return g / (1 + torch.exp(-s * g))


# GroupNorm + activation: gn = (x - E) / sqrt(Var + eps) * gamma[c] + beta[c] per (n, group);
# SiLU out = gn / (1 + exp(-gn)); Swish y = gn / (1 + exp(-s gn)). torch's group_norm computes
# gn, the statistics come from the same float64 data.
GN_SHAPES = [([2, 4, 3, 3], 2), ([3, 8, 5], 4), ([1, 6, 5, 3], 3)]


def gn_forward(x, gamma, beta, G, eps):
    gn = F.group_norm(x, G, gamma, beta, eps)
    mean, rstd = group_norm_stats(x, G, eps)
    return gn, mean, rstd


def gn_act_cases():
    pairs = [("float32", "float32"), ("float16", "float16"), ("bfloat16", "bfloat16"),
             ("float16", "float32")]
    eps = 1e-5
    for xt, gt in pairs:
        for k, (shape, G) in enumerate(GN_SHAPES):
            C = shape[1]
            x = rnd(shape, xt)
            gamma = rnd([C], gt, 0.5, 1.5)
            beta = rnd([C], gt, -1, 1)
            gn, mean, rstd = gn_forward(x, gamma, beta, G, f32(eps))
            ins = {"self": inp(x, xt), "gamma": inp(gamma, gt), "beta": inp(beta, gt)}
            tag = f"{xt}/{gt} {shape} g{G}"
            # groupNormSilu on every shape; V2 with SiLU on and off on two of them.
            add("groupNormSilu", tag, ins, {"group": G, "eps": eps},
                {"output": outp(swish(gn, 1.0), xt), "mean": outp(mean, xt),
                 "rstd": outp(rstd, xt)})
            if k < 2:
                act = k == 0
                add("groupNormSiluV2", f"{tag} activateSilu={act}", ins,
                    {"group": G, "eps": eps, "activateSilu": act},
                    {"output": outp(swish(gn, 1.0) if act else gn, xt), "mean": outp(mean, xt),
                     "rstd": outp(rstd, xt)})
    # groupNormSwish: mean/rstd in gamma's dtype (its OpDef rows, mixed ones included).
    rows = [("float32", "float32"), ("float16", "float16"), ("bfloat16", "bfloat16"),
            ("float16", "float32"), ("bfloat16", "float32")]
    settings = [(1.0, True), (0.35, True), (-1.5, True), (2.0, False)]
    for i, (xt, gt) in enumerate(rows):
        for j in range(2):  # two of the shapes per row, in turn
            shape, G = GN_SHAPES[(i + j) % len(GN_SHAPES)]
            s, act = settings[(i + j) % len(settings)]
            C = shape[1]
            x = rnd(shape, xt)
            gamma = rnd([C], gt, 0.5, 1.5)
            beta = rnd([C], gt, -1, 1)
            gn, mean, rstd = gn_forward(x, gamma, beta, G, f32(1e-5))
            y = swish(gn, f32(s)) if act else gn
            add("groupNormSwish", f"{xt}/{gt} {shape} g{G} s={s} act={act}",
                {"x": inp(x, xt), "gamma": inp(gamma, gt), "beta": inp(beta, gt)},
                {"numGroups": G, "eps": 1e-5, "swishScale": s, "activateSwish": act},
                {"y": outp(y, xt), "mean": outp(mean, gt), "rstd": outp(rstd, gt)})


def stat_functions(xg, m, r):
    """Mean and rstd of the groups (or channels) xg [..., n] as functions of x whose values are
    the given m, r (the forward's statistics, rounded to their dtype) and whose derivatives are
    those of E[x] and 1/sqrt(E[(x - m)^2] + eps) there: E[x] shifted by a constant, and
    E[(x - m)^2] written E[x^2] - 2 m E[x] + const."""
    E = xg.mean(-1)
    M = E - E.detach() + m
    V = (xg * xg).mean(-1) - 2 * m * E
    c = 1 / (r * r) - V.detach()
    return M, 1 / torch.sqrt(V + c)


def gn_swish_grad_cases():
    """dL/dx, dgamma, dbeta of L = sum(dy * swish_s(xhat * gamma + beta)), xhat = (x - mean) *
    rstd with the given statistics: torch autograd through the float64 forward."""
    k = 0
    for dt in ["float32", "float16", "bfloat16"]:
        for shape, G in GN_SHAPES:
            s = [1.0, 0.35, -1.5][k % 3]
            req = [(True, True), (True, False), (False, True), (False, False)][k % 4]
            k += 1
            N, C = shape[0], shape[1]
            x = rnd(shape, dt)
            dy = rnd(shape, dt, -1, 1)
            gamma = rnd([C], dt, 0.5, 1.5)
            beta = rnd([C], dt, -1, 1)
            m64, r64 = group_norm_stats(x, G, f32(1e-5))
            mean, rstd = rounded(m64, dt), rounded(r64, dt)
            xv = x.clone().requires_grad_(True)
            gv = gamma.clone().requires_grad_(True)
            bv = beta.clone().requires_grad_(True)
            xg = xv.reshape(N, G, -1)
            M, R = stat_functions(xg, mean, rstd)
            xhat = ((xg - M[..., None]) * R[..., None]).reshape(shape)
            cshape = [1, C] + [1] * (len(shape) - 2)
            t = xhat * gv.reshape(cshape) + bv.reshape(cshape)
            (swish(t, f32(s)) * dy).sum().backward()
            if dt == "float32":
                check_against_group_norm(x, dy, gamma, beta, G, s, xv.grad, gv.grad, bv.grad)
            expected = {"dx": outp(xv.grad, dt)}
            if req[0]:
                expected["dgamma"] = outp(gv.grad, dt)
            if req[1]:
                expected["dbeta"] = outp(bv.grad, dt)
            add("groupNormSwishGrad", f"{dt} {shape} g{G} s={s} dgamma={req[0]} dbeta={req[1]}",
                {"dy": inp(dy, dt), "mean": inp(mean.reshape(N, G), dt),
                 "rstd": inp(rstd.reshape(N, G), dt), "x": inp(x, dt), "gamma": inp(gamma, dt),
                 "beta": inp(beta, dt)},
                {"numGroups": G, "swishScale": s, "dgammaIsRequire": req[0],
                 "dbetaIsRequire": req[1]},
                expected)


def check_against_group_norm(x, dy, gamma, beta, G, s, dx, dgamma, dbeta):
    """With float64 statistics the reference is autograd through torch's own group_norm."""
    xv = x.clone().requires_grad_(True)
    gv = gamma.clone().requires_grad_(True)
    bv = beta.clone().requires_grad_(True)
    (swish(F.group_norm(xv, G, gv, bv, f32(1e-5)), f32(s)) * dy).sum().backward()
    for a, b in [(dx, xv.grad), (dgamma, gv.grad), (dbeta, bv.grad)]:
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-5), (a - b).abs().max()


def instance_norm_cases():
    """y = (x - E) / sqrt(Var + eps) * gamma + beta per (n, c) over H, W; mean and the biased
    variance [N, C, 1, 1] (NCHW) or [N, 1, 1, C] (NHWC). torch's instance_norm gives y."""
    eps = 1e-5
    for fmt, dt, shape in [("NCHW", "float32", [2, 8, 3, 3]), ("NHWC", "float32", [2, 3, 5, 8]),
                           ("NCHW", "float16", [1, 16, 4, 5]), ("NHWC", "float16", [1, 4, 5, 16])]:
        x = rnd(shape, dt)
        xc = x if fmt == "NCHW" else x.permute(0, 3, 1, 2)
        C = xc.shape[1]
        gamma = rnd([C], dt, 0.5, 1.5)
        beta = rnd([C], dt, -1, 1)
        y = F.instance_norm(xc, weight=gamma, bias=beta, eps=f32(eps))
        mean = xc.mean((2, 3), keepdim=True)
        var = xc.var((2, 3), unbiased=False, keepdim=True)
        if fmt == "NHWC":
            y, mean, var = (t.permute(0, 2, 3, 1) for t in (y, mean, var))
        add("instanceNorm", f"{fmt} {dt} {shape}",
            {"x": inp(x, dt), "gamma": inp(gamma, dt), "beta": inp(beta, dt)},
            {"dataFormat": fmt, "eps": eps},
            {"y": outp(y, dt), "mean": outp(mean, dt), "variance": outp(var, dt)})


def batch_norm_reduce_cases():
    """sum[c] = sum of x over n, h, w; squareSum[c] = sum of x^2; both float32."""
    for dt, shape in [("float32", [2, 4, 3, 3]), ("float16", [3, 8, 5, 2]),
                      ("bfloat16", [1, 5, 7, 3]), ("float32", [3, 3, 1, 5])]:
        x = rnd(shape, dt)
        add("batchNormReduce", f"{dt} {shape}", {"x": inp(x, dt)}, {},
            {"sum": outp(x.sum((0, 2, 3)), "float32"),
             "squareSum": outp((x * x).sum((0, 2, 3)), "float32")})


def sync_gather_cases():
    """n = sum(sampleCount); batchMean = sum(totalSum) / n; batchVar = sum(totalSquareSum) / n -
    batchMean^2; batchInvstd = 1 / sqrt(batchVar + eps); in place mean <- mean (1 - m) +
    m batchMean, variance <- variance (1 - m) + m batchVar n / (n - 1)."""
    # sampleCount in a float dtype: CANN also takes INT32 (CheckDtypeValid), the library does not
    # yet (reported), so no case passes one.
    for dt, (Dv, C), counts, cdt, mom in [
        ("float32", (4, 5), [16, 16, 16, 16], "float32", 0.1),
        ("float32", (3, 7), [9, 12, 5], "float32", 0.3),
        ("float16", (2, 8), [10, 6], "float16", 0.1),
        ("bfloat16", (3, 4), [8, 8, 11], "bfloat16", 0.25),
    ]:
        eps = 1e-5
        # The sums of real data in [-1, 2): each device's count elements per channel.
        S = torch.zeros(Dv, C, dtype=D)
        Q = torch.zeros(Dv, C, dtype=D)
        for d, n in enumerate(counts):
            v = torch.rand(n, C, dtype=D) * 3 - 1
            S[d], Q[d] = v.sum(0), (v * v).sum(0)
        S, Q = rounded(S, dt), rounded(Q, dt)
        mean = rnd([C], dt, -1, 1)
        var = rnd([C], dt, 0.5, 2)
        n = float(sum(counts))
        m, e = f32(mom), f32(eps)
        bm = S.sum(0) / n
        bv = Q.sum(0) / n - bm * bm
        add("syncBatchNormGatherStats", f"{dt} [{Dv},{C}] counts {cdt} momentum={mom}",
            {"totalSum": inp(S, dt), "totalSquareSum": inp(Q, dt),
             "sampleCount": inp(torch.tensor(counts, dtype=D), cdt), "mean": inp(mean, dt),
             "variance": inp(var, dt)},
            {"momentum": mom, "eps": eps},
            {"batchMean": outp(bm, dt), "batchInvstd": outp(1 / torch.sqrt(bv + e), dt),
             "mean": outp(mean * (1 - m) + m * bm, dt),
             "variance": outp(var * (1 - m) + m * bv * n / (n - 1), dt)})


def fast_bn_backward_cases():
    """Gradients of L = sum(dy * batch_norm(x)) by autograd. Training: the statistics are the
    batch's own (saveMean, saveInvstd, rounded to their dtype) as functions of x
    (stat_functions); eval: torch's batch_norm with the running statistics as constants."""
    eps = 1e-5
    for dt, st, shape in [("float32", "float32", [2, 4, 3, 3]), ("float32", "float32", [3, 8, 5]),
                          ("float16", "float16", [3, 4, 3, 3]),
                          ("bfloat16", "bfloat16", [2, 3, 5, 3]),
                          ("bfloat16", "float32", [3, 5, 7])]:
        C = shape[1]
        dy = rnd(shape, dt, -1, 1)
        x = rnd(shape, dt)
        w = rnd([C], st, 0.5, 1.5)
        rm = rnd([C], st, -1, 1)
        rv = rnd([C], st, 0.5, 2)
        xc = x.transpose(0, 1).reshape(C, -1)
        sm = rounded(xc.mean(-1), st)
        si = rounded(1 / torch.sqrt(xc.var(-1, unbiased=False) + f32(eps)), st)
        cshape = [1, C] + [1] * (len(shape) - 2)
        for training in [True, False]:
            xv = x.clone().requires_grad_(True)
            wv = w.clone().requires_grad_(True)
            bv = torch.zeros(C, dtype=D, requires_grad=True)
            if training:
                xcv = xv.transpose(0, 1).reshape(C, -1)
                M, R = stat_functions(xcv, sm, si)
                y = (xv - M.reshape(cshape)) * R.reshape(cshape) * wv.reshape(cshape) + \
                    bv.reshape(cshape)
            else:
                y = F.batch_norm(xv, rm, rv, wv, bv, training=False, eps=eps)
            (y * dy).sum().backward()
            add("fastBatchNormBackward", f"{dt}/{st} {shape} training={training}",
                {"gradOut": inp(dy, dt), "input": inp(x, dt), "weight": inp(w, st),
                 "runningMean": inp(rm, st), "runningVar": inp(rv, st),
                 "saveMean": inp(sm, st), "saveInvstd": inp(si, st)},
                {"training": training, "eps": eps},
                {"gradInput": outp(xv.grad, dt), "gradWeight": outp(wv.grad, st),
                 "gradBias": outp(bv.grad, st)})


gn_act_cases()
gn_swish_grad_cases()
instance_norm_cases()
batch_norm_reduce_cases()
sync_gather_cases()
fast_bn_backward_cases()

with open(OUT, "w") as f:
    json.dump({
        "about": "Golden cases of the channel-family operators: float64 references by PyTorch "
                 "of each operator's formula; written by tests/golden/make_channel_golden.py.",
        "torch": torch.__version__,
        "cases": CASES,
    }, f, indent=2)
    f.write("\n")
# The repository's formatter has the last word on the layout (deno task check runs
# `deno fmt --check`).
try:
    subprocess.run(["deno", "fmt", "--quiet", OUT], check=True)
except (OSError, subprocess.CalledProcessError) as e:
    print(f"run `deno fmt {OUT}` before committing ({e})", file=sys.stderr)
counts = {}
for c in CASES:
    counts[c["op"]] = counts.get(c["op"], 0) + 1
print(len(CASES), "cases", counts, os.path.getsize(OUT), "bytes")
