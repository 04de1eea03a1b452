/*
 * Software CANN ("aclsim") -- aclnnLayerNormBackward: phase-1 validation as CANN performs it,
 * planning, and the computation run at stream synchronisation (double accumulation, CANN's
 * intermediate dtypes, every output rounded to its dtype).
 *
 * Source: hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921 (2026-08-22),
 *   norm/layer_norm_grad_v3/op_host/op_api/aclnn_layer_norm_backward.cpp
 *   (cited as "aclnn_layer_norm_backward.cpp:<line>"), the l0 operators beside it
 *   (layer_norm_grad_v3.cpp, layer_norm_x_backprop_v3.cpp, layer_norm_beta_gamma_backprop_v2.cpp)
 *   and norm/layer_norm_grad_v3/docs/aclnnLayerNormBackward.md (products, dtypes per product).
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

enum { LB_DY, LB_X, LB_MEAN, LB_RSTD, LB_W, LB_B, LB_GI, LB_GW, LB_GB };
enum { LB_MAX_DIM = 8 }; /* MAX_DIM_LEN, aclnn_layer_norm_backward.cpp:38 */

/* Products (docs "产品支持情况"): 950, A3, A2, Atlas inference (310P), Atlas training (910); not
 * the Atlas 200I/500 A2 (310B). The docs refuse BFLOAT16 on the Atlas training and inference
 * series ("参数 ... 的数据类型不支持BFLOAT16", npu="910,310p"). */
static const unsigned LB_PRODUCTS = NP_950 | NP_A3 | NP_A2 | NP_310P | NP_910;
static const unsigned LB_NO_BF16 = NP_910 | NP_310P;
static const char *const LB_DOC = "ops-nn norm/layer_norm_grad_v3/docs/aclnnLayerNormBackward.md";

static const char *const SHOWN[] = {"gradOut", "input", "mean", "rstd", "weightOptional", "biasOptional",
                                    "gradInputOut", "gradWeightOut", "gradBiasOut"};

/* CheckDtype (aclnn_layer_norm_backward.cpp:78-106): DTYPE_SUPPORT_LIST (:50-51) on every SoC;
 * gradOut == input; a weight of another dtype than FLOAT must be input's; the outputs are checked
 * when non-NULL, whatever outputMask says. */
static int check_dtypes(NormCtx *c) {
  const NrmDtList l = {3, {SIM_DT_FLOAT16, SIM_DT_FLOAT, SIM_DT_BF16, 0}};
  for (int s = LB_DY; s <= LB_RSTD; s++) NTRY(nrm_dt_support(c, s, &l, SHOWN[s]));
  NTRY(nrm_dt_same(c, LB_DY, "gradOut", LB_X, "input"));
  NTRY(nrm_dt_support(c, LB_W, &l, SHOWN[LB_W]));
  if (NP(c, LB_W) && NT(c, LB_W)->dtype != SIM_DT_FLOAT) NTRY(nrm_dt_same(c, LB_W, SHOWN[LB_W], LB_X, "input"));
  for (int s = LB_B; s <= LB_GB; s++) NTRY(nrm_dt_support(c, s, &l, SHOWN[s]));
  /* The documentation's bf16 rule (see LB_NO_BF16): CANN's list accepts BFLOAT16 everywhere, the
   * simulator follows the documentation. */
  if (!(c->product & LB_NO_BF16)) return 0;
  for (int s = LB_DY; s <= LB_GB; s++)
    if (NP(c, s) && NT(c, s)->dtype == SIM_DT_BF16)
      return nrm_fail(c, SIM_NN_INVALID,
                      "%s is DT_BF16, which the %s does not support (CANN's documentation, %s; its dtype list "
                      "alone would accept it)",
                      SHOWN[s], nrm_product_name(c->product), LB_DOC);
  return 0;
}

/* CheckShapeEqual (aclnn_layer_norm_backward.cpp:108-126) as written: the loop starts at
 * axis = rank - len(normalizedShape), so only indices [axis, len) are compared (none when
 * axis >= len). Called with weight/bias (rank == len) it compares every dim. */
