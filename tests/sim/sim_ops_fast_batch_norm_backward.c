/*
 * Software CANN ("aclsim") -- aclnnFastBatchNormBackward: phase-1 validation as CANN performs it
 * and planning; the computation is aclnnBatchNormBackward's (sim_ops_batch_norm_backward.c,
 * sim_run_bn_backward).
 *
 * Source: hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921,
 *   norm/batch_norm_grad_v3/op_host/op_api/aclnn_fast_batch_norm_backward.cpp (functions named
 *   below), docs/aclnnFastBatchNormBackward.md.
 * Phase 1 (aclnnFastBatchNormBackwardGetWorkspaceSize):
 *   1. CheckInputNotNull: gradOut, input (OP_CHECK_NULL -> 161001).
 *   2. input or gradOut empty (IsEmpty): workspace 0, SUCCESS, nothing written -- before every
 *      other check, the outputMask included.
 *   3. CheckParams -> CheckMaskNotNull: outputMask NULL, size < 1 ("outputMask size should not be
 *      less than 1."), a masked output NULL: every failure returned as ACLNN_ERR_PARAM_NULLPTR.
 *      CANN then reads (*outputMask)[1] and [2] whatever the size ([aclsim]: sizes 1 and 2 are
 *      refused, 161001); entries beyond the third are not read.
 *   4. CheckDtypeValid (gradOut, input in the list, input == gradOut), CheckGradDtypeValid (the
 *      masked outputs in the list), CheckOtherDtypeValid (weight, runningMean, runningVar,
 *      saveMean, saveInvstd in the list) -> 161002.  GetDtypeSupportList's condition
 *      `>= ASCEND910B || <= ASCEND910E` always holds: the list is FLOAT, FLOAT16, BF16 on every SoC.
 *   5. CheckFormat: gradOut's storage format == input's (== gradInput's when masked in), no private
 *      format -> 161002.
 *   6. CheckShape: input and gradOut rank 2..8, gradOut == input, gradInput rank 2..8 and ==
 *      gradOut; CheckOtherShape: weight, runningMean, runningVar 1-D of C -> 161002.  saveMean,
 *      saveInvstd, gradWeight and gradBias shapes are not checked.
 * Then FastBatchNormBackward: NULL optionals filled (runningMean 0, runningVar 1, weight 1,
 * saveMean 0, saveInvstd 1: FastBatchNormBackwardPrepare, op::FillScalar); on ASCEND910B /
 * ASCEND910_93 (isBatchNormSupportAscendC) every per-channel tensor cast to FLOAT and one
 * l0op::BatchNormGradV3 (saveMean replaced by zeros in inference:
 * FastBatchNormBackwardProcForAscendC); gradWeight and gradBias cast to their outputs' dtypes and
 * ViewCopy'd (FastBatchNormBackwardWeightAndBiasPost), gradInput ViewCopy'd (FastBatchNormPost).
 * `version` is only passed to L2_DFX_PHASE_1 (logging).
 * Products ("产品支持情况"): Atlas A2 only.
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* The slots of aclnnBatchNormBackward (sim_ops_batch_norm_backward.c BB_*): the two prototypes list the tensors in
 * the same order, so its computation runs on this plan unchanged. */
enum { FB_DY, FB_X, FB_W, FB_RM, FB_RV, FB_SM, FB_SI, FB_GI, FB_GW, FB_GB };

static const char *const NAMES[] = {"gradOut", "input", "weight", "runningMean", "runningVar",
                                    "saveMean", "saveInvstd", "gradInput", "gradWeight", "gradBias"};
static const char DOC[] = "ops-nn norm/batch_norm_grad_v3/docs/aclnnFastBatchNormBackward.md";

static bool private_format(int32_t f) {
  return !(f == SIM_FMT_ND || f == SIM_FMT_NCHW || f == SIM_FMT_NHWC || f == SIM_FMT_NCDHW || f == SIM_FMT_NDHWC ||
           f == SIM_FMT_NCL);
}

