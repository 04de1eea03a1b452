/**
 * The software CANN runs aclnnLayerNorm and aclnnLayerNormWithImplMode
 * (tests/sim/sim_ops_layer_norm.c; rules and sources in tests/sim/README_norm.md), called raw
 * through the library's own symbol table (tests/fixtures/sim_norm_raw.ts): values against a
 * float64 replay of the documented formula, CANN's intermediate dtypes per SoC, empty inputs,
 * and the validation codes and texts (aclnnLayerNormBackward: sim_layer_norm_backward.test.ts).
 * Needs the built simulator (`deno task build:sim`).
 */

import assert from "node:assert/strict";
import { Random } from "../../src/tensor/random.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { assertClose } from "../helpers/assert.ts";
import { layerNorm, rounded } from "../oracle/row_norms.ts";
import { SIM_REPLAY } from "../helpers/tolerance.ts";
import {
  type CallResult,
  type DevTensor,
  expectFail,
  expectOk,
  type NormSim,
  withSim,
  withSoc,
} from "../fixtures/sim_norm_raw.ts";

const EPS = 1e-5;
const EPS_F = Math.fround(EPS); // the operators' epsilon attribute is a float

function data(n: number, seed: number, dtype: DType = "float32", shift = 0): number[] {
  const rng = new Random(seed);
  return rounded(Array.from({ length: n }, () => shift + 2 * rng.normal()), dtype);
}

interface Forward {
  x: DevTensor;
  y: DevTensor;
  mean: DevTensor;
  rstd: DevTensor;
  result: CallResult;
}

/** The tensors of one aclnnLayerNorm call; weight, bias, mean and rstd NULL when absent. */
interface LayerNormTensors {
  x: DevTensor;
  norm: number[];
  y: DevTensor;
  mean?: DevTensor;
  rstd?: DevTensor;
  weight?: DevTensor;
  bias?: DevTensor;
}

/** aclnnLayerNorm (eps EPS) on tensors already made. */
function callLayerNorm(sim: NormSim, t: LayerNormTensors): CallResult {
  return sim.call("aclnnLayerNorm", [
    t.x.handle,
    sim.intArray(t.norm),
    t.weight?.handle ?? null,
    t.bias?.handle ?? null,
    EPS,
    t.y.handle,
    t.mean?.handle ?? null,
    t.rstd?.handle ?? null,
  ]);
}

/** aclnnLayerNorm on [rows.., cols..] data; statistics shaped [A1..Ai, 1..1] in `statType`. */
function forward(
  sim: NormSim,
  xs: number[],
  shape: number[],
  norm: number[],
  dtype: DType,
  opts: { weight?: DevTensor; bias?: DevTensor; statType?: DType; outType?: DType } = {},
): Forward {
  const x = sim.tensor(xs, shape, dtype);
  const y = sim.tensor(null, shape, opts.outType ?? dtype);
  const statShape = shape.map((d, i) => i < shape.length - norm.length ? d : 1);
  const mean = sim.tensor(null, statShape, opts.statType ?? "float32");
  const rstd = sim.tensor(null, statShape, opts.statType ?? "float32");
  const result = callLayerNorm(sim, {
    x,
    norm,
    y,
    mean,
    rstd,
    weight: opts.weight,
    bias: opts.bias,
  });
  return { x, y, mean, rstd, result };
}

Deno.test("aclnnLayerNorm float32: y, mean and rstd over the trailing normalizedShape dims", () => {
  withSim((sim) => {
    for (const norm of [[3, 4], [4]]) {
      const rows = norm.length === 2 ? 2 : 6;
      const cols = 24 / rows;
      const xs = data(24, 1, "float32", 3);
      const ws = data(cols, 2);
      const bs = data(cols, 3);
      const weight = sim.tensor(ws, norm);
      const bias = sim.tensor(bs, norm);
      const f = forward(sim, xs, [2, 3, 4], norm, "float32", { weight, bias });
      expectOk(f.result, `normalizedShape [${norm}]`);
      assert.ok(f.result.workspaceSize > 0n, "a computing plan asks for a workspace");
      const ref = layerNorm(xs, rows, cols, EPS_F, ws, bs);
      assertClose(sim.read(f.y), rounded(ref.y, "float32"), SIM_REPLAY, `y [${norm}]`);
      assertClose(sim.read(f.mean), rounded(ref.mean, "float32"), SIM_REPLAY, `mean [${norm}]`);
      assertClose(sim.read(f.rstd), rounded(ref.rstd, "float32"), SIM_REPLAY, `rstd [${norm}]`);
      // Biased variance: mean((x - mean)^2), not the n - 1 estimate.
      const unbiased = 1 / Math.sqrt(((1 / ref.rstd[0] ** 2 - EPS_F) * cols) / (cols - 1) + EPS_F);
      assert.ok(Math.abs(sim.read(f.rstd)[0] - unbiased) > 1e-3 * unbiased);
    }
    // Without weight and bias: ones and zeros. A transposed (non-contiguous) input view.
    const xs = data(12, 4);
    const x = sim.tensor(xs, [3, 4], "float32", { strides: [1, 3] });
    const y = sim.tensor(null, [3, 4]);
    expectOk(
      callLayerNorm(sim, { x, norm: [4], y }),
      "no weight, bias, statistics",
    );
    const logical = sim.read(x);
    assertClose(
      sim.read(y),
      rounded(layerNorm(logical, 3, 4, EPS_F).y, "float32"),
      SIM_REPLAY,
      "view",
    );
  });
});

