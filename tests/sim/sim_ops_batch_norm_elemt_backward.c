/*
 * Software CANN ("aclsim") -- aclnnBatchNormElemtBackward: phase-1 validation as CANN performs it on the SoC
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
 * 6. aclnnBatchNormElemtBackward
 *    ops-nn norm/sync_batch_norm_backward_elemt/op_api/aclnn_batch_norm_elemt_backward.cpp
 * ====================================================================================== */
enum { EB_DY, EB_X, EB_MEAN, EB_INVSTD, EB_W, EB_SUMDY, EB_SUMDYXMU, EB_COUNTER, EB_GI };

int sim_bn_elemt_backward_ws(const void *gradOut, const void *input, const void *mean, const void *invstd,
                             const void *weight, const void *sumDy, const void *sumDyXmu, void *counter, void *gradInput,
                             uint64_t *ws, void **exec) {
  static const char *const names[] = {"gradOut", "input", "mean", "invstd", "weight", "sumDy", "sumDyXmu", "counter", "gradInput"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_ELEMT_BACKWARD, "aclnnBatchNormElemtBackward", 8, 1, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec)); /* OP_CHECK_COMM_INPUT */
  TRY(soc_check(c));
  TRY(op_supported(c));
  /* CheckNotNull (CHECK_COND -> 161001): everything but weight */
  const void *hs[] = {gradOut, input, mean, invstd, weight, sumDy, sumDyXmu, counter, gradInput};
  for (int s = EB_DY; s <= EB_GI; s++)
    if (s != EB_W) TRY(NULL_TENSOR(c, hs[s], NAME(s), SIM_NN_NULLPTR));
  for (int s = EB_DY; s <= EB_GI; s++) TRY(get(c, hs[s], s));
  /* CheckParams: + BF16 on SocVersion ASCEND910B / ASCEND910_93 or regbase (not 910E);
   * counter in {FLOAT, FLOAT16, INT32} on every SoC.  No same-dtype rule. */
  DtList l = dl_fhb(c);
  const DtList cl = {3, {SIM_DT_FLOAT, SIM_DT_FLOAT16, SIM_DT_INT32}}; /* COUNTER_DTYPE_SUPPORT_LIST */
  for (int s = EB_DY; s <= EB_GI; s++) TRY(DT_SUPPORT(c, s, s == EB_COUNTER ? &cl : &l));
  /* CheckFormat */
  const int fs[] = {EB_DY, EB_X, EB_GI};
  for (int i = 0; i < 3; i++)
    if (is_private(c, fs[i]))
      return fail(c, SIM_NN_INVALID, "Format of %s only support ND, NCHW, NCL, NCDHW.", NAME(fs[i]));
  /* CheckShape */
  TRY(min_dim(c, EB_X, 2, NULL));
  TRY(max_dim(c, EB_X, 8, NULL));
  TRY(max_dim(c, EB_DY, 8, NULL));
  TRY(max_dim(c, EB_GI, 8, NULL));
  TRY(max_dim(c, EB_COUNTER, 8, NULL));
  int64_t C = T(EB_X)->dims[1];
  if (C == 0) return fail(c, SIM_NN_INVALID, "Input channel size should not be zero.");
  TRY(shape_same(c, EB_DY, EB_X, NULL, NULL));
  TRY(shape_same(c, EB_GI, EB_X, NULL, NULL));
  for (int s = EB_MEAN; s <= EB_SUMDYXMU; s++) TRY(shape_expect(c, s, &C, 1, NULL));
  c->plan.C = C;
  /* input or gradOut empty (after the checks): SUCCESS, nothing written */
  if (is_empty(T(EB_X)) || is_empty(T(EB_DY))) return finish_early(c, SIM_RUN_NOTHING, ws, exec);
  return finish(c, C, ws, exec);
}

int sim_run_bn_elemt_backward(const SimPlan *p) {
  const SimTensorDesc *xd = &p->t[EB_X];
  int64_t C = p->C, numel = sim_desc_numel(xd);
  if (numel == 0) return 0;
  double *x = sim_load(xd), *dy = sim_load(&p->t[EB_DY]);
  double *mean = sim_load(&p->t[EB_MEAN]), *invstd = sim_load(&p->t[EB_INVSTD]);
  double *w = per_channel_or(p, EB_W, C, 1.0);
  double *sdy = sim_load(&p->t[EB_SUMDY]), *sdx = sim_load(&p->t[EB_SUMDYXMU]);
  double *cnt = sim_load(&p->t[EB_COUNTER]);
  /* total = sum of counter over all its elements (MeanByCounter) */
  double total = 0;
  for (int64_t i = 0; i < sim_desc_numel(&p->t[EB_COUNTER]); i++) total += cnt[i];
  double *gi = zalloc(numel);
  int64_t inner = numel / (xd->dims[0] * C);
  /* GetPromoteType (aclnn_batch_norm_elemt_backward.cpp 191-202): FLOAT16 only when every input
   * but counter is FLOAT16, a NULL weight being a float32 fill (FillScalar); else FLOAT. */
  bool all16 = p->present[EB_W];
  for (int s = EB_DY; s <= EB_SUMDYXMU; s++) all16 = all16 && p->t[s].dtype == SIM_DT_FLOAT16;
  sim_elemt_backward(dy, x, mean, invstd, w, sdy, sdx, total, numel, C, inner,
                     all16 ? SIM_DT_FLOAT16 : SIM_DT_FLOAT, p->overflow_mode, gi);
  sim_store(&p->t[EB_GI], gi); /* Cast to gradInput's dtype (405), then ViewCopy */
  return 0;
}
