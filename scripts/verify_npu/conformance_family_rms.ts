/**
 * The conformance cases of the RMSNorm operators of the norm family (gemmaRmsNorm,
 * inplaceAddRmsNorm, addRmsNormCast) as `deno task verify:npu` cases: the peer cases of
 * tests/fixtures/conformance/norm_family_rms.ts and CANN's examples (norm_family_examples.ts),
 * on the inputs and seeds tests/conformance/norm_family_rms.test.ts gives them, each call run on
 * the NPU and on the CPU backend and compared. inplaceAddRmsNorm's x1Ref and x2Ref are compared
 * after the call (each run writes its own copies: placeOn). The outputs whose precision chips
 * choose differently are compared at the data's precision, as the sweep compares them
 * (sweep_row_ops.ts, sweep_fused_ops.ts).
 *
 * @module
 */

import { addRmsNormCast, type DType, gemmaRmsNorm, inplaceAddRmsNorm } from "../../mod.ts";
import {
  addRmsNormCastExample,
  gemmaRmsNormExample,
  inplaceAddRmsNormExample,
} from "../../tests/fixtures/conformance/norm_family_examples.ts";
import {
  CAST_CASES,
  GEMMA_CASES,
  INPLACE_CASES,
  type RmsCase,
  rmsInputs,
} from "../../tests/fixtures/conformance/norm_family_rms.ts";
import type { SocOperator } from "../../src/backends/ascend/soc.ts";
import {
  type Call,
  conformanceCase,
  dtypeLabel,
  numel,
  placeOn,
  type VerifyCase,
} from "./model.ts";
import { atDataPrecision } from "./sweep_row_ops.ts";

/** x1 (x), x2, gamma of one call, and its epsilon. */
type RmsData = ReturnType<typeof rmsInputs> & { epsilon: number };

/** A call on `RmsData` returning its outputs. */
type RmsCall = (i: RmsData) => Call;

/**
 * The example of `kernel` (its float32, or float16, [2,16] rows) and its peer cases, seeds
 * `seed + 10 k` (norm_family_rms.test.ts).
 */
function rmsCases(
  op: string,
  kernel: SocOperator,
  exampleFile: string,
  example: () => RmsData,
  cases: readonly RmsCase[],
  seed: number,
  call: RmsCall,
  /** dtypes of its outputs beyond the data's (float32 y1 of the cast). */
  outputs?: DType,
): VerifyCase[] {
  const fields = (dtype: DType, shape: readonly number[]) => ({
    dtype: dtypeLabel(dtype, outputs, "outputs"),
    layout: "contiguous",
    kernels: [kernel],
    dtypes: outputs ? [dtype, outputs] : [dtype],
    numel: numel(shape),
  });
  const e = example();
  return [
    conformanceCase(
      op,
      `ops-nn ${exampleFile}/examples/test_aclnn_${exampleFile}.cpp [2,16] (golden)`,
      fields(e.x1.dtype, e.x1.shape),
      () => call(example()),
    ),
    ...cases.map((c, k) =>
      conformanceCase(
        op,
        `${c.source} [${c.shape}]`,
        fields(c.dtype, c.shape),
        () => call({ ...rmsInputs(c, seed + 10 * k), epsilon: c.eps }),
      )
    ),
  ];
}

const gemma: RmsCall = (i) => (d) => {
  const r = gemmaRmsNorm({ x: placeOn(i.x1, d), gamma: placeOn(i.gamma, d), epsilon: i.epsilon });
  return { y: r.y, rstd: r.rstd };
};

/** rstd from the float sum or from x rounded to the data's dtype (sweep_row_ops.ts). */
const inplace: RmsCall = (i) => (d) => {
  const x1Ref = placeOn(i.x1, d);
  const x2Ref = placeOn(i.x2, d);
  const r = inplaceAddRmsNorm({ x1Ref, x2Ref, gamma: placeOn(i.gamma, d), epsilon: i.epsilon });
  return {
    "rstd (data's precision)": atDataPrecision(r.rstd, i.x1.dtype),
    "x1Ref (in place)": x1Ref,
    "x2Ref (in place)": x2Ref,
  };
};

/** A2/A3 store y1 = float(y2) and take rstd from the rounded sum (sweep_fused_ops.ts). */
const cast: RmsCall = (i) => (d) => {
  const r = addRmsNormCast({
    x1: placeOn(i.x1, d),
    x2: placeOn(i.x2, d),
    gamma: placeOn(i.gamma, d),
    epsilon: i.epsilon,
  });
  return {
    "y1 (data's precision)": atDataPrecision(r.y1, i.x1.dtype),
    y2: r.y2,
    "rstd (data's precision)": atDataPrecision(r.rstd, i.x1.dtype),
    x: r.x,
  };
};

/** Every case of norm_family_rms.ts and of these operators' examples. */
export function rmsFamilyCases(): VerifyCase[] {
  return [
    ...rmsCases(
      "gemmaRmsNorm",
      "aclnnGemmaRmsNorm",
      "gemma_rms_norm",
      () => {
        const e = gemmaRmsNormExample();
        return { x1: e.x, x2: e.x, gamma: e.gamma, epsilon: e.epsilon };
      },
      GEMMA_CASES,
      25000,
      gemma,
    ),
    ...rmsCases(
      "inplaceAddRmsNorm",
      "aclnnInplaceAddRmsNorm",
      "inplace_add_rms_norm",
      () => {
        const e = inplaceAddRmsNormExample();
        return { x1: e.x1Ref, x2: e.x2Ref, gamma: e.gamma, epsilon: e.epsilon };
      },
      INPLACE_CASES,
      26000,
      inplace,
    ),
    ...rmsCases(
      "addRmsNormCast",
      "aclnnAddRmsNormCast",
      "add_rms_norm_cast",
      addRmsNormCastExample,
      CAST_CASES,
      27000,
      cast,
      "float32",
    ),
  ];
}
