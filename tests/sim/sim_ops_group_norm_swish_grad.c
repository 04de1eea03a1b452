/*
 * Software CANN ("aclsim") -- aclnnGroupNormSwishGrad: phase-1 validation as CANN performs it,
 * planning, and the computation run at stream synchronisation.
 *
 * A generated aclnn operator (ACLNNTYPE aclnn, no op_api/): phase 1 is opbase's individual-op
 * framework as sim_ops_rms_norm.c describes it (NULL tensors in prototype order, then executor and
 * workspaceSize: 161001; a dtype tuple that is no row of the SoC's OpDef: 161002; every output
 * empty: no launch; then the tiling's checks: 561002).
 *
 * Sources (hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921, norm/group_norm_swish_grad/;
 * docs/norm_family_kernels.md section 11 of this repository):
 *   docs/aclnnGroupNormSwishGrad.md: products Ascend 950, Atlas A3, Atlas A2.
 *   op_host/group_norm_swish_grad_def.cpp: dy, mean, rstd, x, gamma, beta, dx, dgamma, dbeta all
 *     one dtype (F32/F16/BF16); attrs num_groups (required), data_format "NCHW", swish_scale 1.0,
 *     dgamma_is_require true, dbeta_is_require true (:75-79); ascend910b, ascend910_93,
 *     ascend950 (:85-93).
 *   op_host/group_norm_swish_grad_tiling.cpp:114-170: all inputs one dtype; dy of x's shape.
 *   op_kernel/group_norm_swish_grad.h:186-346, FLOAT, per (n, group), m = (C/G)·HW, the given
 *     mean/rstd: xhat = x·rstd + (−mean·rstd) (Adds_Muls_template, :996-1001); t = xhat·gamma[c]
 *     + beta[c]; e = exp(−s·t); d = 1 + e; q = t/d; u = (t − q)·s + 1; dYNew = (u/d)·dy; per
 *     channel dbeta_part = Σ_hw dYNew, dgamma_part = Σ_hw xhat·dYNew; c1 = Σ_c gamma·dbeta_part / m,
 *     c2 = Σ_c gamma·dgamma_part / m (:1022-1031); dx = dYNew·(rstd·gamma) − (xhat·(rstd·c2) +
 *     rstd·c1) (:297-300); dgamma = Σ_n dgamma_part, dbeta = Σ_n dbeta_part through the workspace
 *     (:100-160), cast to the dtype.
 * [aclsim]: the kernel's float reductions are modelled as exact sums rounded to float; x's rank
 * (2-8), mean/rstd's element count (N * num_groups), gamma/beta 1-D of C, num_groups > 0 dividing
 * C, dx's shape and dgamma/dbeta's element count (C) are checked as the tiling's failures (the
 * extents the kernel reads and writes; C/G <= 4000 of the documentation is not, unverified in the
 * tiling); a dataFormat other than "NCHW" is refused (the only one documented); dgamma/dbeta are
 * not written when their *_is_require attribute is false; an empty x writes zero dgamma/dbeta.
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SG_DY, SG_MEAN, SG_RSTD, SG_X, SG_GAMMA, SG_BETA, SG_DX, SG_DGAMMA, SG_DBETA, SG_N };
enum { F32 = SIM_DT_FLOAT, F16 = SIM_DT_FLOAT16, B16 = SIM_DT_BF16 };

/* docs "产品支持情况": 950, A3, A2 (the def registers no ascend310p). */
static const unsigned SG_PRODUCTS = NP_950 | NP_A3 | NP_A2;

/* The def's rows: all nine slots one dtype. */
static const int32_t SG_ROWS[3][SG_N] = {{F32, F32, F32, F32, F32, F32, F32, F32, F32},
                                         {F16, F16, F16, F16, F16, F16, F16, F16, F16},
                                         {B16, B16, B16, B16, B16, B16, B16, B16, B16}};

static double f32(double v) { return nrm_round(v, SIM_DT_FLOAT); }

static int tiling(NormCtx *c, int64_t numGroups, const char *dataFormat) {
  const SimTensorDesc *x = NT(c, SG_X);
  if (x->ndim < 2) return nrm_gen_tiling_fail(c, "GroupNormSwishGrad: x dim must be at least 2");
  if (x->ndim > 8) return nrm_gen_tiling_fail(c, "GroupNormSwishGrad: x dim must be at most 8");
  if (!nrm_same_shape(NT(c, SG_DY), x)) return nrm_gen_tiling_fail(c, "GroupNormSwishGrad: dy must have x's shape");
  int64_t N = x->dims[0], C = x->dims[1];
  for (int s = SG_MEAN; s <= SG_RSTD; s++)
    if (numGroups > 0 && sim_desc_numel(NT(c, s)) != N * numGroups)
      return nrm_gen_tiling_fail(c, "GroupNormSwishGrad: %s must hold N * num_groups elements", NNAME(c, s));
  for (int s = SG_GAMMA; s <= SG_BETA; s++) {
    const SimTensorDesc *t = NT(c, s);
    if (t->ndim != 1 || t->dims[0] != C)
      return nrm_gen_tiling_fail(c, "GroupNormSwishGrad: %s must be 1-D of C = %" PRId64 " elements", NNAME(c, s),
                                 C);
  }
  if (numGroups <= 0) return nrm_gen_tiling_fail(c, "GroupNormSwishGrad: num_groups must be greater than 0");
  if (C % numGroups != 0) return nrm_gen_tiling_fail(c, "GroupNormSwishGrad: C must be divisible by num_groups");
  if (dataFormat && strcmp(dataFormat, "NCHW") != 0)
    return nrm_gen_tiling_fail(c, "GroupNormSwishGrad: data_format %s is not supported (NCHW)", dataFormat);
  if (!nrm_same_shape(NT(c, SG_DX), x)) return nrm_gen_tiling_fail(c, "GroupNormSwishGrad: dx must have x's shape");
  for (int s = SG_DGAMMA; s <= SG_DBETA; s++)
    if (sim_desc_numel(NT(c, s)) != C)
      return nrm_gen_tiling_fail(c, "GroupNormSwishGrad: %s must hold C elements", NNAME(c, s));
  return 0;
}

