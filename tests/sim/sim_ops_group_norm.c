/*
 * Software CANN ("aclsim") -- aclnnGroupNorm: phase-1 validation as CANN performs it on the SoC
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
 * 9. aclnnGroupNorm
 *    ops-nn norm/group_norm/op_host/op_api/aclnn_group_norm.cpp
 * ====================================================================================== */
enum { GN_X, GN_GAMMA, GN_BETA, GN_Y, GN_MEAN, GN_RSTD };

/* "Expected gamma to be a vector of size equal to the number of channels in input, but got
 * gamma of shape %s and input of shape %s." */
static int gn_vector_c(Ctx *c, int s, int64_t C) {
  if (!P(s) || (T(s)->ndim == 1 && T(s)->dims[0] == C)) return 0;
  char a[160], b[160];
  shape_str(T(s), a, sizeof a);
  shape_str(T(GN_X), b, sizeof b);
  return fail(c, SIM_NN_INVALID,
              "Expected %s to be a vector of size equal to the number of channels in input, but got %s of shape %s and "
              "input of shape %s.",
              NAME(s), NAME(s), a, b);
}

int sim_gn_ws(const void *self, const void *gamma, const void *beta, int64_t N, int64_t C, int64_t HxW, int64_t group,
              double eps, void *out, void *meanOut, void *rstdOut, uint64_t *ws, void **exec) {
  static const char *const names[] = {"self", "gamma", "beta", "out", "meanOut", "rstdOut"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_GN, "aclnnGroupNorm", 3, 3, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec));
  TRY(soc_check(c));
  TRY(op_supported(c));
  /* CheckNotNull4Tensor(self, out, meanOut, rstdOut) (ops-nn common/inc/op_api/level2_base.h):
   * its parameters are t0..t3, which is what OP_CHECK_NULL prints. */
  TRY(NULL_TENSOR(c, self, "t0", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, out, "t1", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, meanOut, "t2", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, rstdOut, "t3", SIM_NN_NULLPTR));
  const void *hs[] = {self, gamma, beta, out, meanOut, rstdOut};
  for (int s = GN_X; s <= GN_RSTD; s++) TRY(get(c, hs[s], s));
  c->plan.eps = eps;
  /* CheckDtypeValid (group_norm/op_host/op_api/aclnn_group_norm.cpp 69-87): self in
   * {FLOAT16, [BF16,] FLOAT} (DAV_2201 or regbase: + BF16, 59-67); then gamma, beta, out, meanOut,
   * rstdOut, in that order, each exactly self's dtype (77-85), with no branch on the chip: no
   * mixed precision on any SoC. (aclnnGroupNormSilu's CheckDtypeValid, group_norm_silu/op_host/
   * op_api/aclnn_group_norm_silu.cpp 73-121, takes FLOAT gamma/beta; aclnnGroupNorm does not.) */
  DtList l = {1, {SIM_DT_FLOAT16, 0, 0}};
  if (bf16_ok(c)) l.v[l.n++] = SIM_DT_BF16;
  l.v[l.n++] = SIM_DT_FLOAT;
  TRY(DT_SUPPORT(c, GN_X, &l));
  for (int s = GN_GAMMA; s <= GN_RSTD; s++) TRY(dt_match(c, s, T(GN_X)->dtype, NULL));
  /* CheckAttr */
  if (group <= 0) return fail(c, SIM_NN_INVALID, "Expected group to be greater than 0, got %" PRId64 ".", group);
  if (C % group != 0) {
    char sh[160];
    shape_str(T(GN_X), sh, sizeof sh);
    return fail(c, SIM_NN_INVALID,
                "Expected number of channels in input to be divisible by group, but got input of shape %s and "
                "group=%" PRId64 ".",
                sh, group);
  }
  if (!(eps > 0.0)) return fail(c, SIM_NN_INVALID, "Expected eps to be greater than 0, got %lf.", eps);
  /* CheckShape, in its order */
  TRY(min_dim(c, GN_X, 2, NULL));
  TRY(max_dim(c, GN_X, 8, NULL));
  TRY(shape_same(c, GN_Y, GN_X, NULL, NULL));
  const int64_t ng[2] = {N, group};
  TRY(shape_expect(c, GN_MEAN, ng, 2, NULL));
  TRY(shape_expect(c, GN_RSTD, ng, 2, NULL));
  const SimTensorDesc *x = T(GN_X);
  if (x->dims[0] != N) return fail(c, SIM_NN_INVALID, "Expected self.shape[0] == N to be true, but got false.");
  if (x->dims[1] != C) return fail(c, SIM_NN_INVALID, "Expected self.shape[1] == C to be true, but got false.");
  int64_t rest = 1;
  for (int i = 2; i < x->ndim; i++) rest *= x->dims[i];
  if (rest != HxW)
    return fail(c, SIM_NN_INVALID,
                "Expected the size of self outside the N and C dimensions == HxW to be true, but got false.");
  if (sim_desc_numel(x) != N * C * HxW)
    return fail(c, SIM_NN_INVALID, "Expected self.numel() == N * C * HxW to be true, but got false.");
  TRY(gn_vector_c(c, GN_GAMMA, C));
  TRY(gn_vector_c(c, GN_BETA, C));
  /* CheckFormat (group_norm/op_host/op_api/aclnn_group_norm.cpp:175-191): self == out; private
   * formats and NHWC, HWCN, NDHWC rejected. No other rule reads the label: the kernels
   * (GroupNormSilu on DAV_2201/DAV_2002/regbase, GroupNorm elsewhere, :343-365) declare only ND for
   * x (group_norm_silu/op_host/group_norm_silu_def.cpp:22-26, 82-86, 122-126; group_norm/op_host/
   * group_norm_def.cpp:22-26), and kernel selection ignores the format of an ND-only input (opbase
   * src/nnopbase/composite_op/aclnn_engine/kernel_arg.cpp:107-115). */
  if (x->format != T(GN_Y)->format)
    return fail(c, SIM_NN_INVALID, "Format of self and out should be equal, but got self [%s], out [%s]",
                fmt_str(x->format), fmt_str(T(GN_Y)->format));
  if (private_format(x->format) || x->format == SIM_FMT_NHWC || x->format == SIM_FMT_HWCN || x->format == SIM_FMT_NDHWC)
    return fail(c, SIM_NN_INVALID, "Format only support ND、NCL、NCHW、NCDHW.");
  c->plan.N = N;
  c->plan.C = C;
  c->plan.HxW = HxW;
  c->plan.group = group;
  c->plan.decomposed = sim_rule_gn_fp16_stats_cast(&c->soc) && x->dtype == SIM_DT_FLOAT16; /* sim_run_gn */
  /* empty self (after the checks): meanOut = 0, rstdOut = NaN, in their own dtype; workspace 0 */
  if (is_empty(x)) {
    fill_slot(c, GN_MEAN, 0.0);
    fill_slot(c, GN_RSTD, NAN);
    return finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  return finish(c, N * C, ws, exec);
}

