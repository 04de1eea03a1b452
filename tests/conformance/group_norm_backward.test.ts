/**
 * Conformance of groupNormBackward (aclnnGroupNormBackward, aten native_group_norm_backward)
 * with peers' cases: the CANN example's hand-derived answer, CANN ST rows (mixed precision,
 * ranks 4-8, output masks), torch_npu's shapes, PyTorch OpInfo samples, group in {1, C},
 * empty inputs, non-contiguous layouts; float64 oracle from tests/oracle/ (checked against
 * finite differences of a float64 forward). Every case runs on every backend; a chip without
 * GroupNorm-backward mixed precision (Atlas A2) must refuse the fp16/bf16-data, fp32-stats rows.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type DType, groupNormBackward, Tensor } from "../../mod.ts";
import {
  assertChipRefuses,
  type BackendContext,
  chipAccepts,
  forEachBackend,
} from "../helpers/backends.ts";
import { groupNormBackward64, groupStats64 } from "../oracle/mod.ts";
import {
  capShape,
  channelsLast,
  expectClose,
  f64,
  fromValues,
  on,
  onOpt,
  runAll,
  strided,
  uniform,
} from "./common.ts";

// hicann/ops-nn norm/group_norm_grad/examples/test_aclnn_group_norm_grad.cpp (the example of
// aclnnGroupNormBackward.md): gradOut = input = 1..24 as [2,3,4], mean {6.5, 18.5},
// rstd {0.2896827, 0.2896827} as [2,1], gamma {1,1,1}, N 2, C 3, HxW 4, group 1, all masks.
// Hand-derived answer: gradBeta_c = sum over n, hw of dy = {10+58, 26+74, 42+90};
// gradGamma_c = rstd * sum dy * (x - mean) = rstd * {-35-227, 5+5, 173+365};
// gradInput = rstd * (x - mean) * (1 - rstd^2 * 143/12) ~ 3e-7 (the example's rstd is
// 1/sqrt(var + 1e-5) rounded to 7 digits, so dx is zero up to that rounding).
forEachBackend("gn backward: CANN example [2,3,4] group 1 known answer", ({ device: target }) => {
  const r = 0.2896827;
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    const x = fromValues(Array.from({ length: 24 }, (_, i) => i + 1), [2, 3, 4], dtype);
    const out = groupNormBackward({
      gradOut: on(x, target),
      input: on(x, target),
      mean: on(fromValues([6.5, 18.5], [2, 1], dtype), target),
      rstd: on(fromValues([r, r], [2, 1], dtype), target),
      gamma: on(fromValues([1, 1, 1], [3], dtype), target),
      N: 2,
      C: 3,
      HxW: 4,
      group: 1,
      outputMask: [true, true, true],
    });
    expectClose(out.gradBeta, [68, 100, 132], `${dtype} gradBeta`);
    if (dtype === "float32") {
      expectClose(out.gradGamma, [-262 * r, 10 * r, 538 * r], `${dtype} gradGamma`);
      expectClose(out.gradInput, new Float64Array(24), `${dtype} gradInput`);
    } else {
      // rstd rounded to fp16/bf16 no longer cancels exactly: compare with the reference at
      // the rounded statistics instead.
      const e = groupNormBackward64(
        f64(x),
        f64(x),
        new Float64Array([6.5, 18.5]),
        f64(fromValues([r, r], [2], dtype)),
        undefined,
        2,
        3,
        4,
        1,
      );
      expectClose(out.gradGamma, e.gradGamma, `${dtype} gradGamma`);
      expectClose(out.gradInput, e.gradInput, `${dtype} gradInput`);
    }
  }
});

interface GnCase {
  source: string;
  shape: number[];
  group: number;
  dtype: DType;
  /** dtype of mean/rstd/gamma and of gradGamma/gradBeta (default dtype). */
  statsDType?: DType;
  gamma?: boolean;
  mask?: [boolean, boolean, boolean];
  eps?: number;
  range?: [number, number];
  /** gradOut all ones (torch_npu backward tests call backward(torch.ones_like(out))). */
  onesGrad?: boolean;
  layout?: "channels-last" | "strided";
  /** Pass N, C, HxW explicitly and flatten the tensors to this shape. */
  flatShape?: number[];
}

