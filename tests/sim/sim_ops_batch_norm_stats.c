/*
 * Software CANN ("aclsim") -- aclnnBatchNormStats: phase-1 validation as CANN performs it on the SoC
 * aclrtGetSocName() names (return codes, order of the checks and message texts of the CANN sources
 * cited at each rule), planning, and the computation run at stream synchronisation.
 *
 * Source (the behaviour of each rule is cited as repo + path + function):
 *   hicann/ops-math c41933244c31e44fd496e3bb3212164f8c48c214 (2026-08-22)
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
 * 4. aclnnBatchNormStats
 *    ops-math math/reduce_std_with_mean/op_api/aclnn_batch_norm_stats.cpp
 * ====================================================================================== */
enum { ST_X, ST_MEAN, ST_INVSTD };

int sim_bn_stats_ws(const void *input, double eps, void *mean, void *invstd, uint64_t *ws, void **exec) {
  static const char *const names[] = {"input", "mean", "invstd"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_STATS, "aclnnBatchNormStats", 1, 2, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec)); /* OP_CHECK_COMM_INPUT */
  TRY(soc_check(c));
  TRY(op_supported(c));
  /* CheckNotNull -> 161001 */
  TRY(NULL_TENSOR(c, input, "input", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, mean, "mean", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, invstd, "invstd", SIM_NN_NULLPTR));
  TRY(get(c, input, ST_X));
  TRY(get(c, mean, ST_MEAN));
  TRY(get(c, invstd, ST_INVSTD));
  c->plan.eps = eps;
  /* CheckDtypeValid: input in {FLOAT, FLOAT16} (+ BF16 on regbase only), mean and invstd FLOAT */
  DtList l = dl_fhb(c);
  const DtList f = {1, {SIM_DT_FLOAT, 0, 0}};
  TRY(DT_SUPPORT(c, ST_X, &l));
  TRY(DT_SUPPORT(c, ST_MEAN, &f));
  TRY(DT_SUPPORT(c, ST_INVSTD, &f));
  /* CheckFormat */
  if (is_private(c, ST_X)) return fail(c, SIM_NN_INVALID, "Input format only support ND, NCL, NCHW, NCDHW.");
  if (is_private(c, ST_MEAN)) return fail(c, SIM_NN_INVALID, "Mean format only support ND, NCL, NCHW, NCDHW.");
  if (is_private(c, ST_INVSTD)) return fail(c, SIM_NN_INVALID, "Invstd format only support ND, NCL, NCHW, NCDHW.");
  /* CheckShape */
  TRY(max_dim(c, ST_X, 8, NULL));
  TRY(min_dim(c, ST_X, 2, NULL));
  TRY(wrong_dim(c, ST_MEAN, 1));
  TRY(wrong_dim(c, ST_INVSTD, 1));
  int64_t C = T(ST_X)->dims[1];
  if (C == 0) return fail(c, SIM_NN_INVALID, "Channel size of input should not be zero.");
  TRY(shape_expect(c, ST_MEAN, &C, 1, NULL));
  TRY(shape_expect(c, ST_INVSTD, &C, 1, NULL));
  c->plan.C = C;
  /* Empty input (after CheckParams): mean = 0, invstd = NaN (ProcessEmptyTensorWithValue). */
  if (is_empty(T(ST_X))) {
    fill_slot(c, ST_MEAN, 0.0);
    fill_slot(c, ST_INVSTD, NAN);
    return finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  return finish(c, C, ws, exec);
}

int sim_run_bn_stats(const SimPlan *p) {
  int64_t C = p->C;
  double *x = sim_load(&p->t[ST_X]);
  double *mean = zalloc(C), *var = zalloc(C);
  /* invstd = 1/sqrt(biased var + eps) (ReduceStdWithMean invert=true / ReduceVar + Pow) */
  int64_t M = channel_mean_var(&p->t[ST_X], x, mean, var);
  for (int64_t i = 0; i < C; i++) var[i] = M > 0 ? 1.0 / sqrt(var[i] + p->eps) : NAN;
  sim_store(&p->t[ST_MEAN], mean);
  sim_store(&p->t[ST_INVSTD], var);
  return 0;
}
