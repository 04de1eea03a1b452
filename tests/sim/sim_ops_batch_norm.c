/*
 * Software CANN ("aclsim") -- aclnnBatchNorm: phase-1 validation as CANN performs it on the SoC
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
 * 7. aclnnBatchNorm
 *    ops-nn norm/batch_norm_v3/op_host/op_api/aclnn_batch_norm.cpp
 * ====================================================================================== */
enum { BN_X, BN_W, BN_B, BN_RM, BN_RV, BN_Y, BN_SM, BN_SI };

/* CheckOtherShape: "Dim of %s should be one and shape is channel num of input." */
static int bn_dim_c(Ctx *c, int s, int64_t C) {
  if (!P(s) || (T(s)->ndim == 1 && T(s)->dims[0] == C)) return 0;
  return fail(c, SIM_NN_INVALID, "Dim of %s should be one and shape is channel num of input.", NAME(s));
}

/* The BatchNormV3 kernel's rule for the label of a 4-D/5-D input (sim_rules.c
 * sim_rule_bn_v3_format, with its sources): a refused tiling fails ADD_TO_LAUNCHER_LIST_AICORE
 * ("BatchNormV3 ADD_TO_LAUNCHER_LIST_AICORE failed.", op_api/batch_norm.cpp:136-141, 161-166)
 * and phase 1 returns ACLNN_ERR_INNER_NULLPTR (aclnn_batch_norm.cpp:640-647 CHECK_RET). */
static int bn_v3_format(Ctx *c, bool training) {
  const SimTensorDesc *x = T(BN_X);
  bool known = true;
  const char *want = sim_rule_bn_v3_format(&c->soc, training, x->format, x->ndim, x->dims[1], &known);
  if (want == NULL) return 0;
  if (!known)
    return fail(c, SIM_NN_INNER_NULLPTR,
                "BatchNormV3: x's format %s is not supported; expected %s (BatchNormV3 tiling). BatchNormV3 "
                "ADD_TO_LAUNCHER_LIST_AICORE failed.",
                fmt_str(x->format), want);
  return fail(c, SIM_NN_INNER_NULLPTR,
              "BatchNormV3: x has %d dims, expected %s (BatchNormV3 tiling). BatchNormV3 ADD_TO_LAUNCHER_LIST_AICORE "
              "failed.",
              x->ndim, want);
}

int sim_bn_ws(const void *input, const void *weight, const void *bias, void *runningMean, void *runningVar, bool training,
              double momentum, double eps, void *output, void *saveMean, void *saveInvstd, uint64_t *ws, void **exec) {
  static const char *const names[] = {"input", "weight", "bias", "runningMean", "runningVar", "output", "saveMean", "saveInvstd"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN, "aclnnBatchNorm", 5, 3, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec));
  TRY(soc_check(c));
  c->plan.training = training;
  c->plan.momentum = momentum;
  c->plan.eps = eps;
  /* CheckNotNull -> 161001: input and out; saveMean and saveInvstd in training only */
  TRY(NULL_TENSOR(c, input, "input", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, output, "out", SIM_NN_NULLPTR));
  if (training) {
    TRY(NULL_TENSOR(c, saveMean, "saveMean", SIM_NN_NULLPTR));
    TRY(NULL_TENSOR(c, saveInvstd, "saveInvstd", SIM_NN_NULLPTR));
  }
  TRY(get(c, input, BN_X));
  /* Empty input, before any dtype or shape check: saveMean = 0 and saveInvstd = NaN when they
   * are non-NULL, whatever `training` says; output and running statistics untouched
   * (aclnnBatchNormGetWorkspaceSize, ProcessEmptyTensorWithValue). */
  if (is_empty(T(BN_X))) {
    TRY(get(c, saveMean, BN_SM));
    TRY(get(c, saveInvstd, BN_SI));
    fill_slot(c, BN_SM, 0.0);
    fill_slot(c, BN_SI, NAN);
    return finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  TRY(get(c, weight, BN_W));
  TRY(get(c, bias, BN_B));
  TRY(get(c, runningMean, BN_RM));
  TRY(get(c, runningVar, BN_RV));
  TRY(get(c, output, BN_Y));
  if (training) { /* saveMean / saveInvstd are outputs of the training mode only */
    TRY(get(c, saveMean, BN_SM));
    TRY(get(c, saveInvstd, BN_SI));
  }
  /* CheckDtypeValid: GetSupportDtypeList(npuArch) has no entry -> "support for npuArch %u is not
   * implemented" (sim_rule_bn_has_dtype_list: every NpuArch but 2002, 1001, 2201, 3510). */
  if (!sim_rule_bn_has_dtype_list(&c->soc))
    return fail(c, SIM_NN_INVALID, "support for npuArch %u is not implemented (SoC %s, %s)",
                (unsigned)(uint32_t)c->soc.npu_arch, c->soc.soc_name, c->soc.product);
  /* Each tensor against the list independently, no same-dtype rule: input, out, [saveMean,
   * saveInvstd], then CheckOtherDtypeValid: weight, bias, runningMean, runningVar. */
  DtList l = dl_fhb(c);
  TRY(DT_SUPPORT(c, BN_X, &l));
  TRY(dt_list(c, BN_Y, &l, "Tensor ", "out"));
  TRY(DT_SUPPORT(c, BN_SM, &l));
  TRY(DT_SUPPORT(c, BN_SI, &l));
  for (int s = BN_W; s <= BN_RV; s++) TRY(DT_SUPPORT(c, s, &l));
  /* CheckFormat */
  int32_t fi = T(BN_X)->format, fo = T(BN_Y)->format;
  if (fi != fo)
    return fail(c, SIM_NN_INVALID, "Format of input and output should be equal, input [%s], output [%s].", fmt_str(fi),
                fmt_str(fo));
  if (c->plan.regbase) {
    if (T(BN_X)->ndim == 5 && fi != SIM_FMT_NCDHW && fi != SIM_FMT_NDHWC)
      return fail(c, SIM_NN_INVALID, "Format of input should be NCDHW or NDHWC, when input dim is 5.");
    if (T(BN_Y)->ndim == 5 && fo != SIM_FMT_NCDHW && fo != SIM_FMT_NDHWC)
      return fail(c, SIM_NN_INVALID, "Format of output should be NCDHW or NDHWC, when input dim is 5.");
  } else {
    if (T(BN_X)->ndim == 5 && fi != SIM_FMT_NCDHW)
      return fail(c, SIM_NN_INVALID, "Format of input should be NCDHW, when input dim is 5.");
    if (T(BN_Y)->ndim == 5 && fo != SIM_FMT_NCDHW)
      return fail(c, SIM_NN_INVALID, "Format of output should be NCDHW, when input dim is 5.");
  }
  if (private_format(fi)) return fail(c, SIM_NN_INVALID, "Format only support ND、NCL、NCHW、NCDHW.");
  /* CheckShape, CheckOtherShape, then (training) saveMean / saveInvstd exactly [C] */
  TRY(max_dim(c, BN_X, 8, NULL));
  TRY(min_dim(c, BN_X, 2, NULL));
  TRY(max_dim(c, BN_Y, 8, "out"));
  TRY(min_dim(c, BN_Y, 2, "out"));
  TRY(shape_same(c, BN_Y, BN_X, "out", NULL));
  TRY(regbase_channels_last(c, BN_X));
  int64_t C = T(BN_X)->dims[1];
  for (int s = BN_W; s <= BN_RV; s++) TRY(bn_dim_c(c, s, C));
  if (training) {
    TRY(shape_expect(c, BN_SM, &C, 1, NULL));
    TRY(shape_expect(c, BN_SI, &C, 1, NULL));
  }
  c->plan.C = C;
  TRY(bn_v3_format(c, training));
  /* every path's result is in input's dtype (BNInfer, BNTrainingUpdate, BatchNormV3 allocate y as
   * x's, op_api/batch_norm.cpp 30, 82, 127; the regbase path casts to it, aclnn_batch_norm.cpp
   * 544), then ViewCopy into out (aclnn_batch_norm.cpp 333-337) */
  TRY(no_kernel(c));
  TRY(view_copy_dtype(c, BN_Y, T(BN_X)->dtype));
  return finish(c, C, ws, exec);
}

