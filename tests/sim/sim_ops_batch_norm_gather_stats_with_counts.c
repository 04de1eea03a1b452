/*
 * Software CANN ("aclsim") -- aclnnBatchNormGatherStatsWithCounts: phase-1 validation as CANN performs it on the SoC
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
 * 5. aclnnBatchNormGatherStatsWithCounts
 *    ops-nn norm/sync_batch_norm_gather_stats_with_counts/op_host/op_api/
 *    aclnn_batch_norm_gather_stats_with_counts.cpp
 * ====================================================================================== */
enum { GS_X, GS_MEAN, GS_INVSTD, GS_RM, GS_RV, GS_COUNTS, GS_MEANALL, GS_INVSTDALL };

int sim_bn_gather_stats_ws(const void *input, const void *mean, const void *invstd, void *runningMean, void *runningVar,
                           double momentum, double eps, const void *counts, void *meanAll, void *invstdAll, uint64_t *ws,
                           void **exec) {
  static const char *const names[] = {"input", "mean", "invstd", "runningMean", "runningVar", "counts", "meanAll", "invstdAll"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_GATHER_STATS, "aclnnBatchNormGatherStatsWithCounts", 6, 2, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec)); /* OP_CHECK_COMM_INPUT */
  TRY(soc_check(c));
  TRY(op_supported(c));
  /* CheckNotNull (CHECK_COND -> 161001) */
  const void *hs[] = {input, mean, invstd, runningMean, runningVar, counts, meanAll, invstdAll};
  for (int s = GS_X; s <= GS_INVSTDALL; s++)
    if (s != GS_RM && s != GS_RV) TRY(NULL_TENSOR(c, hs[s], NAME(s), SIM_NN_NULLPTR));
  for (int s = GS_X; s <= GS_INVSTDALL; s++) TRY(get(c, hs[s], s));
  c->plan.momentum = momentum;
  c->plan.eps = eps;
  /* CheckDtypeValid: every tensor (counts too: a float dtype) in the list; BF16 when SocVersion is
   * in [ASCEND910B, ASCEND910E] or ASCEND950 (CheckSocVersionGe910B, IsSocVersion950). */
  DtList l = dl_fhb(c);
  for (int s = GS_X; s <= GS_INVSTD; s++) TRY(DT_SUPPORT(c, s, &l));
  TRY(DT_SUPPORT(c, GS_RM, &l));
  TRY(DT_SUPPORT(c, GS_RV, &l));
  TRY(DT_SUPPORT(c, GS_COUNTS, &l));
  TRY(DT_SUPPORT(c, GS_MEANALL, &l));
  TRY(DT_SUPPORT(c, GS_INVSTDALL, &l));
  /* CheckFormat */
  if (is_private(c, GS_X) || is_private(c, GS_MEAN) || is_private(c, GS_INVSTD) || is_private(c, GS_COUNTS))
    return fail(c, SIM_NN_INVALID, "Format only support ND,NCHW,NCL,NCDHW.");
  /* CheckShape, in its order */
  TRY(max_dim(c, GS_X, 8, NULL));
  TRY(min_dim(c, GS_X, 2, NULL));
  TRY(wrong_dim(c, GS_MEAN, 2));
  TRY(wrong_dim(c, GS_INVSTD, 2));
  /* counts.shape[0] is read before counts' rank is checked; [aclsim] a 0-d counts fails here */
  if (T(GS_MEAN)->dims[0] != T(GS_INVSTD)->dims[0] || T(GS_COUNTS)->ndim < 1 ||
      T(GS_COUNTS)->dims[0] != T(GS_MEAN)->dims[0]) {
    char a[160], b[160], k[160];
    shape_str(T(GS_MEAN), a, sizeof a);
    shape_str(T(GS_INVSTD), b, sizeof b);
    shape_str(T(GS_COUNTS), k, sizeof k);
    return fail(c, SIM_NN_INVALID,
                "first dimension of mean, invstd and count should be the same, but got mean: %s, invstd: %s, counts: %s.",
                a, b, k);
  }
  int64_t C = T(GS_X)->dims[1];
  if (T(GS_MEAN)->dims[1] != C || T(GS_INVSTD)->dims[1] != C) {
    char a[160], b[160];
    shape_str(T(GS_MEAN), a, sizeof a);
    shape_str(T(GS_INVSTD), b, sizeof b);
    return fail(c, SIM_NN_INVALID,
                "second dimension of mean/invstd should be the channel size of input %" PRId64 ", but gotmean: %s, "
                "invstd: %s.",
                C, a, b);
  }
  TRY(shape_expect(c, GS_RM, &C, 1, NULL));
  TRY(shape_expect(c, GS_RV, &C, 1, NULL));
  if (T(GS_COUNTS)->ndim != 1) return fail(c, SIM_NN_INVALID, "dim of counts should be one.");
  TRY(shape_expect(c, GS_MEANALL, &C, 1, NULL));
  TRY(shape_expect(c, GS_INVSTDALL, &C, 1, NULL));
  c->plan.C = C;
  /* Only an empty `mean` short-circuits (input's data is never read): meanAll = 0, invstdAll =
   * NaN, running statistics untouched. */
  if (is_empty(T(GS_MEAN))) {
    fill_slot(c, GS_MEANALL, 0.0);
    fill_slot(c, GS_INVSTDALL, NAN);
    return finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  /* runningMean given, runningVar NULL: CopyRunningTensorToDst returns early only when
   * runningMeanDst is NULL and then evaluates runningVarDst->GetDataType() (line 326) -- a NULL
   * dereference during GetWorkspaceSize (the 950 path's CopyResultTensorToDst passes the NULL to
   * l0op::ViewCopy).  The process dies; the simulator dies loudly the same way. */
  if (P(GS_RM) && !P(GS_RV)) {
    fprintf(stderr,
            "aclsim: aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize: runningMean is given but runningVar is NULL; "
            "CANN dereferences the NULL runningVar here (hicann/ops-nn norm/sync_batch_norm_gather_stats_with_counts/"
            "op_host/op_api/aclnn_batch_norm_gather_stats_with_counts.cpp:326, CopyRunningTensorToDst: "
            "runningVarDst->GetDataType()) and the process crashes: aborting\n");
    fflush(stderr);
    abort();
  }
  /* runningVar given, runningMean NULL: both copy-back functions return early when runningMeanDst
   * is NULL, so runningVar is silently NOT updated (sim_run_bn_gather_stats). */
  return finish(c, C, ws, exec);
}

