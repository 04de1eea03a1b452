/*
 * Software CANN ("aclsim") -- aclnnAdaLayerNormBackward: phase-1 validation as its op_api performs
 * it, planning, and the computation run at stream synchronisation (double arithmetic, every output
 * rounded once to its dtype).
 *
 * Sources (hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921): norm/ada_layer_norm_grad/op_host/
 * op_api/aclnn_ada_layer_norm_backward.cpp: CheckNotNull :51-63 (:473), CheckDtype :96-138 with
 * CheckOptionalOutDtype :66-95, CheckShape :275-328 (CheckAllTensorsMaxDim :211-241, CheckShapeEqual
 * :140-159, CheckShapeCompatibility :161-173, whose weight/bias CheckShapeEqual results are dropped
 * :307-308, ValidateScaleShiftShapes :175-209, CheckOutputShapes :243-273), every output NULL ->
 * SUCCESS :484-489, the SoC gate :436-455 (only ASCEND910B / ASCEND910_93 launch; any other SoC
 * returns SUCCESS with nothing queued), mean/rstd cast to FLOAT :441-444, each result cast to its
 * output's dtype (GenOutWithMask :348-359); op_api/ada_layer_norm_grad.cpp:31-35 (the l0 results'
 * dtypes); op_kernel/ada_layer_norm_grad_common_phase.inl:212 (1 + scale formed in float after the
 * cast). The kernel's arithmetic order is not re-derived (docs/norm_family_kernels.md section 13):
 * the formula of the shared reference (norm_family.md, aclnnAdaLayerNormBackward), in double.
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

enum { AB_DY, AB_X, AB_RSTD, AB_MEAN, AB_SC, AB_SH, AB_W, AB_B, AB_GX, AB_GSC, AB_GSH, AB_GW, AB_GB, AB_N };

static const char *const SHOWN[] = {"gradOut",      "input",        "rstd",         "mean",          "scale",
                                    "shift",        "weightOptional", "biasOptional", "gradInputOut", "gradScaleOut",
                                    "gradShiftOut", "gradWeightOut", "gradBiasOut"};

/* CheckDtype (:96-138) and CheckOptionalOutDtype (:66-95): OP_CHECK_DTYPE_NOT_SAME in order. */
static int check_dtypes(NormCtx *c) {
  NrmDtList l = {3, {SIM_DT_FLOAT16, SIM_DT_FLOAT, SIM_DT_BF16, 0}};
  int32_t dy = NT(c, AB_DY)->dtype, x;
  NTRY(nrm_dt_support(c, AB_DY, &l, SHOWN[AB_DY]));
  const int same[] = {AB_X, AB_RSTD, AB_MEAN, AB_SC, AB_SH};
  for (int i = 0; i < 5; i++) NTRY(nrm_dt_match(c, same[i], dy, SHOWN[same[i]]));
  x = NT(c, AB_X)->dtype;
  for (int s = AB_W; s <= AB_B; s++) {
    if (!NP(c, s)) continue;
    NTRY(nrm_dt_support(c, s, &l, SHOWN[s]));
    if (NT(c, s)->dtype != SIM_DT_FLOAT) NTRY(nrm_dt_match(c, s, x, SHOWN[s]));
  }
  if (NP(c, AB_W) && NP(c, AB_B)) NTRY(nrm_dt_match(c, AB_W, NT(c, AB_B)->dtype, SHOWN[AB_W]));
  if (NP(c, AB_GX)) NTRY(nrm_dt_match(c, AB_GX, x, SHOWN[AB_GX]));
  if (NP(c, AB_GSC)) NTRY(nrm_dt_match(c, AB_GSC, NT(c, AB_SC)->dtype, SHOWN[AB_GSC]));
  if (NP(c, AB_GSH)) NTRY(nrm_dt_match(c, AB_GSH, NT(c, AB_SH)->dtype, SHOWN[AB_GSH]));
  for (int s = AB_GW; s <= AB_GB; s++) {
    if (!NP(c, s)) continue;
    if (NP(c, AB_W)) NTRY(nrm_dt_match(c, s, NT(c, AB_W)->dtype, SHOWN[s]));
    else if (NP(c, AB_B)) NTRY(nrm_dt_match(c, s, NT(c, AB_B)->dtype, SHOWN[s]));
    else if (NT(c, s)->dtype != SIM_DT_FLOAT) NTRY(nrm_dt_match(c, s, x, SHOWN[s]));
  }
  return 0;
}

static bool dims_are(const SimTensorDesc *t, const int64_t *dims, int n) {
  if (t->ndim != n) return false;
  for (int i = 0; i < n; i++)
    if (t->dims[i] != dims[i]) return false;
  return true;
}

