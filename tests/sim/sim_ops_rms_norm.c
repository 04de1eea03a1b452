/*
 * Software CANN ("aclsim") -- aclnnRmsNorm and aclnnRmsNormGrad: phase-1 validation as CANN
 * performs it, planning, and the computation run at stream synchronisation (double
 * accumulation, every output rounded once to its dtype).
 *
 * Both are generated aclnn operators (ACLNNTYPE aclnn in ops-nn norm/rms_norm/op_host/CMakeLists.txt
 * and norm/rms_norm_grad/op_host/CMakeLists.txt): their phase 1 is opbase's individual-op
 * framework (hicann/opbase aa3cd74b7f6d, src/nnopbase/individual_op) driven by the op definitions.
 * - NULL required tensors, then the executor and workspaceSize out-params: 161001,
 *   "Check <name> != nullptr failed" (the generated NNOPBASE_ASSERT_NOTNULL_RETVAL, logged by
 *   NnopbaseOpLogE, individual_op_api.cpp:34; NnopbaseRunForWorkspace :362-367).
 * - The (dtype, format) of every tensor must be one row of the SoC's OpDef configuration:
 *   161002 (indv_executor.cpp CheckSocVersionAndParam :984-1006, IsParamMatchSupportInfo,
 *   PrintExceptionIoParamInfo); NCHW, NHWC, NCL, NCDHW, DHWCN storage formats count as ND
 *   (indv_executor_tensor.cpp FormatsLikeND :19-20, NnopbaseSaveTensor).
 * - Every output empty: the kernel launch is skipped, nothing written (indv_executor.cpp
 *   NnopbaseExecutorMatchCache :1075-1082, indv_executor.h NnopbaseSkipKernelLaunch).
 * - The tiling function's checks: 561002 ACLNN_ERR_INNER_TILING_ERROR, "Failed to execute tiling
 *   function" (indv_executor.cpp :881-886); their texts follow opbase's OP_LOGE_FOR_INVALID_*
 *   (docs/zh/api/op_common/log/OP_LOGE_FOR_INVALID_*.md), entity = the op type.
 * The executor, its cache and its repeatability are modelled as the composite operators'
 * (README_runtime.md).
 *
 * Sources (hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921): norm/rms_norm/op_host/
 * rms_norm_def.cpp, rms_norm_tiling.cpp, op_kernel/rms_norm.h, docs/aclnnRmsNorm.md;
 * norm/rms_norm_grad/op_host/rms_norm_grad_def.cpp, rms_norm_grad_tiling.cpp,
 * rms_norm_grad_empty_tiling.cpp, docs/aclnnRmsNormGrad.md.
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Products (docs "产品支持情况" of both operators): 950, A3, A2, Atlas inference (310P); not
 * Atlas training (910; the definitions register an ascend910 binary, the docs say unsupported:
 * the simulator follows the docs), not the Atlas 200I/500 A2 (310B, no configuration at all). */
static const unsigned RMS_PRODUCTS = NP_950 | NP_A3 | NP_A2 | NP_310P;

enum { F32 = SIM_DT_FLOAT, F16 = SIM_DT_FLOAT16, B16 = SIM_DT_BF16 };

/* ======================================================================================
 * aclnnRmsNorm(x, gamma, epsilon, yOut, rstdOut)
 * ====================================================================================== */
enum { RN_X, RN_G, RN_Y, RN_RSTD };

/* rms_norm_def.cpp: (x, gamma, y, rstd) rows of the ascend910b / ascend910_93 / ascend950
 * configurations (:23-77), and of config_without_bf16 (ascend310p, ascend910, :79-104). */
static const int32_t RN_ROWS_FULL[5][6] = {
    {F16, F32, F16, F32}, {B16, F32, B16, F32}, {F16, F16, F16, F32}, {F32, F32, F32, F32}, {B16, B16, B16, F32}};
static const int32_t RN_ROWS_NO_BF16[2][6] = {{F16, F16, F16, F32}, {F32, F32, F32, F32}};

