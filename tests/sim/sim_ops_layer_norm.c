/*
 * Software CANN ("aclsim") -- aclnnLayerNorm and aclnnLayerNormWithImplMode: phase-1 validation as
 * CANN performs it, planning, and the computation run at stream synchronisation (double
 * accumulation, CANN's intermediate dtypes, every output rounded to its dtype).
 *
 * Source: hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921 (2026-08-22),
 *   norm/layer_norm_v4/op_host/op_api/aclnn_layer_norm.cpp (cited as "aclnn_layer_norm.cpp:<line>"),
 *   norm/layer_norm_v4/op_host/op_api/layer_norm_v3.cpp, layer_norm_v4.cpp (the l0 operators),
 *   norm/layer_norm_v4/docs/aclnnLayerNorm&aclnnLayerNormWithImplMode.md (products, implMode).
 * aclnnLayerNormGetWorkspaceSize is aclnnLayerNormWithImplModeGetWorkspaceSize with implMode 0
 * (aclnn_layer_norm.cpp:484-493); both phase 2s run the same executor (CommonOpExecutorRun), so
 * both are one simulator operator (SIM_OP_LAYER_NORM).
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

enum { HIGH_PRECISION = 0, HIGH_PERFORMANCE = 1, KEEP_FP16 = 2 }; /* aclnn_layer_norm.cpp:40-42 */

/* Products (docs "产品支持情况"): 950, A3, A2, Atlas 200I/500 A2 (310B), Atlas training (910);
 * not the Atlas inference series (310P). */
static const unsigned LN_PRODUCTS = NP_950 | NP_A3 | NP_A2 | NP_310B | NP_910;
static const char *const LN_DOC = "ops-nn norm/layer_norm_v4/docs/aclnnLayerNorm&aclnnLayerNormWithImplMode.md";

/* GetDtypeSupportList (aclnn_layer_norm.cpp:53-67): NpuArch DAV_2201 or regbase -> FLOAT16, FLOAT,
 * BF16; every other architecture (910: 1001, 310B: 3002) -> FLOAT16, FLOAT. */
static NrmDtList dtype_list(const NormCtx *c) {
  NrmDtList l = {2, {SIM_DT_FLOAT16, SIM_DT_FLOAT, 0, 0}};
  if (c->soc.npu_arch == NRM_DAV_2201 || nrm_regbase(c)) l.v[l.n++] = SIM_DT_BF16;
  return l;
}

/* CheckInputDtype and CheckOutputDtype (aclnn_layer_norm.cpp:125-158): every tensor in the list;
 * weight and bias FLOAT or input's dtype, and equal to each other. meanOut / rstdOut are only
 * list-checked: phase 1 casts CANN's results to their dtypes. */
static int check_dtypes(NormCtx *c) {
  NrmDtList l = dtype_list(c);
  NTRY(nrm_dt_support(c, LN_X, &l, "input"));
  NTRY(nrm_ln_param_dtype(c, LN_W, &l, "weightOptional"));
  NTRY(nrm_ln_param_dtype(c, LN_B, &l, "biasOptional"));
  NTRY(nrm_dt_same(c, LN_W, "weightOptional", LN_B, "biasOptional"));
  NTRY(nrm_dt_support(c, LN_Y, &l, "out"));
  NTRY(nrm_dt_support(c, LN_MEAN, &l, "meanOutOptional"));
  return nrm_dt_support(c, LN_RSTD, &l, "rstdOutOptional");
}

/* CheckShape (aclnn_layer_norm.cpp:160-259), in its order. */
static int check_shapes(NormCtx *c, const int64_t *norm, int64_t nlen) {
  const int slots[6] = {LN_X, LN_Y, LN_W, LN_B, LN_MEAN, LN_RSTD};
  for (int i = 0; i < 6; i++) NTRY(nrm_max_dim(c, slots[i], LN_MAX_DIM, nrm_ln_names[slots[i]]));
  if (nlen > LN_MAX_DIM)
    return nrm_fail(c, SIM_NN_INVALID,
                    "Expected aclnnLayerNorm normalizedShape dim [%" PRId64 "] to not be greater than [%d] but check "
                    "failed.",
                    nlen, LN_MAX_DIM);
  if (nlen < 1)
    return nrm_fail(c, SIM_NN_INVALID,
                    "Expected aclnnLayerNorm normalizedShape len [%" PRId64 "] to be greater than [1] but check failed.",
                    nlen);
  NTRY(nrm_min_dim(c, LN_X, (int)nlen, "input"));
  NTRY(nrm_wrong_dim(c, LN_W, (int)nlen, "weightOptional"));
  NTRY(nrm_wrong_dim(c, LN_B, (int)nlen, "biasOptional"));
  NTRY(nrm_ln_normalized_dims(c, norm, nlen));
  return nrm_shape_same(c, LN_X, "input", LN_Y, "out");
}

