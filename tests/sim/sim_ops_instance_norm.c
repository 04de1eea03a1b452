/*
 * Software CANN ("aclsim") -- aclnnInstanceNorm: phase-1 validation as CANN performs it, planning,
 * and the computation run at stream synchronisation (double arithmetic, every output rounded
 * once to its dtype).
 *
 * Source: hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921 (2026-08-22),
 *   norm/instance_norm_v3/op_host/op_api/aclnn_instance_norm.cpp ("aclnn_instance_norm.cpp:<line>"),
 *   op_api/instance_norm_v3.cpp (the l0 operator InstanceNormV3), docs/aclnnInstanceNorm.md.
 * aclnnInstanceNormGetWorkspaceSize: CheckParams (:131-148: CheckNotNull :46-57 -> 161001,
 * CheckParamValid :59-68, CheckDtypeValid :78-89, CheckShape :91-95 -> 161002), then
 * CheckPlatform (:70-76, called :150-153: SocVersion ASCEND310P only -> 161002), then
 * CheckInputAndWeightShape (:97-115 -> 161002), then the empty check (:159-165), then the l0
 * operator and the ViewCopy of each result (:180-230).
 *
 * The InstanceNormV3 kernel is not in ops-nn (listed for ascend310p only in
 * scripts/kernel/binary_config/ascendc_config.json): its arithmetic is unverified. The
 * simulator computes the docs' formula, y = (x - E(x)) / sqrt(Var(x) + eps) * gamma + beta per
 * (n, c) over H * W, with the biased variance (1/n, as the 950 graph op norm/instance_norm
 * computes it), in double, and rounds y, mean and variance once each to x's dtype.
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { IN_X, IN_G, IN_B, IN_Y, IN_MEAN, IN_VAR };

static const char *const SHOWN[] = {"x", "gamma", "beta", "y", "mean", "variance"};

/* CheckDtypeValid (:78-89): x in ASCEND310P_DTYPE_SUPPORT_LIST {FLOAT, FLOAT16}
 * (OP_CHECK_DTYPE_NOT_SUPPORT), every other tensor x's dtype (OP_CHECK_DTYPE_NOT_MATCH). */
static int check_dtypes(NormCtx *c) {
  NrmDtList l = {2, {SIM_DT_FLOAT, SIM_DT_FLOAT16, 0, 0}};
  NTRY(nrm_dt_support(c, IN_X, &l, SHOWN[IN_X]));
  for (int s = IN_G; s <= IN_VAR; s++) NTRY(nrm_dt_match(c, s, NT(c, IN_X)->dtype, SHOWN[s]));
  return 0;
}

/* CheckPlatform (:70-76): GetCurrentPlatformInfo().GetSocVersion() == ASCEND310P, else 161002
 * with CANN's text; the simulator adds the SoC it plays ([aclsim]). */
static int check_platform(NormCtx *c) {
  if (c->soc.soc_version == SIM_SV_ASCEND310P) return 0;
  nrm_fail(c, SIM_NN_INVALID, "aclnnInstanceNorm only supports Ascend310p");
  return nrm_fail(c, SIM_NN_INVALID, "[aclsim] the SoC is %s (Short_SoC_version %s, SocVersion %d)", c->soc.soc_name,
                  c->soc.family, (int)c->soc.soc_version);
}

/* CheckInputAndWeightShape (:97-115): x 4-D, gamma and beta 1-D; gamma[0] = x's C axis (dim 3
 * when dataFormat starts with "NHWC", else dim 1). beta's length is not checked here. */
static int check_shapes(NormCtx *c, bool nhwc) {
  const SimTensorDesc *x = NT(c, IN_X), *g = NT(c, IN_G), *b = NT(c, IN_B);
  if (x->ndim != 4 || g->ndim != 1 || b->ndim != 1)
    return nrm_fail(c, SIM_NN_INVALID, "x dim should be 4, gamma dim should be 1, beta dim should be 1");
  if (g->dims[0] != x->dims[nhwc ? 3 : 1])
    return nrm_fail(c, SIM_NN_INVALID, "gamma.shape[0] must be equal to x's C axis");
  return 0;
}

/* The l0 operator (op_api/instance_norm_v3.cpp:36-57) allocates mean and variance in x's dtype
 * with x's NCHW shape and H, W = 1; its kernel is not in ops-nn. [aclsim] rules of that kernel
 * from the documentation (aclnnInstanceNorm.md, 561103 rows: "x，y的C轴或H*W长度小于32 Bytes")
 * and of the C values it reads from beta. */
static int kernel_limits(NormCtx *c, int64_t C, int64_t hw) {
  size_t es = sim_dtype_size(NT(c, IN_X)->dtype);
  if ((uint64_t)C * es < 32 || (uint64_t)hw * es < 32)
    return nrm_fail(c, SIM_NN_INNER_NULLPTR,
                    "[aclsim] x's C axis (%" PRId64 ") and H*W (%" PRId64 ") must each span at least 32 bytes "
                    "(aclnnInstanceNorm.md); InstanceNormV3 returned no result",
                    C, hw);
  if (NT(c, IN_B)->dims[0] != C)
    return nrm_fail(c, SIM_NN_INNER_NULLPTR,
                    "[aclsim] beta has %" PRId64 " elements but the InstanceNormV3 kernel reads C = %" PRId64
                    " (CANN's op_api does not check beta's length)",
                    NT(c, IN_B)->dims[0], C);
  return 0;
}

