/*
 * Software CANN ("aclsim") -- aclnnDeepNorm: phase-1 validation as CANN performs it, planning,
 * and the computation run at stream synchronisation (double arithmetic after the kernel's float32
 * alpha * x + gx, every output rounded once to its dtype).
 *
 * A generated aclnn operator (ACLNNTYPE aclnn): opbase's individual-op framework as
 * sim_ops_rms_norm.c describes it, then the tiling's checks (561002).
 *
 * Sources (hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921, norm/deep_norm/):
 * op_host/deep_norm_def.cpp (x = gx = beta = gamma = y in FLOAT16/FLOAT/BF16, mean/rstd FLOAT;
 * attrs alpha 0.3, epsilon 1e-6 :45-46; ascend910b/910_93/950 :47-97, ascend310p without BF16
 * :99-); op_host/deep_norm_shape_check.h:40-180 (ranks, non-zero dims, shapes; called by
 * arch35/deep_norm_tiling_arch35.cpp:256-270; the A2 tiling arch22/deep_norm_tiling.cpp:54-130
 * has its own rank checks and no non-zero check: [aclsim] the simulator applies the shape check
 * on every SoC); op_kernel/deep_norm.cpp (A2: x' = gx + alpha * x in float via Axpy :472-478,
 * mean :485-489, rstd :511-512, y :518-525); op_kernel/arch35/deep_norm.h:199-291 (950: alpha * x
 * then + gx); docs/aclnnDeepNorm.md (products).
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { DN_X, DN_GX, DN_BETA, DN_GAMMA, DN_MEAN, DN_RSTD, DN_Y, DN_N };
enum { F32 = SIM_DT_FLOAT, F16 = SIM_DT_FLOAT16, B16 = SIM_DT_BF16 };

static const unsigned DN_PRODUCTS = NP_950 | NP_A3 | NP_A2 | NP_310P;

static const int32_t DN_ROWS[3][DN_N] = {{F16, F16, F16, F16, F32, F32, F16},
                                         {F32, F32, F32, F32, F32, F32, F32},
                                         {B16, B16, B16, B16, F32, F32, B16}};

static int fail(NormCtx *c, const char *what) { return nrm_gen_tiling_fail(c, "DeepNorm: %s", what); }

/* deep_norm_shape_check.h: ranks (:40-95), dims and shapes (:97-142). */
static int shape_check(NormCtx *c) {
  const SimTensorDesc *x = NT(c, DN_X), *g = NT(c, DN_GAMMA);
  if (x->ndim < 2 || x->ndim > 8) return fail(c, "x dim must be in [2, 8]");
  if (g->ndim < 1 || g->ndim > 7) return fail(c, "gamma dim must be in [1, 7]");
  const int same_rank[] = {DN_GX, DN_Y, DN_MEAN, DN_RSTD};
  for (size_t i = 0; i < sizeof same_rank / sizeof same_rank[0]; i++)
    if (NT(c, same_rank[i])->ndim != x->ndim) return fail(c, "gx, y, mean and rstd must have x's rank");
  if (x->ndim <= g->ndim) return fail(c, "x rank must be above gamma's");
  for (int i = 0; i < x->ndim; i++)
    if (x->dims[i] == 0) return fail(c, "x must have no dim of 0");
  if (!nrm_same_shape(x, NT(c, DN_GX)) || !nrm_same_shape(x, NT(c, DN_Y)))
    return fail(c, "gx and y must have x's shape");
  int axis = x->ndim - g->ndim;
  for (int s = DN_MEAN; s <= DN_RSTD; s++)
    for (int i = 0; i < axis; i++)
      if (NT(c, s)->dims[i] != x->dims[i]) return fail(c, "mean and rstd must have x's leading dims");
  if (!nrm_same_shape(g, NT(c, DN_BETA))) return fail(c, "gamma and beta must have one shape");
  for (int i = 0; i < g->ndim; i++)
    if (g->dims[i] != x->dims[axis + i]) return fail(c, "gamma must be x's last dims");
  return 0;
}

int sim_deep_norm_ws(const void *x, const void *gx, const void *beta, const void *gamma, double alpha,
                     double epsilon, const void *meanOut, const void *rstdOut, const void *yOut, uint64_t *ws,
                     void **exec) {
  static const char *const names[] = {"x", "gx", "beta", "gamma", "meanOut", "rstdOut", "yOut"};
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_DEEP_NORM, "aclnnDeepNorm", 4, 3, names);
  NTRY(nrm_opp_path(c));
  const void *hs[] = {x, gx, beta, gamma, meanOut, rstdOut, yOut};
  for (int s = 0; s < DN_N; s++) NTRY(nrm_gen_null(c, hs[s], names[s]));
  NTRY(nrm_gen_null(c, exec, "executor"));
  NTRY(nrm_gen_null(c, ws, "workspaceLen"));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, DN_PRODUCTS, "ops-nn norm/deep_norm/docs/aclnnDeepNorm.md"));
  for (int s = 0; s < DN_N; s++) NTRY(nrm_get(c, hs[s], s));
  NTRY(nrm_gen_rows(c, &DN_ROWS[0][0], c->product == NP_310P ? 2 : 3, DN_N));
  if (nrm_all_empty(c, DN_MEAN, DN_Y)) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  NTRY(shape_check(c));
  c->plan.alpha = (float)alpha; /* float attributes of the def */
  c->plan.eps = (float)epsilon;
  c->plan.norm_axis = NT(c, DN_X)->ndim - NT(c, DN_GAMMA)->ndim;
  int64_t rows, cols;
  nrm_rows_cols(NT(c, DN_X), c->plan.norm_axis, &rows, &cols);
  /* [aclsim] the kernel writes one mean and rstd per row. */
  NTRY(nrm_numel_is(c, DN_MEAN, rows, "writes"));
  NTRY(nrm_numel_is(c, DN_RSTD, rows, "writes"));
  return nrm_finish(c, rows, ws, exec);
}

/* s = float(float(alpha * x) + gx) (950's Muls then Add; A2's Axpy, taken as unfused), then the
 * LayerNorm of s in double, each output rounded once by sim_store. */
int sim_run_deep_norm(const SimPlan *p) {
  int64_t rows, cols;
  nrm_rows_cols(&p->t[DN_X], p->norm_axis, &rows, &cols);
  double *x = sim_load(&p->t[DN_X]), *gx = sim_load(&p->t[DN_GX]);
  double *b = sim_load(&p->t[DN_BETA]), *g = sim_load(&p->t[DN_GAMMA]);
  double *s = nrm_zalloc(cols), *y = nrm_zalloc(rows * cols), *mean = nrm_zalloc(rows), *rstd = nrm_zalloc(rows);
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t i = 0; i < cols; i++) {
      int64_t j = r * cols + i;
      s[i] = nrm_round(nrm_round(p->alpha * x[j], SIM_DT_FLOAT) + gx[j], SIM_DT_FLOAT);
    }
    nrm_ln_row(s, cols, p->eps, g, b, y + r * cols, &mean[r], &rstd[r]);
  }
  sim_store(&p->t[DN_MEAN], mean);
  sim_store(&p->t[DN_RSTD], rstd);
  sim_store(&p->t[DN_Y], y);
  return 0;
}