static int shape_equal(NormCtx *c, const SimTensorDesc *t, const int64_t *norm, int nlen) {
  int axis = t->ndim - nlen;
  for (int i = axis; i < nlen; i++)
    if (norm[i] != t->dims[i + axis])
      return nrm_fail(c, SIM_NN_INVALID,
                      "Expected normalized index [%d] shape [%" PRId64 "] be equal to tensor index [%d] shape [%" PRId64
                      "], but failed.",
                      i, norm[i], i + axis, t->dims[i + axis]);
  return 0;
}

/* "Expected aclnnLayerNormBackward <what> shape size [<shape>] to be equal to [<n>] but check failed." */
static int grad_param_numel(NormCtx *c, int s, int64_t N) {
  if (!c->plan.mask[s - LB_GI] || sim_desc_numel(NT(c, s)) == N) return 0;
  char sh[200];
  nrm_shape_str(NT(c, s), sh, sizeof sh);
  return nrm_fail(c, SIM_NN_INVALID,
                  "Expected aclnnLayerNormBackward %s shape size [%s] to be equal to [%" PRId64 "] but check failed.",
                  SHOWN[s], sh, N);
}

/* CheckShape (aclnn_layer_norm_backward.cpp:128-214), in its order. */
static int check_shapes(NormCtx *c, const int64_t *norm, int64_t nlen, int64_t M, int64_t N) {
  for (int s = LB_DY; s <= LB_RSTD; s++) NTRY(nrm_max_dim(c, s, LB_MAX_DIM, SHOWN[s]));
  if (nlen > LB_MAX_DIM)
    return nrm_fail(c, SIM_NN_INVALID,
                    "Expected aclnnLayerNormBackward normalizedShape len [%" PRId64 "] to not be greater than [%d] but "
                    "check failed.",
                    nlen, LB_MAX_DIM);
  for (int s = LB_GI; s <= LB_GB; s++)
    if (c->plan.mask[s - LB_GI]) NTRY(nrm_max_dim(c, s, LB_MAX_DIM, SHOWN[s]));
  if (nlen < 1)
    return nrm_fail(c, SIM_NN_INVALID,
                    "Expected aclnnLayerNormBackward normalizedShape len [%" PRId64 "] to be greater than [1] but check "
                    "failed.",
                    nlen);
  NTRY(nrm_min_dim(c, LB_X, (int)nlen, "input"));
  NTRY(shape_equal(c, NT(c, LB_X), norm, (int)nlen));
  for (int s = LB_W; s <= LB_B; s++) {
    if (!NP(c, s)) continue;
    NTRY(nrm_max_dim(c, s, LB_MAX_DIM, SHOWN[s]));
    NTRY(nrm_wrong_dim(c, s, (int)nlen, SHOWN[s]));
    NTRY(shape_equal(c, NT(c, s), norm, (int)nlen));
  }
  NTRY(nrm_shape_same(c, LB_DY, "gradOut", LB_X, "input"));
  NTRY(nrm_shape_same(c, LB_MEAN, "mean", LB_RSTD, "rstd"));
  if (sim_desc_numel(NT(c, LB_MEAN)) != M) {
    char sh[200];
    nrm_shape_str(NT(c, LB_MEAN), sh, sizeof sh);
    return nrm_fail(c, SIM_NN_INVALID,
                    "Expected aclnnLayerNormBackward mean shape size %s to be equal to %" PRId64 " but check failed.",
                    sh, M);
  }
  if (c->plan.mask[0]) NTRY(nrm_shape_same(c, LB_GI, "gradInputOut", LB_X, "input"));
  NTRY(grad_param_numel(c, LB_GW, N));
  return grad_param_numel(c, LB_GB, N);
}