/* CheckShape (:275-328), in its order; N = the normalized elements (CalculateMN :361-373). */
static int check_shapes(NormCtx *c, const int64_t *norm, uint64_t nlen, int64_t N) {
  const int maxed[] = {AB_DY, AB_X, AB_MEAN, AB_RSTD, AB_SC, AB_SH, AB_GX, AB_GSC, AB_GSH, AB_GW, AB_GB};
  for (int i = 0; i < 11; i++)
    if (NP(c, maxed[i])) NTRY(nrm_max_dim(c, maxed[i], 8, SHOWN[maxed[i]]));
  NTRY(nrm_shape_same(c, AB_DY, SHOWN[AB_DY], AB_X, SHOWN[AB_X]));
  NTRY(nrm_shape_same(c, AB_MEAN, SHOWN[AB_MEAN], AB_RSTD, SHOWN[AB_RSTD]));
  if (nlen != 1)
    return nrm_fail(c, SIM_NN_INVALID, "Expected normalizedShape len %d, but got %" PRIu64 ".", 1, nlen);
  NTRY(nrm_min_dim(c, AB_X, 2, SHOWN[AB_X]));
  const SimTensorDesc *x = NT(c, AB_X);
  int n = x->ndim;
  if (norm[0] != x->dims[n - 1])
    return nrm_fail(c, SIM_NN_INVALID,
                    "Expected normalized index [0] shape [%" PRId64 "] be equal to tensor index [%d] shape [%" PRId64
                    "], but failed.",
                    norm[0], n - 1, x->dims[n - 1]);
  for (int s = AB_W; s <= AB_B; s++) {
    if (!NP(c, s)) continue;
    NTRY(nrm_max_dim(c, s, 8, SHOWN[s]));
    NTRY(nrm_wrong_dim(c, s, 1, SHOWN[s]));
  }
  int64_t b = 1, e1[SIM_MAX_DIMS], e2[SIM_MAX_DIMS];
  for (int i = 0; i < n - 2; i++) e1[i] = e2[i] = x->dims[i], b *= x->dims[i];
  e1[n - 2] = 1, e1[n - 1] = x->dims[n - 1], e2[n - 2] = x->dims[n - 1];
  if (b <= 0 || x->dims[n - 2] <= 0 || x->dims[n - 1] <= 0)
    return nrm_fail(c, SIM_NN_INVALID, "input sizes should greater than 0.");
  for (int s = AB_SC; s <= AB_SH; s++)
    if (!dims_are(NT(c, s), e1, n) && !dims_are(NT(c, s), e2, n - 1)) {
      char got[160];
      nrm_shape_str(NT(c, AB_SC), got, sizeof got);
      return nrm_fail(c, SIM_NN_INVALID, "Expected scale/shape shape %s to be [B..., 1, H] or [B..., H], but failed.",
                      got);
    }
  int64_t st[SIM_MAX_DIMS];
  for (int i = 0; i < n; i++) st[i] = i == n - 1 ? 1 : x->dims[i];
  if (!dims_are(NT(c, AB_MEAN), st, n))
    return nrm_fail(c, SIM_NN_INVALID, "Expected mean shape to be input's shape with a last dim of 1, but failed.");
  if (NP(c, AB_GX)) NTRY(nrm_shape_same(c, AB_GX, SHOWN[AB_GX], AB_X, SHOWN[AB_X]));
  if (NP(c, AB_GSC)) NTRY(nrm_shape_same(c, AB_GSC, SHOWN[AB_GSC], AB_SC, SHOWN[AB_SC]));
  if (NP(c, AB_GSH)) NTRY(nrm_shape_same(c, AB_GSH, SHOWN[AB_GSH], AB_SH, SHOWN[AB_SH]));
  for (int s = AB_GW; s <= AB_GB; s++)
    if (NP(c, s) && sim_desc_numel(NT(c, s)) != N) {
      char got[160];
      nrm_shape_str(NT(c, s), got, sizeof got);
      return nrm_fail(c, SIM_NN_INVALID, "Expected %s shape size [%s] to be [%" PRId64 "], but failed.", SHOWN[s], got,
                      N);
    }
  return 0;
}

