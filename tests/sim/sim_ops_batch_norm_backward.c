/*
 * Software CANN ("aclsim") -- aclnnBatchNormBackward (its computation is aclnnFastBatchNormBackward's too): phase-1 validation as CANN performs it on the SoC
 * aclrtGetSocName() names (return codes, order of the checks and message texts of the CANN sources
 * cited at each rule), planning, and the computation run at stream synchronisation.
 *
 * Source (the behaviour of each rule is cited as repo + path + function):
 *   hicann/ops-nn   e5c3fa9327ea95ba26d06227e746923580d10921 (2026-08-22)
 * The checks' conventions (message macros, [aclsim] rules): sim_ops_seed_checks.c, sim_ops_common.c.
 */
#define _GNU_SOURCE
#include "sim_ops_seed.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================================
 * 2. aclnnBatchNormBackward
 *    ops-nn norm/batch_norm_grad_v3/op_host/op_api/aclnn_batch_norm_backward.cpp
 * ====================================================================================== */
enum { BB_DY, BB_X, BB_W, BB_RM, BB_RV, BB_SM, BB_SI, BB_GI, BB_GW, BB_GB };

/* RegbaseCheckDtypeSame / CheckDtypeMatchReferenceOrFloat: "Dtype of %s:[%s] should be float or
 * same as %s, %s dtype: [%s]." (no check when either tensor is NULL). */
static int dt_ref_or_float(Ctx *c, int s, int ref) {
  if (!P(s) || !P(ref)) return 0;
  if (T(s)->dtype == T(ref)->dtype || T(s)->dtype == SIM_DT_FLOAT) return 0;
  return fail(c, SIM_NN_INVALID, "Dtype of %s:[%s] should be float or same as %s, %s dtype: [%s].", NAME(s),
              sim_dt_str(T(s)->dtype), NAME(ref), NAME(ref), sim_dt_str(T(ref)->dtype));
}

/* CheckOtherShape / CheckSaveMeanSaveInvstdShape / CheckGradWeightGradBiasShape: "Dim of %s
 * should be one and shape is channel num of input[%d], but got [%s]." (the shape string has its
 * own brackets, so "[[1, 3]]"). */
static int bb_dim_c(Ctx *c, int s, int64_t C, bool allow_zero) {
  if (!P(s)) return 0;
  const SimTensorDesc *d = T(s);
  if (d->ndim == 1 && (d->dims[0] == C || (allow_zero && d->dims[0] == 0))) return 0;
  char got[160];
  shape_str(d, got, sizeof got);
  return fail(c, SIM_NN_INVALID, "Dim of %s should be one and shape is channel num of input[%d], but got [%s].", NAME(s),
              (int)C, got);
}

/* RegbaseCheckDtypeSame's last rule, on the caller's pointers rather than the masked slots. */
static int bb_grad_dtypes_same(Ctx *c, const void *gradWeight, const void *gradBias) {
  if (gradWeight == NULL || gradBias == NULL) return 0;
  SimTensorDesc w, b;
  if (sim_lookup_tensor(gradWeight, &w) != 0)
    return fail(c, SIM_NN_INVALID, "gradWeight (%p) is not a live aclTensor (destroyed or never created)", gradWeight);
  if (sim_lookup_tensor(gradBias, &b) != 0)
    return fail(c, SIM_NN_INVALID, "gradBias (%p) is not a live aclTensor (destroyed or never created)", gradBias);
  if (w.dtype == b.dtype) return 0;
  return fail(c, SIM_NN_INVALID, "Expected both tensors to have same dtype, but found gradWeight %s and gradBias %s.",
              sim_dt_str(w.dtype), sim_dt_str(b.dtype));
}

