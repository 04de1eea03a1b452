/*
 * Software CANN ("aclsim") -- aclnnBatchNormReduce: phase-1 validation as CANN performs it,
 * planning, and the computation run at stream synchronisation (double accumulation, each output
 * rounded once to its dtype).
 *
 * Source: hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921 (2026-08-22),
 *   norm/bn_training_reduce/op_api/aclnn_batch_norm_reduce.cpp ("cpp:<line>"),
 *   op_kernel/arch35/bn_training_reduce.h (the Ascend 950 kernel), docs/aclnnBatchNormReduce.md.
 * Phase 1 (aclnnBatchNormReduceGetWorkspaceSize, cpp:166-215):
 *   1. CheckNotNull: x, sum, squareSum (OP_CHECK_NULL -> 161001, cpp:46-52).
 *   2. x, sum or squareSum empty: sum and squareSum filled with 0 (ProcessEmptyTensorWithValue),
 *      SUCCESS -- before any dtype, format or shape check (cpp:186-194).
 *   3. CheckDtypeValid: x in {FLOAT, FLOAT16, BF16} on every SoC, sum and squareSum FLOAT
 *      (OP_CHECK_DTYPE_NOT_SUPPORT, cpp:54-60) -> 161002.
 *   4. CheckFormat: x's storage format NCHW or NHWC, sum and squareSum ND (cpp:62-84) -> 161002.
 *   5. CheckShape: x 4-D (OP_CHECK_WRONG_DIMENSION), sum and squareSum 1-D, each of C elements,
 *      C = dim 3 of an NHWC x, else dim 1 (cpp:86-117) -> 161002.
 * Then l0op::BNTrainingReduce on the contiguous x (float sums, squeezed and ViewCopy'd).
 * Products ("产品支持情况"): Ascend 950, Atlas A3, Atlas A2; not the Atlas 200I/500 A2, inference
 * or training series.  The op definition registers ascend950 only (op_host/bn_training_reduce_def.cpp:45);
 * the A2/A3 kernel is not in ops-nn and is taken to compute the same sums.
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

enum { BR_X, BR_SUM, BR_SQ };

static const unsigned BR_PRODUCTS = NP_950 | NP_A3 | NP_A2;
static const char *const NAMES[] = {"x", "sum", "squareSum"};

/* CheckFormat (cpp:62-84), OP_LOGE texts. */
static int check_format(NormCtx *c) {
  int32_t f = NT(c, BR_X)->format;
  if (f != SIM_FMT_NCHW && f != SIM_FMT_NHWC)
    return nrm_fail(c, SIM_NN_INVALID, "Format of x only supports [NCHW, NHWC], but format is [%s].", sim_format_name(f));
  for (int s = BR_SUM; s <= BR_SQ; s++)
    if (NT(c, s)->format != SIM_FMT_ND)
      return nrm_fail(c, SIM_NN_INVALID, "Format of %s only supports [ND], but format is [%s].", NAMES[s],
                      sim_format_name(NT(c, s)->format));
  return 0;
}

/* CheckShape (cpp:86-117), OP_LOGE texts (the squareSum text prints sum's dim count, as CANN's does). */
static int check_shape(NormCtx *c, int64_t *C) {
  NTRY(nrm_wrong_dim(c, BR_X, 4, "x"));
  if (NT(c, BR_SUM)->ndim != 1)
    return nrm_fail(c, SIM_NN_INVALID, "It is expected dimNum of sum equals to 1, but size is %d", NT(c, BR_SUM)->ndim);
  if (NT(c, BR_SQ)->ndim != 1)
    return nrm_fail(c, SIM_NN_INVALID, "It is expected dimNum of squareSum equals to 1, but size is %d",
                    NT(c, BR_SUM)->ndim);
  *C = NT(c, BR_X)->format == SIM_FMT_NHWC ? NT(c, BR_X)->dims[3] : NT(c, BR_X)->dims[1];
  for (int s = BR_SUM; s <= BR_SQ; s++)
    if (NT(c, s)->dims[0] != *C)
      return nrm_fail(c, SIM_NN_INVALID, "It is expected size of %s equals to input_C(%" PRId64 "), but size is %" PRId64,
                      NAMES[s], *C, NT(c, s)->dims[0]);
  return 0;
}

int sim_bn_reduce_ws(const void *x, void *sum, void *squareSum, uint64_t *ws, void **exec) {
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_BN_REDUCE, "aclnnBatchNormReduce", 1, 2, NAMES);
  NTRY(nrm_opp_path(c));
  NTRY(nrm_outparams(c, ws, exec));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, BR_PRODUCTS, "ops-nn norm/bn_training_reduce/docs/aclnnBatchNormReduce.md"));
  const void *hs[] = {x, sum, squareSum};
  for (int s = BR_X; s <= BR_SQ; s++) NTRY(nrm_null(c, hs[s], "aclTensor", NAMES[s], SIM_NN_NULLPTR));
  for (int s = BR_X; s <= BR_SQ; s++) NTRY(nrm_get(c, hs[s], s));
  if (sim_desc_numel(NT(c, BR_X)) == 0 || sim_desc_numel(NT(c, BR_SUM)) == 0 || sim_desc_numel(NT(c, BR_SQ)) == 0) {
    nrm_fill(c, BR_SUM, 0.0);
    nrm_fill(c, BR_SQ, 0.0);
    return nrm_finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  const NrmDtList in = {3, {SIM_DT_FLOAT, SIM_DT_FLOAT16, SIM_DT_BF16, 0}}, out = {1, {SIM_DT_FLOAT, 0, 0, 0}};
  NTRY(nrm_dt_support(c, BR_X, &in, "x"));
  NTRY(nrm_dt_support(c, BR_SUM, &out, "sum"));
  NTRY(nrm_dt_support(c, BR_SQ, &out, "squareSum"));
  NTRY(check_format(c));
  int64_t C = 0;
  NTRY(check_shape(c, &C));
  c->plan.C = C;
  return nrm_finish(c, C, ws, exec);
}

/* sum[c] = Σ x, squareSum[c] = Σ x² over N, H, W: the arch35 kernel squares each element after
 * its cast to float (CastSquareVfImpl) and reduces (ReduceSum); here in double, each output rounded
 * once to FLOAT by sim_store. */
int sim_run_bn_reduce(const SimPlan *p) {
  const SimTensorDesc *xd = &p->t[BR_X];
  bool nhwc = xd->format == SIM_FMT_NHWC;
  int64_t C = p->C, numel = sim_desc_numel(xd);
  double *x = sim_load(xd), *s = nrm_zalloc(C), *q = nrm_zalloc(C);
  int64_t inner = xd->dims[2] * xd->dims[3];
  for (int64_t i = 0; i < numel; i++) {
    int64_t ch = nhwc ? i % C : (i / inner) % C;
    s[ch] += x[i];
    q[ch] += x[i] * x[i];
  }
  sim_store(&p->t[BR_SUM], s);
  sim_store(&p->t[BR_SQ], q);
  return 0;
}
