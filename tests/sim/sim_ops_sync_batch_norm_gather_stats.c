/*
 * Software CANN ("aclsim") -- aclnnSyncBatchNormGatherStats: phase-1 validation as CANN performs
 * it, planning, and the computation run at stream synchronisation (the kernels' float32 steps
 * and guards, each output stored in totalSum's dtype then cast to its own).
 *
 * Sources: hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921 (2026-08-22),
 *   norm/sync_batch_norm_gather_stats/op_api/aclnn_sync_batch_norm_gather_stats.cpp ("cpp:<line>"),
 *   op_kernel/arch35/sync_batch_norm_gather_stats_n_full_load.h (the kernel of the main definition,
 *   op_host/sync_batch_norm_gather_stats_def.cpp:78, ascend950 only),
 *   experimental/norm/sync_batch_norm_gather_stats/op_kernel/sync_batch_norm_gather_stats_kernel.h
 *   (the definition registering ascend910b and ascend310p, op_host/..._def.cpp:87-88),
 *   docs/aclnnSyncBatchNormGatherStats.md.
 * Phase 1 (cpp:254-285):
 *   1. CheckNotNull: totalSum, totalSquareSum, sampleCount, mean, variance, batchMean, batchInvstd
 *      (OP_CHECK_NULL -> 161001, cpp:52-62).
 *   2. CheckDtypeValid (cpp:64-90): every tensor in {FLOAT, FLOAT16} (+ BF16 on regbase);
 *      sampleCount also INT32; totalSquareSum, mean, variance dtype == totalSum's; batchInvstd ==
 *      batchMean's -> 161002.
 *   3. CheckFormat: no private format (cpp:92-120) -> 161002.
 *   4. CheckShape: totalSum, totalSquareSum 2-D, the others 1-D (OP_CHECK_WRONG_DIMENSION), then
 *      each size against totalSum's (cpp:122-190) -> 161002.
 *   5. totalSum dim 0 == 0 -> 161002 "totalSumShape dim0 is zero"; dim 1 == 0 -> SUCCESS, nothing
 *      written (cpp:270-280).
 * Then sampleCount is cast to INT32 (cpp:209; here a C truncation: the rounding of l0op::Cast is
 * not in these sources) and the kernel's results are cast to each output's dtype and ViewCopy'd
 * (mean, variance in place, cpp:230-249).
 * Products ("产品支持情况"): Ascend 950, Atlas A3, Atlas A2.  Which kernel an A2/A3 CANN ships is
 * not in the sources: off regbase the simulator runs the experimental/ kernel (guards for n <= 1).
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { SG_SUM, SG_SQ, SG_COUNT, SG_MEAN, SG_VAR, SG_BMEAN, SG_BINV };

static const unsigned SG_PRODUCTS = NP_950 | NP_A3 | NP_A2;
static const char *const NAMES[] = {"totalSum", "totalSquareSum", "sampleCount", "mean",
                                    "variance", "batchMean",      "batchInvstd"};

static int check_dtypes(NormCtx *c) {
  bool rb = nrm_regbase(c);
  NrmDtList l = {rb ? 3 : 2, {SIM_DT_FLOAT, SIM_DT_FLOAT16, SIM_DT_BF16, 0}};
  NrmDtList lc = rb ? (NrmDtList){4, {SIM_DT_FLOAT, SIM_DT_FLOAT16, SIM_DT_BF16, SIM_DT_INT32}}
                    : (NrmDtList){3, {SIM_DT_FLOAT, SIM_DT_FLOAT16, SIM_DT_INT32, 0}};
  for (int s = SG_SUM; s <= SG_BINV; s++) NTRY(nrm_dt_support(c, s, s == SG_COUNT ? &lc : &l, NAMES[s]));
  NTRY(nrm_dt_same(c, SG_SUM, NAMES[SG_SUM], SG_SQ, NAMES[SG_SQ]));
  NTRY(nrm_dt_same(c, SG_SUM, NAMES[SG_SUM], SG_MEAN, NAMES[SG_MEAN]));
  NTRY(nrm_dt_same(c, SG_SUM, NAMES[SG_SUM], SG_VAR, NAMES[SG_VAR]));
  return nrm_dt_same(c, SG_BMEAN, NAMES[SG_BMEAN], SG_BINV, NAMES[SG_BINV]);
}

/* CheckShape (cpp:122-190), its OP_LOGE texts in order. */
static int check_shapes(NormCtx *c) {
  for (int s = SG_SUM; s <= SG_BINV; s++) NTRY(nrm_wrong_dim(c, s, s <= SG_SQ ? 2 : 1, NAMES[s]));
  const int64_t *sum = NT(c, SG_SUM)->dims;
  struct { int s, dim, total_dim; const char *text; } rules[] = {
      {SG_SQ, 0, 0, "totalSumShape dim0 not same totalSquareSumShape dim0"},
      {SG_SQ, 1, 1, "totalSumShape dim1 not same totalSquareSumShape dim1"},
      {SG_COUNT, 0, 0, "totalSumShape dim0 not same sampleCountShape dim0"},
      {SG_MEAN, 0, 1, "totalSumShape dim1 not same meanShape dim0"},
      {SG_VAR, 0, 1, "totalSumShape dim1 not same varianceShape dim0"},
      {SG_BMEAN, 0, 1, "totalSumShape dim1 not same batchMeanShape dim0"},
      {SG_BINV, 0, 1, "totalSumShape dim1 not same batchInvstdShape dim0"},
  };
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (NT(c, rules[i].s)->dims[rules[i].dim] != sum[rules[i].total_dim])
      return nrm_fail(c, SIM_NN_INVALID, "%s", rules[i].text);
  return 0;
}