int sim_gn_swish_grad_ws(const void *dy, const void *mean, const void *rstd, const void *x, const void *gamma,
                         const void *beta, int64_t numGroups, const char *dataFormat, double swishScale,
                         bool dgammaIsRequire, bool dbetaIsRequire, const void *dxOut, const void *dgammaOut,
                         const void *dbetaOut, uint64_t *ws, void **exec) {
  static const char *const names[] = {"dy", "mean", "rstd", "x", "gamma", "beta", "dxOut", "dgammaOut", "dbetaOut"};
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_GN_SWISH_GRAD, "aclnnGroupNormSwishGrad", 6, 3, names);
  NTRY(nrm_opp_path(c));
  const void *hs[] = {dy, mean, rstd, x, gamma, beta, dxOut, dgammaOut, dbetaOut};
  for (int s = 0; s < SG_N; s++) NTRY(nrm_gen_null(c, hs[s], names[s]));
  NTRY(nrm_gen_null(c, exec, "executor"));
  NTRY(nrm_gen_null(c, ws, "workspaceLen"));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, SG_PRODUCTS, "ops-nn norm/group_norm_swish_grad/docs/aclnnGroupNormSwishGrad.md"));
  for (int s = 0; s < SG_N; s++) NTRY(nrm_get(c, hs[s], s));
  NTRY(nrm_gen_rows(c, &SG_ROWS[0][0], 3, SG_N));
  if (nrm_all_empty(c, SG_DX, SG_DBETA)) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  NTRY(tiling(c, numGroups, dataFormat));
  const SimTensorDesc *xd = NT(c, SG_X);
  sim_gs_geometry(&c->plan, xd, numGroups);
  c->plan.swish_scale = (float)swishScale; /* a float attribute of the def */
  c->plan.dgamma_required = dgammaIsRequire;
  c->plan.dbeta_required = dbetaIsRequire;
  if (sim_desc_numel(xd) == 0) {
    if (dgammaIsRequire) nrm_fill(c, SG_DGAMMA, 0.0);
    if (dbetaIsRequire) nrm_fill(c, SG_DBETA, 0.0);
    return nrm_finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  return nrm_finish(c, c->plan.N * numGroups, ws, exec);
}

int sim_run_gn_swish_grad(const SimPlan *p) {
  int64_t N = p->N, C = p->C, HxW = p->HxW, G = p->group, D = C / G, m = D * HxW;
  double s = p->swish_scale;
  double *dy = sim_load(&p->t[SG_DY]), *x = sim_load(&p->t[SG_X]);
  double *mean = sim_load(&p->t[SG_MEAN]), *rstd = sim_load(&p->t[SG_RSTD]);
  double *gamma = sim_load(&p->t[SG_GAMMA]), *beta = sim_load(&p->t[SG_BETA]);
  double *dx = nrm_zalloc(N * C * HxW), *dg = nrm_zalloc(C), *db = nrm_zalloc(C);
  double *dyn = nrm_zalloc(m), *xh = nrm_zalloc(m), *dbp = nrm_zalloc(D), *dgp = nrm_zalloc(D);
  for (int64_t n = 0; n < N; n++) {
    for (int64_t g = 0; g < G; g++) {
      int64_t ng = n * G + g, base = (n * C + g * D) * HxW;
      double r = rstd[ng], nmr = f32(-mean[ng] * r);
      for (int64_t d = 0; d < D; d++) dbp[d] = dgp[d] = 0;
      for (int64_t i = 0; i < m; i++) {
        int64_t d = i / HxW, ch = g * D + d;
        xh[i] = f32(f32(x[base + i] * r) + nmr);
        double t = f32(f32(xh[i] * gamma[ch]) + beta[ch]);
        double den = f32(1.0 + f32(exp(f32(t * -s))));
        double q = f32(t / den), u = f32(f32(f32(t - q) * s) + 1.0);
        dyn[i] = f32(f32(u / den) * dy[base + i]);
        dbp[d] += dyn[i];
        dgp[d] += f32(xh[i] * dyn[i]);
      }
      double c1 = 0, c2 = 0;
      for (int64_t d = 0; d < D; d++) {
        int64_t ch = g * D + d;
        dbp[d] = f32(dbp[d]), dgp[d] = f32(dgp[d]);
        db[ch] += dbp[d], dg[ch] += dgp[d];
        c1 += f32(gamma[ch] * dbp[d]), c2 += f32(gamma[ch] * dgp[d]);
      }
      double k7 = f32(r * f32(f32(c2) / (double)m)), k8 = f32(r * f32(f32(c1) / (double)m));
      for (int64_t i = 0; i < m; i++) {
        double k6 = f32(r * gamma[g * D + i / HxW]);
        dx[base + i] = f32(f32(dyn[i] * k6) - f32(f32(xh[i] * k7) + k8)); /* one cast to the dtype */
      }
    }
  }
  sim_store(&p->t[SG_DX], dx);
  if (p->dgamma_required) sim_store(&p->t[SG_DGAMMA], dg);
  if (p->dbeta_required) sim_store(&p->t[SG_DBETA], db);
  return 0;
}