/* CheckInputShape4RmsNorm (rms_norm_tiling.cpp:113-196), its texts naming `node`. */
int nrm_rms_norm_shapes(NormCtx *c, const char *node) {
  const SimTensorDesc *x = NT(c, RN_X), *g = NT(c, RN_G), *y = NT(c, RN_Y), *r = NT(c, RN_RSTD);
  char a[200], b[200];
  if (x->ndim > 8 || x->ndim < 1)
    return nrm_gen_tiling_fail(c, "Parameter x of %s has incorrect shape dim %d. It should be in the range of [1, 8].", node,
                       x->ndim);
  if (g->ndim > 8 || g->ndim < 1)
    return nrm_gen_tiling_fail(c, "Parameter gamma of %s has incorrect shape dim %d. It should be in the range of [1, 8].", node,
                       g->ndim);
  if (g->ndim > x->ndim)
    return nrm_gen_tiling_fail(c, "Parameters gamma and x of %s have incorrect shape dims %d and %d. Reason: The shape dim "
                       "of input gamma must be less than or equal to that of input x", node, g->ndim, x->ndim);
  if (x->ndim != y->ndim)
    return nrm_gen_tiling_fail(c, "Parameters y and x of %s have incorrect shape dims %d and %d. Reason: The shape dims of "
                       "input x and output y must be the same", node, y->ndim, x->ndim);
  for (int i = 0; i < g->ndim; i++) {
    nrm_shape_str_compact(g, a, sizeof a);
    nrm_shape_str_compact(x, b, sizeof b);
    if (g->dims[i] == 0)
      return nrm_gen_tiling_fail(c, "Parameter gamma of %s has incorrect shape %s. Reason: Input gamma cannot be an empty "
                         "tensor", node, a);
    if (g->dims[i] != x->dims[x->ndim - g->ndim + i])
      return nrm_gen_tiling_fail(c, "Parameters gamma and x of %s have incorrect shapes %s and %s. Reason: The shape of "
                         "input gamma must be the same as the shape consisting of the last %d axes of input x", node, a, b,
                         g->ndim);
  }
  for (int i = 0; i < x->ndim; i++) {
    nrm_shape_str_compact(y, a, sizeof a);
    nrm_shape_str_compact(x, b, sizeof b);
    if (x->dims[i] == 0)
      return nrm_gen_tiling_fail(c, "Parameter x of %s has incorrect shape %s. Reason: Input x cannot be an empty tensor", node, b);
    if (y->dims[i] == 0)
      return nrm_gen_tiling_fail(c, "Parameter y of %s has incorrect shape %s. Reason: Output y cannot be an empty tensor", node, a);
    if (x->dims[i] != y->dims[i])
      return nrm_gen_tiling_fail(c, "Parameters y and x of %s have incorrect shapes %s and %s. Reason: The shapes of output y "
                         "and input x must be the same", node, a, b);
  }
  nrm_shape_str_compact(r, a, sizeof a);
  for (int i = 0; i < r->ndim; i++) {
    if (r->dims[i] == 0)
      return nrm_gen_tiling_fail(c, "Parameter rstd of %s has incorrect shape %s. Reason: Output rstd cannot be an empty "
                         "tensor", node, a);
    /* [aclsim] beyond x's rank CANN reads past x's dims; the simulator compares with 1 there. */
    int64_t xd = i < x->ndim ? x->dims[i] : 1;
    if (r->dims[i] != xd && r->dims[i] != 1)
      return nrm_gen_tiling_fail(c, "Parameter rstd of %s has incorrect shape %s. Reason: The %dth axis of output rstd "
                         "must be 1 or equal to the %dth axis of input x", node, a, i, i);
  }
  return 0;
}

