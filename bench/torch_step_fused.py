#!/usr/bin/env python3
"""PyTorch CPU side of ``deno task bench:step --model fused`` (bench/training_step.ts).

The step (bench/step_model_fused.ts is the library's side, layer for layer), each fused operator
of issue 39 as a PyTorch 1.13 user composes it, with autograd where the layer has a backward
(PyTorch has no single operator for these compositions, so no aten backward to call: autograd is
what a user runs, as torch_step.py does for its one composition, RMSNorm):

* forward, in order, on [2048,768] rows normalized over the last dim: addLayerNorm
  ``s = x1 + x2; y = F.layer_norm(s, (768,), gamma, beta, 1e-5)`` (s is the residual stream);
  deepNorm ``y = F.layer_norm(0.3 * x + gx, (768,), gamma, beta, 1e-6)``; addRmsNorm
  ``s = x1 + x2; s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-6) * gamma``; gemmaRmsNorm
  ``x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * (1 + gamma)``; adaLayerNorm on
  [8,256,768] with scale and shift [8,768] ``F.layer_norm(x, (768,), eps=1e-5) *
  (1 + scale[:, None]) + shift[:, None]`` (no affine, DiT's adaLN); then on [16,64,32,32] with 32
  groups groupNormSilu ``F.silu(aten.native_group_norm(...)[0])`` and groupNormSwish
  ``g = F.group_norm(x, 32, gamma, beta, 1e-5); g * torch.sigmoid(1.702 * g)``;
* backward, in reverse: ``torch.autograd.grad`` of groupNormSwish (x, gamma, beta), adaLayerNorm
  (x, scale, shift), deepNorm (x, gx, gamma, beta) and addLayerNorm (``[y, s]`` fed ``[dy, dsum]``,
  dsum the residual branch's gradient; x1, x2, gamma, beta), each fed a fixed upstream gradient.
  addRmsNorm, gemmaRmsNorm and groupNormSilu are forward only: their inputs do not require grad.

Weights have the data's dtype; gamma ones (gemmaRmsNorm's zeros), beta zeros; every call
allocates its outputs and refcounting frees them, as in user code. Data is standard normal from a
fixed seed.

The command line (``--dtype``, ``--threads``, ``--warmup``, ``--steps``), the timing and the JSON
line printed are bench/torch_step_timing.py's.

Run it with glibc told to keep freed memory, or every large tensor costs fresh page faults
(bench:step sets these itself)::

    MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \\
      /usr/bin/python3 bench/torch_step_fused.py --dtype float32
"""

import torch
import torch.nn.functional as F

import torch_step_timing

aten = torch.ops.aten

ROWS_SHAPE = (2048, 768)
ADA_SHAPE, ADA_SCALE_SHAPE = (8, 256, 768), (8, 768)
GN_SHAPE, GN_GROUPS = (16, 64, 32, 32), 32
DEEP_NORM_ALPHA = 0.3
SWISH_SCALE = 1.702
EPS = dict(addLayerNorm=1e-5, deepNorm=1e-6, addRmsNorm=1e-6, gemmaRmsNorm=1e-6,
           adaLayerNorm=1e-5, groupNormSilu=1e-5, groupNormSwish=1e-5)


def model(dtype):
    g = torch.Generator().manual_seed(1)

    def randn(shape, grad=False):
        return torch.randn(*shape, generator=g).to(dtype).requires_grad_(grad)

    def ones(n, grad=False):
        return torch.ones(n, dtype=dtype).requires_grad_(grad)

    def zeros(n, grad=False):
        return torch.zeros(n, dtype=dtype).requires_grad_(grad)

    cols, c = ROWS_SHAPE[1], GN_SHAPE[1]
    add_ln = dict(x1=randn(ROWS_SHAPE, True), x2=randn(ROWS_SHAPE, True), w=ones(cols, True),
                  b=zeros(cols, True), dy=randn(ROWS_SHAPE), dsum=randn(ROWS_SHAPE))
    deep = dict(x=randn(ROWS_SHAPE, True), gx=randn(ROWS_SHAPE, True), w=ones(cols, True),
                b=zeros(cols, True), dy=randn(ROWS_SHAPE))
    add_rms = dict(x1=randn(ROWS_SHAPE), x2=randn(ROWS_SHAPE), w=ones(cols))
    gemma = dict(x=randn(ROWS_SHAPE), w=zeros(cols))
    ada = dict(x=randn(ADA_SHAPE, True), scale=randn(ADA_SCALE_SHAPE, True),
               shift=randn(ADA_SCALE_SHAPE, True), dy=randn(ADA_SHAPE))
    gn_silu = dict(x=randn(GN_SHAPE), w=ones(c), b=zeros(c))
    gn_swish = dict(x=randn(GN_SHAPE, True), w=ones(c, True), b=zeros(c, True),
                    dy=randn(GN_SHAPE))
    return add_ln, deep, add_rms, gemma, ada, gn_silu, gn_swish


def step(add_ln, deep, add_rms, gemma, ada, gn_silu, gn_swish):
    cols = [ROWS_SHAPE[1]]
    s = add_ln["x1"] + add_ln["x2"]
    y_add_ln = F.layer_norm(s, cols, add_ln["w"], add_ln["b"], EPS["addLayerNorm"])
    y_deep = F.layer_norm(DEEP_NORM_ALPHA * deep["x"] + deep["gx"], cols, deep["w"], deep["b"],
                          EPS["deepNorm"])
    # Forward-only results (y_add_rms, y_gemma, y_silu) live to the step's end, as ours do.
    x = add_rms["x1"] + add_rms["x2"]
    y_add_rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS["addRmsNorm"]) * add_rms["w"]
    x = gemma["x"]
    y_gemma = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS["gemmaRmsNorm"])
               * (1 + gemma["w"]))
    y_ada = (F.layer_norm(ada["x"], cols, eps=EPS["adaLayerNorm"]) * (1 + ada["scale"][:, None])
             + ada["shift"][:, None])
    n, c, h, w = GN_SHAPE
    y_silu = F.silu(aten.native_group_norm(gn_silu["x"], gn_silu["w"], gn_silu["b"], n, c, h * w,
                                           GN_GROUPS, EPS["groupNormSilu"])[0])
    gn = F.group_norm(gn_swish["x"], GN_GROUPS, gn_swish["w"], gn_swish["b"],
                      EPS["groupNormSwish"])
    y_swish = gn * torch.sigmoid(SWISH_SCALE * gn)

    torch.autograd.grad(y_swish, [gn_swish["x"], gn_swish["w"], gn_swish["b"]], gn_swish["dy"])
    torch.autograd.grad(y_ada, [ada["x"], ada["scale"], ada["shift"]], ada["dy"])
    torch.autograd.grad(y_deep, [deep["x"], deep["gx"], deep["w"], deep["b"]], deep["dy"])
    torch.autograd.grad([y_add_ln, s], [add_ln["x1"], add_ln["x2"], add_ln["w"], add_ln["b"]],
                        [add_ln["dy"], add_ln["dsum"]])


if __name__ == "__main__":
    torch_step_timing.run(__doc__.split("\n")[0], model, step)