int sim_bn_backward_ws(const void *gradOut, const void *input, const void *weight, const void *runningMean,
                       const void *runningVar, const void *saveMean, const void *saveInvstd, bool training, double eps,
                       const void *outputMask, void *gradInput, void *gradWeight, void *gradBias, uint64_t *ws,
                       void **exec) {
  static const char *const names[] = {"gradOut", "input", "weight", "runningMean", "runningVar",
                                      "saveMean", "saveInvstd", "gradInput", "gradWeight", "gradBias"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_BACKWARD, "aclnnBatchNormBackward", 7, 3, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec));
  TRY(soc_check(c));
  TRY(op_supported(c));
  c->plan.training = training;
  c->plan.eps = eps;
  /* CheckInputNotNull -> 161001 */
  TRY(NULL_TENSOR(c, gradOut, "gradOut", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, input, "input", SIM_NN_NULLPTR));
  TRY(get(c, gradOut, BB_DY));
  TRY(get(c, input, BB_X));
  /* input or gradOut empty: workspace 0, SUCCESS, nothing written, before any other check
   * (aclnnBatchNormBackwardGetWorkspaceSize). */
  if (is_empty(T(BB_X)) || is_empty(T(BB_DY))) return finish_early(c, SIM_RUN_NOTHING, ws, exec);
  /* CheckMaskNotNull: every failure is returned as 161001 (CheckParams maps false to
   * ACLNN_ERR_PARAM_NULLPTR), including a wrong length on DAV_3510. */
  TRY(null_arg(c, outputMask, "aclBoolArray", "outputMask", SIM_NN_NULLPTR));
  uint64_t mlen = 0;
  TRY(lookup_mask(c, outputMask, &mlen));
  if (mlen < 1) return fail(c, SIM_NN_NULLPTR, "outputMask size should not less than 1.");
  if (c->plan.regbase && mlen != 3)
    return fail(c, SIM_NN_NULLPTR, "outputMask size should be 3, but got %" PRIu64 ".", mlen);
  if (mlen < 3) /* [aclsim] non-regbase CANN reads (*outputMask)[1] and [2] anyway: out of bounds */
    return fail(c, SIM_NN_NULLPTR,
                "[aclsim] outputMask has %" PRIu64 " element(s): CANN on this SoC reads outputMask[1] and outputMask[2] "
                "regardless (an out-of-bounds read); the simulator rejects it",
                mlen);
  if (c->plan.mask[0]) TRY(NULL_TENSOR(c, gradInput, "gradInput", SIM_NN_NULLPTR));
  if (c->plan.mask[1]) TRY(NULL_TENSOR(c, gradWeight, "gradWeight", SIM_NN_NULLPTR));
  if (c->plan.mask[2]) TRY(NULL_TENSOR(c, gradBias, "gradBias", SIM_NN_NULLPTR));
  TRY(get(c, weight, BB_W));
  TRY(get(c, runningMean, BB_RM));
  TRY(get(c, runningVar, BB_RV));
  TRY(get(c, saveMean, BB_SM));
  TRY(get(c, saveInvstd, BB_SI));
  if (c->plan.mask[0]) TRY(get(c, gradInput, BB_GI));
  if (c->plan.mask[1]) TRY(get(c, gradWeight, BB_GW));
  if (c->plan.mask[2]) TRY(get(c, gradBias, BB_GB));
  /* CheckDtypeValid, CheckGradDtypeValid, CheckOtherDtypeValid: list membership only
   * (GetDtypeSupportList: DAV_2201 or regbase -> + BF16); input's dtype == gradOut's. */
  DtList l = dl_fhb(c);
  TRY(DT_SUPPORT(c, BB_DY, &l));
  TRY(DT_SUPPORT(c, BB_X, &l));
  TRY(dt_same(c, BB_X, BB_DY));
  for (int s = BB_GI; s <= BB_GB; s++) TRY(DT_SUPPORT(c, s, &l));
  for (int s = BB_W; s <= BB_SI; s++) TRY(DT_SUPPORT(c, s, &l));
  /* DAV_3510 only: RegbaseCheckDtypeSame (the mixed-precision rules). */
  if (c->plan.regbase) {
    TRY(dt_ref_or_float(c, BB_W, BB_DY));
    TRY(dt_ref_or_float(c, BB_RM, BB_DY));
    TRY(dt_ref_or_float(c, BB_RV, BB_DY));
    TRY(dt_same(c, BB_RM, BB_RV));
    TRY(dt_ref_or_float(c, BB_SM, BB_DY));
    TRY(dt_ref_or_float(c, BB_SI, BB_DY));
    TRY(dt_same(c, BB_SI, BB_SM));
    TRY(dt_same(c, BB_GI, BB_DY));
    TRY(dt_ref_or_float(c, BB_GW, BB_W));
    TRY(dt_ref_or_float(c, BB_GB, BB_W));
    /* aclnn_batch_norm_backward.cpp 355-357: gradWeight and gradBias must share a dtype whenever
     * both pointers are non-NULL, whatever outputMask says (a masked-off output is checked too). */
    TRY(bb_grad_dtypes_same(c, gradWeight, gradBias));
  }
  /* CheckFormat */
  if (T(BB_DY)->format != T(BB_X)->format)
    return fail(c, SIM_NN_INVALID, "Format of gradOut and input should be equal, gradOut [%s], input [%s].",
                fmt_str(T(BB_DY)->format), fmt_str(T(BB_X)->format));
  if (P(BB_GI) && T(BB_DY)->format != T(BB_GI)->format)
    return fail(c, SIM_NN_INVALID, "Format of gradOut and gradInput should be equal, gradOut [%s], gradInput [%s].",
                fmt_str(T(BB_DY)->format), fmt_str(T(BB_GI)->format));
  if (c->plan.regbase) {
    int32_t f = T(BB_X)->format;
    if (T(BB_X)->ndim == 5 && f != SIM_FMT_NCDHW && f != SIM_FMT_NDHWC)
      return fail(c, SIM_NN_INVALID, "Format of input should be NCDHW or NDHWC, when input dim is 5.");
    if (P(BB_GI) && T(BB_GI)->ndim == 5 && T(BB_GI)->format != SIM_FMT_NCDHW && T(BB_GI)->format != SIM_FMT_NDHWC)
      return fail(c, SIM_NN_INVALID, "Format of output should be NCDHW or NDHWC, when input dim is 5.");
  }
  if (is_private(c, BB_DY) || is_private(c, BB_X))
    return fail(c, SIM_NN_INVALID, "Format only support NC, NCL, NCHW, NCDHW.");
  /* CheckShape */
  TRY(max_dim(c, BB_X, 8, NULL));
  TRY(min_dim(c, BB_X, 2, NULL));
  TRY(max_dim(c, BB_DY, 8, NULL));
  TRY(min_dim(c, BB_DY, 2, NULL));
  TRY(shape_same(c, BB_DY, BB_X, NULL, NULL));
  if (P(BB_GI)) {
    TRY(max_dim(c, BB_GI, 8, NULL));
    TRY(min_dim(c, BB_GI, 2, NULL));
    TRY(shape_same(c, BB_GI, BB_DY, NULL, NULL));
  }
  TRY(regbase_channels_last(c, BB_X));
  int64_t C = T(BB_X)->dims[1];
  /* CheckOtherShape: weight, runningMean, runningVar exactly [C] (every SoC). */
  TRY(bb_dim_c(c, BB_W, C, false));
  TRY(bb_dim_c(c, BB_RM, C, false));
  TRY(bb_dim_c(c, BB_RV, C, false));
  if (c->plan.regbase) {
    /* CheckSaveMeanSaveInvstdShape ([C]; [0] allowed in inference), CheckGradWeightGradBiasShape */
    TRY(bb_dim_c(c, BB_SM, C, !training));
    TRY(bb_dim_c(c, BB_SI, C, !training));
    TRY(bb_dim_c(c, BB_GW, C, false));
    TRY(bb_dim_c(c, BB_GB, C, false));
    /* every mask bit false: SUCCESS, workspace 0, nothing to do (canEarlyReturn) */
    if (!c->plan.mask[0] && !c->plan.mask[1] && !c->plan.mask[2]) return finish_early(c, SIM_RUN_NOTHING, ws, exec);
  } else {
    /* Non-regbase CANN never checks saveMean/saveInvstd/gradWeight/gradBias shapes.
     * [aclsim] the kernel reads C saved statistics (training) and writes C gradients. */
    if (training) {
      TRY(numel_c(c, BB_SM, C, "reads"));
      TRY(numel_c(c, BB_SI, C, "reads"));
    }
    TRY(numel_c(c, BB_GW, C, "writes"));
    TRY(numel_c(c, BB_GB, C, "writes"));
  }
  c->plan.C = C;
  /* Off DAV_3510 gradInput is BNTrainingReduceGrad's result, in input's dtype, copied by
   * BatchNormPost's ViewCopy (aclnn_batch_norm_backward.cpp 394-413, 881-884); DAV_3510 requires
   * gradInput's dtype == gradOut's above (RegbaseCheckDtypeSame). */
  TRY(no_kernel(c));
  if (!c->plan.regbase) TRY(view_copy_dtype(c, BB_GI, T(BB_X)->dtype));
  return finish(c, C, ws, exec);
}