const ST = "ops-nn ST ttk_kernel_group_norm_grad_st.csv";
// hicann/ops-nn norm/group_norm_grad/tests/st/arch35/ttk_kernel_group_norm_grad_st.csv: inputs
// (dy, mean, rstd, x, gamma) with fp16/bf16 data and fp32 mean/rstd/gamma, outputs
// gradGamma/gradBeta in fp32; attributes num_groups and dx/dgamma/dbeta_is_require.
const CASES: GnCase[] = [
  {
    source: `${ST} fuzz3_000412`,
    shape: [18, 17, 1, 1, 37, 1, 1],
    group: 17,
    dtype: "bfloat16",
    statsDType: "float32",
    gamma: true,
  },
  {
    source: `${ST} fuzz3_000410`,
    shape: [1, 113, 1, 1, 1, 96],
    group: 113,
    dtype: "float16",
    statsDType: "float32",
    gamma: true,
  },
  {
    source: `${ST} fuzz_001444`,
    shape: [1, 4, 1, 12],
    group: 4,
    dtype: "float16",
    statsDType: "float32",
    gamma: true,
  },
  {
    source: `${ST} fuzz_001437`,
    shape: [1, 33, 1, 1, 1],
    group: 11,
    dtype: "bfloat16",
    statsDType: "float32",
    gamma: true,
  },
  {
    source: `${ST} fuzz_001414`,
    shape: [1, 12, 30, 1, 1, 1, 2],
    group: 3,
    dtype: "bfloat16",
    statsDType: "float32",
    gamma: true,
  },
  {
    source: `${ST} fuzz_001403 rank 8`,
    shape: [3, 44, 1, 1, 4, 1, 1, 1],
    group: 44,
    dtype: "bfloat16",
    statsDType: "float32",
    gamma: true,
  },
  {
    source: `${ST} fuzz_001376`,
    shape: [4, 12, 3, 1, 5],
    group: 4,
    dtype: "float16",
    statsDType: "float32",
    gamma: true,
  },
  {
    source: `${ST} fuzz_001375 (M = 1 per group)`,
    shape: [64, 4, 1, 1, 1],
    group: 4,
    dtype: "bfloat16",
    statsDType: "float32",
    gamma: true,
  },
  {
    source: `${ST} fuzz_001344`,
    shape: [8, 14, 3, 1, 2, 1],
    group: 7,
    dtype: "bfloat16",
    statsDType: "float32",
    gamma: true,
  },
  {
    source: `${ST} fuzz_001005 mask FTT`,
    shape: [1, 30, 1, 1, 17, 1],
    group: 5,
    dtype: "float16",
    statsDType: "float32",
    gamma: true,
    mask: [false, true, true],
  },
  {
    source: `${ST} fuzz_000987 mask FTT`,
    shape: [1, 4, 1, 1],
    group: 4,
    dtype: "bfloat16",
    statsDType: "float32",
    gamma: true,
    mask: [false, true, true],
  },
  {
    source: `${ST} fuzz_000969 mask FTF`,
    shape: [1, 12, 1, 1, 35, 1, 1, 1],
    group: 6,
    dtype: "float16",
    statsDType: "float32",
    gamma: true,
    mask: [false, true, false],
  },
  {
    source: `${ST} fuzz_000954 mask FFT`,
    shape: [1, 49, 8, 1, 1],
    group: 49,
    dtype: "float16",
    statsDType: "float32",
    gamma: true,
    mask: [false, false, true],
  },
  {
    source: `${ST} fuzz_000942 mask TFT`,
    shape: [1, 4, 1, 2, 1, 74, 1, 1],
    group: 4,
    dtype: "float16",
    statsDType: "float32",
    gamma: true,
    mask: [true, false, true],
  },
  {
    source: `${ST} fuzz_000751 mask TTF`,
    shape: [1, 54, 1, 1, 1, 1],
    group: 3,
    dtype: "bfloat16",
    statsDType: "float32",
    gamma: true,
    mask: [true, true, false],
  },
  {
    source: `${ST} fuzz_000752`,
    shape: [20, 30, 1, 1],
    group: 15,
    dtype: "float16",
    statsDType: "float32",
    gamma: true,
  },
  {
    source: `${ST} fuzz_001060`,
    shape: [32, 12, 1, 1],
    group: 4,
    dtype: "bfloat16",
    statsDType: "float32",
    gamma: true,
  },
  // Same rows in fp32 everywhere (CANN supports FLOAT for all tensors).
  {
    source: `${ST} fuzz_001376 fp32`,
    shape: [4, 12, 3, 1, 5],
    group: 4,
    dtype: "float32",
    gamma: true,
  },
  {
    source: `${ST} fuzz_001344 fp16 stats`,
    shape: [8, 14, 3, 1, 2, 1],
    group: 7,
    dtype: "float16",
    gamma: true,
  },
  {
    source: `${ST} fuzz_001344 bf16 stats`,
    shape: [8, 14, 3, 1, 2, 1],
    group: 7,
    dtype: "bfloat16",
    gamma: true,
  },

  // Ascend/pytorch test/test_network_ops/test_group_norm_backward.py (TestGroupNormBackward):
  // x = uniform(-100, 100), F.group_norm(x, num_groups) (no affine), backward(ones_like).
  // The NPU-private format 3 (NC1HWC0) rows are not expressible here; their ND twins are.
  {
    source: "torch_npu default_fp32 [20,6,10,10] g2",
    shape: [20, 6, 10, 10],
    group: 2,
    dtype: "float32",
    range: [-100, 100],
    onesGrad: true,
  },
  {
    source: "torch_npu default_fp32 [20,2,10,10] g2",
    shape: [20, 2, 10, 10],
    group: 2,
    dtype: "float32",
    range: [-100, 100],
    onesGrad: true,
  },
  {
    source: "torch_npu default_fp16 [20,6,10,10] g2",
    shape: [20, 6, 10, 10],
    group: 2,
    dtype: "float16",
    range: [-100, 100],
    onesGrad: true,
  },
  {
    source: "torch_npu default_fp16 [20,2,10,10] g2",
    shape: [20, 2, 10, 10],
    group: 2,
    dtype: "float16",
    range: [-100, 100],
    onesGrad: true,
  },
  // case1/case2/case3 (Stable-Diffusion shapes, all 32 groups), capped near 3e5 elements.
  {
    source: "torch_npu case1 [48,32,320,320] g32 (capped)",
    shape: capShape([48, 32, 320, 320]),
    group: 32,
    dtype: "float32",
    range: [-100, 100],
    onesGrad: true,
  },
  {
    source: "torch_npu case1 [48,512,20,20] g32 (capped)",
    shape: capShape([48, 512, 20, 20]),
    group: 32,
    dtype: "float32",
    range: [-100, 100],
    onesGrad: true,
  },
  {
    source: "torch_npu case2 [4,1280,12,12] g32 (capped)",
    shape: capShape([4, 1280, 12, 12]),
    group: 32,
    dtype: "float32",
    range: [-100, 100],
    onesGrad: true,
  },
  {
    source: "torch_npu case2 [4,512,9216] g32 (capped)",
    shape: capShape([4, 512, 9216]),
    group: 32,
    dtype: "float32",
    range: [-100, 100],
    onesGrad: true,
  },
  {
    source: "torch_npu case2 [4,2560,12,12] g32 (capped)",
    shape: capShape([4, 2560, 12, 12]),
    group: 32,
    dtype: "float32",
    range: [-100, 100],
    onesGrad: true,
  },
  {
    source: "torch_npu case3 [1,256,100,152] g32 (capped)",
    shape: capShape([1, 256, 100, 152]),
    group: 32,
    dtype: "float32",
    range: [-100, 100],
    onesGrad: true,
  },

  // pytorch/pytorch torch/testing/_internal/common_methods_invocations.py
  // sample_inputs_group_norm: ((1,6,3), 2, eps .5), ((2,6,3), 2, eps -.5), ((1,3), 1),
  // ((S,S,S), 1, eps .5), ((1,2), 1); weight present or None; make_tensor range [-9, 9].
  {
    source: "PyTorch OpInfo (1,6,3) g2 eps .5",
    shape: [1, 6, 3],
    group: 2,
    dtype: "float32",
    eps: 0.5,
    gamma: true,
    range: [-9, 9],
  },
  {
    source: "PyTorch OpInfo (1,6,3) g2 eps .5 no weight",
    shape: [1, 6, 3],
    group: 2,
    dtype: "float32",
    eps: 0.5,
    range: [-9, 9],
  },
  {
    source: "PyTorch OpInfo (2,6,3) g2 eps -.5",
    shape: [2, 6, 3],
    group: 2,
    dtype: "float32",
    eps: -0.5,
    gamma: true,
    range: [-9, 9],
  },
  {
    source: "PyTorch OpInfo (1,3) g1",
    shape: [1, 3],
    group: 1,
    dtype: "float32",
    gamma: true,
    range: [-9, 9],
  },
  {
    source: "PyTorch OpInfo (S,S,S) g1 eps .5",
    shape: [5, 5, 5],
    group: 1,
    dtype: "float16",
    eps: 0.5,
    gamma: true,
    range: [-9, 9],
  },
  {
    source: "PyTorch OpInfo (S,S,S) g1 bf16 no weight",
    shape: [5, 5, 5],
    group: 1,
    dtype: "bfloat16",
    eps: 0.5,
    range: [-9, 9],
  },
  { source: "PyTorch OpInfo (1,2) g1", shape: [1, 2], group: 1, dtype: "float32", range: [-9, 9] },

  // The extremes group = 1 (LayerNorm-like) and group = C (InstanceNorm-like) on one shape.
  {
    source: "group = 1 (LayerNorm-like)",
    shape: [2, 8, 3, 3],
    group: 1,
    dtype: "float32",
    gamma: true,
  },
  {
    source: "group = C (InstanceNorm-like)",
    shape: [2, 8, 3, 3],
    group: 8,
    dtype: "float32",
    gamma: true,
  },
  {
    source: "group = C fp16 + fp32 stats",
    shape: [2, 8, 3, 3],
    group: 8,
    dtype: "float16",
    statsDType: "float32",
    gamma: true,
  },
  // Non-contiguous inputs (CANN doc: every tensor "支持非连续的Tensor").
  {
    source: "channels-last 4-D",
    shape: [3, 6, 4, 5],
    group: 3,
    dtype: "float32",
    gamma: true,
    layout: "channels-last",
  },
  {
    source: "channels-last bf16 + fp32 stats",
    shape: [3, 6, 4, 5],
    group: 2,
    dtype: "bfloat16",
    statsDType: "float32",
    gamma: true,
    layout: "channels-last",
  },
  {
    source: "strided last dim",
    shape: [2, 4, 6],
    group: 2,
    dtype: "float32",
    gamma: true,
    layout: "strided",
  },
  // CANN doc: gradOut/input may have any rank 0-8 with numel N*C*HxW (flat tensors).
  {
    source: "flat 1-D input with explicit N, C, HxW",
    shape: [2, 4, 3],
    group: 2,
    dtype: "float32",
    gamma: true,
    flatShape: [24],
  },
  // Large |mean| (centred vs uncentred sums).
  {
    source: "large mean fp32",
    shape: [2, 4, 64],
    group: 2,
    dtype: "float32",
    gamma: true,
    range: [1000, 1001],
  },
];

