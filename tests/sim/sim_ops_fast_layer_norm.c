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

/* The tensors are in aclnnLayerNorm's slots, with its names (LN_*, nrm_ln_names: sim_ops_norm.h):
 * the two prototypes list them in one order. */
static const char DOC[] = "ops-nn norm/layer_norm_v4/docs/aclnnFastLayerNorm.md";

/* CheckInputDtype and CheckFastOutputDtype (:65-99), in their order. */
static int check_dtypes(NormCtx *c) {
  const NrmDtList l = {3, {SIM_DT_FLOAT16, SIM_DT_FLOAT, SIM_DT_BF16, 0}};
  NTRY(nrm_dt_support(c, LN_X, &l, "input"));
  NTRY(nrm_ln_param_dtype(c, LN_W, &l, "weightOptional"));
  NTRY(nrm_dt_same(c, LN_W, "weightOptional", LN_B, "biasOptional"));
  NTRY(nrm_ln_param_dtype(c, LN_B, &l, "biasOptional"));
  NTRY(nrm_dt_support(c, LN_Y, &l, "out"));
  NTRY(nrm_dt_support(c, LN_RSTD, &l, "rstdOutOptional"));
  return nrm_dt_support(c, LN_MEAN, &l, "meanOutOptional");
}

/* CheckShape (:184-221), in its order. */
static int check_shapes(NormCtx *c, const int64_t *norm, int64_t nlen) {
  if (nlen < 1)
    return nrm_fail(c, SIM_NN_INVALID,
                    "Expected aclnnFastLayerNorm normalizedShape len [%" PRId64
                    "] to be greater than [1] but check failed.",
                    nlen);
  /* CheckLen (:120-139), then CheckArrayLen (:101-110). */
  const int slots[6] = {LN_Y, LN_X, LN_W, LN_RSTD, LN_MEAN, LN_B};
  for (int i = 0; i < 6; i++) NTRY(nrm_max_dim(c, slots[i], LN_MAX_DIM, nrm_ln_names[slots[i]]));
  if (nlen > LN_MAX_DIM)
    return nrm_fail(c, SIM_NN_INVALID,
                    "Expected aclnnFastLayerNorm normalizedShape dim [%" PRId64
                    "] to not be greater than [%d] but check failed.",
                    nlen, LN_MAX_DIM);
  NTRY(nrm_wrong_dim(c, LN_W, (int)nlen, "weightOptional"));
  if (NT(c, LN_X)->ndim < nlen)
    return nrm_fail(c, SIM_NN_INVALID, "The input tensor's dimensions must not be smaller than normalizedShape's size.");
  NTRY(nrm_wrong_dim(c, LN_B, (int)nlen, "biasOptional"));
  NTRY(nrm_ln_normalized_dims(c, norm, nlen)); /* CheckNormalizeShape (:141-182) */
  return nrm_shape_same(c, LN_X, "input", LN_Y, "out");
}

int sim_fast_layer_norm_ws(const void *input, const void *normalizedShape, const void *weight, const void *bias,
                           double eps, void *out, void *meanOut, void *rstdOut, uint64_t *ws, void **exec) {
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_FAST_LAYER_NORM, "aclnnFastLayerNorm", 3, 3, nrm_ln_names);
  NTRY(nrm_opp_path(c));
  NTRY(nrm_outparams(c, ws, exec));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, NP_A3 | NP_A2, DOC));
  /* CheckFastNotNull (:112-118) -> 161001 */
  int64_t norm[LN_MAX_DIM + 1] = {0};
  uint64_t nlen;
  NTRY(nrm_ln_args(c, input, normalizedShape, weight, bias, out, meanOut, rstdOut, norm, &nlen));
  NTRY(check_dtypes(c));
  NTRY(check_shapes(c, norm, (int64_t)nlen));
  int axis = NT(c, LN_X)->ndim - (int)nlen;
  /* LayerNormV4's epsilon attribute is a float (layer_norm_v4.cpp:43). */
  c->plan.eps = (double)(float)eps;
  c->plan.norm_axis = axis;
  int64_t M, N;
  nrm_rows_cols(NT(c, LN_X), axis, &M, &N);
  /* Empty tensors (:355-373): N == 0 first (whatever M), then M == 0. */
  if (N == 0) {
    nrm_fill(c, LN_MEAN, 0.0);
    nrm_fill(c, LN_RSTD, NAN);
    return nrm_finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  if (M == 0) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  /* doFastLayerNorm (:271-317): y (input's dtype) ViewCopy'd into out without a cast; rstd, then
   * mean, cast to their outputs' dtypes and ViewCopy'd from [A1..Ai, 1..1] (layer_norm_v4.cpp:33-37). */
  if (NT(c, LN_Y)->dtype != NT(c, LN_X)->dtype)
    return nrm_fail(c, SIM_NN_INNER_NULLPTR,
                    "Input tensor's dtype[%s] should be same with output's dtype[%s]. (l0op::ViewCopy of the result "
                    "into out)",
                    sim_dt_str(NT(c, LN_X)->dtype), sim_dt_str(NT(c, LN_Y)->dtype));
  SimTensorDesc stat = nrm_ln_stat_shape(c, axis);
  if (NP(c, LN_RSTD)) NTRY(nrm_view_copy(c, LN_RSTD, &stat));
  if (NP(c, LN_MEAN)) NTRY(nrm_view_copy(c, LN_MEAN, &stat));
  /* LayerNormV4: mean and rstd FLOAT, y the input's dtype (sim_run_layer_norm's norm_dt). */
  c->plan.norm_dt[0] = SIM_DT_FLOAT;
  c->plan.norm_dt[1] = SIM_DT_FLOAT;
  c->plan.norm_dt[2] = NT(c, LN_X)->dtype;
  return nrm_finish(c, M, ws, exec);
}
