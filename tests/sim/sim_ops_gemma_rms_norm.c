/*
 * Software CANN ("aclsim") -- aclnnGemmaRmsNorm(x, gamma, epsilon, yOut, rstdOut): phase-1
 * validation as CANN performs it, planning, and the computation run at stream synchronisation
 * (double arithmetic, every output rounded once to its dtype).
 *
 * A generated aclnn operator (ACLNNTYPE aclnn in ops-nn norm/gemma_rms_norm/op_host/CMakeLists.txt):
 * phase 1 is opbase's individual-op framework as for aclnnRmsNorm (sim_ops_rms_norm.c's header
 * cites each step): NULL tensors, executor, workspaceLen (161001); the (dtype, format) rows of the
 * SoC's OpDef configuration (161002); every output empty -> SUCCESS, nothing written; then the
 * tiling function (561002).
 *
 * Sources (hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921):
 *   norm/gemma_rms_norm/op_host/gemma_rms_norm_def.cpp ("def.cpp:<line>"),
 *   norm/gemma_rms_norm/docs/aclnnGemmaRmsNorm.md,
 *   norm/gemma_rms_norm/op_kernel/gemma_rms_norm.cpp (RmsNorm's kernels with is_gemma),
 *   norm/rms_norm/op_host/rms_norm_tiling.cpp (Tiling4GemmaRmsNorm :649-707),
 *   norm/rms_norm/op_kernel/rms_norm.h (ComputeMulGammaCast :144-180, Compute :182-220).
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Products (docs "产品支持情况"): 950, A3, A2; not the Atlas inference series (310P), not Atlas
 * training (910), not the Atlas 200I/500 A2 (310B). The definition registers no ascend310p,
 * ascend910 or ascend310b configuration either (def.cpp:46-51, :80). */
static const unsigned GEMMA_PRODUCTS = NP_950 | NP_A3 | NP_A2;

enum { F32 = SIM_DT_FLOAT, F16 = SIM_DT_FLOAT16, B16 = SIM_DT_BF16 };
enum { GR_X, GR_G, GR_Y, GR_RSTD };

/* (x, gamma, y, rstd) rows: the default configuration of ascend910b / ascend910_93 (def.cpp:
 * 22-43, 46-47) and config_regbase of ascend950 (:53-80), which adds a FLOAT gamma with 16-bit x. */
static const int32_t GR_ROWS_A2[3][6] = {{B16, B16, B16, F32}, {F16, F16, F16, F32}, {F32, F32, F32, F32}};
static const int32_t GR_ROWS_950[5][6] = {
    {F16, F32, F16, F32}, {B16, F32, B16, F32}, {F16, F16, F16, F32}, {F32, F32, F32, F32}, {B16, B16, B16, F32}};

int sim_gemma_rms_norm_ws(const void *x, const void *gamma, double epsilon, const void *yOut, const void *rstdOut,
                          uint64_t *ws, void **exec) {
  static const char *const names[] = {"x", "gamma", "yOut", "rstdOut"};
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_GEMMA_RMS_NORM, "aclnnGemmaRmsNorm", 2, 2, names);
  NTRY(nrm_opp_path(c));
  const void *hs[] = {x, gamma, yOut, rstdOut};
  for (int s = GR_X; s <= GR_RSTD; s++) NTRY(nrm_gen_null(c, hs[s], names[s]));
  NTRY(nrm_gen_null(c, exec, "executor"));
  NTRY(nrm_gen_null(c, ws, "workspaceLen"));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, GEMMA_PRODUCTS, "ops-nn norm/gemma_rms_norm/docs/aclnnGemmaRmsNorm.md"));
  for (int s = GR_X; s <= GR_RSTD; s++) NTRY(nrm_get(c, hs[s], s));
  if (c->product == NP_950) NTRY(nrm_gen_combo(c, GR_ROWS_950, 5, 4));
  else NTRY(nrm_gen_combo(c, GR_ROWS_A2, 3, 4));
  if (nrm_all_empty(c, GR_Y, GR_RSTD)) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  /* The generated phase 1 passes epsilon as a float attribute (kNnopbaseFloat). */
  float eps = (float)epsilon;
  /* Tiling4GemmaRmsNorm: CheckInputShape4RmsNorm ("Input shape invalid."), then setEpsTiling
   * (rms_norm_tiling.cpp:565-576: OP_LOGE_FOR_INVALID_VALUE, then "Get attr epsilon error."). */
  NTRY(nrm_rms_norm_shapes(c, "GemmaRmsNorm"));
  if (eps < 0) {
    nrm_fail(c, SIM_NN_TILING, "Parameter epsilon of GemmaRmsNorm has incorrect value %f. It should be greater than 0.",
             (double)eps);
    return nrm_gen_tiling_fail(c, "Get attr epsilon error.");
  }
  c->plan.eps = eps;
  c->plan.norm_axis = NT(c, GR_X)->ndim - NT(c, GR_G)->ndim;
  int64_t rows, cols;
  nrm_rows_cols(NT(c, GR_X), c->plan.norm_axis, &rows, &cols);
  /* [aclsim] the kernel writes one rstd per row; CANN's check allows e.g. all-1 dims. */
  NTRY(nrm_numel_is(c, GR_RSTD, rows, "writes"));
  return nrm_finish(c, rows, ws, exec);
}

/* rms_norm.h Compute with is_gemma = 1 (set by Tiling4GemmaRmsNorm's SetDefaultTiling, rms_norm_tiling.cpp:630-639):
 * x widened to FLOAT, rstd = 1 / sqrt(sum(x^2) * (1/D) + eps), then ComputeMulGammaCast forms
 * 1 + gamma in FLOAT (Adds on the float gamma, :150-166: never rounded to gamma's dtype) and
 * y = (x * rstd) * (1 + gamma), cast once to y's dtype. The split-D template computes the same
 * (rms_norm_split_d.h:344-366), and so does 950's regbase kernel (arch35/rms_norm_regbase_perf.h
 * :188-190, the + 1 in FLOAT registers). Float steps are computed in double here. */
int sim_run_gemma_rms_norm(const SimPlan *p) {
  int64_t rows, cols;
  nrm_rows_cols(&p->t[GR_X], p->norm_axis, &rows, &cols);
  double *x = sim_load(&p->t[GR_X]), *g = sim_load(&p->t[GR_G]);
  double *y = nrm_zalloc(rows * cols), *rs = nrm_zalloc(rows);
  for (int64_t r = 0; r < rows; r++) {
    const double *xr = x + r * cols;
    double q = 0;
    for (int64_t i = 0; i < cols; i++) q += xr[i] * xr[i];
    rs[r] = 1.0 / sqrt(q / (double)cols + p->eps);
    for (int64_t i = 0; i < cols; i++) y[r * cols + i] = xr[i] * rs[r] * (1.0 + g[i]);
  }
  sim_store(&p->t[GR_Y], y);
  sim_store(&p->t[GR_RSTD], rs);
  return 0;
}
