/**
 * The software CANN runs aclnnGemmaRmsNorm (tests/sim/sim_ops_gemma_rms_norm.c; rules and sources
 * in tests/sim/README_norm.md), called raw through the library's own symbol table
 * (tests/fixtures/sim_norm_raw.ts): values against a float64 replay of the documented formula
 * (1 + gamma in float, y rounded once), and the codes and texts of the generated phase 1 and of
 * Tiling4GemmaRmsNorm. Needs the built simulator (`deno task build:sim`).
 */

import assert from "node:assert/strict";
import type { DType } from "../../src/tensor/dtype.ts";
import { Random } from "../../src/tensor/random.ts";
import { assertClose } from "../helpers/assert.ts";
import { gemmaRmsNorm, rounded } from "../oracle/row_norms.ts";
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

const EPS = 1e-6;

function data(n: number, seed: number, dtype: DType = "float32"): number[] {
  const rng = new Random(seed);
  return rounded(Array.from({ length: n }, () => 0.5 * rng.normal()), dtype);
}

/** aclnnGemmaRmsNorm(x, gamma, eps, y, rstd) with fresh outputs. */
function gemma(
  sim: NormSim,
  x: DevTensor,
  gamma: DevTensor | null,
  rstdShape: number[],
  eps = EPS,
): { y: DevTensor; rstd: DevTensor; r: CallResult } {
  const y = sim.tensor(null, x.shape, x.dtype);
  const rstd = sim.tensor(null, rstdShape);
  const r = sim.call("aclnnGemmaRmsNorm", [
    x.handle,
    gamma?.handle ?? null,
    eps,
    y.handle,
    rstd.handle,
  ]);
  return { y, rstd, r };
}

Deno.test("aclnnGemmaRmsNorm: y = x * rstd * (1 + gamma), rounded once; rstd float32", () => {
  withSim((sim) => {
    const cases: [DType, DType, string][] = [
      ["float32", "float32", "Ascend950PR_9599"],
      ["float16", "float32", "Ascend950PR_9599"], // mixed: config_regbase only
      ["bfloat16", "bfloat16", "Ascend910B4"],
      ["float16", "float16", "Ascend910_9392"],
    ];
    for (const [xType, gType, soc] of cases) {
      withSoc(soc, () => {
        const xs = rounded(data(48, 1, xType).map((v) => v + 1), xType);
        const gs = data(8, 2, gType);
        const x = sim.tensor(xs, [2, 3, 8], xType);
        const { y, rstd, r } = gemma(sim, x, sim.tensor(gs, [8], gType), [2, 3, 1]);
        const what = `${soc} x ${xType} gamma ${gType}`;
        expectOk(r, what);
        const ref = gemmaRmsNorm(xs, 6, 8, Math.fround(EPS), gs);
        assertClose(sim.read(y), rounded(ref.y, xType), SIM_REPLAY, `y ${what}`);
        assertClose(sim.read(rstd), rounded(ref.rstd, "float32"), SIM_REPLAY, `rstd ${what}`);
      });
    }
    // Every output empty: the launch is skipped, before the tiling (a negative epsilon passes).
    const e = gemma(sim, sim.tensor([], [0, 8]), sim.tensor(data(8, 3), [8]), [0, 1], -1);
    expectOk(e.r, "empty");
    assert.equal(e.r.workspaceSize, 0n);
  });
});

Deno.test("aclnnGemmaRmsNorm: the generated phase 1 and Tiling4GemmaRmsNorm, in order", () => {
  withSim((sim) => {
    const x = sim.tensor(data(16, 4), [2, 8]);
    const g = sim.tensor(data(8, 5), [8]);
    const op = "aclnnGemmaRmsNorm";
    expectFail(gemma(sim, x, null, [2, 1]).r, 161001, `${op}: Check gamma != nullptr failed`);
    // Products: the docs list the Atlas inference / training series and 200I/500 A2 as unsupported.
    for (const soc of ["Ascend310P3", "Ascend910A", "Ascend310B1"]) {
      withSoc(
        soc,
        () => expectFail(gemma(sim, x, g, [2, 1]).r, 161002, `not supported on SoC ${soc}`),
      );
    }
    withSoc(
      "Ascend310P3",
      () =>
        expectFail(
          gemma(sim, x, g, [2, 1]).r,
          161002,
          "lists the Atlas inference series as unsupported",
        ),
    );
    // OpDef rows: a float32 gamma with 16-bit x on ascend950 only.
    const xh = sim.tensor(data(16, 6, "float16"), [2, 8], "float16");
    expectOk(gemma(sim, xh, g, [2, 1]).r, "950 mixed");
    withSoc(
      "Ascend910B4",
      () => expectFail(gemma(sim, xh, g, [2, 1]).r, 161002, "gamma(DT_FLOAT, ND)"),
    );
    // The tiling's texts name the op type GemmaRmsNorm; 561002.
    const g5 = sim.tensor(data(5, 7), [5]);
    expectFail(
      gemma(sim, x, g5, [2, 1]).r,
      561002,
      "Parameters gamma and x of GemmaRmsNorm have incorrect shapes",
    );
    expectFail(
      gemma(sim, x, g, [3, 1]).r,
      561002,
      "Parameter rstd of GemmaRmsNorm has incorrect shape [3,1]",
    );
    const neg = gemma(sim, x, g, [2, 1], -0.5).r;
    expectFail(neg, 561002, "Parameter epsilon of GemmaRmsNorm has incorrect value -0.500000");
    expectFail(neg, 561002, "Failed to execute tiling function");
    // [aclsim] one rstd per row.
    expectFail(gemma(sim, x, g, [1, 1]).r, 161002, "[aclsim] rstdOut has 1 elements");
  });
});
