/*
 * Software CANN ("aclsim") -- aclnnAdaLayerNorm and aclnnAdaLayerNormV2: phase-1 validation as
 * their op_api performs it, planning, and the computation run at stream synchronisation (double
 * arithmetic with the A2/A3 kernel's templates, every output rounded once to its dtype).
 *
 * Sources (hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921): norm/ada_layer_norm/op_host/
 * op_api/aclnn_ada_layer_norm.cpp (CheckNotNull :33-40, CheckDtypeValid :42-70, CheckShape
 * :72-120) and norm/ada_layer_norm_v2/op_host/op_api/aclnn_ada_layer_norm_v2.cpp (the same with
 * shift before scale, bias before weight, rstd before mean, weight/bias FLOAT allowed: useV2);
 * the defs (ada_layer_norm_def.cpp:53-54 ascend910b / 910_93; ada_layer_norm_v2_def.cpp:38-58 adds
 * ascend950); op_host/ada_layer_norm_tiling.cpp SplitCore :150-171 (rows split over the cores,
 * rowNum = 6144 / ceil32(H) rows per step when H <= 3072); op_kernel/ada_layer_norm_base.h
 * :215-219 (a core's rows), :305-345 FastProcess; ada_layer_norm_base_v1.h MultiCalMeanRstd
 * :153-195 and MultiLayerNorm :200-222 (a step of more than one row divides by sqrt(var + eps)),
 * SingleLayerNorm :225-268 (one row: times rstd), CopyInScaleShift :370-387 (1 + scale in float),
 * Adaption :270-290, the casts :422-454 (CAST_RINT). docs/norm_family_kernels.md section 12.
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { AD_X, AD_SCALE, AD_SHIFT, AD_W, AD_B, AD_OUT, AD_MEAN, AD_RSTD, AD_N };

static int check_dtypes(NormCtx *c, bool v2, const char *const *shown) {
  NrmDtList l = {3, {SIM_DT_FLOAT, SIM_DT_FLOAT16, SIM_DT_BF16, 0}};
  int32_t xd = NT(c, AD_X)->dtype;
  NTRY(nrm_dt_support(c, AD_X, &l, shown[AD_X]));
  int first = v2 ? AD_SHIFT : AD_SCALE, second = v2 ? AD_SCALE : AD_SHIFT;
  NTRY(nrm_dt_match(c, first, xd, shown[first]));
  NTRY(nrm_dt_match(c, second, xd, shown[second]));
  if (NP(c, AD_W) && NP(c, AD_B)) NTRY(nrm_dt_match(c, AD_W, NT(c, AD_B)->dtype, shown[AD_W]));
  const int wb[2] = {v2 ? AD_B : AD_W, v2 ? AD_W : AD_B};
  for (int i = 0; i < 2; i++)
    if (NP(c, wb[i]) && (!v2 || NT(c, wb[i])->dtype != SIM_DT_FLOAT)) NTRY(nrm_dt_match(c, wb[i], xd, shown[wb[i]]));
  NTRY(nrm_dt_match(c, AD_OUT, xd, shown[AD_OUT]));
  const int stats[2] = {v2 ? AD_RSTD : AD_MEAN, v2 ? AD_MEAN : AD_RSTD};
  for (int i = 0; i < 2; i++)
    if (NP(c, stats[i])) NTRY(nrm_dt_match(c, stats[i], xd, shown[stats[i]]));
  return 0;
}

static bool dims_are(const SimTensorDesc *t, const int64_t *dims, int n) {
  if (t->ndim != n) return false;
  for (int i = 0; i < n; i++)
    if (t->dims[i] != dims[i]) return false;
  return true;
}

/* CheckShape: a failure is ACLNN_ERR_PARAM_INVALID; the scale/shift rule logs nothing of its
 * own, only CheckParams' "CheckShape failed!". */
