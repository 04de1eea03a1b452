/**
 * The software CANN runs aclnnInplaceAddRmsNorm (tests/sim/sim_ops_inplace_add_rms_norm.c; rules
 * and sources in tests/sim/README_norm.md), called raw through the library's own symbol table
 * (tests/fixtures/sim_norm_raw.ts): x1Ref and x2Ref receive exactly what aclnnAddRmsNorm writes
 * to yOut and xOut on the same SoC (AddRmsNorm's kernels), rstdOut is left untouched on the Atlas
 * inference series, and the generated phase 1 and AddRmsNorm's tiling give their codes and texts.
 * Needs the built simulator (`deno task build:sim`).
 */

import assert from "node:assert/strict";
import type { DType } from "../../src/tensor/dtype.ts";
import { Random } from "../../src/tensor/random.ts";
import { rounded } from "../oracle/row_norms.ts";
import { expectFail, expectOk, withSim, withSoc } from "../fixtures/sim_norm_raw.ts";

const EPS = 1e-6;

function data(n: number, seed: number, dtype: DType): number[] {
  const rng = new Random(seed);
  return rounded(Array.from({ length: n }, () => 0.5 + 2 * rng.normal()), dtype);
}

Deno.test("aclnnInplaceAddRmsNorm: x1Ref <- y, x2Ref <- x, as aclnnAddRmsNorm per SoC", () => {
  withSim((sim) => {
    const cases: [DType, string][] = [
      ["float32", "Ascend950PR_9599"],
      ["bfloat16", "Ascend910B4"], // SINGLE_N: y from the rounded x
      ["float16", "Ascend310P3"], // no rstd stored
    ];
    for (const [dt, soc] of cases) {
      withSoc(soc, () => {
        const [a, b, g] = [data(48, 1, dt), data(48, 2, dt), data(8, 3, dt)];
        const gamma = sim.tensor(g, [8], dt);
        const y = sim.tensor(null, [6, 8], dt);
        const xo = sim.tensor(null, [6, 8], dt);
        const rs = sim.tensor(null, [6, 1]);
        const args = [sim.tensor(a, [6, 8], dt).handle, sim.tensor(b, [6, 8], dt).handle];
        expectOk(
          sim.call("aclnnAddRmsNorm", [...args, gamma.handle, EPS, y.handle, rs.handle, xo.handle]),
          soc,
        );
        const x1Ref = sim.tensor(a, [6, 8], dt);
        const x2Ref = sim.tensor(b, [6, 8], dt);
        const rstd = sim.tensor(Array(6).fill(7), [6, 1]);
        expectOk(
          sim.call("aclnnInplaceAddRmsNorm", [
            x1Ref.handle,
            x2Ref.handle,
            gamma.handle,
            EPS,
            rstd.handle,
          ]),
          soc,
        );
        assert.deepEqual(sim.read(x1Ref), sim.read(y), `${soc} x1Ref = AddRmsNorm's y`);
        assert.deepEqual(sim.read(x2Ref), sim.read(xo), `${soc} x2Ref = AddRmsNorm's x`);
        if (soc === "Ascend310P3") {
          assert.deepEqual(sim.read(rstd), Array(6).fill(7), "310P: untouched");
        } else assert.deepEqual(sim.read(rstd), sim.read(rs), `${soc} rstd`);
      });
    }
  });
});

Deno.test("aclnnInplaceAddRmsNorm: the generated phase 1 and AddRmsNorm's tiling, in order", () => {
  withSim((sim) => {
    const t = (shape: number[], dt: DType = "float32") =>
      sim.tensor(data(shape.reduce((p, d) => p * d, 1), 4, dt), shape, dt);
    const call = (x1: unknown, x2: unknown, g: unknown, eps: number, r: unknown) =>
      sim.call("aclnnInplaceAddRmsNorm", [x1, x2, g, eps, r]);
    const [x1, x2, g, r] = [t([2, 8]), t([2, 8]), t([8]), t([2, 1])];
    const op = "aclnnInplaceAddRmsNorm";
    expectFail(
      call(x1.handle, null, g.handle, EPS, r.handle),
      161001,
      `${op}: Check x2Ref != nullptr failed`,
    );
    withSoc(
      "Ascend910A",
      () =>
        expectFail(
          call(x1.handle, x2.handle, g.handle, EPS, r.handle),
          161002,
          "not supported on SoC Ascend910A",
        ),
    );
    const xb = t([2, 8], "bfloat16");
    withSoc(
      "Ascend310P3",
      () =>
        expectFail(
          call(xb.handle, t([2, 8], "bfloat16").handle, t([8], "bfloat16").handle, EPS, r.handle),
          161002,
          "x1Ref(DT_BF16, ND)",
        ),
    );
    expectFail(
      call(x1.handle, x2.handle, t([8], "float16").handle, EPS, r.handle),
      161002,
      "gamma(DT_FLOAT16, ND)",
    );
    expectFail(
      call(x1.handle, x2.handle, t([3]).handle, EPS, r.handle),
      561002,
      "Parameters gamma and x1 of InplaceAddRmsNorm have incorrect shapes [3] and [2,8]",
    );
    expectFail(
      call(x1.handle, x2.handle, g.handle, EPS, t([2]).handle),
      561002,
      "The shape dims of y, x, rstd and x1 should be the same",
    );
    expectFail(
      call(x1.handle, x2.handle, g.handle, -1, r.handle),
      561002,
      "Parameter epsilon of InplaceAddRmsNorm has incorrect value -1.000000",
    );
    // Every output empty: no launch, no tiling.
    const e = sim.tensor([], [0, 8]);
    expectOk(
      call(e.handle, sim.tensor([], [0, 8]).handle, g.handle, -1, sim.tensor([], [0, 1]).handle),
      "empty",
    );
  });
});
