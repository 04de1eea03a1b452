/*
 * Software CANN ("aclsim") -- aclnnGroupNormSilu and aclnnGroupNormSiluV2: phase-1 validation as
 * CANN performs it, planning, and the computation run at stream synchronisation, with each
 * chip's arithmetic: A2/A3's one-pass statistics and half-away-from-zero output rounding, the
 * Atlas inference series' same kernel with round-to-nearest-even, Ascend 950's two-pass kernel.
 *
 * Sources: hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921, norm/group_norm_silu/
 * (docs/norm_family_kernels.md section 9 of this repository summarises them):
 *   op_host/op_api/aclnn_group_norm_silu.cpp ("cpp:<line>"): CheckParams :200-216 in the order
 *     CheckNotNull (self, out, meanOut, rstdOut :54-62) -> 161001; CheckDtypeValid :73-121 (list
 *     {F16, BF16, F32} on DAV_2201 or regbase, {F16, F32} elsewhere :64-71; gamma, beta in the
 *     list; with both, beta = gamma's dtype and gamma = self's or FLOAT; out = self's; off
 *     regbase meanOut, rstdOut = self's and a FLOAT self needs FLOAT gamma/beta; on regbase a
 *     gamma/beta of another dtype must be FLOAT and then meanOut/rstdOut FLOAT); CheckShape
 *     :149-180 (self 2-8 dims, out = self's shape, meanOut/rstdOut N*group elements, gamma/beta
 *     1-D of C); CheckAttr :123-147 (group > 0; off regbase N > 0 and C > 0; eps > 0; C % group
 *     == 0) -> 161002. Empty self: off regbase meanOut = 0, rstdOut = NaN, SUCCESS (:291-303,
 *     V2 :372-384); regbase: SUCCESS when N = 0, else the empty-tensor kernel (meanOut = rstdOut
 *     = NaN). V1 passes activateSilu = true, V2 its argument.
 *   op_kernel/group_norm_silu_b16.h (A2/A3 and the inference series): Σx and Σx² in float
 *     (:287-330, :343-355), mean = Σx·(1/n), var = Σx²·(1/n) − mean² (:209-214, :253-258),
 *     rstd = 1/sqrt(var + eps); per channel scale = rstd·gamma, bias = −scale·mean + beta;
 *     gn = x·scale + bias (:223-228, :365-371); SiLU t = exp(−gn), out = gn / (1 + t)
 *     (:374-381). op_kernel/group_norm_silu_base.h:52-59: 16-bit out, mean and rstd are cast
 *     with CAST_ROUND (half away from zero) on A2/A3 (__CCE_AICORE__ 220), CAST_NONE (nearest
 *     even) elsewhere (_b16.h:384, 434-437).
 *   op_kernel/arch35/group_norm_silu_regbase_*.h (950): two-pass statistics, rstd from the
 *     variance; modelled here as exact sums rounded to float, (x − mean)·rstd·gamma + beta in
 *     float, nearest-even casts. [aclsim] where the sources leave the order unstated: the
 *     float sums are exact sums rounded once to float.
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { GS_X, GS_GAMMA, GS_BETA, GS_Y, GS_MEAN, GS_RSTD, GS_N };
enum { F32 = SIM_DT_FLOAT, F16 = SIM_DT_FLOAT16, B16 = SIM_DT_BF16 };

/* docs "产品支持情况" (aclnnGroupNormSilu.md, aclnnGroupNormSiluV2.md): 950, A3, A2, inference. */
static const unsigned GS_PRODUCTS = NP_950 | NP_A3 | NP_A2 | NP_310P;

static double f32(double v) { return nrm_round(v, SIM_DT_FLOAT); }

/* CAST_ROUND to a 16-bit dtype: to nearest, ties away from zero (AscendC RoundMode). v is a
 * float value; the other neighbour of the nearest-even result is 2v - r when v is a tie. */
double sim_gs_cast_round(double v, int32_t dt) {
  double r = nrm_round(v, dt);
  if (dt == F32 || r == v || !isfinite(r) || isnan(v)) return r;
  double other = 2 * v - r;
  if (nrm_round(other, dt) != other) return r; /* not a tie */
  return fabs(other) > fabs(r) ? other : r;
}

