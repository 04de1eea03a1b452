/*
 * Software CANN ("aclsim") -- aclnnBatchNormReduceBackward: phase-1 validation as CANN performs it on the SoC
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
 * 1. aclnnBatchNormReduceBackward
 *    ops-nn norm/sync_batch_norm_backward_reduce/op_api/aclnn_batch_norm_backward_reduce.cpp
 * ====================================================================================== */
enum { RB_DY, RB_X, RB_MEAN, RB_INVSTD, RB_W, RB_SUMDY, RB_SUMDYXMU, RB_GW, RB_GB };

int sim_bn_reduce_backward_ws(const void *gradOut, const void *input, const void *mean, const void *invstd,
                              const void *weight, bool inputG, bool weightG, bool biasG, void *sumDy, void *sumDyXmu,
                              void *gradWeight, void *gradBias, uint64_t *ws, void **exec) {
  static const char *const names[] = {"gradOut", "input", "mean", "invstd", "weight",
                                      "sumDy", "sumDyXmu", "gradWeight", "gradBias"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_REDUCE_BACKWARD, "aclnnBatchNormReduceBackward", 5, 4, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec)); /* OP_CHECK_COMM_INPUT */
  TRY(soc_check(c));
  TRY(op_supported(c));
  /* CheckInputNotNull / CheckOutputNotNull (GetMaskIdx: inputG -> sumDy and sumDyXmu, weightG ->
   * gradWeight, biasG -> gradBias): custom text logged with 561103, returned as 161001. */
  const void *hs[] = {gradOut, input, mean, invstd, weight, sumDy, sumDyXmu, gradWeight, gradBias};
  const bool need[] = {true, true, true, true, false, inputG, inputG, weightG, biasG};
  for (int s = RB_DY; s <= RB_GB; s++)
    if (need[s] && !hs[s])
      return fail(c, SIM_NN_NULLPTR, "expected a proper Tensor but got null for argument %s.", NAME(s));
  c->plan.mask[0] = inputG;
  c->plan.mask[1] = weightG;
  c->plan.mask[2] = biasG;
  for (int s = RB_DY; s <= RB_W; s++) TRY(get(c, hs[s], s));
  for (int s = RB_SUMDY; s <= RB_GB; s++)
    if (need[s]) TRY(get(c, hs[s], s)); /* a masked-off output is neither checked nor written */
  /* CheckDtypeValid: gradOut, input, mean, invstd in the list ("%s not implemented ..." without
   * "Tensor "), then OP_CHECK_DTYPE_NOT_MATCH(inputParamTensorList[0].param, input dtype), then
   * the masked outputs.  weight's dtype is never checked (it is unused). */
  DtList l = dl_fhb(c); /* GetDtypeSupportList: DAV_2201 or regbase -> + BF16 */
  for (int s = RB_DY; s <= RB_INVSTD; s++) TRY(dt_list(c, s, &l, "", NULL));
  TRY(dt_match(c, RB_DY, T(RB_X)->dtype, "inputParamTensorList[0].param"));
  for (int s = RB_SUMDY; s <= RB_GB; s++) TRY(dt_list(c, s, &l, "", NULL));
  /* CheckFormat */
  if (T(RB_DY)->format != T(RB_X)->format)
    return fail(c, SIM_NN_INVALID, "Format of gradOut and input should be equal. self [%s], out [%s].",
                fmt_str(T(RB_DY)->format), fmt_str(T(RB_X)->format));
  for (int s = RB_DY; s <= RB_GB; s++)
    if (s != RB_W && is_private(c, s))
      return fail(c, SIM_NN_INVALID, "Format only support ND, NCHW, NHWC, HWCN, NDHWC, NCDHW;but %s format is %s, please check.",
                  NAME(s), fmt_str(T(s)->format));
  /* CheckShape: rank 2..8, C != 0, every masked output exactly [C].  mean, invstd and weight
   * shapes and gradOut == input are NOT checked by CANN. */
  TRY(min_dim(c, RB_DY, 2, NULL));
  TRY(max_dim(c, RB_DY, 8, NULL));
  TRY(min_dim(c, RB_X, 2, NULL));
  TRY(max_dim(c, RB_X, 8, NULL));
  int64_t C = T(RB_X)->dims[1];
  if (C == 0) return fail(c, SIM_NN_INVALID, "channel size of input should not be zero.");
  for (int s = RB_SUMDY; s <= RB_GB; s++) {
    if (!P(s) || shape_is(T(s), &C, 1)) continue;
    char got[160];
    shape_str(T(s), got, sizeof got);
    return fail(c, SIM_NN_INVALID, "expected tensor for %s to have same size as [%" PRId64 "], but got %s.", NAME(s), C,
                got);
  }
  c->plan.C = C;
  /* Empty gradOut, input, mean or invstd (after CheckParams): DAV_3510 fills every masked output
   * with 0, other architectures write nothing (OutputParamFillZeroForEmptyTensor). */
  if (is_empty(T(RB_DY)) || is_empty(T(RB_X)) || is_empty(T(RB_MEAN)) || is_empty(T(RB_INVSTD))) {
    if (!c->plan.regbase) return finish_early(c, SIM_RUN_NOTHING, ws, exec);
    for (int s = RB_SUMDY; s <= RB_GB; s++) fill_slot(c, s, 0.0);
    return finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  /* [aclsim] the kernel reads dy in input's layout and C values of mean and invstd. */
  if (!same_shape(T(RB_DY), T(RB_X))) {
    char a[160], b[160];
    shape_str(T(RB_DY), a, sizeof a);
    shape_str(T(RB_X), b, sizeof b);
    return fail(c, SIM_NN_INVALID,
                "[aclsim] gradOut shape %s differs from input shape %s; CANN does not check this (its reductions would "
                "then read mismatched data), the simulator rejects it",
                a, b);
  }
  TRY(numel_c(c, RB_MEAN, C, "reads"));
  TRY(numel_c(c, RB_INVSTD, C, "reads"));
  return finish(c, C, ws, exec);
}

int sim_run_bn_reduce_backward(const SimPlan *p) {
  int64_t C = p->C;
  double *x = sim_load(&p->t[RB_X]), *dy = sim_load(&p->t[RB_DY]);
  double *mean = sim_load(&p->t[RB_MEAN]), *invstd = sim_load(&p->t[RB_INVSTD]);
  double *sdy = zalloc(C), *sdx = zalloc(C);
  double *gw = zalloc(C);
  /* sumDyXmu = sum(dy * x) - mean * sum(dy) on the device (arch35 sync_batch_norm_backward_reduce_dag.h);
   * the two-pass form here is the same value, computed more accurately. weight is unused. */
  channel_sums(&p->t[RB_X], x, dy, mean, sdy, sdx);
  for (int64_t i = 0; i < C; i++) gw[i] = sdx[i] * invstd[i];
  store_if(p, RB_SUMDY, sdy);
  store_if(p, RB_SUMDYXMU, sdx);
  store_if(p, RB_GW, gw);
  store_if(p, RB_GB, sdy);
  return 0;
}