int sim_rms_norm_ws(const void *x, const void *gamma, double epsilon, const void *yOut, const void *rstdOut,
                    uint64_t *ws, void **exec) {
  static const char *const names[] = {"x", "gamma", "yOut", "rstdOut"};
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_RMS_NORM, "aclnnRmsNorm", 2, 2, names);
  NTRY(nrm_opp_path(c));
  const void *hs[] = {x, gamma, yOut, rstdOut};
  for (int s = RN_X; s <= RN_RSTD; s++) NTRY(nrm_gen_null(c, hs[s], names[s]));
  NTRY(nrm_gen_null(c, exec, "executor"));
  NTRY(nrm_gen_null(c, ws, "workspaceLen"));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, RMS_PRODUCTS, "ops-nn norm/rms_norm/docs/aclnnRmsNorm.md"));
  for (int s = RN_X; s <= RN_RSTD; s++) NTRY(nrm_get(c, hs[s], s));
  if (c->product == NP_310P) NTRY(nrm_gen_combo(c, RN_ROWS_NO_BF16, 2, 4));
  else NTRY(nrm_gen_combo(c, RN_ROWS_FULL, 5, 4));
  if (nrm_all_empty(c, RN_Y, RN_RSTD)) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  /* The generated phase 1 passes epsilon as a float attribute (kNnopbaseFloat). */
  float eps = (float)epsilon;
  NTRY(nrm_rms_norm_shapes(c, "RmsNorm"));
  /* Tiling4RmsNorm's epsilon check (:292-296). */
  if (eps < 0) return nrm_gen_tiling_fail(c, "Epsilon less than zero, please check.");
  c->plan.eps = eps;
  c->plan.norm_axis = NT(c, RN_X)->ndim - NT(c, RN_G)->ndim;
  int64_t rows, cols;
  nrm_rows_cols(NT(c, RN_X), c->plan.norm_axis, &rows, &cols);
  /* [aclsim] the kernel writes one rstd per row; CANN's check allows e.g. all-1 dims. */
  NTRY(nrm_numel_is(c, RN_RSTD, rows, "writes"));
  return nrm_finish(c, rows, ws, exec);
}

/* rms_norm.h Compute: rstd = 1 / sqrt(mean(x^2) + eps), y = x * rstd * gamma in float, cast once
 * to y's dtype (ComputeMulGammaCast). */
int sim_run_rms_norm(const SimPlan *p) {
  int64_t rows, cols;
  nrm_rows_cols(&p->t[RN_X], p->norm_axis, &rows, &cols);
  double *x = sim_load(&p->t[RN_X]), *g = sim_load(&p->t[RN_G]);
  double *y = nrm_zalloc(rows * cols), *rs = nrm_zalloc(rows);
  for (int64_t r = 0; r < rows; r++) {
    const double *xr = x + r * cols;
    double q = 0;
    for (int64_t i = 0; i < cols; i++) q += xr[i] * xr[i];
    rs[r] = 1.0 / sqrt(q / (double)cols + p->eps);
    for (int64_t i = 0; i < cols; i++) y[r * cols + i] = xr[i] * rs[r] * g[i];
  }
  sim_store(&p->t[RN_Y], y);
  sim_store(&p->t[RN_RSTD], rs);
  return 0;
}

/* ======================================================================================
 * aclnnRmsNormGrad(dy, x, rstd, gamma, dxOut, dgammaOut)
 * ====================================================================================== */
enum { RG_DY, RG_X, RG_RSTD, RG_G, RG_DX, RG_DG };

/* rms_norm_grad_def.cpp: (dy, x, rstd, gamma, dx, dgamma) rows of ascend910b / ascend910_93 /
 * ascend950 (:24-60, :106-144) and of config_without_bf16 (ascend310p, ascend910, :62-103). */
static const int32_t RG_ROWS_FULL[5][6] = {{F16, F16, F32, F32, F16, F32}, {B16, B16, F32, F32, B16, F32},
                                           {F16, F16, F32, F16, F16, F32}, {F32, F32, F32, F32, F32, F32},
                                           {B16, B16, F32, B16, B16, F32}};
static const int32_t RG_ROWS_NO_BF16[2][6] = {{F16, F16, F32, F16, F16, F32}, {F32, F32, F32, F32, F32, F32}};

static int dims_fail(NormCtx *c, const char *names, int a, int b, const char *reason) {
  return nrm_gen_tiling_fail(c, "Parameters %s of RmsNormGrad have incorrect shape dims %d and %d. Reason: %s", names, a, b,
                     reason);
}

static int shapes_fail(NormCtx *c, const char *names, const SimTensorDesc *a, const SimTensorDesc *b,
                       const char *reason) {
  char x[200], y[200];
  nrm_shape_str_compact(a, x, sizeof x);
  nrm_shape_str_compact(b, y, sizeof y);
  return nrm_gen_tiling_fail(c, "Parameters %s of RmsNormGrad have incorrect shapes %s and %s. Reason: %s", names, x, y, reason);
}