static int check_dtypes(NormCtx *c, bool regbase) {
  NrmDtList l = {2, {F16, F32, 0, 0}};
  if (c->soc.npu_arch == NRM_DAV_2201 || regbase) l = (NrmDtList){3, {F16, B16, F32, 0}};
  NTRY(nrm_dt_support(c, GS_X, &l, "self"));
  NTRY(nrm_dt_support(c, GS_GAMMA, &l, "gamma"));
  NTRY(nrm_dt_support(c, GS_BETA, &l, "beta"));
  int32_t xd = NT(c, GS_X)->dtype;
  if (NP(c, GS_GAMMA) && NP(c, GS_BETA)) {
    NTRY(nrm_dt_match(c, GS_BETA, NT(c, GS_GAMMA)->dtype, "gamma"));
    int32_t gd = NT(c, GS_GAMMA)->dtype;
    if (gd != xd && gd != F32) return nrm_fail(c, SIM_NN_INVALID, "The dtype of gamma must be the same as self or FLOAT");
  }
  NTRY(nrm_dt_match(c, GS_Y, xd, "out"));
  if (!regbase) {
    NTRY(nrm_dt_match(c, GS_MEAN, xd, "meanOut"));
    NTRY(nrm_dt_match(c, GS_RSTD, xd, "rstdOut"));
    if (xd == F32) {
      NTRY(nrm_dt_match(c, GS_GAMMA, F32, "gamma"));
      NTRY(nrm_dt_match(c, GS_BETA, F32, "beta"));
    }
    return 0;
  }
  for (int s = GS_GAMMA; s <= GS_BETA; s++) {
    if (!NP(c, s) || NT(c, s)->dtype == xd) continue;
    NTRY(nrm_dt_match(c, s, F32, s == GS_GAMMA ? "gamma" : "beta"));
    NTRY(nrm_dt_match(c, GS_MEAN, F32, "meanOut"));
    NTRY(nrm_dt_match(c, GS_RSTD, F32, "rstdOut"));
  }
  return 0;
}

static int check_shape(NormCtx *c, int64_t group) {
  NTRY(nrm_min_dim(c, GS_X, 2, "self"));
  NTRY(nrm_max_dim(c, GS_X, 8, "self"));
  NTRY(nrm_shape_same(c, GS_Y, "out", GS_X, "self"));
  const SimTensorDesc *x = NT(c, GS_X);
  for (int s = GS_MEAN; s <= GS_RSTD; s++) {
    if (sim_desc_numel(NT(c, s)) == x->dims[0] * group) continue;
    char a[160];
    nrm_shape_str(NT(c, s), a, sizeof a);
    return nrm_fail(c, SIM_NN_INVALID, "Expected tensor %s to have %" PRId64 " elements, but got shape %s.",
                    NNAME(c, s), x->dims[0] * group, a);
  }
  for (int s = GS_GAMMA; s <= GS_BETA; s++) {
    const SimTensorDesc *t = NT(c, s);
    if (!NP(c, s) || (t->ndim == 1 && t->dims[0] == x->dims[1])) continue;
    char a[160], b[160];
    nrm_shape_str(t, a, sizeof a);
    nrm_shape_str(x, b, sizeof b);
    return nrm_fail(c, SIM_NN_INVALID,
                    "Expected %s to be a vector of size equal to the number of channels in input, but got weight of "
                    "shape %s and input of shape %s.",
                    s == GS_GAMMA ? "weight" : "bias", a, b);
  }
  return 0;
}

static int check_attr(NormCtx *c, int64_t group, double eps, bool regbase) {
  const SimTensorDesc *x = NT(c, GS_X);
  if (group <= 0) return nrm_fail(c, SIM_NN_INVALID, "Expected group to be greater than 0, got %" PRId64 ".", group);
  if (!regbase && x->dims[0] <= 0)
    return nrm_fail(c, SIM_NN_INVALID, "Expected N to be greater than 0, got %" PRId64 ".", x->dims[0]);
  if (!regbase && x->dims[1] <= 0)
    return nrm_fail(c, SIM_NN_INVALID, "Expected C to be greater than 0, got %" PRId64 ".", x->dims[1]);
  if (!(eps > 0.0)) return nrm_fail(c, SIM_NN_INVALID, "Expected eps to be greater than 0, got %lf.", eps);
  if (x->dims[1] % group != 0) {
    char sh[160];
    nrm_shape_str(x, sh, sizeof sh);
    return nrm_fail(c, SIM_NN_INVALID,
                    "Expected number of channels in input to be divisible by group, but got input of shape %s and "
                    "group=%" PRId64 ".",
                    sh, group);
  }
  return 0;
}