/* CheckMaskNotNull (every failure ACLNN_ERR_PARAM_NULLPTR). */
static int check_mask(NormCtx *c, const void *outputMask, void *const outs[3]) {
  NTRY(nrm_null(c, outputMask, "aclBoolArray", "outputMask", SIM_NN_NULLPTR));
  bool v[64] = {false};
  uint64_t n = 0;
  if (sim_lookup_bool_array(outputMask, v, 64, &n) != 0)
    return nrm_fail(c, SIM_NN_INVALID, "outputMask (%p) is not a live aclBoolArray", outputMask);
  if (n < 1) return nrm_fail(c, SIM_NN_NULLPTR, "outputMask size should not be less than 1.");
  if (n < 3)
    return nrm_fail(c, SIM_NN_NULLPTR,
                    "[aclsim] outputMask has %" PRIu64 " element(s): CANN reads outputMask[1] and outputMask[2] "
                    "regardless (an out-of-bounds read); the simulator rejects it",
                    n);
  for (int i = 0; i < 3; i++) {
    c->plan.mask[i] = v[i];
    if (v[i]) NTRY(nrm_null(c, outs[i], "aclTensor", NAMES[FB_GI + i], SIM_NN_NULLPTR));
  }
  return 0;
}

/* CheckDtypeValid, CheckGradDtypeValid, CheckOtherDtypeValid. */
static int check_dtypes(NormCtx *c) {
  const NrmDtList l = {3, {SIM_DT_FLOAT, SIM_DT_FLOAT16, SIM_DT_BF16, 0}};
  NTRY(nrm_dt_support(c, FB_DY, &l, "gradOut"));
  NTRY(nrm_dt_support(c, FB_X, &l, "input"));
  NTRY(nrm_dt_same(c, FB_X, "input", FB_DY, "gradOut"));
  for (int s = FB_GI; s <= FB_GB; s++)
    if (NP(c, s)) NTRY(nrm_dt_support(c, s, &l, NAMES[s]));
  for (int s = FB_W; s <= FB_SI; s++)
    if (NP(c, s)) NTRY(nrm_dt_support(c, s, &l, NAMES[s]));
  return 0;
}

/* CheckFormat, CheckShape, CheckOtherShape (OP_LOGE texts). */
static int check_formats_shapes(NormCtx *c, int64_t *C) {
  if (NT(c, FB_DY)->format != NT(c, FB_X)->format)
    return nrm_fail(c, SIM_NN_INVALID, "Format of gradOut and input should be equal, gradOut [%s], input [%s].",
                    sim_format_name(NT(c, FB_DY)->format), sim_format_name(NT(c, FB_X)->format));
  if (NP(c, FB_GI) && NT(c, FB_DY)->format != NT(c, FB_GI)->format)
    return nrm_fail(c, SIM_NN_INVALID,
                    "Format of gradOut and gradInput should be equal, gradOut [%s], gradInput [%s].",
                    sim_format_name(NT(c, FB_DY)->format), sim_format_name(NT(c, FB_GI)->format));
  if (private_format(NT(c, FB_DY)->format) || private_format(NT(c, FB_X)->format))
    return nrm_fail(c, SIM_NN_INVALID, "Format only support NC, NCL, NCHW, NCDHW.");
  NTRY(nrm_max_dim(c, FB_X, 8, "input"));
  NTRY(nrm_min_dim(c, FB_X, 2, "input"));
  NTRY(nrm_max_dim(c, FB_DY, 8, "gradOut"));
  NTRY(nrm_min_dim(c, FB_DY, 2, "gradOut"));
  NTRY(nrm_shape_same(c, FB_DY, "gradOut", FB_X, "input"));
  if (NP(c, FB_GI)) {
    NTRY(nrm_max_dim(c, FB_GI, 8, "gradInput"));
    NTRY(nrm_min_dim(c, FB_GI, 2, "gradInput"));
    NTRY(nrm_shape_same(c, FB_GI, "gradInput", FB_DY, "gradOut"));
  }
  *C = NT(c, FB_X)->dims[1];
  for (int s = FB_W; s <= FB_RV; s++) {
    if (!NP(c, s) || (NT(c, s)->ndim == 1 && NT(c, s)->dims[0] == *C)) continue;
    char got[160];
    nrm_shape_str(NT(c, s), got, sizeof got);
    return nrm_fail(c, SIM_NN_INVALID, "Dim of %s should be one and shape is channel num of input[%d], but got [%s].",
                    NAMES[s], (int)*C, got);
  }
  return 0;
}

