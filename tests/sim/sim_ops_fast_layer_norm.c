/*
 * Software CANN ("aclsim") -- aclnnFastLayerNorm: phase-1 validation as CANN performs it and
 * planning; the computation is aclnnLayerNorm's (sim_ops_layer_norm.c, sim_run_layer_norm) on a
 * plan in its slot order with LayerNormV4's dtypes.
 *
 * Source: hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921 (2026-08-22),
 *   norm/layer_norm_v4/op_host/op_api/aclnn_fast_layer_norm.cpp (cited as
 *   "aclnn_fast_layer_norm.cpp:<line>"), layer_norm_v4.cpp (the l0 operator),
 *   norm/layer_norm_v4/docs/aclnnFastLayerNorm.md (products).
 * Phase 1 (aclnnFastLayerNormGetWorkspaceSize, :319-382):
 *   1. CheckFastNotNull: input, normalizedShape, out (OP_CHECK_NULL -> 161001) (:112-118, :333).
 *   2. CheckParams (:223-235) -> 161002:
 *      CheckInputDtype (:65-86): input in {FLOAT16, FLOAT, BF16} on every SoC (:50-53); weight in
 *      the list and, unless FLOAT, input's dtype; weight == bias; bias in the list and, unless
 *      FLOAT, input's dtype.
 *      CheckFastOutputDtype (:87-99): out, rstdOut, meanOut in the list (nothing else: the
 *      statistics are cast to their dtypes).
 *      CheckShape (:184-221): len(normalizedShape) >= 1; CheckLen: out, input, weight, rstdOut,
 *      meanOut, bias at most 8 dims, then len(normalizedShape) <= 8 (:101-110, :120-139); weight
 *      rank == len; input rank >= len; bias rank == len; CheckNormalizeShape per index: input,
 *      weight, bias (:141-182); out == input.
 *   3. M (rows), N (reduced) (:341-353): N == 0 -> meanOut filled with 0, rstdOut with NaN,
 *      SUCCESS (also when M == 0); then M == 0 -> SUCCESS, nothing written (:355-373).
 *   4. doFastLayerNorm (:271-317): weight / bias filled (ones / zeros) when absent (:237-269), one
 *      l0op::LayerNormV4 (mean, rstd FLOAT: layer_norm_v4.cpp:39-40; y the input's dtype);
 *      l0op::ViewCopy of y into out (no cast: out of another dtype than input's -> 561103), then
 *      rstd and mean l0op::Cast to their outputs' dtypes and ViewCopy'd (shapes -> 561103).
 * Products ("产品支持情况"): Atlas A3 and Atlas A2 only.
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <math.h>

/* The slots of sim_ops_layer_norm.c (LN_*): the prototypes list the tensors in the same order. */
enum { FL_X, FL_W, FL_B, FL_Y, FL_MEAN, FL_RSTD };
enum { FL_MAX_DIM = 8 }; /* MAX_DIM_LEN, aclnn_fast_layer_norm.cpp:32 */

static const char *const NAMES[] = {"input", "weightOptional", "biasOptional", "out", "meanOutOptional",
                                    "rstdOutOptional"};
static const char DOC[] = "ops-nn norm/layer_norm_v4/docs/aclnnFastLayerNorm.md";

/* CheckInputDtype and CheckFastOutputDtype (:65-99), in their order. */
static int check_dtypes(NormCtx *c) {
  const NrmDtList l = {3, {SIM_DT_FLOAT16, SIM_DT_FLOAT, SIM_DT_BF16, 0}};
  NTRY(nrm_dt_support(c, FL_X, &l, "input"));
  if (NP(c, FL_W)) {
    NTRY(nrm_dt_support(c, FL_W, &l, "weightOptional"));
    if (NT(c, FL_W)->dtype != SIM_DT_FLOAT) NTRY(nrm_dt_same(c, FL_W, "weightOptional", FL_X, "input"));
  }
  NTRY(nrm_dt_same(c, FL_W, "weightOptional", FL_B, "biasOptional"));
  if (NP(c, FL_B)) {
    NTRY(nrm_dt_support(c, FL_B, &l, "biasOptional"));
    if (NT(c, FL_B)->dtype != SIM_DT_FLOAT) NTRY(nrm_dt_same(c, FL_B, "biasOptional", FL_X, "input"));
  }
  NTRY(nrm_dt_support(c, FL_Y, &l, "out"));
  NTRY(nrm_dt_support(c, FL_RSTD, &l, "rstdOutOptional"));
  return nrm_dt_support(c, FL_MEAN, &l, "meanOutOptional");
}

