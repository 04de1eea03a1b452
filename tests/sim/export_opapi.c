/*
 * Software CANN ("aclsim") -- public aclnn operator symbols.  Compiled with
 * -DSIM_WITH_NN into libopapi_nn.so, with -DSIM_WITH_MATH into libopapi_math.so, and with
 * both into libopapi.so (the older single-library layout).  Each function forwards to
 * libaclsim_core.so.
 */
#include "sim.h"
#include "sim_api.h"

#define SIM_PHASE2(NAME, OP)                                                                              \
  SIM_PUBLIC aclnnStatus NAME(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,         \
                              aclrtStream stream) {                                                      \
    return sim_op_launch(OP, #NAME, workspace, workspaceSize, executor, stream);                          \
  }

#ifdef SIM_WITH_NN
SIM_PUBLIC aclnnStatus aclnnBatchNormReduceBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *mean, const aclTensor *invstd,
    const aclTensor *weight, const bool inputG, const bool weightG, const bool biasG, aclTensor *sumDy,
    aclTensor *sumDyXmu, aclTensor *gradWeight, aclTensor *gradBias, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
  return sim_bn_reduce_backward_ws(gradOut, input, mean, invstd, weight, inputG, weightG, biasG, sumDy, sumDyXmu,
                                   gradWeight, gradBias, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnBatchNormReduceBackward, SIM_OP_BN_REDUCE_BACKWARD)

SIM_PUBLIC aclnnStatus aclnnBatchNormElemtBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *mean, const aclTensor *invstd,
    const aclTensor *weight, const aclTensor *sumDy, const aclTensor *sumDyXmu, aclTensor *counter,
    aclTensor *gradInput, uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_bn_elemt_backward_ws(gradOut, input, mean, invstd, weight, sumDy, sumDyXmu, counter, gradInput,
                                  workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnBatchNormElemtBackward, SIM_OP_BN_ELEMT_BACKWARD)

SIM_PUBLIC aclnnStatus aclnnBatchNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *weight, const aclTensor *runningMean,
    const aclTensor *runningVar, const aclTensor *saveMean, const aclTensor *saveInvstd, bool training, double eps,
    const aclBoolArray *outputMask, aclTensor *gradInput, aclTensor *gradWeight, aclTensor *gradBias,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_bn_backward_ws(gradOut, input, weight, runningMean, runningVar, saveMean, saveInvstd, training, eps,
                            outputMask, gradInput, gradWeight, gradBias, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnBatchNormBackward, SIM_OP_BN_BACKWARD)

SIM_PUBLIC aclnnStatus aclnnBatchNormGetWorkspaceSize(const aclTensor *input, const aclTensor *weight,
                                                      const aclTensor *bias, aclTensor *runningMean,
                                                      aclTensor *runningVar, bool training, double momentum,
                                                      double eps, aclTensor *output, aclTensor *saveMean,
                                                      aclTensor *saveInvstd, uint64_t *workspaceSize,
                                                      aclOpExecutor **executor) {
  return sim_bn_ws(input, weight, bias, runningMean, runningVar, training, momentum, eps, output, saveMean,
                   saveInvstd, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnBatchNorm, SIM_OP_BN)

SIM_PUBLIC aclnnStatus aclnnBatchNormElemtGetWorkspaceSize(const aclTensor *input, const aclTensor *weight,
                                                           const aclTensor *bias, aclTensor *mean,
                                                           aclTensor *invstd, double eps, aclTensor *output,
                                                           uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_bn_elemt_ws(input, weight, bias, mean, invstd, eps, output, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnBatchNormElemt, SIM_OP_BN_ELEMT)

SIM_PUBLIC aclnnStatus aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(
    const aclTensor *input, const aclTensor *mean, const aclTensor *invstd, aclTensor *runningMean,
    aclTensor *runningVar, double momentum, double eps, const aclTensor *counts, aclTensor *meanAll,
    aclTensor *invstdAll, uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_bn_gather_stats_ws(input, mean, invstd, runningMean, runningVar, momentum, eps, counts, meanAll,
                                invstdAll, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnBatchNormGatherStatsWithCounts, SIM_OP_BN_GATHER_STATS)

SIM_PUBLIC aclnnStatus aclnnGroupNormGetWorkspaceSize(const aclTensor *self, const aclTensor *gamma,
                                                      const aclTensor *beta, int64_t N, int64_t C, int64_t HxW,
                                                      int64_t group, double eps, aclTensor *out,
                                                      aclTensor *meanOut, aclTensor *rstdOut,
                                                      uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_gn_ws(self, gamma, beta, N, C, HxW, group, eps, out, meanOut, rstdOut, workspaceSize,
                   (void **)executor);
}
SIM_PHASE2(aclnnGroupNorm, SIM_OP_GN)

SIM_PUBLIC aclnnStatus aclnnGroupNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *mean, const aclTensor *rstd,
    const aclTensor *gamma, int64_t N, int64_t C, int64_t HxW, int64_t group, const aclBoolArray *outputMask,
    aclTensor *gradInput, aclTensor *gradGammaOut, aclTensor *gradBetaOut, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
  return sim_gn_backward_ws(gradOut, input, mean, rstd, gamma, N, C, HxW, group, outputMask, gradInput,
                            gradGammaOut, gradBetaOut, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnGroupNormBackward, SIM_OP_GN_BACKWARD)

SIM_PUBLIC aclnnStatus aclnnLayerNormGetWorkspaceSize(const aclTensor *input, const aclIntArray *normalizedShape,
                                                      const aclTensor *weightOptional, const aclTensor *biasOptional,
                                                      double eps, aclTensor *out, aclTensor *meanOutOptional,
                                                      aclTensor *rstdOutOptional, uint64_t *workspaceSize,
                                                      aclOpExecutor **executor) {
  return sim_layer_norm_ws("aclnnLayerNorm", input, normalizedShape, weightOptional, biasOptional, eps, out,
                           meanOutOptional, rstdOutOptional, 0, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnLayerNorm, SIM_OP_LAYER_NORM)

SIM_PUBLIC aclnnStatus aclnnLayerNormWithImplModeGetWorkspaceSize(
    const aclTensor *input, const aclIntArray *normalizedShape, const aclTensor *weightOptional,
    const aclTensor *biasOptional, double eps, aclTensor *out, aclTensor *meanOutOptional, aclTensor *rstdOutOptional,
    int32_t implMode, uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_layer_norm_ws("aclnnLayerNormWithImplMode", input, normalizedShape, weightOptional, biasOptional, eps,
                           out, meanOutOptional, rstdOutOptional, implMode, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnLayerNormWithImplMode, SIM_OP_LAYER_NORM)

SIM_PUBLIC aclnnStatus aclnnLayerNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclIntArray *normalizedShape, const aclTensor *mean,
    const aclTensor *rstd, const aclTensor *weightOptional, const aclTensor *biasOptional,
    const aclBoolArray *outputMask, aclTensor *gradInputOut, aclTensor *gradWeightOut, aclTensor *gradBiasOut,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_layer_norm_backward_ws(gradOut, input, normalizedShape, mean, rstd, weightOptional, biasOptional,
                                    outputMask, gradInputOut, gradWeightOut, gradBiasOut, workspaceSize,
                                    (void **)executor);
}
SIM_PHASE2(aclnnLayerNormBackward, SIM_OP_LAYER_NORM_BACKWARD)

SIM_PUBLIC aclnnStatus aclnnRmsNormGetWorkspaceSize(const aclTensor *x, const aclTensor *gamma, double epsilon,
                                                    const aclTensor *yOut, const aclTensor *rstdOut,
                                                    uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_rms_norm_ws(x, gamma, epsilon, yOut, rstdOut, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnRmsNorm, SIM_OP_RMS_NORM)

SIM_PUBLIC aclnnStatus aclnnRmsNormGradGetWorkspaceSize(const aclTensor *dy, const aclTensor *x,
                                                        const aclTensor *rstd, const aclTensor *gamma,
                                                        const aclTensor *dxOut, const aclTensor *dgammaOut,
                                                        uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_rms_norm_grad_ws(dy, x, rstd, gamma, dxOut, dgammaOut, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnRmsNormGrad, SIM_OP_RMS_NORM_GRAD)

SIM_PUBLIC aclnnStatus aclnnAddRmsNormGetWorkspaceSize(const aclTensor *x1, const aclTensor *x2,
                                                       const aclTensor *gamma, double epsilon, aclTensor *yOut,
                                                       aclTensor *rstdOut, aclTensor *xOut, uint64_t *workspaceSize,
                                                       aclOpExecutor **executor) {
  return sim_add_rms_norm_ws(x1, x2, gamma, epsilon, yOut, rstdOut, xOut, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnAddRmsNorm, SIM_OP_ADD_RMS_NORM)

SIM_PUBLIC aclnnStatus aclnnGemmaRmsNormGetWorkspaceSize(const aclTensor *x, const aclTensor *gamma, double epsilon,
                                                         const aclTensor *yOut, const aclTensor *rstdOut,
                                                         uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_gemma_rms_norm_ws(x, gamma, epsilon, yOut, rstdOut, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnGemmaRmsNorm, SIM_OP_GEMMA_RMS_NORM)

SIM_PUBLIC aclnnStatus aclnnInplaceAddRmsNormGetWorkspaceSize(aclTensor *x1Ref, aclTensor *x2Ref, const aclTensor *gamma,
                                                              double epsilon, const aclTensor *rstdOut,
                                                              uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_inplace_add_rms_norm_ws(x1Ref, x2Ref, gamma, epsilon, rstdOut, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnInplaceAddRmsNorm, SIM_OP_INPLACE_ADD_RMS_NORM)
SIM_PUBLIC aclnnStatus aclnnBatchNormReduceGetWorkspaceSize(const aclTensor *x, aclTensor *sum, aclTensor *squareSum,
                                                            uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_bn_reduce_ws(x, sum, squareSum, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnBatchNormReduce, SIM_OP_BN_REDUCE)

SIM_PUBLIC aclnnStatus aclnnSyncBatchNormGatherStatsGetWorkspaceSize(
    const aclTensor *totalSum, const aclTensor *totalSquareSum, const aclTensor *sampleCount, aclTensor *mean,
    aclTensor *variance, float momentum, float eps, aclTensor *batchMean, aclTensor *batchInvstd,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_sync_bn_gather_stats_ws(totalSum, totalSquareSum, sampleCount, mean, variance, momentum, eps, batchMean,
                                     batchInvstd, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnSyncBatchNormGatherStats, SIM_OP_SYNC_BN_GATHER_STATS)
SIM_PUBLIC aclnnStatus aclnnAddLayerNormGetWorkspaceSize(const aclTensor *x1, const aclTensor *x2,
                                                         const aclTensor *gamma, const aclTensor *beta,
                                                         const aclTensor *biasOptional, double epsilon,
                                                         bool additionalOutput, const aclTensor *yOut,
                                                         const aclTensor *meanOut, const aclTensor *rstdOut,
                                                         const aclTensor *xOut, uint64_t *workspaceSize,
                                                         aclOpExecutor **executor) {
  return sim_add_layer_norm_ws(x1, x2, gamma, beta, biasOptional, epsilon, additionalOutput, yOut, meanOut, rstdOut,
                               xOut, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnAddLayerNorm, SIM_OP_ADD_LAYER_NORM)

SIM_PUBLIC aclnnStatus aclnnDeepNormGetWorkspaceSize(const aclTensor *x, const aclTensor *gx, const aclTensor *beta,
                                                     const aclTensor *gamma, double alpha, double epsilon,
                                                     const aclTensor *meanOut, const aclTensor *rstdOut,
                                                     const aclTensor *yOut, uint64_t *workspaceSize,
                                                     aclOpExecutor **executor) {
  return sim_deep_norm_ws(x, gx, beta, gamma, alpha, epsilon, meanOut, rstdOut, yOut, workspaceSize,
                          (void **)executor);
}
SIM_PHASE2(aclnnDeepNorm, SIM_OP_DEEP_NORM)
SIM_PUBLIC aclnnStatus aclnnInstanceNormGetWorkspaceSize(const aclTensor *x, const aclTensor *gamma,
                                                         const aclTensor *beta, const char *dataFormat, double eps,
                                                         aclTensor *y, aclTensor *mean, aclTensor *variance,
                                                         uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_instance_norm_ws(x, gamma, beta, dataFormat, eps, y, mean, variance, workspaceSize,
                              (void **)executor);
}
SIM_PHASE2(aclnnInstanceNorm, SIM_OP_INSTANCE_NORM)

SIM_PUBLIC aclnnStatus aclnnFastBatchNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *weight, const aclTensor *runningMean,
    const aclTensor *runningVar, const aclTensor *saveMean, const aclTensor *saveInvstd, bool training, double eps,
    const aclBoolArray *outputMask, int version, aclTensor *gradInput, aclTensor *gradWeight, aclTensor *gradBias,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_fast_bn_backward_ws(gradOut, input, weight, runningMean, runningVar, saveMean, saveInvstd, training, eps,
                                 outputMask, version, gradInput, gradWeight, gradBias, workspaceSize,
                                 (void **)executor);
}
SIM_PHASE2(aclnnFastBatchNormBackward, SIM_OP_FAST_BN_BACKWARD)

SIM_PUBLIC aclnnStatus aclnnAddRmsNormCastGetWorkspaceSize(const aclTensor *x1, const aclTensor *x2,
                                                           const aclTensor *gamma, double epsilon,
                                                           const aclTensor *y1Out, const aclTensor *y2Out,
                                                           const aclTensor *rstdOut, const aclTensor *xOut,
                                                           uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_add_rms_norm_cast_ws(x1, x2, gamma, epsilon, y1Out, y2Out, rstdOut, xOut, workspaceSize,
                                  (void **)executor);
}
SIM_PHASE2(aclnnAddRmsNormCast, SIM_OP_ADD_RMS_NORM_CAST)

SIM_PUBLIC aclnnStatus aclnnAdaLayerNormGetWorkspaceSize(const aclTensor *x, const aclTensor *scale,
                                                         const aclTensor *shift, const aclTensor *weightOptional,
                                                         const aclTensor *biasOptional, double epsilon, aclTensor *out,
                                                         uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_ada_layer_norm_ws(false, x, scale, shift, weightOptional, biasOptional, epsilon, out, NULL, NULL,
                               workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnAdaLayerNorm, SIM_OP_ADA_LAYER_NORM)

SIM_PUBLIC aclnnStatus aclnnAdaLayerNormV2GetWorkspaceSize(const aclTensor *x, const aclTensor *scale,
                                                           const aclTensor *shift, const aclTensor *weightOptional,
                                                           const aclTensor *biasOptional, double epsilon,
                                                           aclTensor *out, aclTensor *meanOutOptional,
                                                           aclTensor *rstdOutOptional, uint64_t *workspaceSize,
                                                           aclOpExecutor **executor) {
  return sim_ada_layer_norm_ws(true, x, scale, shift, weightOptional, biasOptional, epsilon, out, meanOutOptional,
                               rstdOutOptional, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnAdaLayerNormV2, SIM_OP_ADA_LAYER_NORM_V2)

SIM_PUBLIC aclnnStatus aclnnAdaLayerNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclIntArray *normalizedShape, const aclTensor *rstd,
    const aclTensor *mean, const aclTensor *scale, const aclTensor *shift, const aclTensor *weightOptional,
    const aclTensor *biasOptional, aclTensor *gradInputOut, aclTensor *gradScaleOut, aclTensor *gradShiftOut,
    aclTensor *gradWeightOut, aclTensor *gradBiasOut, uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_ada_layer_norm_grad_ws(gradOut, input, normalizedShape, rstd, mean, scale, shift, weightOptional,
                                    biasOptional, gradInputOut, gradScaleOut, gradShiftOut, gradWeightOut, gradBiasOut,
                                    workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnAdaLayerNormBackward, SIM_OP_ADA_LAYER_NORM_GRAD)

SIM_PUBLIC aclnnStatus aclnnAddLayerNormGradGetWorkspaceSize(const aclTensor *dy, const aclTensor *x1,
                                                             const aclTensor *x2, const aclTensor *rstd,
                                                             const aclTensor *mean, const aclTensor *gamma,
                                                             const aclTensor *dsumOptional, const aclTensor *dxOut,
                                                             const aclTensor *dgammaOut, const aclTensor *dbetaOut,
                                                             uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_add_layer_norm_grad_ws(dy, x1, x2, rstd, mean, gamma, dsumOptional, dxOut, dgammaOut, dbetaOut,
                                    workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnAddLayerNormGrad, SIM_OP_ADD_LAYER_NORM_GRAD)

SIM_PUBLIC aclnnStatus aclnnDeepNormGradGetWorkspaceSize(const aclTensor *dy, const aclTensor *x, const aclTensor *gx,
                                                         const aclTensor *gamma, const aclTensor *mean,
                                                         const aclTensor *rstd, double alpha, const aclTensor *dxOut,
                                                         const aclTensor *dgxOut, const aclTensor *dbetaOut,
                                                         const aclTensor *dgammaOut, uint64_t *workspaceSize,
                                                         aclOpExecutor **executor) {
  return sim_deep_norm_grad_ws(dy, x, gx, gamma, mean, rstd, alpha, dxOut, dgxOut, dbetaOut, dgammaOut,
                               workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnDeepNormGrad, SIM_OP_DEEP_NORM_GRAD)

SIM_PUBLIC aclnnStatus aclnnGroupNormSiluGetWorkspaceSize(const aclTensor *self, const aclTensor *gamma,
                                                          const aclTensor *beta, int64_t group, double eps,
                                                          aclTensor *out, aclTensor *meanOut, aclTensor *rstdOut,
                                                          uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_gn_silu_ws("aclnnGroupNormSilu", self, gamma, beta, group, eps, true, out, meanOut, rstdOut,
                        workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnGroupNormSilu, SIM_OP_GN_SILU)

SIM_PUBLIC aclnnStatus aclnnGroupNormSiluV2GetWorkspaceSize(const aclTensor *self, const aclTensor *gamma,
                                                            const aclTensor *beta, int64_t group, double eps,
                                                            bool activateSilu, aclTensor *out, aclTensor *meanOut,
                                                            aclTensor *rstdOut, uint64_t *workspaceSize,
                                                            aclOpExecutor **executor) {
  return sim_gn_silu_ws("aclnnGroupNormSiluV2", self, gamma, beta, group, eps, activateSilu, out, meanOut, rstdOut,
                        workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnGroupNormSiluV2, SIM_OP_GN_SILU)

SIM_PUBLIC aclnnStatus aclnnGroupNormSwishGetWorkspaceSize(const aclTensor *x, const aclTensor *gamma,
                                                           const aclTensor *beta, int64_t numGroups,
                                                           char *dataFormatOptional, double eps, bool activateSwish,
                                                           double swishScale, const aclTensor *yOut,
                                                           const aclTensor *meanOut, const aclTensor *rstdOut,
                                                           uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_gn_swish_ws(x, gamma, beta, numGroups, dataFormatOptional, eps, activateSwish, swishScale, yOut, meanOut,
                         rstdOut, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnGroupNormSwish, SIM_OP_GN_SWISH)

SIM_PUBLIC aclnnStatus aclnnFastLayerNormGetWorkspaceSize(const aclTensor *input, const aclIntArray *normalizedShape,
                                                          const aclTensor *weightOptional,
                                                          const aclTensor *biasOptional, double eps, aclTensor *out,
                                                          aclTensor *meanOutOptional, aclTensor *rstdOutOptional,
                                                          uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_fast_layer_norm_ws(input, normalizedShape, weightOptional, biasOptional, eps, out, meanOutOptional,
                                rstdOutOptional, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnFastLayerNorm, SIM_OP_FAST_LAYER_NORM)
SIM_PUBLIC aclnnStatus aclnnGroupNormSwishGradGetWorkspaceSize(
    const aclTensor *dy, const aclTensor *mean, const aclTensor *rstd, const aclTensor *x, const aclTensor *gamma,
    const aclTensor *beta, int64_t numGroups, char *dataFormatOptional, double swishScale, bool dgammaIsRequire,
    bool dbetaIsRequire, const aclTensor *dxOut, const aclTensor *dgammaOut, const aclTensor *dbetaOut,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
  return sim_gn_swish_grad_ws(dy, mean, rstd, x, gamma, beta, numGroups, dataFormatOptional, swishScale,
                              dgammaIsRequire, dbetaIsRequire, dxOut, dgammaOut, dbetaOut, workspaceSize,
                              (void **)executor);
}
SIM_PHASE2(aclnnGroupNormSwishGrad, SIM_OP_GN_SWISH_GRAD)
#endif

#ifdef SIM_WITH_MATH
SIM_PUBLIC aclnnStatus aclnnBatchNormStatsGetWorkspaceSize(const aclTensor *input, double eps, aclTensor *mean,
                                                           aclTensor *invstd, uint64_t *workspaceSize,
                                                           aclOpExecutor **executor) {
  return sim_bn_stats_ws(input, eps, mean, invstd, workspaceSize, (void **)executor);
}
SIM_PHASE2(aclnnBatchNormStats, SIM_OP_BN_STATS)
#endif
