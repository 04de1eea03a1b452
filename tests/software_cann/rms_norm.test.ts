/**
 * The software CANN runs aclnnRmsNorm, aclnnRmsNormGrad and aclnnAddRmsNorm
 * (tests/sim/sim_ops_rms_norm.c, sim_ops_add_rms_norm.c; rules and sources in
 * tests/sim/README_norm.md), called raw through the library's own symbol table
 * (tests/fixtures/sim_norm_raw.ts): values against float64 replays of the documented formulas
 * and the kernels' roundings, gradients against finite differences of the forward, and the
 * validation codes and texts of the generated (RmsNorm, RmsNormGrad) and hand-written
 * (AddRmsNorm) phase 1. Needs the built simulator (`deno task build:sim`).
 */

import assert from "node:assert/strict";
import type { DType } from "../../src/tensor/dtype.ts";
import { Random } from "../../src/tensor/random.ts";
import { assertClose } from "../helpers/assert.ts";
import { dot, finiteDifferences, rmsNorm, rmsNormBackward, rounded } from "../oracle/row_norms.ts";
import { SIM_REPLAY, TOLERANCE } from "../helpers/tolerance.ts";
import {
  type CallResult,
  type DevTensor,
  expectFail,
  expectOk,
  FORMAT,
  type NormSim,
  withSim,
  withSoc,
} from "../fixtures/sim_norm_raw.ts";

const EPS = 1e-6;
const EPS_F = Math.fround(EPS); // a float attribute on every path

function data(n: number, seed: number, dtype: DType = "float32"): number[] {
  const rng = new Random(seed);
  return rounded(Array.from({ length: n }, () => 0.5 + 2 * rng.normal()), dtype);
}

/** aclnnRmsNorm(x, gamma, EPS, y, rstd) with fresh outputs. */
function rms(
  sim: NormSim,
  x: DevTensor,
  gamma: DevTensor | null,
  rstdShape: number[],
  yType: DType = x.dtype,
): { y: DevTensor; rstd: DevTensor; r: CallResult } {
  const y = sim.tensor(null, x.shape, yType);
  const rstd = sim.tensor(null, rstdShape);
  const r = sim.call("aclnnRmsNorm", [x.handle, gamma?.handle ?? null, EPS, y.handle, rstd.handle]);
  return { y, rstd, r };
}

Deno.test("aclnnRmsNorm: y = x * rstd * gamma over gamma's dims, rounded once; rstd float32", () => {
  withSim((sim) => {
    const cases: [DType, DType, string, number[]][] = [
      ["float32", "float32", "Ascend950PR_9599", [8]],
      ["float32", "float32", "Ascend950PR_9599", [3, 8]],
      ["float16", "float32", "Ascend910B4", [8]], // mixed: 16-bit x, float32 gamma
      ["float16", "float16", "Ascend310P1", [8]],
      ["bfloat16", "bfloat16", "Ascend910_9392", [8]],
    ];
    for (const [xType, gType, soc, gShape] of cases) {
      withSoc(soc, () => {
        const xs = data(48, 1, xType);
        const gs = data(gShape.reduce((a, b) => a * b), 2, gType);
        const x = sim.tensor(xs, [2, 3, 8], xType);
        const rstdShape = gShape.length === 1 ? [2, 3, 1] : [2, 1, 1];
        const { y, rstd, r } = rms(sim, x, sim.tensor(gs, gShape, gType), rstdShape);
        const what = `${soc} x ${xType} gamma ${gType} [${gShape}]`;
        expectOk(r, what);
        const rows = gShape.length === 1 ? 6 : 2;
        const ref = rmsNorm(xs, rows, 48 / rows, EPS_F, gs);
        assertClose(sim.read(y), rounded(ref.y, xType), SIM_REPLAY, `y ${what}`);
        assertClose(sim.read(rstd), rounded(ref.rstd, "float32"), SIM_REPLAY, `rstd ${what}`);
      });
    }
    // No rows at all: every output is empty, the launch is skipped.
    const e = rms(sim, sim.tensor([], [0, 8]), sim.tensor(data(8, 3), [8]), [0, 1]);
    expectOk(e.r, "empty");
    assert.equal(e.r.workspaceSize, 0n);
  });
});