/* CheckInputShape4RmsNormGrad (rms_norm_grad_tiling.cpp:169-344), in its order. */
static int rms_norm_grad_shapes(NormCtx *c) {
  const SimTensorDesc *dy = NT(c, RG_DY), *x = NT(c, RG_X), *r = NT(c, RG_RSTD), *g = NT(c, RG_G);
  const SimTensorDesc *dx = NT(c, RG_DX), *dg = NT(c, RG_DG);
  char why[200];
  if (x->ndim > 8 || x->ndim < 1)
    return nrm_gen_tiling_fail(c, "Parameter x of RmsNormGrad has incorrect shape dim %d. Reason: in the range of [1, 8]", x->ndim);
  if (g->ndim > 8 || g->ndim < 1)
    return nrm_gen_tiling_fail(c, "Parameter gamma of RmsNormGrad has incorrect shape dim %d. It should be in the range of [1, 8].",
                       g->ndim);
  if (g->ndim > x->ndim)
    return dims_fail(c, "gamma and x", g->ndim, x->ndim, "The shape dim of input gamma must be less than or equal to that of input x");
  if (dy->ndim != x->ndim) return dims_fail(c, "dy and x", dy->ndim, x->ndim, "The shape dims of input dy and input x must be the same");
  if (dx->ndim != dy->ndim) return dims_fail(c, "dx and dy", dx->ndim, dy->ndim, "The shape dims of output dx and input dy must be the same");
  if (g->ndim != dg->ndim)
    return dims_fail(c, "dgamma and gamma", dg->ndim, g->ndim, "The shape dims of output dgamma and input gamma must be the same");
  for (int i = 0; i < x->ndim; i++) {
    if (dy->dims[i] != x->dims[i]) return shapes_fail(c, "x and dy", x, dy, "The shapes of input x and input dy must be the same");
    if (dy->dims[i] != dx->dims[i]) return shapes_fail(c, "dx and dy", dx, dy, "The shapes of output dx and input dy must be the same");
  }
  if (dy->dims[x->ndim - 1] == 0) {
    char s[200];
    nrm_shape_str_compact(dy, s, sizeof s);
    return nrm_gen_tiling_fail(c, "Parameter dy of RmsNormGrad has incorrect shape %s. Reason: The last axis of input dy can not be 0", s);
  }
  /* CheckRstdShape (:240-281): rstd is x's leading dims (a shorter rstd: the rest of them 1). */
  int lead = x->ndim - g->ndim;
  if (r->ndim < lead) {
    for (int i = 0; i < r->ndim; i++)
      if (r->dims[i] != x->dims[i]) {
        snprintf(why, sizeof why, "The shape of input rstd must be the same as the shape consisting of the first %d axes of input x", r->ndim);
        return shapes_fail(c, "rstd and x", r, x, why);
      }
    for (int i = r->ndim; i < lead; i++)
      if (x->dims[i] != 1) {
        char s[200];
        nrm_shape_str_compact(x, s, sizeof s);
        return nrm_gen_tiling_fail(c, "Parameter x of RmsNormGrad has incorrect shape %s. Reason: The %dth axis of input x must be 1", s, i);
      }
  } else {
    for (int i = 0; i < lead; i++)
      if (r->dims[i] != x->dims[i]) {
        snprintf(why, sizeof why, "The shape of input rstd must be the same as the shape consisting of the first %d axes of input x", lead);
        return shapes_fail(c, "rstd and x", r, x, why);
      }
  }
  /* CheckGammaAndDgammaShape (:283-316) */
  snprintf(why, sizeof why, "The shape of input gamma must be the same as the shape consisting of the last %d axes of input dy", g->ndim);
  for (int i = 0; i < g->ndim; i++)
    if (g->dims[i] != dy->dims[dy->ndim - g->ndim + i]) return shapes_fail(c, "gamma and dy", g, dy, why);
  snprintf(why, sizeof why, "The shape of output dgamma must be the same as the shape consisting of the last %d axes of input dy", g->ndim);
  for (int i = 0; i < g->ndim; i++)
    if (dg->dims[i] != dy->dims[dy->ndim - g->ndim + i]) return shapes_fail(c, "dgamma and dy", dg, dy, why);
  return 0;
}

