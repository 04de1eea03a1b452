/**
 * The software CANN's aclnnAddRmsNorm (tests/sim/sim_ops_add_rms_norm.c) beyond its basic
 * values (tests/software_cann/rms_norm.test.ts): the arithmetic of each chip's kernel template
 * (which x the square sum and the y product read, where x * rstd is rounded), the l0op::ViewCopy
 * of rstdOut (561103 unless its shape is the result's or both hold one element), and the early
 * SUCCESS of an empty x1 or gamma (nothing checked after CheckShapeDim, nothing written).
 * Expected values are float64 replays of the kernels, compared bit for bit.
 */

import assert from "node:assert/strict";
import type { DType } from "../../src/tensor/dtype.ts";
import { Random } from "../../src/tensor/random.ts";
import { assertClose } from "../helpers/assert.ts";
import { rounded } from "../oracle/row_norms.ts";
import { SIM_REPLAY } from "../helpers/tolerance.ts";
import {
  type DevTensor,
  expectFail,
  expectOk,
  type NormSim,
  withSim,
  withSoc,
} from "../fixtures/sim_norm_raw.ts";

const EPS = 1e-6;
const EPS_F = Math.fround(EPS); // the l0 operator's float attribute

function data(n: number, seed: number, dtype: DType): number[] {
  const rng = new Random(seed);
  return rounded(Array.from({ length: n }, () => 0.5 + 2 * rng.normal()), dtype);
}

/**
 * Which x each step reads and whether x * rstd is rounded, per kernel template:
 * `rounded` (Atlas A2/A3 SINGLE_N, MERGE_N, and every FLOAT16 template), `normal` (A2/A3 bfloat16
 * NORMAL: the float sum for rstd and y), `splitD` (A2/A3 bfloat16 SPLIT_D: the float sum for
 * rstd, the stored x for y), `regbase` (Ascend 950: the float sum, y rounded once).
 */
type Kernel = "rounded" | "normal" | "splitD" | "regbase";

/** A float64 replay of the simulator's AddRmsNorm for one kernel template. */
function replay(
  a: readonly number[],
  b: readonly number[],
  g: readonly number[],
  cols: number,
  dtype: DType,
  kernel: Kernel,
): { x: number[]; rstd: number[]; y: number[] } {
  const rows = a.length / cols;
  const sum = a.map((v, i) => v + b[i]);
  const x = rounded(sum, dtype);
  const forRstd = kernel === "rounded" ? x : sum;
  const forY = kernel === "normal" || kernel === "regbase" ? sum : x;
  const rstd: number[] = [];
  const y: number[] = [];
  for (let r = 0; r < rows; r++) {
    let q = 0;
    for (let i = 0; i < cols; i++) q += forRstd[r * cols + i] ** 2;
    const rs = 1 / Math.sqrt(q / cols + EPS_F);
    rstd.push(Math.fround(rs));
    for (let i = 0; i < cols; i++) {
      const t = forY[r * cols + i] * rs;
      y.push((kernel === "regbase" ? t : rounded([t], dtype)[0]) * g[i]);
    }
  }
  return { x, rstd, y: rounded(y, dtype) };
}

/** aclnnAddRmsNorm in ADD mode with fresh outputs (rstdOut of `rstdShape`, filled with 7s). */
function run(
  sim: NormSim,
  x1: DevTensor,
  x2: DevTensor,
  gamma: DevTensor,
  rstdShape: number[],
  eps = EPS,
) {
  const y = sim.tensor(null, x1.shape, x1.dtype);
  const rstd = sim.tensor(new Array(rstdShape.reduce((p, d) => p * d, 1)).fill(7), rstdShape);
  const xo = sim.tensor(null, x1.shape, x1.dtype);
  const r = sim.call("aclnnAddRmsNorm", [
    x1.handle,
    x2.handle,
    gamma.handle,
    eps,
    y.handle,
    rstd.handle,
    xo.handle,
  ]);
  return { r, y, rstd, xo };
}

/** Runs [rows, cols] of `dtype` on `soc` and compares every output with `kernel`'s replay. */
function checkKernel(
  sim: NormSim,
  soc: string,
  dtype: DType,
  [rows, cols]: [number, number],
  kernel: Kernel,
): void {
  withSoc(soc, () => {
    const what = `${soc} ${dtype} [${rows}, ${cols}] (${kernel})`;
    const [a, b, g] = [
      data(rows * cols, 1, dtype),
      data(rows * cols, 2, dtype),
      data(cols, 3, dtype),
    ];
    const t = (v: number[], s: number[]) => sim.tensor(v, s, dtype);
    const out = run(sim, t(a, [rows, cols]), t(b, [rows, cols]), t(g, [cols]), [rows, 1]);
    expectOk(out.r, what);
    const e = replay(a, b, g, cols, dtype, kernel);
    assertClose(sim.read(out.xo), e.x, SIM_REPLAY, `xOut ${what}`);
    assertClose(sim.read(out.rstd), e.rstd, SIM_REPLAY, `rstd ${what}`);
    assertClose(sim.read(out.y), e.y, SIM_REPLAY, `y ${what}`);
    if (kernel !== "rounded") {
      // The replay of the template the simulator used to apply everywhere differs.
      const old = replay(a, b, g, cols, dtype, "rounded");
      const changed = kernel === "regbase" ? e.y : e.rstd;
      assert.notDeepEqual(changed, kernel === "regbase" ? old.y : old.rstd, `${what} vs rounded`);
    }
  });
}