Deno.test("aclnnRmsNorm validation: generated-operator NULL, dtype/format, tiling, product rules", () => {
  withSim((sim) => {
    const x = sim.tensor(data(16, 4), [2, 8]);
    const g = sim.tensor(data(8, 5), [8]);
    expectFail(rms(sim, x, null, [2, 1]).r, 161001, "aclnnRmsNorm: Check gamma != nullptr failed");
    // Atlas training (the docs; its definition registers a binary), Atlas 200I/500 A2.
    withSoc(
      "Ascend910A",
      () => expectFail(rms(sim, x, g, [2, 1]).r, 161002, "not supported on SoC Ascend910A"),
    );
    withSoc(
      "Ascend310B1",
      () => expectFail(rms(sim, x, g, [2, 1]).r, 161002, "not supported on SoC Ascend310B1"),
    );
    // The (dtype, format) rows of the SoC's OpDef configuration.
    const xb = sim.tensor(data(16, 6, "bfloat16"), [2, 8], "bfloat16");
    const gb = sim.tensor(data(8, 7, "bfloat16"), [8], "bfloat16");
    withSoc("Ascend310P1", () =>
      expectFail(
        rms(sim, xb, gb, [2, 1]).r,
        161002,
        "details of parameter are x(DT_BF16, ND), gamma(DT_BF16, ND), yOut(DT_BF16, ND), rstdOut(DT_FLOAT, ND)",
      ));
    const xh = sim.tensor(data(16, 8, "float16"), [2, 8], "float16");
    withSoc(
      "Ascend310P1",
      () => expectFail(rms(sim, xh, g, [2, 1]).r, 161002, "inconsistent with that defined"),
    );
    expectFail(rms(sim, x, gb, [2, 1]).r, 161002, "gamma(DT_BF16, ND)");
    expectFail(rms(sim, x, g, [2, 1], "float16").r, 161002, "yOut(DT_FLOAT16, ND)");
    const xNC = sim.tensor(data(16, 9), [2, 8], "float32", { format: FORMAT.NC });
    expectFail(rms(sim, xNC, g, [2, 1]).r, 161002, "x(DT_FLOAT, NC)");
    const x4 = sim.tensor(data(32, 10), [2, 2, 1, 8], "float32", { format: FORMAT.NCHW });
    expectOk(rms(sim, x4, g, [2, 2, 1, 1]).r, "NCHW counts as ND");
    // The tiling's shape and epsilon checks: 561002.
    expectFail(
      rms(sim, x, sim.tensor(data(4, 11), [4]), [2, 1]).r,
      561002,
      "Parameters gamma and x of RmsNorm have incorrect shapes [4] and [2,8]. Reason: The shape of input gamma must " +
        "be the same as the shape consisting of the last 1 axes of input x",
    );
    expectFail(
      rms(sim, x, g, [2, 3]).r,
      561002,
      "Reason: The 1th axis of output rstd must be 1 or equal to the 1th axis of input x",
    );
    const neg = sim.call("aclnnRmsNorm", [
      x.handle,
      g.handle,
      -1e-3,
      sim.tensor(null, [2, 8]).handle,
      sim.tensor(null, [2, 1]).handle,
    ]);
    expectFail(neg, 561002, "Epsilon less than zero, please check.");
    assert.ok(neg.text?.includes("Failed to execute tiling function"), neg.text ?? "");
    // [aclsim]: one rstd value per row.
    expectFail(rms(sim, x, g, [1, 1]).r, 161002, "[aclsim] rstdOut has 1 elements");
  });
});