static int check_shapes(NormCtx *c, bool v2, const char *const *shown) {
  const SimTensorDesc *x = NT(c, AD_X);
  int n = x->ndim;
  if (n < 2 || n > 8) return nrm_fail(c, SIM_NN_INVALID, "input x dim num should be between 2 and 8.");
  int64_t b = 1, e1[SIM_MAX_DIMS], e2[SIM_MAX_DIMS];
  for (int i = 0; i < n - 2; i++) e1[i] = e2[i] = x->dims[i], b *= x->dims[i];
  e1[n - 2] = 1, e1[n - 1] = x->dims[n - 1], e2[n - 2] = x->dims[n - 1];
  if (b <= 0 || x->dims[n - 2] <= 0 || x->dims[n - 1] <= 0)
    return nrm_fail(c, SIM_NN_INVALID, "x sizes should greater than 0.");
  const int ss[2] = {v2 ? AD_SHIFT : AD_SCALE, v2 ? AD_SCALE : AD_SHIFT};
  for (int i = 0; i < 2; i++)
    if (!dims_are(NT(c, ss[i]), e1, n) && !dims_are(NT(c, ss[i]), e2, n - 1))
      return nrm_fail(c, SIM_NN_INVALID, "CheckShape failed!");
  const int wb[2] = {v2 ? AD_B : AD_W, v2 ? AD_W : AD_B};
  for (int i = 0; i < 2; i++)
    if (NP(c, wb[i]) && !dims_are(NT(c, wb[i]), &x->dims[n - 1], 1))
      return nrm_fail(c, SIM_NN_INVALID, "Expected tensor for %s to have shape [%" PRId64 "] but got another.",
                      shown[wb[i]], x->dims[n - 1]);
  NTRY(nrm_shape_same(c, AD_X, shown[AD_X], AD_OUT, shown[AD_OUT]));
  int64_t st[SIM_MAX_DIMS];
  for (int i = 0; i < n; i++) st[i] = i == n - 1 ? 1 : x->dims[i];
  const int stats[2] = {v2 ? AD_RSTD : AD_MEAN, v2 ? AD_MEAN : AD_RSTD};
  for (int i = 0; i < 2; i++)
    if (NP(c, stats[i]) && !dims_are(NT(c, stats[i]), st, n))
      return nrm_fail(c, SIM_NN_INVALID, "Expected tensor for %s to have x's shape with a last dim of 1.",
                      shown[stats[i]]);
  return 0;
}

int sim_ada_layer_norm_ws(bool v2, const void *x, const void *scale, const void *shift, const void *weight,
                          const void *bias, double epsilon, const void *out, const void *meanOut, const void *rstdOut,
                          uint64_t *ws, void **exec) {
  static const char *const shown[] = {"x", "scale", "shift", "weightOptional", "biasOptional", "out", "meanOutOptional",
                                      "rstdOutOptional"};
  NormCtx cc, *c = &cc;
  nrm_init(c, v2 ? SIM_OP_ADA_LAYER_NORM_V2 : SIM_OP_ADA_LAYER_NORM, v2 ? "aclnnAdaLayerNormV2" : "aclnnAdaLayerNorm", 5,
           3, shown);
  NTRY(nrm_opp_path(c));
  NTRY(nrm_outparams(c, ws, exec));
  NTRY(nrm_soc(c));
  /* docs "产品支持情况": A3, A2 (V2 also 950); the defs register no other SoC. */
  NTRY(nrm_product(c, v2 ? NP_950 | NP_A3 | NP_A2 : NP_A3 | NP_A2,
                   v2 ? "ops-nn norm/ada_layer_norm_v2/docs/aclnnAdaLayerNormV2.md"
                      : "ops-nn norm/ada_layer_norm/docs/aclnnAdaLayerNorm.md"));
  const void *hs[] = {x, scale, shift, weight, bias, out, meanOut, rstdOut};
  const int required[] = {AD_X, AD_SCALE, AD_SHIFT, AD_OUT};
  for (int i = 0; i < 4; i++) NTRY(nrm_null(c, hs[required[i]], "aclTensor", shown[required[i]], SIM_NN_NULLPTR));
  for (int s = 0; s < AD_N; s++) NTRY(nrm_get(c, hs[s], s));
  NTRY(check_dtypes(c, v2, shown));
  NTRY(check_shapes(c, v2, shown));
  const SimTensorDesc *xd = NT(c, AD_X);
  c->plan.norm_axis = xd->ndim - 1;
  c->plan.eps = (float)epsilon; /* static_cast<float>(epsilon), aclnn_ada_layer_norm_v2.cpp:155 */
  int64_t rows, cols;
  nrm_rows_cols(xd, c->plan.norm_axis, &rows, &cols);
  /* The template (A2/A3): norm_dt[0] the vector cores the rows are split over, norm_mode the
   * rows per step (1: every row alone, multiplied by rstd); 950 (arch35, unverified details):
   * every row times rstd. */
  c->plan.norm_mode = 1;
  c->plan.norm_dt[0] = 1;
  c->plan.norm_dt[1] = (int32_t)xd->dims[xd->ndim - 2]; /* S */
  if (!nrm_regbase(c)) {
    int cores = 0;
    NTRY(nrm_aiv_cores(c, "AdaLayerNorm", &cores));
    c->plan.norm_dt[0] = cores;
    if (cols <= 3072) c->plan.norm_mode = (int32_t)(6144 / ((cols + 31) / 32 * 32));
  }
  return nrm_finish(c, rows, ws, exec);
}

