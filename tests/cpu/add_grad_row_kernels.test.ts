/**
 * The CPU backend's fused add + LayerNorm backward kernel (src/backends/cpu/wasm/
 * row_norms_add_grad.wat add_ln_bwd, aclnnAddLayerNormGrad and aclnnDeepNormGrad): against the
 * float64 oracle's kernels (tests/oracle/kernels/fused_layer_norm_grads.ts) within the float32
 * arithmetic bound for every tail length and a row sum's block boundary, the three dtypes, with
 * and without dsum, alpha; the same bits on the worker pool as on one thread.
 *
 * @module
 */

import { rowKernels } from "../../src/backends/cpu/rows/mod.ts";
import { type Kernels, rowGeometry } from "../../src/backends/types.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { referenceKernels } from "../oracle/kernels/mod.ts";
import { fusedLayerNorm } from "../oracle/fused_layer_norms.ts";
import { assertClose } from "../helpers/assert.ts";
import { assertPoolMatchesOneThread } from "../helpers/pool_bits.ts";
import { cancellation, F32_ARITHMETIC } from "../helpers/tolerance.ts";

interface Case {
  rows: number;
  cols: number;
  dtype: DType;
  /** AddLayerNormGrad with dsum, without, or DeepNormGrad (alpha). */
  kind: "dsum" | "plain" | "deep";
}

type GradKernels = Pick<Kernels, "addLayerNormGrad" | "deepNormGrad">;

/** One case's inputs: data of the dtype, the forward's float32 statistics of alpha * a + b. */
function inputs(c: Case) {
  const { rows, cols, dtype } = c;
  const shape = [rows, cols];
  const r = (s: number[], seed: number, low = -2, high = 3) =>
    Tensor.random(s, { seed, dtype, low, high });
  const [a, b, dy, gamma, dsum] = [
    r(shape, 1),
    r(shape, 2),
    r(shape, 3, -1, 1),
    r([cols], 4, 0.5, 1.5),
    r(shape, 5, -1, 1),
  ];
  const alpha = c.kind === "deep" ? Math.fround(0.87) : 1;
  const f = fusedLayerNorm(
    [...a.toFloat64Array()],
    [...b.toFloat64Array()],
    rows,
    cols,
    1e-5,
    [],
    [],
    {
      alpha,
    },
  );
  return {
    a,
    b,
    dy,
    gamma,
    dsum,
    alpha,
    mean: Tensor.fromArray(f.mean, [rows, 1]),
    rstd: Tensor.fromArray(f.rstd, [rows, 1]),
  };
}

/** Every output of one case on `k`. */
function run(k: GradKernels, c: Case): Record<string, Tensor> {
  const { rows, cols, dtype } = c;
  const geometry = rowGeometry([rows, cols], 1);
  const i = inputs(c);
  const out = {
    dx: Tensor.zeros([rows, cols], dtype),
    dgamma: Tensor.zeros([cols]),
    dbeta: Tensor.zeros([cols]),
  };
  const stats = { mean: i.mean, rstd: i.rstd, gamma: i.gamma };
  if (c.kind === "deep") {
    const dgx = Tensor.zeros([rows, cols], dtype);
    k.deepNormGrad({ geometry, alpha: i.alpha }, {
      dy: i.dy,
      x: i.a,
      gx: i.b,
      ...stats,
      ...out,
      dgx,
    });
    return { ...out, dgx };
  }
  const dsum = c.kind === "dsum" ? i.dsum : undefined;
  k.addLayerNormGrad({ geometry }, { dy: i.dy, x1: i.a, x2: i.b, dsum, ...stats, ...out });
  return out;
}

// Every tail of a vector (n mod 4), a block boundary of the row sums (256), several items.
const COLS = [...Array.from({ length: 20 }, (_, i) => i + 1), 255, 256, 257, 1027];

Deno.test("add_ln_bwd holds its float32 bound of the float64 oracle (tails, dtypes, dsum, alpha)", () => {
  for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
    for (const cols of COLS) {
      for (const kind of ["dsum", "plain", "deep"] as const) {
        const c = { rows: cols === 1027 ? 67 : 3, cols, dtype, kind };
        const got = run(rowKernels, c);
        const want = run(referenceKernels, c);
        const rstd = Math.max(...inputs(c).rstd.toFloat64Array());
        for (const name of Object.keys(got)) {
          const t = F32_ARITHMETIC[got[name].dtype];
          const scale = Math.max(1, ...[...want[name].toFloat64Array()].map(Math.abs));
          // Terms the outputs cancel: dy * gamma * rstd (|dy| <= 1, gamma < 1.5) and (s - mean) *
          // rstd, s formed in float32 (|s| <= 6); the column sums add such terms over the rows.
          const xh = 6 * rstd;
          const terms = name === "dbeta"
            ? c.rows
            : name === "dgamma"
            ? c.rows * xh
            : 3 * rstd * (1 + xh);
          assertClose(
            got[name],
            want[name],
            cancellation(t, terms, scale),
            `${JSON.stringify(c)} ${name}`,
          );
        }
      }
    }
  }
});

Deno.test("add_ln_bwd gives the same bits on the worker pool as on one thread", async () => {
  const cases = (["float32", "bfloat16"] as DType[]).flatMap((dtype) => [
    { rows: 300, cols: 1027, dtype, kind: "dsum" as const },
    { rows: 1500, cols: 69, dtype, kind: "deep" as const },
  ]);
  await assertPoolMatchesOneThread(cases, (c) => run(rowKernels, c));
});
