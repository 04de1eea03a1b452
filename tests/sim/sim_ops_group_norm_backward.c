/*
 * Software CANN ("aclsim") -- aclnnGroupNormBackward: phase-1 validation as CANN performs it on the SoC
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
 * 3. aclnnGroupNormBackward
 *    ops-nn norm/group_norm_grad/op_host/op_api/aclnn_group_norm_backward.cpp
 * ====================================================================================== */
enum { GB_DY, GB_X, GB_MEAN, GB_RSTD, GB_GAMMA, GB_GI, GB_GG, GB_GBETA };

int sim_gn_backward_ws(const void *gradOut, const void *input, const void *mean, const void *rstd, const void *gamma,
                       int64_t N, int64_t C, int64_t HxW, int64_t group, const void *outputMask, void *gradInput,
                       void *gradGamma, void *gradBeta, uint64_t *ws, void **exec) {
  static const char *const names[] = {"gradOut", "input", "mean", "rstd", "gamma", "gradInput", "gradGammaOut", "gradBetaOut"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_GN_BACKWARD, "aclnnGroupNormBackward", 5, 3, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec)); /* OP_CHECK_COMM_INPUT */
  TRY(soc_check(c));
  TRY(op_supported(c));
  /* CheckNotNull -> 161001 */
  TRY(NULL_TENSOR(c, gradOut, "gradOut", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, input, "input", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, mean, "mean", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, rstd, "rstd", SIM_NN_NULLPTR));
  /* CheckMaskNotNull: every failure is returned as 161002 (CheckParams maps it to
   * ACLNN_ERR_PARAM_INVALID; the doc says 161001 for the NULL outputs). */
  TRY(null_arg(c, outputMask, "aclBoolArray", "outputMask", SIM_NN_INVALID));
  uint64_t mlen = 0;
  TRY(lookup_mask(c, outputMask, &mlen));
  if (mlen != 3)
    return fail(c, SIM_NN_INVALID, "Expected aclnnGroupNormBackward outputMask len to be 3, but got %" PRIu64 ".", mlen);
  if (c->plan.mask[0]) TRY(NULL_TENSOR(c, gradInput, "gradInput", SIM_NN_INVALID));
  if (c->plan.mask[1]) TRY(NULL_TENSOR(c, gradGamma, "gradGammaOut", SIM_NN_INVALID));
  if (c->plan.mask[2]) TRY(NULL_TENSOR(c, gradBeta, "gradBetaOut", SIM_NN_INVALID));
  TRY(get(c, gradOut, GB_DY));
  TRY(get(c, input, GB_X));
  TRY(get(c, mean, GB_MEAN));
  TRY(get(c, rstd, GB_RSTD));
  TRY(get(c, gamma, GB_GAMMA));
  if (c->plan.mask[0]) TRY(get(c, gradInput, GB_GI));
  if (c->plan.mask[1]) TRY(get(c, gradGamma, GB_GG));
  if (c->plan.mask[2]) TRY(get(c, gradBeta, GB_GBETA));
  /* CheckDtypeValid: gradOut in GetDtypeSupportListV2 (DAV_2201 or regbase -> + BF16). */
  DtList l = dl_fhb(c);
  TRY(DT_SUPPORT(c, GB_DY, &l));
  int32_t dyt = T(GB_DY)->dtype;
  if (sim_rule_gnb_mixed_precision(&c->soc)) {
    /* DAV_3510: mean in the list, then CheckMixPrecisionDtype. */
    TRY(DT_SUPPORT(c, GB_MEAN, &l));
    TRY(dt_match(c, GB_X, dyt, NULL));
    TRY(dt_match(c, GB_GI, dyt, NULL));
    if (dyt == SIM_DT_FLOAT) {
      TRY(dt_match(c, GB_MEAN, SIM_DT_FLOAT, NULL));
    } else if (dyt == SIM_DT_FLOAT16) {
      const DtList fh = {2, {SIM_DT_FLOAT, SIM_DT_FLOAT16, 0}}; /* REGBASE_FP16_FP32_SUPPORT_LIST */
      TRY(DT_SUPPORT(c, GB_MEAN, &fh));
    } else if (dyt == SIM_DT_BF16) {
      const DtList fb = {2, {SIM_DT_FLOAT, SIM_DT_BF16, 0}}; /* REGBASE_BF16_FP32_SUPPORT_LIST */
      TRY(DT_SUPPORT(c, GB_MEAN, &fb));
    }
    int32_t mt = T(GB_MEAN)->dtype;
    TRY(dt_match(c, GB_RSTD, mt, NULL));
    TRY(dt_match(c, GB_GAMMA, mt, NULL));
    TRY(dt_match(c, GB_GG, mt, NULL));
    TRY(dt_match(c, GB_GBETA, mt, NULL));
  } else {
    /* every other architecture: everything equals gradOut's dtype (no mixed precision) */
    for (int s = GB_X; s <= GB_GBETA; s++) TRY(dt_match(c, s, dyt, NULL));
  }
  /* CheckAttr */
  if (group <= 0) return fail(c, SIM_NN_INVALID, "Expected group to be greater than 0, got %" PRId64 ".", group);
  if (C % group != 0) return fail(c, SIM_NN_INVALID, "Expected C can be divided by group, but got false.");
  /* DAV_2201 only (sim_rule_gnb_limits): C / group <= 8000, C <= 240000 */
  int64_t max_per_group = 0, max_channels = 0;
  if (sim_rule_gnb_limits(&c->soc, &max_per_group, &max_channels)) {
    if (C / group > max_per_group)
      return fail(c, SIM_NN_INVALID, "Expected C / group <= %" PRId64 " to be true, but got false.", max_per_group);
    if (C > max_channels)
      return fail(c, SIM_NN_INVALID, "Expecting C to not exceed %" PRId64 ", got %" PRId64 ".", max_channels, C);
  }
  /* CheckShape: only element counts (and gradOut rank <= 8) */
  TRY(max_dim(c, GB_DY, 8, NULL));
  if (sim_desc_numel(T(GB_DY)) != N * C * HxW)
    return fail(c, SIM_NN_INVALID, "Expected gradOut.numel() == N * C * HxW to be true, but got false.");
  if (sim_desc_numel(T(GB_X)) != N * C * HxW)
    return fail(c, SIM_NN_INVALID, "Expected input.numel() == N * C * HxW to be true, but got false.");
  if (sim_desc_numel(T(GB_MEAN)) != N * group)
    return fail(c, SIM_NN_INVALID, "Expected mean.numel() == N * group to be true, but got false.");
  if (sim_desc_numel(T(GB_RSTD)) != N * group)
    return fail(c, SIM_NN_INVALID, "Expected rstd.numel() == N * group to be true, but got false.");
  if (P(GB_GAMMA) && sim_desc_numel(T(GB_GAMMA)) != C)
    return fail(c, SIM_NN_INVALID, "Expected gamma.numel() == C to be true, but got false.");
  TRY(shape_expect(c, GB_GI, T(GB_X)->dims, T(GB_X)->ndim, NULL));
  const int64_t cdims[1] = {C};
  const int64_t *gdims = P(GB_GAMMA) ? T(GB_GAMMA)->dims : cdims;
  int gnd = P(GB_GAMMA) ? T(GB_GAMMA)->ndim : 1;
  TRY(shape_expect(c, GB_GG, gdims, gnd, NULL));
  TRY(shape_expect(c, GB_GBETA, gdims, gnd, NULL));
  /* [aclsim] negative sizes pass CANN's checks only in combinations no kernel can run */
  if (N < 0 || C < 0 || HxW < 0)
    return fail(c, SIM_NN_INVALID, "[aclsim] N (%" PRId64 "), C (%" PRId64 ") and HxW (%" PRId64 ") must not be negative",
                N, C, HxW);
  c->plan.N = N;
  c->plan.C = C;
  c->plan.HxW = HxW;
  c->plan.group = group;
  c->plan.decomposed = sim_rule_gnb_decomposed(&c->soc); /* sim_decomposed.c */
  /* Empty tensors (after CheckParams): other architectures return SUCCESS with nothing written
   * when gradOut or input is empty; DAV_3510 launches GroupNormGrad, whose dgamma/dbeta for an
   * empty input are zeros, when gradOut, input, mean or rstd is empty and gamma (ones [C] when
   * NULL) is not (ComputeGroupNormBackwardEmptyInput), and writes nothing when gamma is empty. */
  bool any_empty = is_empty(T(GB_DY)) || is_empty(T(GB_X));
  if (!c->plan.regbase) {
    if (any_empty) return finish_early(c, SIM_RUN_NOTHING, ws, exec);
  } else {
    bool gamma_empty = P(GB_GAMMA) ? sim_desc_numel(T(GB_GAMMA)) == 0 : C == 0;
    any_empty = any_empty || is_empty(T(GB_MEAN)) || is_empty(T(GB_RSTD));
    if (any_empty && !gamma_empty) {
      fill_slot(c, GB_GG, 0.0);
      fill_slot(c, GB_GBETA, 0.0);
      return finish_early(c, SIM_RUN_FILL, ws, exec);
    }
    if (gamma_empty) return finish_early(c, SIM_RUN_NOTHING, ws, exec);
  }
  /* [aclsim] the kernels read base layouts only */
  for (int s = GB_DY; s <= GB_GBETA; s++)
    if (is_private(c, s))
      return fail(c, SIM_NN_INVALID, "[aclsim] %s has the private format %s, which the simulator does not model", NAME(s),
                  fmt_str(T(s)->format));
  return finish(c, N * C, ws, exec);
}