/* ---- shared with aclnnFastLayerNorm (sim_ops_norm.h) ---- */

const char *const nrm_ln_names[6] = {"input", "weightOptional", "biasOptional", "out", "meanOutOptional",
                                     "rstdOutOptional"};

int nrm_ln_args(NormCtx *c, const void *input, const void *normalizedShape, const void *weight, const void *bias,
                const void *out, const void *meanOut, const void *rstdOut, int64_t *norm, uint64_t *nlen) {
  NTRY(nrm_null(c, input, "aclTensor", "input", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, normalizedShape, "aclIntArray", "normalizedShape", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, out, "aclTensor", "out", SIM_NN_NULLPTR));
  const void *hs[] = {input, weight, bias, out, meanOut, rstdOut};
  for (int s = LN_X; s <= LN_RSTD; s++) NTRY(nrm_get(c, hs[s], s));
  *nlen = 0;
  if (sim_lookup_int_array(normalizedShape, norm, LN_MAX_DIM + 1, nlen) != 0)
    return nrm_fail(c, SIM_NN_INVALID, "normalizedShape (%p) is not a live aclIntArray", normalizedShape);
  return 0;
}

int nrm_ln_param_dtype(NormCtx *c, int s, const NrmDtList *l, const char *shown) {
  NTRY(nrm_dt_support(c, s, l, shown));
  if (NP(c, s) && NT(c, s)->dtype != SIM_DT_FLOAT) return nrm_dt_same(c, s, shown, LN_X, "input");
  return 0;
}

int nrm_ln_normalized_dims(NormCtx *c, const int64_t *norm, int64_t nlen) {
  const SimTensorDesc *x = NT(c, LN_X);
  int axis = x->ndim - (int)nlen;
  for (int i = 0; i < (int)nlen; i++) {
    if (norm[i] != x->dims[i + axis])
      return nrm_fail(c, SIM_NN_INVALID,
                      "Expected normalized index [%d] shape [%" PRId64 "] be equal to input index [%d] shape [%" PRId64
                      "], but failed.",
                      i, norm[i], i + axis, x->dims[i + axis]);
    const int opt[2] = {LN_W, LN_B};
    const char *const what[2] = {"weight", "bias"};
    for (int k = 0; k < 2; k++)
      if (NP(c, opt[k]) && norm[i] != NT(c, opt[k])->dims[i])
        return nrm_fail(c, SIM_NN_INVALID,
                        "Expected normalized index [%d] shape [%" PRId64 "] be equal to %s index [%d] shape [%" PRId64
                        "], but failed.",
                        i, norm[i], what[k], i, NT(c, opt[k])->dims[i]);
  }
  return 0;
}

SimTensorDesc nrm_ln_stat_shape(const NormCtx *c, int axis) {
  const SimTensorDesc *x = &c->plan.t[LN_X];
  SimTensorDesc stat = nrm_shape_of(x->dims, x->ndim);
  for (int i = axis; i < stat.ndim; i++) stat.dims[i] = 1;
  return stat;
}

/* CheckMeanRstdOutputShape (aclnn_layer_norm.cpp:77-121), on NpuArch DAV_3510 only (:312-325):
 * a non-empty meanOut / rstdOut must be [A1..Ai, 1..1]; both present -> equal shapes. */
static int check_stat_shape(NormCtx *c, int s, const char *shown, int axis) {
  if (!NP(c, s) || sim_desc_numel(NT(c, s)) == 0) return 0;
  const SimTensorDesc *x = NT(c, LN_X), *m = NT(c, s);
  if (m->ndim != x->ndim)
    return nrm_fail(c, SIM_NN_INVALID, "Expected %s dimNum [%d] to be equal to input dimNum [%d], but check failed.",
                    shown, m->ndim, x->ndim);
  for (int i = 0; i < axis; i++)
    if (m->dims[i] != x->dims[i])
      return nrm_fail(c, SIM_NN_INVALID,
                      "Expected %s dim [%d] shape [%" PRId64 "] to be equal to input dim [%d] shape [%" PRId64
                      "], but check failed.",
                      shown, i, m->dims[i], i, x->dims[i]);
  for (int i = axis; i < m->ndim; i++)
    if (m->dims[i] != 1)
      return nrm_fail(c, SIM_NN_INVALID,
                      "Expected %s trailing dim [%d] to be 1 (normalizedShape axis), but got [%" PRId64
                      "]. The trailing %d dimensions should all be 1.",
                      shown, i, m->dims[i], x->ndim - axis);
  return 0;
}