int sim_run_gn(const SimPlan *p) {
  int64_t N = p->N, C = p->C, HxW = p->HxW, G = p->group, D = C / G;
  int64_t total = N * C * HxW;
  double *x = sim_load(&p->t[GN_X]);
  double *gamma = per_channel_or(p, GN_GAMMA, C, 1.0), *beta = per_channel_or(p, GN_BETA, C, 0.0);
  double *y = zalloc(total);
  double *mo = zalloc(N * G);
  double *ro = zalloc(N * G);
  double cnt = (double)(D * HxW);
  for (int64_t n = 0; n < N; n++) {
    for (int64_t g = 0; g < G; g++) {
      if (cnt == 0) continue; /* unreachable: an empty self takes the fill path */
      int64_t b0 = (n * C + g * D) * HxW, len = D * HxW;
      double s = 0, q = 0;
      for (int64_t i = 0; i < len; i++) s += x[b0 + i];
      double m = s / cnt;
      for (int64_t i = 0; i < len; i++) q += (x[b0 + i] - m) * (x[b0 + i] - m);
      /* population (biased) variance: GroupNorm proto "Per-group population variance",
       * GroupNormSilu likewise; rstd = 1/sqrt(var + eps) */
      double r = 1.0 / sqrt(q / cnt + p->eps);
      mo[n * G + g] = m;
      ro[n * G + g] = r;
      if (p->decomposed) { /* DAV_1001, float16: Cast(mean), Rsqrt(Add(Cast(variance), eps)) in float16 */
        mo[n * G + g] = sim_round_dtype(m, SIM_DT_FLOAT16, p->overflow_mode);
        ro[n * G + g] = sim_gn_rstd_from_variance(q / cnt, p->eps, SIM_DT_FLOAT16, p->overflow_mode);
      }
      for (int64_t i = 0; i < len; i++) {
        int64_t ch = g * D + i / HxW;
        y[b0 + i] = (x[b0 + i] - m) * r * gamma[ch] + beta[ch];
        if (p->decomposed) y[b0 + i] = sim_round_dtype(y[b0 + i], SIM_DT_FLOAT16, p->overflow_mode); /* Cast(y) */
      }
    }
  }
  if (total > 0) sim_store(&p->t[GN_Y], y);
  sim_store(&p->t[GN_MEAN], mo);
  sim_store(&p->t[GN_RSTD], ro);
  return 0;
}
