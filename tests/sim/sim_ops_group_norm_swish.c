/*
 * Software CANN ("aclsim") -- aclnnGroupNormSwish: phase-1 validation as CANN performs it,
 * planning, and the computation run at stream synchronisation.
 *
 * A generated aclnn operator (ACLNNTYPE aclnn, no op_api/): phase 1 is opbase's individual-op
 * framework as sim_ops_rms_norm.c describes it (NULL tensors in prototype order, then executor and
 * workspaceSize: 161001; a dtype tuple that is no row of the SoC's OpDef: 161002; every output
 * empty: no launch; then the tiling's checks: 561002).
 *
 * Sources (hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921, norm/group_norm_swish/;
 * docs/norm_family_kernels.md section 10 of this repository):
 *   op_host/group_norm_swish_def.cpp: rows (x, gamma = beta, y, mean = rstd) (F16,F16,F16,F16),
 *     (F32,F32,F32,F32), (BF16,BF16,BF16,BF16), (F16,F32,F16,F32), (BF16,F32,BF16,F32) for
 *     ascend910b, ascend910_93 and ascend950 (:69-104); attrs num_groups (required),
 *     data_format "NCHW", eps 1e-5, activate_swish true, swish_scale 1.0 (:55-59), eps and
 *     swish_scale float attributes.
 *   op_host/group_norm_swish_tiling.cpp:90-150: x >= 2 dims; gamma, beta 1-D of C; num_groups
 *     > 0; C % num_groups == 0 -> 561002.
 *   op_kernel/group_norm_swish_norm_b16.h, group_norm_swish_base.h (A2; arch35/ holds copies for
 *     the 950): per chunk two-pass statistics merged with Chan's update and a Kahan-compensated
 *     mean (_base.h:421-460), mean = Σ/n, rstd = 1/sqrt(var + eps) (_norm_b16.h:108-112);
 *     gn = x·(rstd·gamma) + (−(rstd·gamma)·mean + beta) (:222-236); swish t = exp(gn·(−s)),
 *     y = gn / (1 + t) (_base.h:270-282); 16-bit y cast with CAST_RINT (nearest even,
 *     _base.h:70-77); mean/rstd in gamma's dtype.
 * [aclsim]: the compensated chunked statistics are modelled as exact sums rounded to float; y's
 * shape and mean/rstd's element count are checked (the kernel writes those extents); a
 * dataFormat other than "NCHW" is refused (the only one documented) as a tiling failure; an
 * empty x with a non-empty mean fills mean 0 and rstd NaN (no source read for it).
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SW_X, SW_GAMMA, SW_BETA, SW_Y, SW_MEAN, SW_RSTD, SW_N };
enum { F32 = SIM_DT_FLOAT, F16 = SIM_DT_FLOAT16, B16 = SIM_DT_BF16 };

/* docs "产品支持情况": 950, A3, A2 (the def registers no ascend310p). */
static const unsigned SW_PRODUCTS = NP_950 | NP_A3 | NP_A2;

/* The def's rows, one column per slot (x, gamma, beta, y, mean, rstd). */
static const int32_t SW_ROWS[5][SW_N] = {{F16, F16, F16, F16, F16, F16}, {F32, F32, F32, F32, F32, F32},
                                         {B16, B16, B16, B16, B16, B16}, {F16, F32, F32, F16, F32, F32},
                                         {B16, F32, F32, B16, F32, F32}};

static double f32(double v) { return nrm_round(v, SIM_DT_FLOAT); }

static int tiling(NormCtx *c, int64_t numGroups, const char *dataFormat) {
  const SimTensorDesc *x = NT(c, SW_X);
  if (x->ndim < 2) return nrm_gen_tiling_fail(c, "GroupNormSwish: x dim must be at least 2");
  if (x->ndim > 8) return nrm_gen_tiling_fail(c, "GroupNormSwish: x dim must be at most 8");
  int64_t C = x->dims[1];
  for (int s = SW_GAMMA; s <= SW_BETA; s++) {
    const SimTensorDesc *t = NT(c, s);
    if (t->ndim != 1 || t->dims[0] != C)
      return nrm_gen_tiling_fail(c, "GroupNormSwish: %s must be 1-D of C = %" PRId64 " elements", NNAME(c, s), C);
  }
  if (numGroups <= 0) return nrm_gen_tiling_fail(c, "GroupNormSwish: num_groups must be greater than 0");
  if (C % numGroups != 0) return nrm_gen_tiling_fail(c, "GroupNormSwish: C must be divisible by num_groups");
  if (dataFormat && strcmp(dataFormat, "NCHW") != 0)
    return nrm_gen_tiling_fail(c, "GroupNormSwish: data_format %s is not supported (NCHW)", dataFormat);
  if (!nrm_same_shape(NT(c, SW_Y), x)) return nrm_gen_tiling_fail(c, "GroupNormSwish: y must have x's shape");
  for (int s = SW_MEAN; s <= SW_RSTD; s++)
    if (sim_desc_numel(NT(c, s)) != x->dims[0] * numGroups)
      return nrm_gen_tiling_fail(c, "GroupNormSwish: %s must hold N * num_groups elements", NNAME(c, s));
  return 0;
}