/* CheckImplMode (aclnn_layer_norm.cpp:261-277). */
static int check_impl_mode(NormCtx *c, int32_t mode) {
  if (mode != HIGH_PRECISION && mode != HIGH_PERFORMANCE && mode != KEEP_FP16)
    return nrm_fail(c, SIM_NN_INVALID, "Expected implMode to be in [0, 1, 2], but now got [%d].", (int)mode);
  if (mode == KEEP_FP16 && (NT(c, LN_X)->dtype != SIM_DT_FLOAT16 || (NP(c, LN_W) && NT(c, LN_W)->dtype != SIM_DT_FLOAT16) ||
                            (NP(c, LN_B) && NT(c, LN_B)->dtype != SIM_DT_FLOAT16)))
    return nrm_fail(c, SIM_NN_INVALID, "KEEP_FP16 only support all input dtype float16!");
  return 0;
}

/* The l0 operator phase 1 picks (aclnn_layer_norm.cpp:391-451) and the dtypes of its results:
 * - LayerNormV4 on regbase, or where IsV4SocCheck (:279-297) holds for the weight it passes:
 *   mean and rstd FLOAT (layer_norm_v4.cpp:39-40);
 * - LayerNormV3 otherwise: mean in the weight's dtype, rstd in the bias's (layer_norm_v3.cpp:55-56),
 *   where a missing weight is filled with ones of the bias's dtype (else the input's) and a
 *   missing bias with zeros of the weight's dtype (else the input's) (:394-426).
 * y is the input's dtype on both (:54 / :38); each result is then cast to its output's dtype
 * (:453-477). implMode only reaches LayerNormV3 (as an OP_OPTION); its kernels' precision modes
 * are not modelled. */
static void plan_dtypes(NormCtx *c, int64_t N) {
  int32_t xt = NT(c, LN_X)->dtype;
  int32_t wt = NP(c, LN_W) ? NT(c, LN_W)->dtype : NP(c, LN_B) ? NT(c, LN_B)->dtype : xt;
  int32_t bt = NP(c, LN_B) ? NT(c, LN_B)->dtype : NP(c, LN_W) ? NT(c, LN_W)->dtype : xt;
  bool v4 = nrm_regbase(c);
  if (!v4) {
    int32_t arch = c->soc.npu_arch;
    int64_t align = xt == SIM_DT_FLOAT ? 8 : 16; /* B32_BLOCK_ALIGN_NUM / B16_BLOCK_ALIGN_NUM */
    bool single_read = xt == wt && xt == SIM_DT_BF16 && (N == 1024 || N == 4096) && arch == NRM_DAV_2201;
    bool transpose_310p = xt == SIM_DT_FLOAT16 && (N == 20 || N == 40) && arch == 2002;
    bool transpose_910b = N % align != 0 && N < 64 && arch == NRM_DAV_2201;
    v4 = single_read || transpose_310p || transpose_910b;
  }
  c->plan.norm_dt[0] = v4 ? SIM_DT_FLOAT : wt;
  c->plan.norm_dt[1] = v4 ? SIM_DT_FLOAT : bt;
  c->plan.norm_dt[2] = xt;
}