int sim_run_gn_backward(const SimPlan *p) {
  int64_t N = p->N, C = p->C, HxW = p->HxW, G = p->group, D = C / G;
  double *x = sim_load(&p->t[GB_X]), *dy = sim_load(&p->t[GB_DY]);
  double *mean = sim_load(&p->t[GB_MEAN]), *rstd = sim_load(&p->t[GB_RSTD]);
  double *gamma = per_channel_or(p, GB_GAMMA, C, 1.0);
  int64_t total = N * C * HxW;
  double *gi = zalloc(total);
  double *gg = zalloc(C), *gb = zalloc(C);
  double cnt = (double)(D * HxW);
  if (p->decomposed) /* every tensor has gradOut's dtype off DAV_3510 (CheckDtypeValid) */
    sim_gn_backward_decomposed(x, dy, mean, rstd, gamma, N, C, HxW, G, p->t[GB_DY].dtype, p->overflow_mode, gi, gg, gb);
  for (int64_t n = 0; n < N && !p->decomposed; n++) {
    for (int64_t g = 0; g < G; g++) {
      double m = mean[n * G + g], r = rstd[n * G + g], s1 = 0, s2 = 0;
      for (int64_t ch = g * D; ch < (g + 1) * D; ch++) {
        for (int64_t k = 0; k < HxW; k++) {
          int64_t i = (n * C + ch) * HxW + k;
          double xh = (x[i] - m) * r, dxh = dy[i] * gamma[ch];
          s1 += dxh;
          s2 += dxh * xh;
          gg[ch] += dy[i] * xh;
          gb[ch] += dy[i];
        }
      }
      for (int64_t ch = g * D; ch < (g + 1) * D; ch++) {
        for (int64_t k = 0; k < HxW; k++) {
          int64_t i = (n * C + ch) * HxW + k;
          double xh = (x[i] - m) * r, dxh = dy[i] * gamma[ch];
          gi[i] = r * (dxh - s1 / cnt - xh * s2 / cnt);
        }
      }
    }
  }
  if (p->present[GB_GI]) sim_store(&p->t[GB_GI], gi);
  store_if(p, GB_GG, gg);
  store_if(p, GB_GBETA, gb);
  return 0;
}