int sim_instance_norm_ws(const void *x, const void *gamma, const void *beta, const char *dataFormat, double eps,
                         void *y, void *mean, void *variance, uint64_t *ws, void **exec) {
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_INSTANCE_NORM, "aclnnInstanceNorm", 3, 3, SHOWN);
  NTRY(nrm_opp_path(c));
  NTRY(nrm_outparams(c, ws, exec));
  /* Only the SoC's SocVersion matters (CheckPlatform); a SoC of no platform file is
   * RESERVED_VERSION, which CheckPlatform refuses after the parameter checks. */
  sim_soc_lookup(sim_rt_get_soc_name(), &c->soc);
  /* CheckNotNull (:46-57): OP_CHECK_NULL on the six tensors, then dataFormat (no message). */
  const void *hs[] = {x, gamma, beta, y, mean, variance};
  for (int s = IN_X; s <= IN_VAR; s++) NTRY(nrm_null(c, hs[s], "aclTensor", SHOWN[s], SIM_NN_NULLPTR));
  if (!dataFormat) return nrm_fail(c, SIM_NN_NULLPTR, "[aclsim] dataFormat is NULL (CANN returns without a message)");
  for (int s = IN_X; s <= IN_VAR; s++) NTRY(nrm_get(c, hs[s], s));
  /* CheckParamValid (:59-68): strncmp over strlen("NHWC") = 4 characters. */
  if (strncmp(dataFormat, "NHWC", 4) != 0 && strncmp(dataFormat, "NCHW", 4) != 0)
    return nrm_fail(c, SIM_NN_INVALID,
                    "[aclsim] dataFormat \"%.64s\" starts with neither \"NHWC\" nor \"NCHW\" (CANN returns without a "
                    "message)",
                    dataFormat);
  NTRY(check_dtypes(c));
  NTRY(nrm_max_dim(c, IN_X, 8, SHOWN[IN_X])); /* CheckShape: MAX_SUPPORT_DIMS_NUMS */
  NTRY(check_platform(c));
  bool nhwc = strncmp(dataFormat, "NHWC", 4) == 0; /* needTranspose (:155) */
  NTRY(check_shapes(c, nhwc));
  /* Any tensor empty (:159-165): SUCCESS, workspace 0, nothing written. */
  for (int s = IN_X; s <= IN_VAR; s++)
    if (sim_desc_numel(NT(c, s)) == 0) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  const int64_t *d = NT(c, IN_X)->dims;
  int64_t N = d[0], C = nhwc ? d[3] : d[1], hw = nhwc ? d[1] * d[2] : d[2] * d[3];
  NTRY(kernel_limits(c, C, hw));
  /* CopyInstanceNormResults (:117-129): ViewCopy of y (x's shape: transposed back for NHWC) and
   * of mean/variance ([N, C, 1, 1], reshaped to [N, 1, 1, C] for NHWC, :212-228). */
  NTRY(nrm_view_copy(c, IN_Y, NT(c, IN_X)));
  int64_t sd[4] = {N, nhwc ? 1 : C, 1, nhwc ? C : 1};
  SimTensorDesc st = nrm_shape_of(sd, 4);
  NTRY(nrm_view_copy(c, IN_MEAN, &st));
  NTRY(nrm_view_copy(c, IN_VAR, &st));
  c->plan.norm_mode = nhwc;
  c->plan.N = N;
  c->plan.C = C;
  c->plan.HxW = hw;
  c->plan.eps = (float)eps; /* OP_ATTR float eps (op_api/instance_norm_v3.cpp:56-57) */
  return nrm_finish(c, N * C, ws, exec);
}

/* The computation (see the header: the kernel's arithmetic is unverified). x is read in logical
 * order; element (n, c, i) of the H * W plane sits at ((n * C + c) * hw + i) for NCHW and at
 * ((n * hw + i) * C + c) for NHWC. mean and variance are stored in (n, c) order, the logical
 * order of both [N, C, 1, 1] and [N, 1, 1, C]. */
int sim_run_instance_norm(const SimPlan *p) {
  int64_t N = p->N, C = p->C, hw = p->HxW;
  bool nhwc = p->norm_mode != 0;
  double *x = sim_load(&p->t[IN_X]), *g = sim_load(&p->t[IN_G]), *b = sim_load(&p->t[IN_B]);
  double *y = nrm_zalloc(N * C * hw), *m = nrm_zalloc(N * C), *v = nrm_zalloc(N * C);
  for (int64_t n = 0; n < N; n++) {
    for (int64_t c = 0; c < C; c++) {
      double s = 0, q = 0;
      for (int64_t i = 0; i < hw; i++) s += x[nhwc ? (n * hw + i) * C + c : (n * C + c) * hw + i];
      double mu = s / (double)hw;
      for (int64_t i = 0; i < hw; i++) {
        double t = x[nhwc ? (n * hw + i) * C + c : (n * C + c) * hw + i] - mu;
        q += t * t;
      }
      double var = q / (double)hw, r = 1.0 / sqrt(var + p->eps);
      for (int64_t i = 0; i < hw; i++) {
        int64_t j = nhwc ? (n * hw + i) * C + c : (n * C + c) * hw + i;
        y[j] = (x[j] - mu) * r * g[c] + b[c];
      }
      m[n * C + c] = mu;
      v[n * C + c] = var;
    }
  }
  sim_store(&p->t[IN_Y], y);
  sim_store(&p->t[IN_MEAN], m);
  sim_store(&p->t[IN_VAR], v);
  return 0;
}