int sim_layer_norm_backward_ws(const void *gradOut, const void *input, const void *normalizedShape, const void *mean,
                               const void *rstd, const void *weight, const void *bias, const void *outputMask,
                               void *gradInput, void *gradWeight, void *gradBias, uint64_t *ws, void **exec) {
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_LAYER_NORM_BACKWARD, "aclnnLayerNormBackward", 6, 3, SHOWN);
  NTRY(nrm_opp_path(c));
  NTRY(nrm_outparams(c, ws, exec));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, LB_PRODUCTS, LB_DOC));
  /* CheckNotNull (:53-64) -> 161001 */
  NTRY(nrm_null(c, gradOut, "aclTensor", "gradOut", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, input, "aclTensor", "input", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, normalizedShape, "aclIntArray", "normalizedShape", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, mean, "aclTensor", "mean", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, rstd, "aclTensor", "rstd", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, outputMask, "aclBoolArray", "outputMask", SIM_NN_NULLPTR));
  bool mv[16] = {false};
  uint64_t mn = 0;
  if (sim_lookup_bool_array(outputMask, mv, 16, &mn) != 0)
    return nrm_fail(c, SIM_NN_INVALID, "outputMask (%p) is not a live aclBoolArray", outputMask);
  /* outputMask must have 3 entries (:263-268) -> 161002; a masked-on output must be non-NULL
   * (:269-277) -> 161001. */
  if (mn != 3)
    return nrm_fail(c, SIM_NN_INVALID, "Expected aclnnLayerNormBackward outputMask len to be 3, but got %" PRIu64 ".",
                    mn);
  const void *outs[3] = {gradInput, gradWeight, gradBias};
  for (int k = 0; k < 3; k++) {
    c->plan.mask[k] = mv[k];
    if (mv[k]) NTRY(nrm_null(c, outs[k], "aclTensor", SHOWN[LB_GI + k], SIM_NN_NULLPTR));
  }
  const void *hs[] = {gradOut, input, mean, rstd, weight, bias, gradInput, gradWeight, gradBias};
  for (int s = LB_DY; s <= LB_GB; s++) NTRY(nrm_get(c, hs[s], s));
  int64_t norm[LB_MAX_DIM + 1] = {0};
  uint64_t nlen = 0;
  if (sim_lookup_int_array(normalizedShape, norm, LB_MAX_DIM + 1, &nlen) != 0)
    return nrm_fail(c, SIM_NN_INVALID, "normalizedShape (%p) is not a live aclIntArray", normalizedShape);
  /* M and N from the input's dims around beginAxis = rank - len(normalizedShape) (:279-290). */
  int axis = NT(c, LB_X)->ndim - (int)nlen;
  int64_t M, N;
  nrm_rows_cols(NT(c, LB_X), axis < 0 ? 0 : axis, &M, &N);
  NTRY(check_dtypes(c));
  NTRY(check_shapes(c, norm, (int64_t)nlen, M, N));
  c->plan.norm_axis = axis;
  /* biasOptional is validated, never used; masked-off outputs are neither written nor touched. */
  NP(c, LB_B) = false;
  for (int k = 0; k < 3; k++)
    if (!c->plan.mask[k]) NP(c, LB_GI + k) = false;
  /* Every mask bit false (:296-301): SUCCESS, nothing to do. */
  if (!c->plan.mask[0] && !c->plan.mask[1] && !c->plan.mask[2]) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  /* Empty (:303-316): M == 0 fills the masked gradWeightOut / gradBiasOut with 0; otherwise
   * nothing is written. */
  if (M <= 0 || N <= 0) {
    if (M <= 0) {
      nrm_fill(c, LB_GW, 0.0);
      nrm_fill(c, LB_GB, 0.0);
    }
    return nrm_finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  /* [aclsim] the kernel reads N values of the weight; CANN compares its shape with
   * normalizedShape only. */
  NTRY(nrm_numel_is(c, LB_W, N, "reads"));
  /* Result dtypes (:339-416): gradInput in the input's dtype (layer_norm_grad_v3.cpp:30,
   * layer_norm_x_backprop_v3.cpp:29); gradWeight/gradBias FLOAT (LayerNormGradV3's gradWeightType
   * on DAV_2201, LayerNormBetaGammaBackpropV2 elsewhere, layer_norm_beta_gamma_backprop_v2.cpp:36-37),
   * except on regbase when every masked one already has the weight's dtype (a missing weight is
   * ones of the input's dtype): then that dtype. Each is cast to its output's dtype (GenOutWithMask). */
  int32_t wt = NP(c, LB_W) ? NT(c, LB_W)->dtype : NT(c, LB_X)->dtype;
  /* GenOutWithMask casts each masked result and copies it with l0op::ViewCopy (:233-244), but
   * its status is ignored (:359-362, :413-415): a gradWeightOut / gradBiasOut of N elements
   * whose shape is not the result's (and not one element like it) makes ViewCopy return nullptr
   * before it queues the copy, and phase 1 still returns 0. That output stays unwritten. The
   * results' shape: LayerNormGradV3 (DAV_2201 or regbase, :339-341) allocates the weight's view
   * shape (layer_norm_grad_v3.cpp:31-32; a missing weight is Fill(normalizedShape), :331-334);
   * the split path squeezes LayerNormBetaGammaBackpropV2's [1..1, input's normalized dims]
   * (layer_norm_beta_gamma_backprop_v2.cpp:32-37) to the input's normalized dims (:400-410). */
  SimTensorDesc res;
  if (c->soc.npu_arch == NRM_DAV_2201 || nrm_regbase(c))
    res = NP(c, LB_W) ? nrm_shape_of(NT(c, LB_W)->dims, NT(c, LB_W)->ndim) : nrm_shape_of(norm, (int)nlen);
  else
    res = nrm_shape_of(NT(c, LB_X)->dims + axis, NT(c, LB_X)->ndim - axis);
  for (int s = LB_GW; s <= LB_GB; s++)
    if (NP(c, s) && !nrm_view_copy_ok(c, s, &res)) NP(c, s) = false;
  bool keep = nrm_regbase(c) && (!c->plan.mask[2] || NT(c, LB_GB)->dtype == wt) &&
              (!c->plan.mask[1] || NT(c, LB_GW)->dtype == wt);
  c->plan.norm_dt[0] = NT(c, LB_X)->dtype;
  c->plan.norm_dt[1] = keep ? wt : SIM_DT_FLOAT;
  return nrm_finish(c, M, ws, exec);
}

