/**
 * The AddRmsNormCast and AdaLayerNorm row stages (row_norms_cast.wat add_rms_cast_fwd,
 * row_norms_ada.wat ada_ln_fwd) against the float64 oracle for every tail 1-9 and each dtype,
 * and the same bits on the worker pool as on one thread.
 *
 * @module
 */

import assert from "node:assert/strict";
import { rowKernels } from "../../src/backends/cpu/rows/mod.ts";
import { pooledJobCount, withCpuPolicy } from "../../src/backends/cpu/pool/pool.ts";
import { cpuThreads, setCpuThreads, startCpuPool } from "../../src/backends/cpu/threads.ts";
import { rowGeometry } from "../../src/backends/types.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { looser, toleranceFor } from "../helpers/tolerance.ts";
import { referenceKernels } from "../oracle/kernels/mod.ts";

type Kernels = Pick<typeof referenceKernels, "addRmsNormCast" | "adaLayerNormV2">;

/** Runs both stages on `k` for rows of cols (B = 2 batches), returning every output. */
function run(k: Kernels, rows: number, cols: number, dtype: DType): Record<string, Tensor> {
  const rnd = (shape: number[], seed: number, dt: DType = dtype) =>
    Tensor.random(shape, { seed, dtype: dt, low: -2, high: 2 });
  const x1 = rnd([rows, cols], 1);
  const geometry = rowGeometry([rows, cols], 1);
  const o: Record<string, Tensor> = {
    output: Tensor.zeros([rows, cols], dtype),
    mean: Tensor.zeros([rows, 1], dtype),
    rstd: Tensor.zeros([rows, 1], dtype),
  };
  k.adaLayerNormV2({ geometry, epsilon: Math.fround(1e-5), seq: rows / 2 }, {
    x: x1,
    scale: rnd([2, cols], 2),
    shift: rnd([2, cols], 3),
    weight: rnd([cols], 4),
    output: o.output,
    mean: o.mean,
    rstd: o.rstd,
  });
  if (dtype === "float32") return o;
  const c = {
    y1: Tensor.zeros([rows, cols]),
    y2: Tensor.zeros([rows, cols], dtype),
    rstd: Tensor.zeros([rows, 1]),
    x: Tensor.zeros([rows, cols], dtype),
  };
  k.addRmsNormCast({ geometry, epsilon: Math.fround(1e-6) }, {
    x1,
    x2: rnd([rows, cols], 5),
    gamma: rnd([cols], 6),
    ...c,
  });
  return { ...o, y1: c.y1, y2: c.y2, castRstd: c.rstd, x: c.x };
}

Deno.test("add_rms_cast_fwd and ada_ln_fwd hold their bound of the float64 oracle (tails 1-9, dtypes)", () => {
  for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
    for (let cols = 1; cols <= 9; cols++) {
      const got = run(rowKernels, 4, cols, dtype);
      const want = run(referenceKernels, 4, cols, dtype);
      const tol = looser(toleranceFor(dtype), toleranceFor("float32"));
      for (const [name, t] of Object.entries(got)) {
        assertClose(t, want[name], tol, `${dtype} cols ${cols} ${name}`);
      }
    }
  }
});

Deno.test("add_rms_cast_fwd and ada_ln_fwd give the same bits on the worker pool as on one thread", async () => {
  const threads = cpuThreads();
  try {
    for (const dtype of ["float32", "bfloat16"] as DType[]) {
      setCpuThreads(1);
      const alone = run(rowKernels, 1200, 77, dtype);
      setCpuThreads(2);
      await startCpuPool();
      const jobs = pooledJobCount();
      const pooled = withCpuPolicy({ pool: "always" }, () => run(rowKernels, 1200, 77, dtype));
      assert.ok(pooledJobCount() > jobs, `${dtype} ran on the pool`);
      for (const [name, t] of Object.entries(pooled)) {
        assert.deepEqual(t.toArray(), alone[name].toArray(), `${dtype} ${name}`);
      }
    }
  } finally {
    setCpuThreads(threads);
  }
});