Deno.test("aclnnRmsNormGrad: the documented formulas, and finite differences of aclnnRmsNorm's forward", () => {
  withSim((sim) => {
    const [rows, cols] = [6, 8];
    const xs = data(48, 12);
    const gs = data(cols, 13);
    const dys = data(48, 14);
    const x = sim.tensor(xs, [2, 3, 8]);
    const gamma = sim.tensor(gs, [8]);
    const fwd = rms(sim, x, gamma, [2, 3]);
    expectOk(fwd.r, "forward");
    const dx = sim.tensor(null, [2, 3, 8]);
    const dg = sim.tensor(null, [8]);
    const dy = sim.tensor(dys, [2, 3, 8]);
    expectOk(
      sim.call("aclnnRmsNormGrad", [
        dy.handle,
        x.handle,
        fwd.rstd.handle,
        gamma.handle,
        dx.handle,
        dg.handle,
      ]),
      "grad",
    );
    const rs = sim.read(fwd.rstd);
    const ref = rmsNormBackward(dys, xs, rs, gs, rows, cols);
    assertClose(sim.read(dx), rounded(ref.dx, "float32"), SIM_REPLAY, "dx");
    assertClose(sim.read(dg), rounded(ref.dgamma, "float32"), SIM_REPLAY, "dgamma");
    const loss = (v: number[], g: number[]) => dot(dys, rmsNorm(v, rows, cols, EPS_F, g).y);
    assertClose(sim.read(dx), finiteDifferences((v) => loss(v, gs), xs), TOLERANCE.float32, "d/dx");
    assertClose(
      sim.read(dg),
      finiteDifferences((g) => loss(xs, g), gs),
      TOLERANCE.float32,
      "d/dgamma",
    );
    // float16 data with float32 gamma: dx in float16, dgamma float32.
    withSoc("Ascend910B4", () => {
      const h = (v: number[], s: number[]) => sim.tensor(rounded(v, "float16"), s, "float16");
      const [xh, dyh, dxh] = [h(xs, [6, 8]), h(dys, [6, 8]), sim.tensor(null, [6, 8], "float16")];
      const rstd = sim.tensor(rs, [6, 1]);
      expectOk(
        sim.call("aclnnRmsNormGrad", [
          dyh.handle,
          xh.handle,
          rstd.handle,
          gamma.handle,
          dxh.handle,
          dg.handle,
        ]),
        "fp16",
      );
      const r16 = rmsNormBackward(sim.read(dyh), sim.read(xh), rs, gs, rows, cols);
      assertClose(sim.read(dxh), rounded(r16.dx, "float16"), SIM_REPLAY, "dx fp16");
      assertClose(sim.read(dg), rounded(r16.dgamma, "float32"), SIM_REPLAY, "dgamma fp16");
    });
  });
});

Deno.test("aclnnRmsNormGrad: empty rows, shapes, products", () => {
  withSim((sim) => {
    const run = (
      dyShape: number[],
      gShape: number[],
      rShape: number[],
      dgType: DType = "float32",
    ) => {
      const dy = sim.tensor(null, dyShape);
      const x = sim.tensor(null, dyShape);
      const dg = sim.tensor(new Array(gShape.reduce((a, b) => a * b, 1)).fill(7), gShape, dgType);
      const r = sim.call("aclnnRmsNormGrad", [
        dy.handle,
        x.handle,
        sim.tensor(null, rShape).handle,
        sim.tensor(null, gShape).handle,
        sim.tensor(null, dyShape).handle,
        dg.handle,
      ]);
      return { r, dg };
    };
    // No rows: the regbase empty tiling zero-fills dgamma; the membase tiling refuses it.
    const e = run([0, 8], [8], [0]);
    expectOk(e.r, "empty on 950");
    assert.deepEqual(sim.read(e.dg), new Array(8).fill(0));
    withSoc(
      "Ascend910B4",
      () =>
        expectFail(
          run([0, 8], [8], [0]).r,
          561002,
          "Parameter dy of RmsNormGrad has incorrect shape size 0. Reason: Parameter dy does not support empty tensor",
        ),
    );
    expectFail(
      run([2, 8], [8], [3]).r,
      561002,
      "The shape of input rstd must be the same as the shape consisting of the first 1 axes of input x",
    );
    expectFail(
      run([2, 8], [4], [2]).r,
      561002,
      "Parameters gamma and dy of RmsNormGrad have incorrect shapes [4] and [2,8]",
    );
    expectFail(run([2, 8], [8], [2], "float16").r, 161002, "dgammaOut(DT_FLOAT16, ND)");
    withSoc(
      "Ascend910A",
      () => expectFail(run([2, 8], [8], [2]).r, 161002, "not supported on SoC Ascend910A"),
    );
    withSoc("Ascend310P1", () => expectOk(run([2, 8], [8], [2]).r, "float32 on 310P"));
  });
});