Deno.test("aclnnAddRmsNorm: Ascend 950 keeps the float sum and rounds y once", () => {
  withSim((sim) => {
    checkKernel(sim, "Ascend950PR_9599", "bfloat16", [6, 64], "regbase");
    checkKernel(sim, "Ascend950PR_9599", "float16", [6, 64], "regbase");
  });
});

Deno.test("aclnnAddRmsNorm: Atlas A2/A3 bfloat16 templates, as the tiling picks them", () => {
  withSim((sim) => {
    // Ascend910B4: 40 vector cores. More rows than cores, 2000 < cols <= 12288: NORMAL.
    checkKernel(sim, "Ascend910B4", "bfloat16", [41, 2048], "normal");
    checkKernel(sim, "Ascend910B4", "bfloat16", [40, 2048], "rounded"); // SINGLE_N
    checkKernel(sim, "Ascend910B4", "bfloat16", [41, 1024], "rounded"); // MERGE_N
    checkKernel(sim, "Ascend910B4", "bfloat16", [2, 12304], "splitD"); // cols > 12288
    checkKernel(sim, "Ascend910B4", "float16", [41, 2048], "rounded"); // Add in half
    // Ascend910_9391: 48 vector cores.
    checkKernel(sim, "Ascend910_9391", "bfloat16", [41, 2048], "rounded");
    checkKernel(sim, "Ascend910_9391", "bfloat16", [49, 2048], "normal");
  });
});

Deno.test("aclnnAddRmsNorm: rstdOut goes through l0op::ViewCopy (561103 unless the result's shape)", () => {
  withSim((sim) => {
    for (const soc of ["Ascend950PR_9599", "Ascend910B4"]) {
      withSoc(soc, () => {
        const [a, b, g] = [data(8, 4, "float32"), data(8, 5, "float32"), data(4, 6, "float32")];
        const x1 = sim.tensor(a, [2, 4]);
        const x2 = sim.tensor(b, [2, 4]);
        const gamma = sim.tensor(g, [4]);
        for (const shape of [[2], [1, 2], [3, 1], [2, 1, 1]]) {
          expectFail(
            run(sim, x1, x2, gamma, shape).r,
            561103,
            `Input tensor's shape[[2, 1]] should be same with output's shape[[${
              shape.join(", ")
            }]].`,
            `${soc} rstdOut [${shape}]`,
          );
        }
        const ok = run(sim, x1, x2, gamma, [2, 1]);
        expectOk(ok.r, `${soc} rstdOut [2, 1]`);
        assertClose(sim.read(ok.rstd), replay(a, b, g, 4, "float32", "rounded").rstd, SIM_REPLAY);
        // One row: any one-element rstdOut receives the result.
        const one = run(
          sim,
          sim.tensor(a.slice(0, 4), [1, 4]),
          sim.tensor(b.slice(0, 4), [1, 4]),
          gamma,
          [
            1,
          ],
        );
        expectOk(one.r, `${soc} rstdOut [1] for x1 [1, 4]`);
        assertClose(
          sim.read(one.rstd),
          replay(a.slice(0, 4), b.slice(0, 4), g, 4, "float32", "rounded").rstd,
          SIM_REPLAY,
        );
      });
    }
  });
});

Deno.test("aclnnAddRmsNorm: an empty x1 or gamma returns SUCCESS before the tiling, writing nothing", () => {
  withSim((sim) => {
    const f = (n: number, s: number[]) => sim.tensor(data(n, 7, "float32"), s);
    // x1 without rows: gamma not x1's trailing dims, epsilon negative, rstdOut of any shape.
    const none = run(sim, f(0, [0, 4]), f(0, [0, 4]), f(3, [3]), [5], -1);
    expectOk(none.r, "empty x1");
    assert.equal(none.r.workspaceSize, 0n);
    assert.deepEqual(sim.read(none.rstd), [7, 7, 7, 7, 7]);
    // An empty gamma with a non-empty x1: y and x stay as they were (NaN), rstdOut too.
    const noGamma = run(sim, f(6, [2, 3]), f(6, [2, 3]), f(0, [0]), [2, 1]);
    expectOk(noGamma.r, "empty gamma");
    assert.ok(sim.read(noGamma.y).every(Number.isNaN));
    assert.ok(sim.read(noGamma.xo).every(Number.isNaN));
    assert.deepEqual(sim.read(noGamma.rstd), [7, 7]);
  });
});
