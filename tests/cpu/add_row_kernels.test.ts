/**
 * The CPU backend's fused add + LayerNorm kernel (src/backends/cpu/wasm/row_norms_add.wat,
 * aclnnAddLayerNorm and aclnnDeepNorm): against the float64 oracle's kernels
 * (tests/oracle/kernels/fused_layer_norms.ts) within the float32 arithmetic bound for every
 * tail length, the three dtypes, both kinds of bias and alpha; rows longer than a thread's
 * scratch region; the same bits on the worker pool as on one thread.
 *
 * @module
 */

import { rowKernels } from "../../src/backends/cpu/rows/mod.ts";
import { type Kernels, rowGeometry } from "../../src/backends/types.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { referenceKernels } from "../oracle/kernels/mod.ts";
import { assertClose } from "../helpers/assert.ts";
import { assertPoolMatchesOneThread } from "../helpers/pool_bits.ts";
import { F32_ARITHMETIC } from "../helpers/tolerance.ts";

interface Case {
  rows: number;
  cols: number;
  dtype: DType;
  bias: "none" | "columns" | "rows";
  alpha?: number;
}

/** AddLayerNorm (alpha undefined) or DeepNorm of one case on `k`: every output. */
function run(k: Pick<Kernels, "addLayerNorm" | "deepNorm">, c: Case): Record<string, Tensor> {
  const { rows, cols, dtype } = c;
  const shape = [rows, cols];
  const geometry = rowGeometry(shape, 1);
  const r = (s: number[], seed: number) => Tensor.random(s, { seed, dtype, low: -2, high: 3 });
  const [x1, x2, gamma, beta] = [r(shape, 1), r(shape, 2), r([cols], 3), r([cols], 4)];
  const out = {
    y: Tensor.zeros(shape, dtype),
    mean: Tensor.zeros([rows, 1]),
    rstd: Tensor.zeros([rows, 1]),
    x: Tensor.zeros(shape, dtype),
  };
  if (c.alpha !== undefined) {
    const plan = { geometry, alpha: Math.fround(c.alpha), epsilon: Math.fround(1e-6) };
    k.deepNorm(plan, { x: x1, gx: x2, beta, gamma, y: out.y, mean: out.mean, rstd: out.rstd });
    return { y: out.y, mean: out.mean, rstd: out.rstd };
  }
  const bias = c.bias === "none" ? undefined : r(c.bias === "rows" ? shape : [cols], 5);
  const plan = {
    geometry,
    epsilon: Math.fround(1e-5),
    additionalOutput: true,
    dtype,
    biasRows: c.bias === "rows",
  };
  k.addLayerNorm(plan, { x1, x2, gamma, beta, bias, ...out });
  return out;
}

Deno.test("add_ln_fwd holds its float32 bound of the float64 oracle (tails, dtypes, bias, alpha)", () => {
  for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
    for (let cols = 1; cols <= 40; cols++) {
      for (
        const c of [
          { rows: 3, cols, dtype, bias: "none" as const },
          { rows: 2, cols, dtype, bias: "columns" as const },
          { rows: 2, cols, dtype, bias: "rows" as const },
          { rows: 2, cols, dtype, bias: "none" as const, alpha: 0.87 },
        ]
      ) {
        const got = run(rowKernels, c);
        const want = run(referenceKernels, c);
        for (const name of Object.keys(got)) {
          const tol = name === "mean" || name === "rstd"
            ? F32_ARITHMETIC.float32
            : F32_ARITHMETIC[dtype];
          assertClose(got[name], want[name], tol, `${JSON.stringify(c)} ${name}`);
        }
      }
    }
  }
});

Deno.test("add_ln_fwd: rows longer than a thread's region take the call's scratch", () => {
  const c = { rows: 2, cols: 140_000, dtype: "float32" as DType, bias: "columns" as const };
  const got = run(rowKernels, c);
  const want = run(referenceKernels, c);
  for (const name of Object.keys(got)) {
    assertClose(got[name], want[name], F32_ARITHMETIC.float32, `long rows ${name}`);
  }
});

Deno.test("add_ln_fwd gives the same bits on the worker pool as on one thread", async () => {
  const cases = (["float32", "bfloat16"] as DType[]).flatMap((dtype) => [
    { rows: 300, cols: 1027, dtype, bias: "rows" as const },
    { rows: 1500, cols: 69, dtype, bias: "none" as const, alpha: 0.5 },
  ]);
  await assertPoolMatchesOneThread(cases, (c: Case) => run(rowKernels, c));
});