function runCase(c: GnCase, ctx: BackendContext, seed: number): void {
  const target = ctx.device;
  const statsDType = c.statsDType ?? c.dtype;
  const [N, C] = c.shape;
  const HxW = c.shape.slice(2).reduce((a, b) => a * b, 1);
  const [lo, hi] = c.range ?? [-2, 2];
  const eps = c.eps ?? 1e-5;
  let gradOut = c.onesGrad ? Tensor.ones(c.shape, c.dtype) : uniform(c.shape, c.dtype, seed, -1, 1);
  let input = uniform(c.shape, c.dtype, seed + 1, lo, hi);
  const st = groupStats64(f64(input), N, C, HxW, c.group);
  const mean = fromValues(st.mean, [N, c.group], statsDType);
  const rstd = fromValues(st.variance.map((v) => 1 / Math.sqrt(v + eps)), [N, c.group], statsDType);
  const gamma = c.gamma ? uniform([C], statsDType, seed + 2, 0.5, 1.5) : undefined;
  if (c.layout === "channels-last") {
    gradOut = channelsLast(gradOut);
    input = channelsLast(input);
  } else if (c.layout === "strided") {
    gradOut = strided(gradOut);
    input = strided(input);
  }
  if (c.flatShape) {
    gradOut = gradOut.reshape(c.flatShape);
    input = input.reshape(c.flatShape);
  }
  const mask = c.mask ?? [true, true, true];
  const call = () =>
    groupNormBackward({
      gradOut: on(gradOut, target),
      input: on(input, target),
      mean: on(mean, target),
      rstd: on(rstd, target),
      gamma: onOpt(gamma, target),
      ...(c.flatShape ? { N, C, HxW } : {}),
      group: c.group,
      outputMask: mask,
    });
  const e = groupNormBackward64(
    f64(gradOut),
    f64(input),
    f64(mean),
    f64(rstd),
    gamma ? f64(gamma) : undefined,
    N,
    C,
    HxW,
    c.group,
  );
  const label = `${c.source} ${JSON.stringify(c.shape)} ${c.dtype}/${statsDType} g${c.group}`;
  const mixed = statsDType !== c.dtype;
  if (
    !chipAccepts(ctx.soc, "aclnnGroupNormBackward", [c.dtype, statsDType], {
      mixedPrecision: mixed,
    })
  ) {
    assertChipRefuses(ctx, call, "mean");
    return;
  }
  const r = call();
  if (mask[0]) {
    assert.deepEqual(r.gradInput?.shape, input.shape, `${label} gradInput shape`);
    assert.equal(r.gradInput?.dtype, c.dtype, `${label} gradInput dtype`);
    expectClose(r.gradInput, e.gradInput, `${label} gradInput`);
  } else assert.equal(r.gradInput, null, `${label} gradInput masked`);
  if (mask[1]) {
    assert.equal(r.gradGamma?.dtype, statsDType, `${label} gradGamma dtype (mean's)`);
    expectClose(r.gradGamma, e.gradGamma, `${label} gradGamma`);
  } else assert.equal(r.gradGamma, null, `${label} gradGamma masked`);
  if (mask[2]) expectClose(r.gradBeta, e.gradBeta, `${label} gradBeta`);
  else assert.equal(r.gradBeta, null, `${label} gradBeta masked`);
}