/** aclnnAddRmsNorm(x1, x2, gamma, EPS, y, rstd, x) with fresh outputs (null: NULL). */
function addRms(
  sim: NormSim,
  x1: DevTensor,
  x2: DevTensor,
  gamma: DevTensor,
  outs: { rstd?: number[] | null; x?: boolean; eps?: number },
) {
  const y = sim.tensor(null, x1.shape, x1.dtype);
  const rstd = outs.rstd
    ? sim.tensor(new Array(outs.rstd.reduce((a, b) => a * b, 1)).fill(7), outs.rstd)
    : null;
  const xo = outs.x === false ? null : sim.tensor(null, x1.shape, x1.dtype);
  const r = sim.call("aclnnAddRmsNorm", [
    x1.handle,
    x2.handle,
    gamma.handle,
    outs.eps ?? EPS,
    y.handle,
    rstd?.handle ?? null,
    xo?.handle ?? null,
  ]);
  return { r, y, rstd, xo };
}

Deno.test("aclnnAddRmsNorm: x = x1 + x2 rounded to the dtype, then RMSNorm with the kernels' roundings", () => {
  withSim((sim) => {
    for (
      const [dtype, soc] of [["float32", "Ascend950PR_9599"], ["float16", "Ascend910B4"], [
        "bfloat16",
        "Ascend910_9392",
      ]] as const
    ) {
      withSoc(soc, () => {
        const [a, b, gs] = [data(48, 20, dtype), data(48, 21, dtype), data(8, 22, dtype)];
        const t = (v: number[], s: number[]) => sim.tensor(v, s, dtype);
        const { r, y, rstd, xo } = addRms(sim, t(a, [6, 8]), t(b, [6, 8]), t(gs, [8]), {
          rstd: [6, 1],
        });
        expectOk(r, `${dtype} on ${soc}`);
        const x = rounded(a.map((v, i) => v + b[i]), dtype);
        const ref = rmsNorm(x, 6, 8, EPS_F, gs, dtype === "float32" ? undefined : dtype);
        assertClose(sim.read(xo!), x, SIM_REPLAY, `xOut ${dtype}`);
        assertClose(sim.read(rstd!), rounded(ref.rstd, "float32"), SIM_REPLAY, `rstd ${dtype}`);
        assertClose(sim.read(y), rounded(ref.y, dtype), SIM_REPLAY, `y ${dtype}`);
        if (dtype !== "float32") {
          // The rounding of x * rstd before the gamma product changes some of these values.
          const once = rounded(rmsNorm(x, 6, 8, EPS_F, gs).y, dtype);
          assert.notDeepEqual(sim.read(y), once, `${dtype}: y differs from a single rounding`);
        }
      });
    }
  });
});

