/**
 * The AdaLayerNormBackward row stage (row_norms_ada_grad.wat ada_ln_bwd) against the float64
 * oracle for every tail 1-20 and the 256-element block boundary, each dtype, with and without
 * gradInput; S not dividing the work items' rows (batch partials split over items); the same bits
 * on the worker pool as on one thread.
 *
 * @module
 */

import { rowKernels } from "../../src/backends/cpu/rows/mod.ts";
import { rowGeometry } from "../../src/backends/types.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { assertPoolMatchesOneThread } from "../helpers/pool_bits.ts";
import { looser, toleranceFor } from "../helpers/tolerance.ts";
import { referenceKernels } from "../oracle/kernels/mod.ts";

type Kernels = Pick<typeof referenceKernels, "adaLayerNormBackward">;

/** Runs the stage on `k` for B batches of S rows of H, returning every output. */
function run(
  k: Kernels,
  B: number,
  S: number,
  H: number,
  dtype: DType,
  gradInput = true,
): Record<string, Tensor> {
  const rnd = (shape: number[], seed: number, dt: DType = dtype, low = -2, high = 2) =>
    Tensor.random(shape, { seed, dtype: dt, low, high });
  const o: Record<string, Tensor> = {
    gradScale: Tensor.zeros([B, H], dtype),
    gradShift: Tensor.zeros([B, 1, H], dtype),
    gradWeight: Tensor.zeros([H]),
    gradBias: Tensor.zeros([H]),
  };
  if (gradInput) o.gradInput = Tensor.zeros([B, S, H], dtype);
  k.adaLayerNormBackward({ geometry: rowGeometry([B, S, H], 2), seq: S, normalizedShape: [H] }, {
    gradOut: rnd([B, S, H], 1),
    input: rnd([B, S, H], 2),
    mean: rnd([B, S, 1], 3, dtype, -0.5, 0.5),
    rstd: rnd([B, S, 1], 4, dtype, 0.5, 2),
    scale: rnd([B, H], 5, dtype, -1, 1),
    shift: rnd([B, 1, H], 6),
    weight: rnd([H], 7, "float32", 0.5, 1.5),
    bias: rnd([H], 8, "float32"),
    ...o,
  });
  return o;
}

Deno.test("ada_ln_bwd holds its bound of the float64 oracle (tails 1-20, 256-element blocks, dtypes)", () => {
  for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
    for (const H of [...Array.from({ length: 20 }, (_, i) => i + 1), 255, 256, 257, 700]) {
      for (const gradInput of [true, false]) {
        const got = run(rowKernels, 2, 3, H, dtype, gradInput);
        const want = run(referenceKernels, 2, 3, H, dtype, gradInput);
        const base = looser(toleranceFor(dtype), toleranceFor("float32"));
        for (const [name, t] of Object.entries(got)) {
          // Sums of several O(1) terms: an absolute bound of their count.
          const tol = looser(base, { rtol: 0, atol: 24 * toleranceFor(dtype).rtol });
          assertClose(t, want[name], tol, `${dtype} H ${H} ${name}`);
        }
      }
    }
  }
});

Deno.test("ada_ln_bwd splits batches over work items: every sum still holds the oracle's bound", () => {
  // 7 * 113 rows of 97: items of a quarter of the call, 197 rows, which S = 113 does not divide
  // (items/rows.ts rowsPerItem): a batch's rows fall in two items.
  for (const dtype of ["float32", "bfloat16"] as DType[]) {
    const got = run(rowKernels, 7, 113, 97, dtype);
    const want = run(referenceKernels, 7, 113, 97, dtype);
    const tol = looser(toleranceFor(dtype), { rtol: 1e-4, atol: 1e-2 });
    for (const [name, t] of Object.entries(got)) {
      assertClose(t, want[name], tol, `${dtype} ${name}`);
    }
  }
});

Deno.test("ada_ln_bwd gives the same bits on the worker pool as on one thread", async () => {
  await assertPoolMatchesOneThread(
    ["float32", "bfloat16"] as DType[],
    (dtype) => run(rowKernels, 7, 113, 97, dtype),
  );
});
