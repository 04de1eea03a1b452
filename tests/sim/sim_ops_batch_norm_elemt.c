/*
 * Software CANN ("aclsim") -- aclnnBatchNormElemt: phase-1 validation as CANN performs it on the SoC
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
 * 8. aclnnBatchNormElemt
 *    ops-nn norm/batch_norm_elemt/op_host/op_api/aclnn_batch_norm_elemt.cpp
 * ====================================================================================== */
enum { BE_X, BE_W, BE_B, BE_MEAN, BE_INVSTD, BE_Y };

int sim_bn_elemt_ws(const void *input, const void *weight, const void *bias, void *mean, void *invstd, double eps,
                    void *output, uint64_t *ws, void **exec) {
  static const char *const names[] = {"input", "weight", "bias", "mean", "invstd", "output"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_ELEMT, "aclnnBatchNormElemt", 5, 1, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec));
  TRY(soc_check(c));
  TRY(op_supported(c));
  /* CheckBatchNormElemtParams: CHECK_RET(CheckNotNull(input, mean, invstd, out),
   * ACLNN_ERR_PARAM_INVALID) -- a NULL input, mean, invstd or out is 161002 (the doc says
   * 161001). weight and bias are optional (FillScalar 1 and 0). */
  TRY(NULL_TENSOR(c, input, "input", SIM_NN_INVALID));
  TRY(NULL_TENSOR(c, mean, "mean", SIM_NN_INVALID));
  TRY(NULL_TENSOR(c, invstd, "invstd", SIM_NN_INVALID));
  TRY(NULL_TENSOR(c, output, "out", SIM_NN_INVALID));
  const void *hs[] = {input, weight, bias, mean, invstd, output};
  for (int s = BE_X; s <= BE_Y; s++) TRY(get(c, hs[s], s));
  c->plan.eps = eps;
  /* CheckDtypeValid<...>: each tensor in the list (+ BF16 for SocVersion in [ASCEND910B,
   * ASCEND910E] or ASCEND950), the message always says "input"; no same-dtype rule. */
  DtList l = dl_fhb(c);
  for (int s = BE_X; s <= BE_Y; s++) TRY(dt_list(c, s, &l, "", "input"));
  /* CheckFormat */
  if (T(BE_X)->format != T(BE_Y)->format)
    return fail(c, SIM_NN_INVALID, "Format of input and out should be equal, input [%s], out [%s].",
                fmt_str(T(BE_X)->format), fmt_str(T(BE_Y)->format));
  if (is_private(c, BE_X)) return fail(c, SIM_NN_INVALID, "Format only support ND,NCHW,NCL,NCDHW.");
  /* CheckShape */
  TRY(max_dim(c, BE_X, 8, NULL));
  TRY(min_dim(c, BE_X, 2, NULL));
  TRY(max_dim(c, BE_Y, 8, "out"));
  TRY(min_dim(c, BE_Y, 2, "out"));
  TRY(shape_same(c, BE_Y, BE_X, "out", NULL));
  int64_t C = T(BE_X)->dims[1];
  if (C == 0) return fail(c, SIM_NN_INVALID, "Input channel size should not be zero.");
  for (int s = BE_W; s <= BE_INVSTD; s++)
    if (P(s) && T(s)->ndim != 1) return fail(c, SIM_NN_INVALID, "Weight/bias/mean/invstd dim size should be one.");
  for (int s = BE_W; s <= BE_INVSTD; s++)
    if (P(s) && T(s)->dims[0] != C)
      return fail(c, SIM_NN_INVALID, "Weight/bias/mean/invstd shape should be same as the channel size of input.");
  c->plan.C = C;
  /* empty input (after the checks): workspace 0, SUCCESS, nothing written */
  if (is_empty(T(BE_X))) return finish_early(c, SIM_RUN_NOTHING, ws, exec);
  /* BatchNorm's result is in input's dtype (aclnn_batch_norm.cpp BatchNorm(): BNInfer's y, or the
   * regbase Cast to input's dtype), then ViewCopy into out (aclnn_batch_norm_elemt.cpp 205-218). */
  TRY(no_kernel(c));
  TRY(view_copy_dtype(c, BE_Y, T(BE_X)->dtype));
  return finish(c, C, ws, exec);
}

int sim_run_bn_elemt(const SimPlan *p) {
  const SimTensorDesc *xd = &p->t[BE_X];
  int64_t C = p->C, numel = sim_desc_numel(xd);
  if (numel == 0) return 0;
  double *x = sim_load(xd), *mean = sim_load(&p->t[BE_MEAN]), *invstd = sim_load(&p->t[BE_INVSTD]);
  double *w = per_channel_or(p, BE_W, C, 1.0), *b = per_channel_or(p, BE_B, C, 0.0);
  double *y = zalloc(numel);
  int64_t inner = numel / (xd->dims[0] * C);
  /* CANN rebuilds variance = 1/invstd^2 - eps in invstd's dtype (sim_elemt_rebuild_variance) and
   * runs BatchNorm in inference mode with mean and that variance: BNInfer / the arch35 infer
   * kernel compute rsqrt(variance + eps) with the float eps attribute, then
   * y = (x - mean) * rstd * weight + bias (aclnn_batch_norm_elemt.cpp 171-202; mean, weight and
   * bias enter in their own dtypes, exact in double). */
  double *var = zalloc(C);
  sim_elemt_rebuild_variance(invstd, C, p->t[BE_INVSTD].dtype, p->eps, p->overflow_mode, var);
  double eps_f = (double)(float)p->eps;
  for (int64_t i = 0; i < numel; i++) {
    int64_t ch = (i / inner) % C;
    y[i] = (x[i] - mean[ch]) / sqrt(var[ch] + eps_f) * w[ch] + b[ch];
  }
  sim_store(&p->t[BE_Y], y);
  return 0;
}