Deno.test("aclnnLayerNorm: mean/rstd pass through LayerNormV3's weight/bias dtype, or LayerNormV4's float", () => {
  // ops-nn aclnn_layer_norm.cpp: regbase and IsV4SocCheck take LayerNormV4 (float32 statistics);
  // otherwise LayerNormV3 returns mean in the weight's dtype and rstd in the bias's.
  withSim((sim) => {
    const run = (soc: string, cols: number, wType: DType) =>
      withSoc(soc, () => {
        const xs = data(2 * cols, 5, "float16", 0.1234567);
        const weight = sim.tensor(rounded(data(cols, 6), wType), [cols], wType);
        const bias = sim.tensor(rounded(data(cols, 7), wType), [cols], wType);
        const f = forward(sim, xs, [2, cols], [cols], "float16", { weight, bias });
        expectOk(f.result, `${soc} N=${cols} weight ${wType}`);
        const ref = layerNorm(xs, 2, cols, EPS_F, sim.read(weight), sim.read(bias));
        return { f, ref };
      });
    // Ascend910B4 (DAV_2201), N = 32: LayerNormV3, statistics rounded to float16 first.
    const v3 = run("Ascend910B4", 32, "float16");
    assertClose(sim.read(v3.f.mean), rounded(v3.ref.mean, "float16"), SIM_REPLAY, "V3 mean");
    assertClose(sim.read(v3.f.rstd), rounded(v3.ref.rstd, "float16"), SIM_REPLAY, "V3 rstd");
    assert.notDeepEqual(rounded(v3.ref.mean, "float16"), rounded(v3.ref.mean, "float32"));
    assertClose(sim.read(v3.f.y), rounded(v3.ref.y, "float16"), SIM_REPLAY, "V3 y");
    // N = 12 (not a multiple of 16, < 64): IsV4SocCheck's transpose template, float statistics.
    const v4 = run("Ascend910B4", 12, "float16");
    assertClose(sim.read(v4.f.mean), rounded(v4.ref.mean, "float32"), SIM_REPLAY, "V4 mean");
    // A float32 weight and bias: LayerNormV3 statistics in float32.
    const f32w = run("Ascend910B4", 32, "float32");
    assertClose(
      sim.read(f32w.f.mean),
      rounded(f32w.ref.mean, "float32"),
      SIM_REPLAY,
      "fp32 weight",
    );
    // Regbase (Ascend950): always LayerNormV4.
    const regbase = run("Ascend950PR_9599", 32, "float16");
    assertClose(sim.read(regbase.f.rstd), rounded(regbase.ref.rstd, "float32"), SIM_REPLAY, "950");
  });
});

Deno.test("aclnnLayerNorm, empty input: N == 0 writes mean 0 and rstd NaN; M == 0 writes nothing", () => {
  withSim((sim) => {
    const x = sim.tensor([], [2, 0]);
    const y = sim.tensor([], [2, 0]);
    const mean = sim.tensor([7, 7], [2, 1]);
    const rstd = sim.tensor([7, 7], [2, 1]);
    const r = callLayerNorm(sim, { x, norm: [0], y, mean, rstd });
    expectOk(r, "N == 0");
    assert.equal(r.workspaceSize, 0n);
    assert.deepEqual(sim.read(mean), [0, 0]);
    assert.ok(sim.read(rstd).every(Number.isNaN), "rstd NaN");
    const x0 = sim.tensor([], [0, 4]);
    const m0 = sim.tensor([], [0, 1]);
    const r0 = callLayerNorm(sim, { x: x0, norm: [4], y: sim.tensor([], [0, 4]), mean: m0 });
    expectOk(r0, "M == 0");
    assert.equal(r0.workspaceSize, 0n);
  });
});