int sim_gn_swish_ws(const void *x, const void *gamma, const void *beta, int64_t numGroups, const char *dataFormat,
                    double eps, bool activateSwish, double swishScale, const void *yOut, const void *meanOut,
                    const void *rstdOut, uint64_t *ws, void **exec) {
  static const char *const names[] = {"x", "gamma", "beta", "yOut", "meanOut", "rstdOut"};
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_GN_SWISH, "aclnnGroupNormSwish", 3, 3, names);
  NTRY(nrm_opp_path(c));
  const void *hs[] = {x, gamma, beta, yOut, meanOut, rstdOut};
  for (int s = 0; s < SW_N; s++) NTRY(nrm_gen_null(c, hs[s], names[s]));
  NTRY(nrm_gen_null(c, exec, "executor"));
  NTRY(nrm_gen_null(c, ws, "workspaceLen"));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, SW_PRODUCTS, "ops-nn norm/group_norm_swish/docs/aclnnGroupNormSwish.md"));
  for (int s = 0; s < SW_N; s++) NTRY(nrm_get(c, hs[s], s));
  NTRY(nrm_gen_rows(c, &SW_ROWS[0][0], 5, SW_N));
  if (nrm_all_empty(c, SW_Y, SW_RSTD)) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  NTRY(tiling(c, numGroups, dataFormat));
  const SimTensorDesc *xd = NT(c, SW_X);
  sim_gs_geometry(&c->plan, xd, numGroups);
  c->plan.eps = (float)eps; /* float attributes of the def */
  c->plan.swish_scale = (float)swishScale;
  c->plan.activate = activateSwish;
  if (sim_desc_numel(xd) == 0) {
    nrm_fill(c, SW_MEAN, 0.0);
    nrm_fill(c, SW_RSTD, NAN);
    return nrm_finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  return nrm_finish(c, c->plan.N * numGroups, ws, exec);
}

int sim_run_gn_swish(const SimPlan *p) {
  int64_t N = p->N, C = p->C, HxW = p->HxW, G = p->group, D = C / G, len = D * HxW;
  double *x = sim_load(&p->t[SW_X]), *gamma = sim_load(&p->t[SW_GAMMA]), *beta = sim_load(&p->t[SW_BETA]);
  double *y = nrm_zalloc(N * C * HxW), *mo = nrm_zalloc(N * G), *ro = nrm_zalloc(N * G);
  for (int64_t n = 0; n < N; n++) {
    for (int64_t g = 0; g < G; g++) {
      const double *xg = x + (n * C + g * D) * HxW;
      double s = 0, d2 = 0;
      for (int64_t i = 0; i < len; i++) s += xg[i];
      double m = f32(s / (double)len);
      for (int64_t i = 0; i < len; i++) d2 += (xg[i] - m) * (xg[i] - m);
      double r = f32(1.0 / f32(sqrt(f32(f32(d2 / (double)len) + p->eps))));
      mo[n * G + g] = m;
      ro[n * G + g] = r;
      for (int64_t i = 0; i < len; i++) {
        int64_t ch = g * D + i / HxW;
        double scale = f32(r * gamma[ch]), bias = f32(f32(-scale * m) + beta[ch]);
        double gn = f32(f32(xg[i] * scale) + bias);
        y[(n * C + g * D) * HxW + i] = p->activate ? sim_gs_swish(gn, p->swish_scale) : gn;
      }
    }
  }
  sim_store(&p->t[SW_Y], y); /* CAST_RINT: nearest even, as sim_store rounds */
  sim_store(&p->t[SW_MEAN], mo);
  sim_store(&p->t[SW_RSTD], ro);
  return 0;
}
