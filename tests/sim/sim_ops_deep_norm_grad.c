/*
 * Software CANN ("aclsim") -- aclnnDeepNormGrad: phase-1 validation as CANN performs it,
 * planning, and the computation run at stream synchronisation (double arithmetic after the
 * kernel's float32 alpha * x + gx, every output rounded once to its dtype).
 *
 * A generated aclnn operator (ACLNNTYPE aclnn): opbase's individual-op framework as
 * sim_ops_rms_norm.c describes it, then the tiling's checks (561002).
 *
 * Sources (hicann/ops-nn, norm/deep_norm_grad/): op_host/deep_norm_grad_def.cpp (dy = x = gx =
 * gamma = dx = dgx in FLOAT/FLOAT16/BF16, mean, rstd, dbeta, dgamma FLOAT; attr alpha 0.3 :62;
 * ascend910b/910_93/950 :63-65, ascend310p without BF16 :67-128); op_host/arch22/
 * deep_norm_grad_tiling.cpp (CheckInputOutputShapeDim: dy rank 2-8, gamma 1-7, x/gx/dx/dgx and
 * rstd/mean of dy's rank, dgamma/dbeta of gamma's, dy rank above gamma's; CheckXYShapeValue per
 * dim: dy's dim 0, x/gx against dy, dx/dgx against x/gx; CheckMeanRstdShapeValue: leading dims;
 * CheckBetaGammaShapeValue: gamma = dy's last dims, dgamma = gamma, dbeta = dy's last dims);
 * op_kernel/deep_norm_grad_merge_n.h:365-466 (A2: float after casts, x' = gx + alpha * x (Axpy),
 * xm = x' - mean, g = dy * gamma, dgx = (xm * s1 + s2) + g * rstd with s1 = sum(xm * rstd^3 * g)
 * * (-1/D), s2 = sum(g * rstd) * (-1/D); dx = dgx * alpha from the float dgx; dgamma +=
 * xm * rstd * dy, dbeta += dy, atomics); docs/aclnnDeepNormGrad.md (products). The simulator
 * uses the arch22 tiling on every SoC ([aclsim]) and asks one mean and rstd per row ([aclsim]:
 * the kernel reads that many; the tiling checks only their leading dims).
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <stdlib.h>

enum { DG_DY, DG_X, DG_GX, DG_G, DG_MEAN, DG_RSTD, DG_DX, DG_DGX, DG_DB, DG_DG, DG_N };
enum { F32 = SIM_DT_FLOAT, F16 = SIM_DT_FLOAT16, B16 = SIM_DT_BF16 };

static const unsigned DG_PRODUCTS = NP_950 | NP_A3 | NP_A2 | NP_310P;

static const int32_t DG_ROWS[3][DG_N] = {{F32, F32, F32, F32, F32, F32, F32, F32, F32, F32},
                                         {F16, F16, F16, F16, F32, F32, F16, F16, F32, F32},
                                         {B16, B16, B16, B16, F32, F32, B16, B16, F32, F32}};

static int fail(NormCtx *c, const char *what) { return nrm_gen_tiling_fail(c, "DeepNormGrad: %s", what); }

static int tiling(NormCtx *c, int64_t rows) {
  const SimTensorDesc *dy = NT(c, DG_DY), *g = NT(c, DG_G);
  if (dy->ndim < 2 || dy->ndim > 8) return fail(c, "dy dim num should be in range [2, 8]");
  if (g->ndim < 1 || g->ndim > 7) return fail(c, "gamma dim num should be in range [1, 7]");
  for (int s = DG_X; s <= DG_GX; s++)
    if (NT(c, s)->ndim != dy->ndim) return fail(c, "Input gx/x/dx/dgx shape invaild, dim num is not equal dy dim.");
  for (int s = DG_DX; s <= DG_DGX; s++)
    if (NT(c, s)->ndim != dy->ndim) return fail(c, "Input gx/x/dx/dgx shape invaild, dim num is not equal dy dim.");
  if (NT(c, DG_RSTD)->ndim != dy->ndim || NT(c, DG_MEAN)->ndim != dy->ndim)
    return fail(c, "Input mean/rstd shape invaild, dim num is not equal dy dim num.");
  if (NT(c, DG_DG)->ndim != g->ndim || NT(c, DG_DB)->ndim != g->ndim)
    return fail(c, "Output dgamma/dbeta shape invaild, dim num is not equal input gamma dim num.");
  if (dy->ndim <= g->ndim) return fail(c, "dy dim num should not be smaller than gamma dim num.");
  for (int i = 0; i < dy->ndim; i++) {
    if (dy->dims[i] == 0) return fail(c, "Input dy shape can not be 0.");
    if (NT(c, DG_X)->dims[i] != dy->dims[i] || NT(c, DG_GX)->dims[i] != dy->dims[i])
      return fail(c, "Input x/gx shape invaild, shape is not equal dy shape.");
    if (NT(c, DG_DX)->dims[i] != NT(c, DG_X)->dims[i] || NT(c, DG_DGX)->dims[i] != NT(c, DG_GX)->dims[i])
      return fail(c, "Output dx/dgx shape invaild, shape is not equal x/gx shape.");
  }
  int axis = dy->ndim - g->ndim;
  for (int i = 0; i < axis; i++)
    if (NT(c, DG_RSTD)->dims[i] != dy->dims[i] || NT(c, DG_MEAN)->dims[i] != dy->dims[i])
      return fail(c, "Input rstd/mean shape invaild, shape is not equal dy first few dim.");
  for (int i = 0; i < g->ndim; i++) {
    if (g->dims[i] != dy->dims[axis + i]) return fail(c, "Input gamma shape invaild, gamma shape is not equal dy last few dim.");
    if (NT(c, DG_DG)->dims[i] != g->dims[i]) return fail(c, "Output dgamma shape invaild, shape is not equal gamma shape.");
    if (NT(c, DG_DB)->dims[i] != dy->dims[axis + i])
      return fail(c, "Output dbeta shape invaild, dbeta shape is not equal dy last few dim.");
  }
  if (sim_desc_numel(NT(c, DG_MEAN)) != rows || sim_desc_numel(NT(c, DG_RSTD)) != rows)
    return fail(c, "[aclsim] mean and rstd must hold one value per row");
  return 0;
}

int sim_deep_norm_grad_ws(const void *dy, const void *x, const void *gx, const void *gamma, const void *mean,
                          const void *rstd, double alpha, const void *dxOut, const void *dgxOut, const void *dbetaOut,
                          const void *dgammaOut, uint64_t *ws, void **exec) {
  static const char *const names[] = {"dy", "x", "gx", "gamma", "mean", "rstd", "dxOut", "dgxOut", "dbetaOut",
                                      "dgammaOut"};
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_DEEP_NORM_GRAD, "aclnnDeepNormGrad", 6, 4, names);
  NTRY(nrm_opp_path(c));
  const void *hs[] = {dy, x, gx, gamma, mean, rstd, dxOut, dgxOut, dbetaOut, dgammaOut};
  for (int s = 0; s < DG_N; s++) NTRY(nrm_gen_null(c, hs[s], names[s]));
  NTRY(nrm_gen_null(c, exec, "executor"));
  NTRY(nrm_gen_null(c, ws, "workspaceLen"));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, DG_PRODUCTS, "ops-nn norm/deep_norm_grad/docs/aclnnDeepNormGrad.md"));
  for (int s = 0; s < DG_N; s++) NTRY(nrm_get(c, hs[s], s));
  NTRY(nrm_gen_rows(c, &DG_ROWS[0][0], c->product == NP_310P ? 2 : 3, DG_N));
  if (nrm_all_empty(c, DG_DX, DG_DG)) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  int64_t rows, cols;
  int axis = NT(c, DG_DY)->ndim - NT(c, DG_G)->ndim;
  nrm_rows_cols(NT(c, DG_DY), axis < 0 ? 0 : axis, &rows, &cols);
  NTRY(tiling(c, rows));
  c->plan.alpha = (float)alpha; /* a float attribute of the def */
  c->plan.norm_axis = axis;
  return nrm_finish(c, rows, ws, exec);
}