forEachBackend("gn backward: peer cases vs float64 reference", (ctx) => {
  runAll(CASES, (c, k) => runCase(c, ctx, 900 + 10 * k));
});

// torch_npu's assertion for backward(ones): with dy = 1 and no affine, dL/dx = 0 (a GroupNorm
// output's per-group mean is constant). Checked on the fp32 [20,6,10,10] row directly.
forEachBackend("gn backward: torch_npu ones-grad gives zero gradInput", ({ device: target }) => {
  const shape = [20, 6, 10, 10];
  const x = uniform(shape, "float32", 77, -100, 100);
  const st = groupStats64(f64(x), 20, 6, 100, 2);
  const r = groupNormBackward({
    gradOut: on(Tensor.ones(shape), target),
    input: on(x, target),
    mean: on(fromValues(st.mean, [20, 2], "float32"), target),
    rstd: on(
      fromValues(st.variance.map((v) => 1 / Math.sqrt(v + 1e-5)), [20, 2], "float32"),
      target,
    ),
    group: 2,
  });
  expectClose(r.gradInput, new Float64Array(12000), "dx of ones");
  expectClose(r.gradBeta, new Array(6).fill(2000), "dbeta of ones");
});

// Empty inputs. PyTorch OpInfo sample ((0, 2), 1): N = 0; and HxW = 0 (a zero spatial dim).
// gradInput is empty; gradGamma/gradBeta are C zeros.
forEachBackend("gn backward: empty N=0 and HxW=0", ({ device: target }) => {
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    for (const [shape, group] of [[[0, 2], 1], [[2, 4, 0], 2]] as const) {
      const N = shape[0];
      const C = shape[1];
      const r = groupNormBackward({
        gradOut: on(Tensor.zeros(shape, dtype), target),
        input: on(Tensor.zeros(shape, dtype), target),
        mean: on(Tensor.zeros([N, group], dtype), target),
        rstd: on(Tensor.ones([N, group], dtype), target),
        gamma: on(Tensor.ones([C], dtype), target),
        group,
      });
      const label = `${dtype} ${JSON.stringify(shape)}`;
      assert.deepEqual(r.gradInput?.shape, shape, `${label} gradInput shape`);
      expectClose(r.gradGamma, new Float64Array(C), `${label} gradGamma`);
      expectClose(r.gradBeta, new Float64Array(C), `${label} gradBeta`);
    }
  }
});