int sim_layer_norm_ws(const char *api, const void *input, const void *normalizedShape, const void *weight,
                      const void *bias, double eps, void *out, void *meanOut, void *rstdOut, int32_t implMode,
                      uint64_t *ws, void **exec) {
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_LAYER_NORM, api, 3, 3, nrm_ln_names);
  NTRY(nrm_opp_path(c));
  NTRY(nrm_outparams(c, ws, exec));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, LN_PRODUCTS, LN_DOC));
  /* CheckNotNull (:69-75) -> 161001 */
  int64_t norm[LN_MAX_DIM + 1] = {0};
  uint64_t nlen;
  NTRY(nrm_ln_args(c, input, normalizedShape, weight, bias, out, meanOut, rstdOut, norm, &nlen));
  /* CheckParamsWithImplMode (:299-329) */
  NTRY(check_dtypes(c));
  NTRY(check_shapes(c, norm, (int64_t)nlen));
  int axis = NT(c, LN_X)->ndim - (int)nlen;
  if (nrm_regbase(c)) {
    NTRY(check_stat_shape(c, LN_MEAN, "meanOutOptional", axis));
    NTRY(check_stat_shape(c, LN_RSTD, "rstdOutOptional", axis));
    if (NP(c, LN_MEAN) && NP(c, LN_RSTD) && !nrm_same_shape(NT(c, LN_MEAN), NT(c, LN_RSTD)))
      return nrm_fail(c, SIM_NN_INVALID,
                      "Expected meanOutOptional shape to be equal to rstdOutOptional shape, but check failed.");
  }
  NTRY(check_impl_mode(c, implMode));
  /* The attribute is a float (layer_norm_v3.cpp:63, layer_norm_v4.cpp:43). */
  c->plan.eps = (double)(float)eps;
  c->plan.norm_axis = axis;
  c->plan.norm_mode = implMode;
  int64_t M, N;
  nrm_rows_cols(NT(c, LN_X), axis, &M, &N);
  /* Empty tensors (:367-386): M == 0 -> nothing written; N == 0 -> meanOut 0, rstdOut NaN. */
  if (M == 0) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  if (N == 0) {
    nrm_fill(c, LN_MEAN, 0.0);
    nrm_fill(c, LN_RSTD, NAN);
    return nrm_finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  /* The l0 operator's mean and rstd are the input's view shape with the normalized dims set to 1
   * (layer_norm_v3.cpp:50-53, layer_norm_v4.cpp:33-37); each result is cast to its output's dtype
   * and copied with l0op::ViewCopy, whose nullptr is 561103 (:461-477). Off DAV_3510 nothing
   * else checks these shapes: a meanOut of M elements but another shape is refused here, a
   * one-element meanOut of any shape is written when M == 1. out equals the input's shape
   * (CheckShape), so its ViewCopy (:456-459) always succeeds. */
  SimTensorDesc stat = nrm_ln_stat_shape(c, axis);
  if (NP(c, LN_MEAN)) NTRY(nrm_view_copy(c, LN_MEAN, &stat));
  if (NP(c, LN_RSTD)) NTRY(nrm_view_copy(c, LN_RSTD, &stat));
  plan_dtypes(c, N);
  return nrm_finish(c, M, ws, exec);
}

/* Biased variance over the normalized dims; rstd = 1/sqrt(var + eps) (the docs' formula).
 * Results pass through CANN's intermediate dtypes (plan_dtypes), then sim_store rounds each to
 * its output's dtype. */
int sim_run_layer_norm(const SimPlan *p) {
  int64_t M, N;
  nrm_rows_cols(&p->t[LN_X], p->norm_axis, &M, &N);
  double *x = sim_load(&p->t[LN_X]);
  double *w = p->present[LN_W] ? sim_load(&p->t[LN_W]) : NULL;
  double *b = p->present[LN_B] ? sim_load(&p->t[LN_B]) : NULL;
  double *y = nrm_zalloc(M * N), *mo = nrm_zalloc(M), *ro = nrm_zalloc(M);
  for (int64_t r = 0; r < M; r++) {
    const double *xr = x + r * N;
    double s = 0, q = 0;
    for (int64_t i = 0; i < N; i++) s += xr[i];
    double mean = s / (double)N;
    for (int64_t i = 0; i < N; i++) q += (xr[i] - mean) * (xr[i] - mean);
    double rstd = 1.0 / sqrt(q / (double)N + p->eps);
    for (int64_t i = 0; i < N; i++) {
      double v = (xr[i] - mean) * rstd * (w ? w[i] : 1.0) + (b ? b[i] : 0.0);
      y[r * N + i] = nrm_round(v, p->norm_dt[2]);
    }
    mo[r] = nrm_round(mean, p->norm_dt[0]);
    ro[r] = nrm_round(rstd, p->norm_dt[1]);
  }
  sim_store(&p->t[LN_Y], y);
  if (p->present[LN_MEAN]) sim_store(&p->t[LN_MEAN], mo);
  if (p->present[LN_RSTD]) sim_store(&p->t[LN_RSTD], ro);
  return 0;
}