int sim_rms_norm_grad_ws(const void *dy, const void *x, const void *rstd, const void *gamma, const void *dxOut,
                         const void *dgammaOut, uint64_t *ws, void **exec) {
  static const char *const names[] = {"dy", "x", "rstd", "gamma", "dxOut", "dgammaOut"};
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_RMS_NORM_GRAD, "aclnnRmsNormGrad", 4, 2, names);
  NTRY(nrm_opp_path(c));
  const void *hs[] = {dy, x, rstd, gamma, dxOut, dgammaOut};
  for (int s = RG_DY; s <= RG_DG; s++) NTRY(nrm_gen_null(c, hs[s], names[s]));
  NTRY(nrm_gen_null(c, exec, "executor"));
  NTRY(nrm_gen_null(c, ws, "workspaceLen"));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, RMS_PRODUCTS, "ops-nn norm/rms_norm_grad/docs/aclnnRmsNormGrad.md"));
  for (int s = RG_DY; s <= RG_DG; s++) NTRY(nrm_get(c, hs[s], s));
  if (c->product == NP_310P) NTRY(nrm_gen_combo(c, RG_ROWS_NO_BF16, 2, 6));
  else NTRY(nrm_gen_combo(c, RG_ROWS_FULL, 5, 6));
  if (nrm_all_empty(c, RG_DX, RG_DG)) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  NTRY(rms_norm_grad_shapes(c));
  c->plan.norm_axis = NT(c, RG_X)->ndim - NT(c, RG_G)->ndim;
  int64_t rows, cols;
  nrm_rows_cols(NT(c, RG_DY), c->plan.norm_axis, &rows, &cols);
  /* Tiling4RmsNormGrad (:456-497): rstd must hold one value per row (no text of its own). */
  if (sim_desc_numel(NT(c, RG_RSTD)) != rows) return nrm_gen_tiling_fail(c, "Input shape invalid.");
  /* No rows: the regbase empty tiling writes dgamma = 0 (rms_norm_grad_empty_tiling.cpp,
   * op_kernel/arch35/rms_norm_grad_empty_dgamma.h); elsewhere the tiling refuses it. */
  if (rows == 0) {
    if (!nrm_regbase(c))
      return nrm_gen_tiling_fail(c, "Parameter dy of RmsNormGrad has incorrect shape size 0. Reason: Parameter dy does not "
                         "support empty tensor");
    nrm_fill(c, RG_DG, 0.0);
    return nrm_finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  return nrm_finish(c, rows, ws, exec);
}

/* The docs' backward formulas (aclnnRmsNormGrad.md "反向推导"), with the given rstd:
 * dx = rstd * (dy * g - x * rstd * mean(dy * g * x * rstd)) over the normalized dims;
 * dgamma = sum over rows of dy * x * rstd (FLOAT). */
int sim_run_rms_norm_grad(const SimPlan *p) {
  int64_t rows, cols;
  nrm_rows_cols(&p->t[RG_DY], p->norm_axis, &rows, &cols);
  double *dy = sim_load(&p->t[RG_DY]), *x = sim_load(&p->t[RG_X]);
  double *rs = sim_load(&p->t[RG_RSTD]), *g = sim_load(&p->t[RG_G]);
  double *dx = nrm_zalloc(rows * cols), *dg = nrm_zalloc(cols);
  for (int64_t r = 0; r < rows; r++) {
    const double *dr = dy + r * cols, *xr = x + r * cols;
    double s = 0;
    for (int64_t i = 0; i < cols; i++) {
      s += dr[i] * g[i] * xr[i] * rs[r];
      dg[i] += dr[i] * xr[i] * rs[r];
    }
    double m = s / (double)cols;
    for (int64_t i = 0; i < cols; i++) dx[r * cols + i] = rs[r] * (dr[i] * g[i] - xr[i] * rs[r] * m);
  }
  sim_store(&p->t[RG_DX], dx);
  sim_store(&p->t[RG_DG], dg);
  return 0;
}