/* CheckShape (:184-221), in its order. */
static int check_shapes(NormCtx *c, const int64_t *norm, int64_t nlen) {
  if (nlen < 1)
    return nrm_fail(c, SIM_NN_INVALID,
                    "Expected aclnnFastLayerNorm normalizedShape len [%" PRId64
                    "] to be greater than [1] but check failed.",
                    nlen);
  /* CheckLen (:120-139), then CheckArrayLen (:101-110). */
  const int slots[6] = {FL_Y, FL_X, FL_W, FL_RSTD, FL_MEAN, FL_B};
  for (int i = 0; i < 6; i++) NTRY(nrm_max_dim(c, slots[i], FL_MAX_DIM, NAMES[slots[i]]));
  if (nlen > FL_MAX_DIM)
    return nrm_fail(c, SIM_NN_INVALID,
                    "Expected aclnnFastLayerNorm normalizedShape dim [%" PRId64
                    "] to not be greater than [%d] but check failed.",
                    nlen, FL_MAX_DIM);
  NTRY(nrm_wrong_dim(c, FL_W, (int)nlen, "weightOptional"));
  if (NT(c, FL_X)->ndim < nlen)
    return nrm_fail(c, SIM_NN_INVALID, "The input tensor's dimensions must not be smaller than normalizedShape's size.");
  NTRY(nrm_wrong_dim(c, FL_B, (int)nlen, "biasOptional"));
  /* CheckNormalizeShape (:141-182). */
  const SimTensorDesc *x = NT(c, FL_X);
  int axis = x->ndim - (int)nlen;
  for (int i = 0; i < (int)nlen; i++) {
    if (norm[i] != x->dims[i + axis])
      return nrm_fail(c, SIM_NN_INVALID,
                      "Expected normalized index [%d] shape [%" PRId64 "] be equal to input index [%d] shape [%" PRId64
                      "], but failed.",
                      i, norm[i], i + axis, x->dims[i + axis]);
    const int opt[2] = {FL_W, FL_B};
    const char *const what[2] = {"weight", "bias"};
    for (int k = 0; k < 2; k++)
      if (NP(c, opt[k]) && norm[i] != NT(c, opt[k])->dims[i])
        return nrm_fail(c, SIM_NN_INVALID,
                        "Expected normalized index [%d] shape [%" PRId64 "] be equal to %s index [%d] shape [%" PRId64
                        "], but failed.",
                        i, norm[i], what[k], i, NT(c, opt[k])->dims[i]);
  }
  return nrm_shape_same(c, FL_X, "input", FL_Y, "out");
}

int sim_fast_layer_norm_ws(const void *input, const void *normalizedShape, const void *weight, const void *bias,
                           double eps, void *out, void *meanOut, void *rstdOut, uint64_t *ws, void **exec) {
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_FAST_LAYER_NORM, "aclnnFastLayerNorm", 3, 3, NAMES);
  NTRY(nrm_opp_path(c));
  NTRY(nrm_outparams(c, ws, exec));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, NP_A3 | NP_A2, DOC));
  /* CheckFastNotNull (:112-118) -> 161001 */
  NTRY(nrm_null(c, input, "aclTensor", "input", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, normalizedShape, "aclIntArray", "normalizedShape", SIM_NN_NULLPTR));
  NTRY(nrm_null(c, out, "aclTensor", "out", SIM_NN_NULLPTR));
  const void *hs[] = {input, weight, bias, out, meanOut, rstdOut};
  for (int s = FL_X; s <= FL_RSTD; s++) NTRY(nrm_get(c, hs[s], s));
  int64_t norm[FL_MAX_DIM + 1] = {0};
  uint64_t nlen = 0;
  if (sim_lookup_int_array(normalizedShape, norm, FL_MAX_DIM + 1, &nlen) != 0)
    return nrm_fail(c, SIM_NN_INVALID, "normalizedShape (%p) is not a live aclIntArray", normalizedShape);
  NTRY(check_dtypes(c));
  NTRY(check_shapes(c, norm, (int64_t)nlen));
  int axis = NT(c, FL_X)->ndim - (int)nlen;
  /* LayerNormV4's epsilon attribute is a float (layer_norm_v4.cpp:43). */
  c->plan.eps = (double)(float)eps;
  c->plan.norm_axis = axis;
  int64_t M, N;
  nrm_rows_cols(NT(c, FL_X), axis, &M, &N);
  /* Empty tensors (:355-373): N == 0 first (whatever M), then M == 0. */
  if (N == 0) {
    nrm_fill(c, FL_MEAN, 0.0);
    nrm_fill(c, FL_RSTD, NAN);
    return nrm_finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  if (M == 0) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  /* doFastLayerNorm (:271-317): y (input's dtype) ViewCopy'd into out without a cast; rstd, then
   * mean, cast to their outputs' dtypes and ViewCopy'd from [A1..Ai, 1..1] (layer_norm_v4.cpp:33-37). */
  if (NT(c, FL_Y)->dtype != NT(c, FL_X)->dtype)
    return nrm_fail(c, SIM_NN_INNER_NULLPTR,
                    "Input tensor's dtype[%s] should be same with output's dtype[%s]. (l0op::ViewCopy of the result "
                    "into out)",
                    sim_dt_str(NT(c, FL_X)->dtype), sim_dt_str(NT(c, FL_Y)->dtype));
  SimTensorDesc stat = nrm_shape_of(NT(c, FL_X)->dims, NT(c, FL_X)->ndim);
  for (int i = axis; i < stat.ndim; i++) stat.dims[i] = 1;
  if (NP(c, FL_RSTD)) NTRY(nrm_view_copy(c, FL_RSTD, &stat));
  if (NP(c, FL_MEAN)) NTRY(nrm_view_copy(c, FL_MEAN, &stat));
  /* LayerNormV4: mean and rstd FLOAT, y the input's dtype (sim_run_layer_norm's norm_dt). */
  c->plan.norm_dt[0] = SIM_DT_FLOAT;
  c->plan.norm_dt[1] = SIM_DT_FLOAT;
  c->plan.norm_dt[2] = NT(c, FL_X)->dtype;
  return nrm_finish(c, M, ws, exec);
}