int sim_fast_bn_backward_ws(const void *gradOut, const void *input, const void *weight, const void *runningMean,
                            const void *runningVar, const void *saveMean, const void *saveInvstd, bool training,
                            double eps, const void *outputMask, int version, void *gradInput, void *gradWeight,
                            void *gradBias, uint64_t *ws, void **exec) {
  (void)version; /* L2_DFX_PHASE_1 only */
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_FAST_BN_BACKWARD, "aclnnFastBatchNormBackward", 7, 3, NAMES);
  NTRY(nrm_opp_path(c));
  NTRY(nrm_outparams(c, ws, exec));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, NP_A2, DOC));
  c->plan.training = training;
  c->plan.eps = eps;
  /* Off DAV_3510 the kernel reads the saveInvstd slot as the batch variance (sim_rules.c). */
  c->plan.bn_saves_variance = sim_rule_bn_saves_variance(&c->soc);
  NTRY(nrm_null(c, gradOut, "aclTensor", "gradOut", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, input, "aclTensor", "input", SIM_NN_NULLPTR));
  NTRY(nrm_get(c, gradOut, FB_DY));
  NTRY(nrm_get(c, input, FB_X));
  if (sim_desc_numel(NT(c, FB_X)) == 0 || sim_desc_numel(NT(c, FB_DY)) == 0)
    return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  void *const outs[3] = {gradInput, gradWeight, gradBias};
  NTRY(check_mask(c, outputMask, outs));
  const void *ins[] = {weight, runningMean, runningVar, saveMean, saveInvstd};
  for (int s = FB_W; s <= FB_SI; s++) NTRY(nrm_get(c, ins[s - FB_W], s));
  for (int i = 0; i < 3; i++)
    if (c->plan.mask[i]) NTRY(nrm_get(c, outs[i], FB_GI + i)); /* a masked-off output is not touched */
  NTRY(check_dtypes(c));
  int64_t C = 0;
  NTRY(check_formats_shapes(c, &C));
  /* [aclsim] not checked by CANN: in training the kernel reads C saved statistics. */
  if (training) {
    NTRY(nrm_numel_is(c, FB_SM, C, "reads"));
    NTRY(nrm_numel_is(c, FB_SI, C, "reads"));
  }
  /* FastBatchNormPost / FastBatchNormBackwardWeightAndBiasPost: ViewCopy of BatchNormGradV3's dx
   * (input's dtype and shape) and of the [C] dweight / dbias cast to the outputs' dtypes. */
  if (NP(c, FB_GI) && NT(c, FB_GI)->dtype != NT(c, FB_X)->dtype)
    return nrm_fail(c, SIM_NN_INNER_NULLPTR,
                    "Input tensor's dtype[%s] should be same with output's dtype[%s]. (l0op::ViewCopy of the result "
                    "into gradInput)",
                    sim_dt_str(NT(c, FB_X)->dtype), sim_dt_str(NT(c, FB_GI)->dtype));
  const SimTensorDesc per_channel = nrm_shape_of(&C, 1);
  if (NP(c, FB_GW)) NTRY(nrm_view_copy(c, FB_GW, &per_channel));
  if (NP(c, FB_GB)) NTRY(nrm_view_copy(c, FB_GB, &per_channel));
  c->plan.C = C;
  return nrm_finish(c, C, ws, exec);
}