int sim_ada_layer_norm_grad_ws(const void *gradOut, const void *input, const void *normalizedShape, const void *rstd,
                               const void *mean, const void *scale, const void *shift, const void *weight,
                               const void *bias, const void *gradInput, const void *gradScale, const void *gradShift,
                               const void *gradWeight, const void *gradBias, uint64_t *ws, void **exec) {
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_ADA_LAYER_NORM_GRAD, "aclnnAdaLayerNormBackward", 8, 5, SHOWN);
  NTRY(nrm_opp_path(c));
  NTRY(nrm_outparams(c, ws, exec));
  NTRY(nrm_soc(c));
  /* CheckNotNull (:51-63), in its order: mean before rstd. */
  NTRY(nrm_null(c, gradOut, "aclTensor", "gradOut", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, input, "aclTensor", "input", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, normalizedShape, "aclIntArray", "normalizedShape", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, mean, "aclTensor", "mean", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, rstd, "aclTensor", "rstd", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, scale, "aclTensor", "scale", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, shift, "aclTensor", "shift", SIM_NN_NULLPTR));
  const void *hs[] = {gradOut, input, rstd, mean, scale, shift, weight, bias, gradInput, gradScale, gradShift,
                      gradWeight, gradBias};
  for (int s = 0; s < AB_N; s++) NTRY(nrm_get(c, hs[s], s));
  int64_t norm[SIM_MAX_DIMS + 1] = {0};
  uint64_t nlen = 0;
  if (sim_lookup_int_array(normalizedShape, norm, SIM_MAX_DIMS + 1, &nlen) != 0)
    return nrm_fail(c, SIM_NN_INVALID, "normalizedShape (%p) is not a live aclIntArray", normalizedShape);
  int64_t M, N;
  int axis = NT(c, AB_X)->ndim - (int)nlen;
  nrm_rows_cols(NT(c, AB_X), axis < 0 ? 0 : axis, &M, &N);
  NTRY(check_dtypes(c));
  NTRY(check_shapes(c, norm, nlen, N));
  /* Every output NULL (:484-489): SUCCESS, nothing to do. */
  if (!NP(c, AB_GX) && !NP(c, AB_GSC) && !NP(c, AB_GSH) && !NP(c, AB_GW) && !NP(c, AB_GB))
    return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  /* The SoC gate (:436-455): other SoCs return SUCCESS with nothing launched, outputs untouched. */
  if (c->product != NP_A2 && c->product != NP_A3) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  /* [aclsim] CANN dereferences gradInputOut, gradScaleOut and gradShiftOut whether or not they are
   * NULL (GenOutWithMask with mask true, :450-452); a NULL one is left unwritten here. */
  /* [aclsim] the kernel reads H values of the weight and bias: CANN drops the comparison of their
   * shapes with normalizedShape (:307-308). */
  for (int s = AB_W; s <= AB_B; s++)
    if (NP(c, s)) NTRY(nrm_numel_is(c, s, N, "reads"));
  c->plan.norm_axis = NT(c, AB_X)->ndim - 1;
  c->plan.norm_dt[1] = (int32_t)NT(c, AB_X)->dims[NT(c, AB_X)->ndim - 2]; /* S */
  return nrm_finish(c, M, ws, exec);
}

/* z = (x - mean) * rstd (mean and rstd rounded to float: the op_api's Cast), sc = float(1 + scale);
 * g = dy * w * sc; gradInput = (g - mean(g) - z * mean(g * z)) * rstd; gradScale = sum over S of
 * dy * (z * w + b); gradShift = sum over S of dy; gradWeight = sum over rows of dy * sc * z,
 * gradBias of dy * sc. Each output rounded once by sim_store. */
int sim_run_ada_layer_norm_grad(const SimPlan *p) {
  int64_t rows, H;
  nrm_rows_cols(&p->t[AB_X], p->norm_axis, &rows, &H);
  int64_t seq = p->norm_dt[1], batches = rows / seq;
  double *dy = sim_load(&p->t[AB_DY]), *x = sim_load(&p->t[AB_X]), *rstd = sim_load(&p->t[AB_RSTD]);
  double *mean = sim_load(&p->t[AB_MEAN]), *sc = sim_load(&p->t[AB_SC]);
  double *w = p->present[AB_W] ? sim_load(&p->t[AB_W]) : NULL, *b = p->present[AB_B] ? sim_load(&p->t[AB_B]) : NULL;
  double *gx = nrm_zalloc(rows * H), *gsc = nrm_zalloc(batches * H), *gsh = nrm_zalloc(batches * H);
  double *gw = nrm_zalloc(H), *gb = nrm_zalloc(H), *z = nrm_zalloc(H), *g = nrm_zalloc(H);
  for (int64_t i = 0; i < batches * H; i++) sc[i] = nrm_round(1.0 + sc[i], SIM_DT_FLOAT);
  for (int64_t r = 0; r < rows; r++) {
    double m = nrm_round(mean[r], SIM_DT_FLOAT), rs = nrm_round(rstd[r], SIM_DT_FLOAT), s1 = 0, s2 = 0;
    const double *dr = dy + r * H, *xr = x + r * H, *scr = sc + r / seq * H;
    double *gsr = gsc + r / seq * H, *ghr = gsh + r / seq * H;
    for (int64_t i = 0; i < H; i++) {
      double wi = w ? w[i] : 1.0, bi = b ? b[i] : 0.0;
      z[i] = (xr[i] - m) * rs;
      g[i] = dr[i] * wi * scr[i];
      s1 += g[i], s2 += g[i] * z[i];
      gsr[i] += dr[i] * (z[i] * wi + bi);
      ghr[i] += dr[i];
      gw[i] += dr[i] * scr[i] * z[i];
      gb[i] += dr[i] * scr[i];
    }
    for (int64_t i = 0; i < H; i++) gx[r * H + i] = (g[i] - s1 / (double)H - z[i] * (s2 / (double)H)) * rs;
  }
  const int outs[] = {AB_GX, AB_GSC, AB_GSH, AB_GW, AB_GB};
  double *vals[] = {gx, gsc, gsh, gw, gb};
  for (int k = 0; k < 5; k++)
    if (p->present[outs[k]]) sim_store(&p->t[outs[k]], vals[k]);
  return 0;
}