Deno.test("aclnnLayerNorm validation: CANN's codes and texts, per SoC", () => {
  withSim((sim) => {
    const x = sim.tensor(data(24, 8), [2, 3, 4]);
    const y = sim.tensor(null, [2, 3, 4]);
    const call = (
      over: Partial<Record<number, unknown>>,
      op: "aclnnLayerNorm" = "aclnnLayerNorm",
    ) => {
      const args: unknown[] = [x.handle, sim.intArray([4]), null, null, EPS, y.handle, null, null];
      for (const [i, v] of Object.entries(over)) args[Number(i)] = v;
      return sim.call(op, args);
    };
    expectFail(
      call({ 0: null }),
      161001,
      "aclnnLayerNorm: Expected a value of type [aclTensor] for argument [input] but instead found nullptr.",
    );
    expectFail(call({ 1: null }), 161001, "for argument [normalizedShape]");
    expectFail(call({ 5: null }), 161001, "for argument [out]");
    expectFail(
      call({ 1: sim.intArray([5]) }),
      161002,
      "Expected normalized index [0] shape [5] be equal to input index [2] shape [4], but failed.",
    );
    expectFail(
      call({ 1: sim.intArray([]) }),
      161002,
      "normalizedShape len [0] to be greater than [1]",
    );
    expectFail(
      call({ 1: sim.intArray([1, 2, 3, 4]) }),
      161002,
      "The input tensor must have at least 4 dimensions.",
    );
    expectFail(
      call({ 1: sim.intArray([3, 4]), 2: sim.tensor(data(4, 9), [4]).handle }),
      161002,
      "Expected 2 dimension input, but got weightOptional with sizes [4].",
    );
    expectFail(
      call({ 2: sim.tensor(data(4, 9, "float16"), [4], "float16").handle }),
      161002,
      "Expected both tensors to have same dtype, but found weightOptional DT_FLOAT16 and input DT_FLOAT.",
    );
    expectFail(
      call({ 5: sim.tensor(null, [2, 3, 5]).handle }),
      161002,
      "Expected tensor for input to have same size",
    );
    // Products: not the Atlas inference series; the Atlas training series without bfloat16.
    withSoc("Ascend310P1", () => expectFail(call({}), 161002, "not supported on SoC Ascend310P1"));
    // No LayerNorm document (nor any op definition) names the Ascend 350.
    withSoc("Ascend350_9599", () => expectFail(call({}), 161002, "Ascend350_9599"));
    const xb = sim.tensor(data(8, 10, "bfloat16"), [2, 4], "bfloat16");
    const yb = sim.tensor(null, [2, 4], "bfloat16");
    const bf16 = () => callLayerNorm(sim, { x: xb, norm: [4], y: yb });
    withSoc("Ascend910A", () =>
      expectFail(
        bf16(),
        161002,
        "Tensor input not implemented for DT_BF16, should be in dtype support list [DT_FLOAT16,DT_FLOAT,].",
      ));
    withSoc("Ascend310B1", () => expectFail(bf16(), 161002, "[DT_FLOAT16,DT_FLOAT,]"));
    withSoc("Ascend910B4", () => expectOk(bf16(), "bf16 on Atlas A2"));
    withSoc("Ascend310B1", () => expectOk(call({}), "float32 on Atlas 200I/500 A2"));
    // Statistics shapes: checked on DAV_3510 only (161002); everywhere the result [2, 3, 1] is
    // copied with l0op::ViewCopy, which refuses another shape (561103).
    const m23 = sim.tensor(null, [2, 3]);
    expectFail(
      call({ 6: m23.handle }),
      161002,
      "Expected meanOutOptional dimNum [2] to be equal to input dimNum [3]",
    );
    withSoc("Ascend910B4", () => {
      for (const [slot, shape] of [[6, [6]], [6, [2, 3]], [7, [6, 1]], [7, [3]]] as const) {
        const t = sim.tensor(null, shape);
        expectFail(
          call({ [slot]: t.handle }),
          561103,
          `Input tensor's shape[[2, 3, 1]] should be same with output's shape[[${
            shape.join(", ")
          }]].`,
          `slot ${slot} [${shape}] off DAV_3510`,
        );
        assert.ok(sim.read(t).every(Number.isNaN), "nothing written");
      }
    });
    // An empty meanOut passes DAV_3510's shape check but not the ViewCopy.
    expectFail(call({ 6: sim.tensor(null, [0]).handle }), 561103, "output's shape[[0]]");
    const m231 = sim.tensor(null, [2, 3, 1]);
    withSoc("Ascend910B4", () => expectOk(call({ 6: m231.handle }), "mean [2, 3, 1]"));
    assertClose(
      sim.read(m231),
      rounded(layerNorm(sim.read(x), 6, 4, EPS_F).mean, "float32"),
      SIM_REPLAY,
      "m231",
    );
  });
});