/* s = float(float(alpha * x) + gx), then dgx = LayerNorm's input gradient at s in double, dx =
 * alpha * dgx; dgamma and dbeta as AddLayerNormGrad's; every output rounded once by sim_store. */
int sim_run_deep_norm_grad(const SimPlan *p) {
  int64_t rows, cols;
  nrm_rows_cols(&p->t[DG_DY], p->norm_axis, &rows, &cols);
  double *dy = sim_load(&p->t[DG_DY]), *x = sim_load(&p->t[DG_X]), *gx = sim_load(&p->t[DG_GX]);
  double *g = sim_load(&p->t[DG_G]), *mean = sim_load(&p->t[DG_MEAN]), *rstd = sim_load(&p->t[DG_RSTD]);
  double *s = nrm_zalloc(rows * cols), *dgx = nrm_zalloc(rows * cols), *dx = nrm_zalloc(rows * cols);
  double *dg = nrm_zalloc(cols), *db = nrm_zalloc(cols);
  for (int64_t i = 0; i < rows * cols; i++)
    s[i] = nrm_round(nrm_round(p->alpha * x[i], SIM_DT_FLOAT) + gx[i], SIM_DT_FLOAT);
  nrm_ln_grad_rows(dy, s, mean, rstd, g, rows, cols, dgx, dg, db);
  for (int64_t i = 0; i < rows * cols; i++) dx[i] = p->alpha * dgx[i];
  sim_store(&p->t[DG_DX], dx);
  sim_store(&p->t[DG_DGX], dgx);
  sim_store(&p->t[DG_DB], db);
  sim_store(&p->t[DG_DG], dg);
  return 0;
}