int sim_sync_bn_gather_stats_ws(const void *totalSum, const void *totalSquareSum, const void *sampleCount, void *mean,
                                void *variance, float momentum, float eps, void *batchMean, void *batchInvstd,
                                uint64_t *ws, void **exec) {
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_SYNC_BN_GATHER_STATS, "aclnnSyncBatchNormGatherStats", 5, 2, NAMES);
  NTRY(nrm_opp_path(c));
  NTRY(nrm_outparams(c, ws, exec));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, SG_PRODUCTS, "ops-nn norm/sync_batch_norm_gather_stats/docs/aclnnSyncBatchNormGatherStats.md"));
  const void *hs[] = {totalSum, totalSquareSum, sampleCount, mean, variance, batchMean, batchInvstd};
  for (int s = SG_SUM; s <= SG_BINV; s++) NTRY(nrm_null(c, hs[s], "aclTensor", NAMES[s], SIM_NN_NULLPTR));
  for (int s = SG_SUM; s <= SG_BINV; s++) NTRY(nrm_get(c, hs[s], s));
  NTRY(check_dtypes(c));
  for (int s = SG_SUM; s <= SG_VAR; s++) {
    int32_t f = NT(c, s)->format;
    if (f != SIM_FMT_ND && f != SIM_FMT_NCHW && f != SIM_FMT_NCL && f != SIM_FMT_NCDHW && f != SIM_FMT_NHWC &&
        f != SIM_FMT_NDHWC && f != SIM_FMT_NC && f != SIM_FMT_HWCN)
      return nrm_fail(c, SIM_NN_INVALID, "%s format only support ND, NCL, NCHW, NCDHW.", NAMES[s]);
  }
  NTRY(check_shapes(c));
  if (NT(c, SG_SUM)->dims[0] == 0) return nrm_fail(c, SIM_NN_INVALID, "totalSumShape dim0 is zero");
  if (NT(c, SG_SUM)->dims[1] == 0) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  c->plan.C = NT(c, SG_SUM)->dims[1];
  c->plan.momentum = momentum;
  c->plan.eps = eps;
  return nrm_finish(c, c->plan.C, ws, exec);
}

/* Both kernels compute in float32, one rounding per vector operation, the steps in this order
 * (arch35 n_full_load.h:150-238 NFullLoadBatchNormVF; experimental kernel.h:130-150, 346-376):
 * S, Q = the per-device sums cast to float and reduced over the devices in float32
 * (ReduceSum ... Pattern::Reduce::RA; its order within the reduction is not in these sources:
 * [aclsim] device by device), batchMean = S·r, v = Q·r - batchMean·batchMean,
 * batchInvstd = 1 / sqrt(v + eps), mean = mean·(1-m) + batchMean·m,
 * variance = v·k + variance·(1-m); each output then cast to its dtype (CAST_RINT).
 * arch35: n summed in int64, r = 1/n, k = n/(n-1)·m, no guard. experimental (kernel.h:115-117,
 * 355-358): n summed in float, r = 0 when n == 0, k = m when n <= 1.  (-std=c11 keeps the
 * compiler from fusing a multiply and an add, as the kernels' separate Muls/Sub do not.) */
int sim_run_sync_bn_gather_stats(const SimPlan *p) {
  int64_t C = p->C, D = p->t[SG_SUM].dims[0];
  int32_t T = p->t[SG_SUM].dtype;
  double *sum = sim_load(&p->t[SG_SUM]), *sq = sim_load(&p->t[SG_SQ]), *cnt = sim_load(&p->t[SG_COUNT]);
  double *rm = sim_load(&p->t[SG_MEAN]), *rv = sim_load(&p->t[SG_VAR]);
  double *bm = nrm_zalloc(C), *bi = nrm_zalloc(C);
  int64_t n = 0;
  float nsum = 0.0f;
  for (int64_t d = 0; d < D; d++) {
    n += (int32_t)cnt[d]; /* l0op::Cast to INT32 (cpp:209) */
    nsum += (float)(int32_t)cnt[d];
  }
  float m = (float)p->momentum, eps = (float)p->eps;
  float nf = p->regbase ? (float)n : nsum;
  float r, k;
  if (p->regbase) {
    r = 1.0f / nf;
    k = nf / (nf - 1.0f) * m;
  } else {
    r = nf == 0.0f ? 0.0f : 1.0f / nf;
    k = nf > 1.0f ? nf / (nf - 1.0f) * m : m;
  }
  float om = 1.0f - m;
  for (int64_t ch = 0; ch < C; ch++) {
    float s = 0.0f, q = 0.0f;
    for (int64_t d = 0; d < D; d++) {
      s += (float)sum[d * C + ch];
      q += (float)sq[d * C + ch];
    }
    float mean = s * r;
    float square = mean * mean;
    float qr = q * r;
    float v = qr - square;
    float root = sqrtf(v + eps);
    float inv = 1.0f / root;
    float keep = (float)rm[ch] * om, add = mean * m;
    float vk = v * k, vkeep = (float)rv[ch] * om;
    bm[ch] = nrm_round(mean, T);
    bi[ch] = nrm_round(inv, T);
    rm[ch] = keep + add;
    rv[ch] = vk + vkeep;
  }
  sim_store(&p->t[SG_BMEAN], bm);
  sim_store(&p->t[SG_BINV], bi);
  sim_store(&p->t[SG_MEAN], rm);
  sim_store(&p->t[SG_VAR], rv);
  return 0;
}