Deno.test("aclnnLayerNorm: one row, any one-element meanOut / rstdOut off DAV_3510", () => {
  withSim((sim) => {
    const xs = data(4, 13);
    const x = sim.tensor(xs, [1, 4]);
    const ref = layerNorm(xs, 1, 4, EPS_F);
    const run = (shape: number[]) => {
      const mean = sim.tensor(null, shape);
      const rstd = sim.tensor(null, shape);
      const y = sim.tensor(null, [1, 4]);
      const args = [
        x.handle,
        sim.intArray([4]),
        null,
        null,
        EPS,
        y.handle,
        mean.handle,
        rstd.handle,
      ];
      return { r: sim.call("aclnnLayerNorm", args), mean, rstd };
    };
    for (const shape of [[1], [1, 1, 1], []]) {
      withSoc("Ascend910B4", () => {
        const { r, mean, rstd } = run(shape);
        expectOk(r, `[${shape}] for x [1, 4]`);
        assertClose(sim.read(mean), rounded(ref.mean, "float32"), SIM_REPLAY, `mean [${shape}]`);
        assertClose(sim.read(rstd), rounded(ref.rstd, "float32"), SIM_REPLAY, `rstd [${shape}]`);
      });
    }
    // DAV_3510 checks the rank first (CheckMeanRstdOutputShape).
    expectFail(
      run([1]).r,
      161002,
      "Expected meanOutOptional dimNum [1] to be equal to input dimNum [2]",
    );
    // Rows of no element: the fill writes every element of a meanOut of any shape.
    const x0 = sim.tensor([], [2, 0]);
    const mean = sim.tensor([7, 7, 7], [3]);
    withSoc("Ascend910B4", () =>
      expectOk(
        callLayerNorm(sim, { x: x0, norm: [0], y: sim.tensor([], [2, 0]), mean }),
        "N == 0, meanOut [3]",
      ));
    assert.deepEqual(sim.read(mean), [0, 0, 0]);
  });
});

Deno.test("aclnnLayerNormWithImplMode: implMode 0, 1, 2 only; KEEP_FP16 needs float16 inputs", () => {
  withSim((sim) => {
    const run = (dtype: DType, mode: number) => {
      const x = sim.tensor(data(8, 11, dtype), [2, 4], dtype);
      const y = sim.tensor(null, [2, 4], dtype);
      const args = [x.handle, sim.intArray([4]), null, null, EPS, y.handle, null, null, mode];
      return { r: sim.call("aclnnLayerNormWithImplMode", args), x, y };
    };
    expectFail(
      run("float32", 3).r,
      161002,
      "aclnnLayerNormWithImplMode: Expected implMode to be in [0, 1, 2], but now got [3].",
    );
    expectFail(run("float32", 2).r, 161002, "KEEP_FP16 only support all input dtype float16!");
    for (const mode of [0, 1, 2]) {
      const { r, x, y } = run("float16", mode);
      expectOk(r, `implMode ${mode}`);
      assertClose(
        sim.read(y),
        rounded(layerNorm(sim.read(x), 2, 4, EPS_F).y, "float16"),
        SIM_REPLAY,
        `mode ${mode}`,
      );
    }
    // aclnnLayerNorm's phase 1 is WithImplMode's with implMode 0: either phase 2 runs its executor.
    const x = sim.tensor(data(8, 12), [2, 4]);
    const y = sim.tensor(null, [2, 4]);
    const args = [x.handle, sim.intArray([4]), null, null, EPS, y.handle, null, null];
    expectOk(sim.call("aclnnLayerNorm", args, "aclnnLayerNormWithImplMode"), "cross phase 2");
    assertClose(
      sim.read(y),
      rounded(layerNorm(sim.read(x), 2, 4, EPS_F).y, "float32"),
      SIM_REPLAY,
      "cross",
    );
  });
});