int sim_run_bn_gather_stats(const SimPlan *p) {
  int64_t C = p->C, W = p->t[GS_MEAN].dims[0];
  double *mean = sim_load(&p->t[GS_MEAN]), *invstd = sim_load(&p->t[GS_INVSTD]);
  double *counts = sim_load(&p->t[GS_COUNTS]);
  double *ma = zalloc(C), *ia = zalloc(C);
  double *rm = p->present[GS_RM] ? sim_load(&p->t[GS_RM]) : NULL;
  /* runningVar is written back only together with runningMean (CopyRunningTensorToDst) */
  double *rv = p->present[GS_RV] && p->present[GS_RM] ? sim_load(&p->t[GS_RV]) : NULL;
  /* meanAll = sum_w counts_w * mean_w / countSum (non-950: ReduceMeanWithCount, ops-nn
   * aclnn_batch_norm_gather_stats_with_counts.cpp 461-480);
   * var_sum = sum_w counts_w * ((1/invstd_w)^2 - eps + (mean_w - meanAll)^2),
   * invstdAll = 1/sqrt(var_sum/countSum + eps), runningVar takes var_sum/(countSum - 1)
   * (950: sync_batch_norm_gather_stats_fused op_kernel/..._first_axis_common.inl 149-190 and
   * ..._compute.h 49-50, 139-186; the non-950 TBE kernel is not public and is taken to agree).
   * Sums weighted by the counts, not PyTorch CUDA's sequential merge: a rank of count 0 adds
   * nothing wherever it is (its invstd must still be finite: 0 * NaN is NaN). */
  for (int64_t ch = 0; ch < C; ch++) {
    double n = 0, weighted = 0;
    for (int64_t w = 0; w < W; w++) {
      n += counts[w];
      weighted += counts[w] * mean[w * C + ch];
    }
    double avg = weighted / n, var_n = 0;
    for (int64_t w = 0; w < W; w++) {
      double m = mean[w * C + ch], sd = 1.0 / invstd[w * C + ch];
      var_n += counts[w] * (sd * sd - p->eps + (m - avg) * (m - avg));
    }
    ma[ch] = avg;
    ia[ch] = 1.0 / sqrt(var_n / n + p->eps);
    if (rm) rm[ch] = (1 - p->momentum) * rm[ch] + p->momentum * avg;
    if (rv) rv[ch] = (1 - p->momentum) * rv[ch] + p->momentum * (var_n / (n - 1));
  }
  sim_store(&p->t[GS_MEANALL], ma);
  sim_store(&p->t[GS_INVSTDALL], ia);
  if (rm) sim_store(&p->t[GS_RM], rm);
  if (rv) sim_store(&p->t[GS_RV], rv);
  return 0;
}
