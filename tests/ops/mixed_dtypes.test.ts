/**
 * Mixed dtypes that CANN accepts give one answer on every backend. aclnnBatchNormElemtBackward
 * checks each tensor against its dtype list on its own, casts every input to float32 unless all
 * are float16, and casts the result to gradInput's dtype (ops-nn
 * norm/sync_batch_norm_backward_elemt/op_api/aclnn_batch_norm_elemt_backward.cpp CheckParams,
 * GetPromoteType, the final Cast): the CPU backend must compute the same values (it gave NaN,
 * raw bit patterns, or values off by 100x when gradOut's dtype differed from input's).
 *
 * @module
 */

import { batchNormElemtBackward } from "../../src/ops/batch_norm_elemt_backward.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { forEachBackend } from "../helpers/backends.ts";
import { betweenKernels, toleranceFor } from "../helpers/tolerance.ts";
import { batchNormElemtBackward64 } from "../oracle/mod.ts";

const CASES: readonly { gradOut: DType; input: DType; gradInput?: DType }[] = [
  { gradOut: "float16", input: "float32" },
  { gradOut: "bfloat16", input: "float16" },
  { gradOut: "float32", input: "float16", gradInput: "float32" },
  { gradOut: "float32", input: "bfloat16", gradInput: "float16" },
];

forEachBackend(
  "batchNormElemtBackward with mixed dtypes equals the float64 oracle",
  ({ device }) => {
    const shape = [4, 3, 5];
    for (const c of CASES) {
      const dy = Tensor.random(shape, { seed: 1, dtype: c.gradOut });
      const x = Tensor.random(shape, { seed: 2, dtype: c.input, low: -1, high: 3 });
      const mean = Tensor.fromArray([0.5, 1, 1.5], [3]);
      const invstd = Tensor.fromArray([1.25, 0.5, 2], [3]);
      const weight = Tensor.fromArray([1, -0.5, 2], [3], "float16");
      const sumDy = Tensor.fromArray([3, -1, 0.5], [3]);
      const sumDyXmu = Tensor.fromArray([-2, 0.25, 1], [3]);
      const counter = Tensor.fromArray([10, 10], [2], "int32");
      const outDType = c.gradInput ?? c.input;
      const got = batchNormElemtBackward({
        gradOut: dy.to(device),
        input: x.to(device),
        mean: mean.to(device),
        invstd: invstd.to(device),
        weight: weight.to(device),
        sumDy: sumDy.to(device),
        sumDyXmu: sumDyXmu.to(device),
        counter: counter.to(device),
        out: c.gradInput ? { gradInput: Tensor.zeros(shape, c.gradInput, device) } : undefined,
      });
      const want = batchNormElemtBackward64({
        dy: dy.toFloat64Array(),
        x: x.toFloat64Array(),
        shape,
        mean: mean.toFloat64Array(),
        invstd: invstd.toFloat64Array(),
        weight: weight.toFloat64Array(),
        sumDy: sumDy.toFloat64Array(),
        sumDyXmu: sumDyXmu.toFloat64Array(),
        counter: [10, 10],
      });
      const label = `gradOut ${c.gradOut}, input ${c.input}, gradInput ${outDType}`;
      assertClose(got, want, betweenKernels(toleranceFor(outDType)), label);
    }
  },
);