/* Whether row r runs in a step of more than one row (MultiLayerNorm): the core's rows
 * (ada_layer_norm_base.h:215-219) in steps of `per` from its first. */
static bool multi_row(int64_t r, int64_t rows, int64_t cores, int64_t per) {
  if (per <= 1) return false;
  int64_t single = rows / cores, tail = rows % cores, start = 0, end = 0;
  for (int64_t b = 0; b < cores; b++) {
    start = single * b + (b < tail ? b : tail);
    end = start + single + (b < tail ? 1 : 0);
    if (r < end) break;
  }
  int64_t step = start + (r - start) / per * per;
  int64_t last = step + per < end ? step + per : end;
  return last - step > 1;
}

int sim_run_ada_layer_norm(const SimPlan *p) {
  int64_t rows, cols;
  nrm_rows_cols(&p->t[AD_X], p->norm_axis, &rows, &cols);
  double *x = sim_load(&p->t[AD_X]), *sc = sim_load(&p->t[AD_SCALE]), *sh = sim_load(&p->t[AD_SHIFT]);
  double *w = p->present[AD_W] ? sim_load(&p->t[AD_W]) : NULL, *b = p->present[AD_B] ? sim_load(&p->t[AD_B]) : NULL;
  double *y = nrm_zalloc(rows * cols), *mean = nrm_zalloc(rows), *rstd = nrm_zalloc(rows);
  double avg = nrm_round(1.0 / (double)cols, SIM_DT_FLOAT); /* aveFactor, a float */
  int64_t seq = p->norm_dt[1];
  for (int64_t r = 0; r < rows; r++) {
    const double *xr = x + r * cols;
    double m = 0, v = 0;
    for (int64_t i = 0; i < cols; i++) m += xr[i] * avg;
    for (int64_t i = 0; i < cols; i++) v += (xr[i] - m) * (xr[i] - m) * avg;
    double sd = sqrt(v + p->eps);
    bool divide = multi_row(r, rows, p->norm_dt[0], p->norm_mode);
    mean[r] = m;
    rstd[r] = 1.0 / sd;
    const double *scr = sc + r / seq * cols, *shr = sh + r / seq * cols;
    for (int64_t i = 0; i < cols; i++) {
      double n = divide ? (xr[i] - m) / sd : (xr[i] - m) * rstd[r];
      if (w) n *= w[i];
      if (b) n += b[i];
      y[r * cols + i] = n * nrm_round(1.0 + scr[i], SIM_DT_FLOAT) + shr[i];
    }
  }
  sim_store(&p->t[AD_OUT], y);
  if (p->present[AD_MEAN]) sim_store(&p->t[AD_MEAN], mean);
  if (p->present[AD_RSTD]) sim_store(&p->t[AD_RSTD], rstd);
  return 0;
}