/* The documentation's formulas (aclnnLayerNormBackward.md "计算公式"), with xhat = (x - mean) * rstd
 * and g = gradOut * weight: gradInput = rstd * (g - mean(g) - xhat * mean(g * xhat)) over the
 * normalized dims; gradWeight = sum over rows of gradOut * xhat; gradBias = sum of gradOut. */
int sim_run_layer_norm_backward(const SimPlan *p) {
  int64_t M, N;
  nrm_rows_cols(&p->t[LB_X], p->norm_axis, &M, &N);
  double *dy = sim_load(&p->t[LB_DY]), *x = sim_load(&p->t[LB_X]);
  double *mean = sim_load(&p->t[LB_MEAN]), *rstd = sim_load(&p->t[LB_RSTD]);
  double *w = p->present[LB_W] ? sim_load(&p->t[LB_W]) : NULL;
  double *gi = nrm_zalloc(M * N), *gw = nrm_zalloc(N), *gb = nrm_zalloc(N);
  for (int64_t r = 0; r < M; r++) {
    const double *dr = dy + r * N, *xr = x + r * N;
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < N; i++) {
      double xhat = (xr[i] - mean[r]) * rstd[r], g = dr[i] * (w ? w[i] : 1.0);
      s1 += g;
      s2 += g * xhat;
      gw[i] += dr[i] * xhat;
      gb[i] += dr[i];
    }
    for (int64_t i = 0; i < N; i++) {
      double xhat = (xr[i] - mean[r]) * rstd[r], g = dr[i] * (w ? w[i] : 1.0);
      gi[r * N + i] = nrm_round(rstd[r] * (g - s1 / (double)N - xhat * s2 / (double)N), p->norm_dt[0]);
    }
  }
  for (int64_t i = 0; i < N; i++) {
    gw[i] = nrm_round(gw[i], p->norm_dt[1]);
    gb[i] = nrm_round(gb[i], p->norm_dt[1]);
  }
  if (p->present[LB_GI]) sim_store(&p->t[LB_GI], gi);
  if (p->present[LB_GW]) sim_store(&p->t[LB_GW], gw);
  if (p->present[LB_GB]) sim_store(&p->t[LB_GB], gb);
  return 0;
}