int sim_gn_silu_ws(const char *api, const void *self, const void *gamma, const void *beta, int64_t group, double eps,
                   bool activateSilu, const void *out, const void *meanOut, const void *rstdOut, uint64_t *ws,
                   void **exec) {
  static const char *const names[] = {"self", "gamma", "beta", "out", "meanOut", "rstdOut"};
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_GN_SILU, api, 3, 3, names);
  NTRY(nrm_opp_path(c));
  NTRY(nrm_outparams(c, ws, exec));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, GS_PRODUCTS, "ops-nn norm/group_norm_silu/docs/aclnnGroupNormSilu.md"));
  NTRY(nrm_null(c, self, "aclTensor", "self", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, out, "aclTensor", "out", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, meanOut, "aclTensor", "meanOut", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, rstdOut, "aclTensor", "rstdOut", SIM_NN_NULLPTR));
  const void *hs[] = {self, gamma, beta, out, meanOut, rstdOut};
  for (int s = 0; s < GS_N; s++) NTRY(nrm_get(c, hs[s], s));
  bool regbase = nrm_regbase(c);
  NTRY(check_dtypes(c, regbase));
  NTRY(check_shape(c, group));
  NTRY(check_attr(c, group, eps, regbase));
  const SimTensorDesc *x = NT(c, GS_X);
  sim_gs_geometry(&c->plan, x, group);
  c->plan.eps = (float)eps; /* static_cast<float>(eps) into l0op::GroupNormSilu */
  c->plan.regbase = regbase;
  c->plan.activate = activateSilu;
  c->plan.swish_scale = 1.0;
  /* CAST_ROUND on A2/A3 only (group_norm_silu_base.h:52-59). */
  c->plan.cast_round = !regbase && (c->product == NP_A2 || c->product == NP_A3);
  if (sim_desc_numel(x) == 0) {
    if (regbase && x->dims[0] == 0) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
    /* Off regbase: FillScalar, mean 0 and rstd NaN. 950 with N > 0 runs its empty-tensor kernel
     * (group_norm_silu_tiling_arch35.cpp:380-382 TILINGKEY_EMPTY_TENSOR(_MIX_TYPE);
     * op_kernel/arch35/group_norm_silu_regbase_empty_tensor.h:44-67 ProcessMeanAndRstd on meanGm
     * and rstdGm, group_norm_silu_regbase_base.h:1657-1666 Duplicate(NAN)): NaN in both. */
    nrm_fill(c, GS_MEAN, regbase ? NAN : 0.0);
    nrm_fill(c, GS_RSTD, NAN);
    return nrm_finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  return nrm_finish(c, c->plan.N * group, ws, exec);
}

/* N, C, HxW (x's dims 2..) and the group count of an (N, C, ...) x, into the plan. */
void sim_gs_geometry(SimPlan *p, const SimTensorDesc *x, int64_t group) {
  p->N = x->dims[0];
  p->C = x->dims[1];
  p->HxW = 1;
  for (int i = 2; i < x->ndim; i++) p->HxW *= x->dims[i];
  p->group = group;
}

/* The activation of one float gn (both kernels): t = exp(-s * gn), gn / (1 + t), in float. */
double sim_gs_swish(double gn, double s) {
  double t = f32(exp(f32(gn * -s)));
  return f32(gn / f32(1.0 + t));
}

int sim_run_gn_silu(const SimPlan *p) {
  int64_t N = p->N, C = p->C, HxW = p->HxW, G = p->group, D = C / G, len = D * HxW;
  double *x = sim_load(&p->t[GS_X]);
  double *gamma = p->present[GS_GAMMA] ? sim_load(&p->t[GS_GAMMA]) : NULL;
  double *beta = p->present[GS_BETA] ? sim_load(&p->t[GS_BETA]) : NULL;
  double *y = nrm_zalloc(N * C * HxW), *mo = nrm_zalloc(N * G), *ro = nrm_zalloc(N * G);
  int32_t ydt = p->t[GS_Y].dtype, mdt = p->t[GS_MEAN].dtype, rdt = p->t[GS_RSTD].dtype;
  double inv = f32(1.0 / (double)len);
  for (int64_t n = 0; n < N; n++) {
    for (int64_t g = 0; g < G; g++) {
      const double *xg = x + (n * C + g * D) * HxW;
      double s = 0, q = 0, m, r;
      for (int64_t i = 0; i < len; i++) s += xg[i], q += xg[i] * xg[i];
      if (!p->regbase) { /* one pass: var = E[x^2] - mean^2 in float */
        m = f32(f32(s) * inv);
        double var = f32(f32(f32(q) * inv) - f32(m * m));
        r = f32(1.0 / f32(sqrt(f32(var + p->eps))));
      } else { /* two passes */
        m = f32(s / (double)len);
        double d2 = 0;
        for (int64_t i = 0; i < len; i++) d2 += (xg[i] - m) * (xg[i] - m);
        r = f32(1.0 / f32(sqrt(f32(f32(d2 / (double)len) + p->eps))));
      }
      mo[n * G + g] = m;
      ro[n * G + g] = r;
      for (int64_t i = 0; i < len; i++) {
        int64_t ch = g * D + i / HxW;
        double ga = gamma ? gamma[ch] : 1.0, be = beta ? beta[ch] : 0.0, gn;
        if (!p->regbase) {
          double scale = f32(r * ga), bias = f32(be - f32(scale * m));
          gn = f32(f32(xg[i] * scale) + bias);
        } else {
          gn = f32(f32(f32(f32(xg[i] - m) * r) * ga) + be);
        }
        double v = p->activate ? sim_gs_swish(gn, p->swish_scale) : gn;
        y[(n * C + g * D) * HxW + i] = p->cast_round ? sim_gs_cast_round(v, ydt) : v;
      }
    }
  }
  if (p->cast_round) {
    for (int64_t k = 0; k < N * G; k++) mo[k] = sim_gs_cast_round(mo[k], mdt), ro[k] = sim_gs_cast_round(ro[k], rdt);
  }
  sim_store(&p->t[GS_Y], y);
  sim_store(&p->t[GS_MEAN], mo);
  sim_store(&p->t[GS_RSTD], ro);
  return 0;
}
