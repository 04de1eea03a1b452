/**
 * The aclnn operator symbols (prototypes from CANN's aclnn_*.h operator headers), split as
 * CANN >= 8.5 splits them between libopapi_nn.so and libopapi_math.so.
 *
 * The C-to-Deno type conventions and the meaning of `optional: true` are stated once, in
 * `../symbols.ts`, which gathers every library's table.
 *
 * @module
 */

import { fusedLayerNormSymbols } from "./opapi_fused_norm.ts";

/**
 * Phase 2 of every operator has the same prototype:
 * `aclnnStatus aclnnX(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
 * aclrtStream stream);`
 */
const execute = { parameters: ["pointer", "u64", "pointer", "pointer"], result: "i32" } as const;

/**
 * The BatchNorm/GroupNorm/LayerNorm/RMSNorm operators: `libopapi_nn.so` (CANN >= 8.5) or
 * `libopapi.so` (older).
 * Phase 1 (`...GetWorkspaceSize`) ends with `uint64_t *workspaceSize, aclOpExecutor **executor`
 * (two 8-byte `buffer` out-params).
 */
export const opapiNnSymbols = {
  // aclnnStatus aclnnBatchNormReduceBackwardGetWorkspaceSize(const aclTensor *gradOut,
  //   const aclTensor *input, const aclTensor *mean, const aclTensor *invstd,
  //   const aclTensor *weight, const bool inputG, const bool weightG, const bool biasG,
  //   aclTensor *sumDy, aclTensor *sumDyXmu, aclTensor *gradWeight, aclTensor *gradBias,
  //   uint64_t *workspaceSize, aclOpExecutor **executor);
  aclnnBatchNormReduceBackwardGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "bool",
      "bool",
      "bool",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnBatchNormReduceBackward(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnBatchNormReduceBackward: execute,
  // aclnnStatus aclnnBatchNormElemtBackwardGetWorkspaceSize(const aclTensor *gradOut,
  //   const aclTensor *input, const aclTensor *mean, const aclTensor *invstd,
  //   const aclTensor *weight, const aclTensor *sumDy, const aclTensor *sumDyXmu,
  //   aclTensor *counter, aclTensor *gradInput, uint64_t *workspaceSize,
  //   aclOpExecutor **executor);
  aclnnBatchNormElemtBackwardGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnBatchNormElemtBackward(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnBatchNormElemtBackward: execute,
  // aclnnStatus aclnnBatchNormBackwardGetWorkspaceSize(const aclTensor *gradOut,
  //   const aclTensor *input, const aclTensor *weight, const aclTensor *runningMean,
  //   const aclTensor *runningVar, const aclTensor *saveMean, const aclTensor *saveInvstd,
  //   bool training, double eps, const aclBoolArray *outputMask, aclTensor *gradInput,
  //   aclTensor *gradWeight, aclTensor *gradBias, uint64_t *workspaceSize,
  //   aclOpExecutor **executor);
  aclnnBatchNormBackwardGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "bool",
      "f64",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnBatchNormBackward(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnBatchNormBackward: execute,
  // aclnnStatus aclnnBatchNormGetWorkspaceSize(const aclTensor *input, const aclTensor *weight,
  //   const aclTensor *bias, aclTensor *runningMean, aclTensor *runningVar, bool training,
  //   double momentum, double eps, aclTensor *output, aclTensor *saveMean,
  //   aclTensor *saveInvstd, uint64_t *workspaceSize, aclOpExecutor **executor);
  aclnnBatchNormGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "bool",
      "f64",
      "f64",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnBatchNorm(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnBatchNorm: execute,
  // aclnnStatus aclnnBatchNormElemtGetWorkspaceSize(const aclTensor *input,
  //   const aclTensor *weight, const aclTensor *bias, aclTensor *mean, aclTensor *invstd,
  //   double eps, aclTensor *output, uint64_t *workspaceSize, aclOpExecutor **executor);
  aclnnBatchNormElemtGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "f64",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnBatchNormElemt(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnBatchNormElemt: execute,
  // aclnnStatus aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(const aclTensor *input,
  //   const aclTensor *mean, const aclTensor *invstd, aclTensor *runningMean,
  //   aclTensor *runningVar, double momentum, double eps, const aclTensor *counts,
  //   aclTensor *meanAll, aclTensor *invstdAll, uint64_t *workspaceSize,
  //   aclOpExecutor **executor);
  aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "f64",
      "f64",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnBatchNormGatherStatsWithCounts(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnBatchNormGatherStatsWithCounts: execute,
  // aclnnStatus aclnnGroupNormGetWorkspaceSize(const aclTensor *self, const aclTensor *gamma,
  //   const aclTensor *beta, int64_t N, int64_t C, int64_t HxW, int64_t group, double eps,
  //   aclTensor *out, aclTensor *meanOut, aclTensor *rstdOut, uint64_t *workspaceSize,
  //   aclOpExecutor **executor);
  aclnnGroupNormGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "i64",
      "i64",
      "i64",
      "i64",
      "f64",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnGroupNorm(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnGroupNorm: execute,
  // aclnnStatus aclnnGroupNormBackwardGetWorkspaceSize(const aclTensor *gradOut,
  //   const aclTensor *input, const aclTensor *mean, const aclTensor *rstd,
  //   const aclTensor *gamma, int64_t N, int64_t C, int64_t HxW, int64_t group,
  //   const aclBoolArray *outputMask, aclTensor *gradInput, aclTensor *gradGammaOut,
  //   aclTensor *gradBetaOut, uint64_t *workspaceSize, aclOpExecutor **executor);
  aclnnGroupNormBackwardGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "i64",
      "i64",
      "i64",
      "i64",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnGroupNormBackward(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnGroupNormBackward: execute,
  // aclnnStatus aclnnLayerNormGetWorkspaceSize(const aclTensor *input,
  //   const aclIntArray *normalizedShape, const aclTensor *weightOptional,
  //   const aclTensor *biasOptional, double eps, aclTensor *out, aclTensor *meanOutOptional,
  //   aclTensor *rstdOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor);
  aclnnLayerNormGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "f64",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnLayerNorm(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnLayerNorm: execute,
  // aclnnStatus aclnnLayerNormWithImplModeGetWorkspaceSize(const aclTensor *input,
  //   const aclIntArray *normalizedShape, const aclTensor *weightOptional,
  //   const aclTensor *biasOptional, double eps, aclTensor *out, aclTensor *meanOutOptional,
  //   aclTensor *rstdOutOptional, int32_t implMode, uint64_t *workspaceSize,
  //   aclOpExecutor **executor);
  // Optional: torch_npu never calls it, and the aclnn reference documents it with
  // aclnnLayerNorm only from CANN 8.0.RC1 on; a release without it must still load the
  // operators above (a missing required symbol fails the whole library).
  aclnnLayerNormWithImplModeGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "f64",
      "pointer",
      "pointer",
      "pointer",
      "i32",
      "buffer",
      "buffer",
    ],
    result: "i32",
    optional: true,
  },
  // aclnnStatus aclnnLayerNormWithImplMode(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  // Optional: exported together with its phase 1.
  aclnnLayerNormWithImplMode: { ...execute, optional: true },
  // aclnnStatus aclnnLayerNormBackwardGetWorkspaceSize(const aclTensor *gradOut,
  //   const aclTensor *input, const aclIntArray *normalizedShape, const aclTensor *mean,
  //   const aclTensor *rstd, const aclTensor *weightOptional, const aclTensor *biasOptional,
  //   const aclBoolArray *outputMask, aclTensor *gradInputOut, aclTensor *gradWeightOut,
  //   aclTensor *gradBiasOut, uint64_t *workspaceSize, aclOpExecutor **executor);
  aclnnLayerNormBackwardGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnLayerNormBackward(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnLayerNormBackward: execute,
  // aclnnStatus aclnnRmsNormGetWorkspaceSize(const aclTensor *x, const aclTensor *gamma,
  //   double epsilon, const aclTensor *yOut, const aclTensor *rstdOut, uint64_t *workspaceSize,
  //   aclOpExecutor **executor);
  // (generated header aclnnop/aclnn_rms_norm.h; ops-nn norm/rms_norm/docs/aclnnRmsNorm.md)
  // Optional: newer than the BatchNorm/LayerNorm family, which torch_npu has called since
  // 2023-08; torch_npu calls this one since 2023-11 (Ascend/op-plugin ff23cea1) and the aclnn
  // reference documents it from CANN 8.0.RC1 on. A release without it must still load the
  // operators above (a missing required symbol fails the whole library).
  aclnnRmsNormGetWorkspaceSize: {
    parameters: ["pointer", "pointer", "f64", "pointer", "pointer", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  // aclnnStatus aclnnRmsNorm(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  // Optional: exported together with its phase 1.
  aclnnRmsNorm: { ...execute, optional: true },
  // aclnnStatus aclnnRmsNormGradGetWorkspaceSize(const aclTensor *dy, const aclTensor *x,
  //   const aclTensor *rstd, const aclTensor *gamma, const aclTensor *dxOut,
  //   const aclTensor *dgammaOut, uint64_t *workspaceSize, aclOpExecutor **executor);
  // (generated header aclnnop/aclnn_rms_norm_grad.h; norm/rms_norm_grad/docs/aclnnRmsNormGrad.md)
  // Optional: same release history as aclnnRmsNorm.
  aclnnRmsNormGradGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
    optional: true,
  },
  // aclnnStatus aclnnRmsNormGrad(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  // Optional: exported together with its phase 1.
  aclnnRmsNormGrad: { ...execute, optional: true },
  // aclnnStatus aclnnAddRmsNormGetWorkspaceSize(const aclTensor *x1, const aclTensor *x2,
  //   const aclTensor *gamma, double epsilon, aclTensor *yOut, aclTensor *rstdOut,
  //   aclTensor *xOut, uint64_t *workspaceSize, aclOpExecutor **executor);
  // Optional: newer than aclnnRmsNorm (torch_npu calls it since 2024-01, Ascend/op-plugin
  // 63c08675).
  aclnnAddRmsNormGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "f64",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
    optional: true,
  },
  // aclnnStatus aclnnAddRmsNorm(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  // Optional: exported together with its phase 1.
  aclnnAddRmsNorm: { ...execute, optional: true },
  ...fusedLayerNormSymbols,
  // aclnnStatus aclnnGemmaRmsNormGetWorkspaceSize(const aclTensor *x, const aclTensor *gamma,
  //   double epsilon, const aclTensor *yOut, const aclTensor *rstdOut, uint64_t *workspaceSize,
  //   aclOpExecutor **executor);
  // (generated header aclnnop/aclnn_gemma_rms_norm.h; ops-nn norm/gemma_rms_norm/docs/
  // aclnnGemmaRmsNorm.md, gemma_rms_norm_def.cpp)
  // Optional: one of the operators of issue 39, newer than aclnnAddRmsNorm; a release without it
  // must still load the others.
  aclnnGemmaRmsNormGetWorkspaceSize: {
    parameters: ["pointer", "pointer", "f64", "pointer", "pointer", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  // aclnnStatus aclnnGemmaRmsNorm(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  // Optional: exported together with its phase 1.
  aclnnGemmaRmsNorm: { ...execute, optional: true },
  // aclnnStatus aclnnInplaceAddRmsNormGetWorkspaceSize(aclTensor *x1Ref, aclTensor *x2Ref,
  //   const aclTensor *gamma, double epsilon, const aclTensor *rstdOut, uint64_t *workspaceSize,
  //   aclOpExecutor **executor);
  // (generated header aclnnop/aclnn_inplace_add_rms_norm.h; ops-nn norm/inplace_add_rms_norm/
  // docs/aclnnInplaceAddRmsNorm.md, inplace_add_rms_norm_def.cpp)
  // Optional: one of the operators of issue 39, like aclnnGemmaRmsNorm.
  aclnnInplaceAddRmsNormGetWorkspaceSize: {
    parameters: ["pointer", "pointer", "pointer", "f64", "pointer", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  // aclnnStatus aclnnInplaceAddRmsNorm(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  // Optional: exported together with its phase 1.
  aclnnInplaceAddRmsNorm: { ...execute, optional: true },
  // aclnnStatus aclnnBatchNormReduceGetWorkspaceSize(const aclTensor *x, aclTensor *sum,
  //   aclTensor *squareSum, uint64_t *workspaceSize, aclOpExecutor **executor);
  // (ops-nn norm/bn_training_reduce/op_api/aclnn_batch_norm_reduce.h)
  // Optional, as every operator of issue 39: newer than the BatchNorm family of 2023, so a
  // release without it must still load the library.
  aclnnBatchNormReduceGetWorkspaceSize: {
    parameters: ["pointer", "pointer", "pointer", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  // aclnnStatus aclnnBatchNormReduce(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  // Optional: exported together with its phase 1.
  aclnnBatchNormReduce: { ...execute, optional: true },
  // aclnnStatus aclnnSyncBatchNormGatherStatsGetWorkspaceSize(const aclTensor *totalSum,
  //   const aclTensor *totalSquareSum, const aclTensor *sampleCount, aclTensor *mean,
  //   aclTensor *variance, float momentum, float eps, aclTensor *batchMean,
  //   aclTensor *batchInvstd, uint64_t *workspaceSize, aclOpExecutor **executor);
  // (ops-nn norm/sync_batch_norm_gather_stats/op_api/aclnn_sync_batch_norm_gather_stats.h;
  // momentum and eps are C floats.) Optional, as aclnnBatchNormReduce.
  aclnnSyncBatchNormGatherStatsGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "f32",
      "f32",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
    optional: true,
  },
  // aclnnStatus aclnnSyncBatchNormGatherStats(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  // Optional: exported together with its phase 1.
  aclnnSyncBatchNormGatherStats: { ...execute, optional: true },
} as const satisfies Deno.ForeignLibraryInterface;

/** Operators of `libopapi_math.so` (CANN >= 8.5) or `libopapi.so` (older). */
export const opapiMathSymbols = {
  // aclnnStatus aclnnBatchNormStatsGetWorkspaceSize(const aclTensor *input, double eps,
  //   aclTensor *mean, aclTensor *invstd, uint64_t *workspaceSize, aclOpExecutor **executor);
  aclnnBatchNormStatsGetWorkspaceSize: {
    parameters: ["pointer", "f64", "pointer", "pointer", "buffer", "buffer"],
    result: "i32",
  },
  // aclnnStatus aclnnBatchNormStats(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnBatchNormStats: execute,
} as const satisfies Deno.ForeignLibraryInterface;

/** Every operator symbol: what the single `libopapi.so` of releases before 8.5 exports. */
export const opapiSymbols: typeof opapiNnSymbols & typeof opapiMathSymbols = {
  ...opapiNnSymbols,
  ...opapiMathSymbols,
} as const satisfies Deno.ForeignLibraryInterface;