Deno.test("aclnnAddRmsNorm: PRE/POST modes, validation, 310P's rstd", () => {
  withSim((sim) => {
    const h = (seed: number, s: number[], dtype: DType = "float16") =>
      sim.tensor(data(s.reduce((a, b) => a * b), seed, dtype), s, dtype);
    const [x1, x2] = [h(30, [4, 8]), h(31, [4, 8])];
    // PRE (xOut, no rstdOut) and POST (neither): gamma [1, D], the last dim normalized.
    const g2 = h(32, [1, 8]);
    // Ascend 950 (the default SoC) keeps the float sum for rstd and y and rounds y once.
    const sum = sim.read(x1).map((v, i) => v + sim.read(x2)[i]);
    const x = rounded(sum, "float16");
    const ref = rmsNorm(sum, 4, 8, EPS_F, sim.read(g2));
    const pre = addRms(sim, x1, x2, g2, { rstd: null });
    expectOk(pre.r, "PRE");
    assertClose(sim.read(pre.y), rounded(ref.y, "float16"), SIM_REPLAY, "PRE y");
    assertClose(sim.read(pre.xo!), x, SIM_REPLAY, "PRE x");
    const post = addRms(sim, x1, x2, g2, { rstd: null, x: false });
    expectOk(post.r, "POST");
    assertClose(sim.read(post.y), rounded(ref.y, "float16"), SIM_REPLAY, "POST y");
    const [f1, f2] = [h(33, [4, 8], "float32"), h(34, [4, 8], "float32")];
    expectFail(
      addRms(sim, f1, f2, h(35, [1, 8], "float32"), { rstd: null }).r,
      161002,
      "Tensor inputTensor.x1 not implemented for DT_FLOAT, should be in dtype support list [DT_FLOAT16,DT_BF16,].",
    );
    expectFail(
      addRms(sim, x1, x2, h(36, [8]), { rstd: null }).r,
      561103,
      "Parameter gamma of AddRmsNorm has incorrect shape dim 1. It should be 2.",
    );
    // ADD mode checks.
    const g = h(37, [8]);
    expectFail(
      addRms(sim, x1, x2, g, { rstd: [4, 1], x: false }).r,
      161001,
      "Expected a value of type [aclTensor] for argument [outputTensor.xOut] but instead found nullptr.",
    );
    expectFail(
      addRms(sim, x1, x2, h(38, [8], "float32"), { rstd: [4, 1] }).r,
      161002,
      "Expected both tensors to have same dtype, but found inputTensor.x1 DT_FLOAT16 and inputTensor.gamma DT_FLOAT.",
    );
    expectFail(
      addRms(sim, x1, h(39, [4, 4]), h(40, [4]), { rstd: [4, 1] }).r,
      161002,
      "Expected tensor for inputTensor.x1 to have same size as tensor for inputTensor.x2",
    );
    const bad = addRms(sim, x1, x2, h(41, [4]), { rstd: [4, 1] });
    expectFail(
      bad.r,
      561103,
      "Parameters gamma and x1 of AddRmsNorm have incorrect shapes [4] and [4,8]. Reason: The shape of gamma should be equal to the last 1 dim of x1",
    );
    assert.ok(
      bad.r.text?.includes("AddRmsNorm ADD_TO_LAUNCHER_LIST_AICORE failed."),
      bad.r.text ?? "",
    );
    expectFail(
      addRms(sim, x1, x2, g, { rstd: [4, 1], eps: -1 }).r,
      561103,
      "Parameter epsilon of AddRmsNorm has incorrect value -1.000000. It should be greater than or equal to zero.",
    );
    withSoc(
      "Ascend910A",
      () =>
        expectFail(
          addRms(sim, x1, x2, g, { rstd: [4, 1] }).r,
          161002,
          "not supported on SoC Ascend910A",
        ),
    );
    // Atlas inference series: the kernel never stores rstd (it keeps its 7s); y and x are written.
    withSoc("Ascend310P1", () => {
      const p = addRms(sim, x1, x2, g, { rstd: [4, 1] });
      expectOk(p.r, "310P");
      assert.deepEqual(sim.read(p.rstd!), [7, 7, 7, 7]);
      assertClose(
        sim.read(p.y),
        rounded(rmsNorm(x, 4, 8, EPS_F, sim.read(g), "float16").y, "float16"),
        SIM_REPLAY,
        "310P y",
      );
    });
  });
});