int sim_run_bn_backward(const SimPlan *p) {
  const SimTensorDesc *xd = &p->t[BB_X];
  int64_t C = p->C, numel = sim_desc_numel(xd);
  double *x = sim_load(xd), *dy = sim_load(&p->t[BB_DY]);
  /* NULL optionals are filled before dispatch: runningMean 0, runningVar 1, weight 1, saveMean 0,
   * saveInvstd 1 (ops-nn .../op_host/op_api/aclnn_batch_norm_backward.cpp BatchNormBackward,
   * op::FillScalar; BatchNormBackwardRegbase likewise). */
  double *w = per_channel_or(p, BB_W, C, 1.0);
  double *mean, *invstd;
  if (p->training) {
    mean = per_channel_or(p, BB_SM, C, 0.0);
    invstd = per_channel_or(p, BB_SI, C, 1.0);
    /* Non-regbase: saveInvstd goes to the kernel input `batch_variance` of BNTrainingUpdateGrad /
     * BNTrainingReduceGrad (BatchNormBackwardProc; proto in ops-nn
     * common/inc/op_graph/op_nn_proto_extend.h), i.e. it is read as the biased VARIANCE, the value
     * aclnnBatchNorm writes there on these SoCs.  DAV_3510's BatchNormGradV3 reads `save_rstd`. */
    if (p->bn_saves_variance)
      for (int64_t i = 0; i < C; i++) invstd[i] = 1.0 / sqrt(invstd[i] + p->eps);
  } else {
    mean = per_channel_or(p, BB_RM, C, 0.0);
    invstd = per_channel_or(p, BB_RV, C, 1.0);
    for (int64_t i = 0; i < C; i++) invstd[i] = 1.0 / sqrt(invstd[i] + p->eps);
  }
  double *sdy = zalloc(C), *sdx = zalloc(C);
  double *gw = zalloc(C);
  if (C > 0) channel_sums(xd, x, dy, mean, sdy, sdx);
  for (int64_t i = 0; i < C; i++) gw[i] = sdx[i] * invstd[i];
  if (p->present[BB_GI] && numel > 0) {
    double *gi = zalloc(numel);
    int64_t inner = numel / (xd->dims[0] * C);
    double M = (double)(numel / C);
    for (int64_t i = 0; i < numel; i++) {
      int64_t ch = (i / inner) % C;
      if (p->training)
        gi[i] = w[ch] * invstd[ch] *
                (dy[i] - sdy[ch] / M - (x[i] - mean[ch]) * invstd[ch] * invstd[ch] * sdx[ch] / M);
      else
        gi[i] = dy[i] * w[ch] * invstd[ch];
    }
    sim_store(&p->t[BB_GI], gi);
  }
  store_if(p, BB_GW, gw);
  store_if(p, BB_GB, sdy);
  return 0;
}