int sim_run_bn(const SimPlan *p) {
  const SimTensorDesc *xd = &p->t[BN_X];
  int64_t C = p->C, numel = sim_desc_numel(xd);
  double *x = sim_load(xd);
  /* NULL optionals: weight 1, bias 0, runningMean 0, runningVar 1 (BatchNorm(): FillScalar) */
  double *w = per_channel_or(p, BN_W, C, 1.0), *b = per_channel_or(p, BN_B, C, 0.0);
  double *mean = zalloc(C), *var = zalloc(C);
  double *invstd = zalloc(C);
  if (p->training) {
    int64_t M = C > 0 ? channel_mean_var(xd, x, mean, var) : 0;
    for (int64_t i = 0; i < C; i++) invstd[i] = M > 0 ? 1.0 / sqrt(var[i] + p->eps) : 0;
    if (M > 0) {
      /* running = (1 - momentum) * running + momentum * batch, unbiased variance var * M / (M - 1);
       * written back only when the caller passed them */
      double *rm = p->present[BN_RM] ? sim_load(&p->t[BN_RM]) : NULL;
      double *rv = p->present[BN_RV] ? sim_load(&p->t[BN_RV]) : NULL;
      for (int64_t i = 0; i < C; i++) {
        if (rm) rm[i] = (1 - p->momentum) * rm[i] + p->momentum * mean[i];
        if (rv) rv[i] = (1 - p->momentum) * rv[i] + p->momentum * var[i] * (double)M / (double)(M - 1);
      }
      if (rm) sim_store(&p->t[BN_RM], rm);
      if (rv) sim_store(&p->t[BN_RV], rv);
    }
    store_if(p, BN_SM, mean);
    /* saveInvstd: the biased batch variance on every non-DAV_3510 family (BNTrainingUpdate's
     * `batch_variance`, BatchNormV3 full-reduce's `save_var`; the doc: "saveInvstd表示input的方差"
     * on Atlas training/inference/A2/A3), 1/sqrt(var + eps) on DAV_3510 (arch35 BatchNormV3
     * `batch_rstd`) -- ops-nn norm/batch_norm_v3/op_host/op_api/aclnn_batch_norm.cpp BatchNorm(),
     * docs/aclnnBatchNorm.md; sim_rules.c sim_rule_bn_saves_variance. */
    store_if(p, BN_SI, p->bn_saves_variance ? var : invstd);
  } else {
    double *rm = per_channel_or(p, BN_RM, C, 0.0), *rv = per_channel_or(p, BN_RV, C, 1.0);
    for (int64_t i = 0; i < C; i++) {
      mean[i] = rm[i];
      invstd[i] = 1.0 / sqrt(rv[i] + p->eps);
    }
  }
  if (numel > 0) {
    double *y = zalloc(numel);
    int64_t inner = numel / (xd->dims[0] * C);
    for (int64_t i = 0; i < numel; i++) {
      int64_t ch = (i / inner) % C;
      y[i] = (x[i] - mean[ch]) * invstd[ch] * w[ch] + b[ch];
    }
    sim_store(&p->t[BN_Y], y);
  }
  return 0;
}
