/*
 * Software CANN ("aclsim") -- what the LayerNorm / RMSNorm operators (sim_ops_layer_norm.c,
 * sim_ops_fast_layer_norm.c, sim_ops_layer_norm_backward.c, sim_ops_rms_norm.c,
 * sim_ops_add_rms_norm.c, sim_ops_gemma_rms_norm.c, sim_ops_inplace_add_rms_norm.c,
 * sim_ops_add_layer_norm.c, sim_ops_deep_norm.c, sim_ops_add_rms_norm_cast.c,
 * sim_ops_ada_layer_norm.c) share: the phase-1 context, CANN's check macros with their message
 * texts and planning (sim_ops_common.h's routines, wrapped for the context here), the products
 * the operators' documentation names, the generated operators' framework.  Core-internal (hidden
 * symbols of libaclsim_core.so).
 *
 * Message texts: the OP_CHECK_* macros of ops-math
 * common/inc/external/aclnn_kernels/common/op_error_check.h (the hand-written aclnn operators:
 * aclnnLayerNorm*, aclnnLayerNormBackward, aclnnAddRmsNorm; sim_ops_common.c); the
 * OP_LOGE_FOR_INVALID_* texts of opbase docs/zh/api/op_common/log/OP_LOGE_FOR_INVALID_*.md (the
 * tiling functions); opbase's individual-op framework (src/nnopbase/individual_op) for the
 * generated aclnnRmsNorm / aclnnRmsNormGrad / aclnnGemmaRmsNorm / aclnnInplaceAddRmsNorm /
 * aclnnAddLayerNorm / aclnnDeepNorm.
 * Every error text is "<aclnn API>: <text>".  Rules marked [aclsim] are the simulator's own.
 */
#ifndef ACLSIM_SIM_OPS_NORM_H
#define ACLSIM_SIM_OPS_NORM_H

#include <string.h>

#include "sim_ops_common.h"

/* The products of CANN's documentation ("产品支持情况" of ops-nn norm/<op>/docs/aclnn<Op>.md),
 * as bits, from the op::SocVersion of the SoC (opbase include/nnopbase/opdev/platform.h). */
enum {
  NP_910 = 1u << 0,  /* ASCEND910: Atlas training series (npu="910") */
  NP_A2 = 1u << 1,   /* ASCEND910B: Atlas A2 training/inference series (npu="910b") */
  NP_A3 = 1u << 2,   /* ASCEND910_93: Atlas A3 training/inference series (npu="A3") */
  NP_950 = 1u << 3,  /* ASCEND950 (== ASCEND910_95): Ascend 950PR/950DT (npu="950") */
  NP_310P = 1u << 4, /* ASCEND310P: Atlas inference series (npu="310p") */
  NP_310B = 1u << 5  /* ASCEND310B: Atlas 200I/500 A2 inference (npu="310b") */
};

/* NpuArch values (DAV_xxxx) that the operators branch on. */
enum { NRM_DAV_2201 = 2201, NRM_DAV_3510 = 3510 };

typedef struct {
  const char *op; /* the aclnn API, the prefix of every error text */
  SimPlan plan;
  SimSocInfo soc;
  unsigned product; /* one NP_* bit, 0 for a SoC none of the documents names */
} NormCtx;

#define NT(c, s) (&(c)->plan.t[(s)])
#define NP(c, s) ((c)->plan.present[(s)])
#define NNAME(c, s) ((c)->plan.tname[(s)])
#define NTRY(e)          \
  do {                   \
    int _rc = (e);       \
    if (_rc) return _rc; \
  } while (0)

/* The routines of sim_ops_common.h for a NormCtx (the operator's name c->op, its plan c->plan),
 * where the seed operators' Ctx has them too (sim_ops_seed.h). */
static inline void nrm_init(NormCtx *c, SimOpId op, const char *api, int n_in, int n_out, const char *const *names) {
  memset(c, 0, sizeof *c);
  c->op = api;
  ops_plan_init(&c->plan, op, api, n_in, n_out, names);
}
#define nrm_fail(c, code, ...) ops_fail((c)->op, (code), __VA_ARGS__) /* "<aclnn API>: " before the text */

/* ASCEND_OPP_PATH unset -> 561107; NULL workspaceSize/executor out-param -> 161001
 * (OP_CHECK_COMM_INPUT text); the SoC family of aclrtGetSocName (unknown -> 161002). */
static inline int nrm_opp_path(NormCtx *c) { return ops_opp_path(c->op); }
static inline int nrm_outparams(NormCtx *c, const uint64_t *ws, void *const *exec) {
  return ops_outparams(c->op, ws, exec);
}
int nrm_soc(NormCtx *c);
/* The documentation lists the product of the SoC as unsupported (not in `supported`) -> 161002,
 * as sim_ops_seed_checks.c refuses an unsupported operator; `doc` names the document. */
int nrm_product(NormCtx *c, unsigned supported, const char *doc);
const char *nrm_product_name(unsigned product);
bool nrm_regbase(const NormCtx *c); /* NpuArch DAV_3510 (ops-nn common/inc/op_api/aclnn_util.h IsRegbase) */

/* Records a tensor argument (NULL allowed) in its slot; not a live aclTensor -> 161002. */
static inline int nrm_get(NormCtx *c, const void *h, int slot) { return ops_get(c->op, &c->plan, h, slot); }
/* OP_CHECK_NULL: "Expected a value of type [type] for argument [arg] but instead found nullptr." */
static inline int nrm_null(NormCtx *c, const void *h, const char *type, const char *arg, int code) {
  return ops_null(c->op, h, type, arg, code);
}

/* ---- dtypes ---- */
typedef OpsDtList NrmDtList;
/* OP_CHECK_DTYPE_NOT_SUPPORT / _NOT_SAME / _NOT_MATCH; `shown` = the name CANN prints. */
static inline int nrm_dt_support(NormCtx *c, int s, const NrmDtList *l, const char *shown) {
  return ops_dt_support(c->op, &c->plan, s, l, "Tensor ", shown);
}
static inline int nrm_dt_same(NormCtx *c, int a, const char *sa, int b, const char *sb) {
  return ops_dt_same(c->op, &c->plan, a, sa, b, sb);
}
static inline int nrm_dt_match(NormCtx *c, int s, int32_t expected, const char *shown) {
  return ops_dt_match(c->op, &c->plan, s, expected, shown);
}
double nrm_round(double v, int32_t dtype); /* one rounding to dtype (RNE), as sim_store writes */

/* ---- shapes ---- */
static inline void nrm_shape_str(const SimTensorDesc *d, char *buf, size_t n) { /* "[2, 3, 4]" (op::ToString) */
  ops_dims_str(d->dims, d->ndim, ", ", buf, n);
}
static inline void nrm_shape_str_compact(const SimTensorDesc *d, char *buf, size_t n) { /* "[2,3,4]" */
  ops_dims_str(d->dims, d->ndim, ",", buf, n); /* Ops::Base::ToString */
}
static inline bool nrm_same_shape(const SimTensorDesc *a, const SimTensorDesc *b) { return ops_same_shape(a, b); }
static inline int nrm_max_dim(NormCtx *c, int s, int n, const char *shown) { /* OP_CHECK_MAX_DIM */
  return ops_max_dim(c->op, &c->plan, s, n, shown);
}
static inline int nrm_min_dim(NormCtx *c, int s, int n, const char *shown) { /* OP_CHECK_MIN_DIM */
  return ops_min_dim(c->op, &c->plan, s, n, shown);
}
static inline int nrm_wrong_dim(NormCtx *c, int s, int n, const char *shown) { /* OP_CHECK_WRONG_DIMENSION */
  return ops_wrong_dim(c->op, &c->plan, s, n, shown);
}
static inline int nrm_shape_same(NormCtx *c, int a, const char *sa, int b, const char *sb) { /* _SHAPE_NOT_EQUAL */
  return ops_shape_same(c->op, &c->plan, a, sa, b, sb);
}
/* rows = product of dims[0:axis], cols = product of dims[axis:] */
void nrm_rows_cols(const SimTensorDesc *d, int axis, int64_t *rows, int64_t *cols);
/* [aclsim] the kernel reads or writes `want` elements of slot s in row-major order. */
int nrm_numel_is(NormCtx *c, int s, int64_t want, const char *what);

/* l0op::ViewCopy(result, out) (hicann/ops-math c41933244c31 conversion/contiguous/op_host/op_api/
 * contiguous.cpp:634-678, CheckViewCopyParams then ViewCopy): the result (already cast to the
 * output's dtype by the operators here) may be copied to output slot s only when its view shape
 * equals the output's, or both hold one element; otherwise ViewCopy returns nullptr.
 * nrm_view_copy_ok answers the question; nrm_view_copy reports ViewCopy's two texts (:660-663,
 * :675-676) and returns ACLNN_ERR_INNER_NULLPTR (561103), what the operators' CHECK_RET on the
 * nullptr returns. `res` holds the result's shape (ndim, dims). */
bool nrm_view_copy_ok(const NormCtx *c, int s, const SimTensorDesc *res);
int nrm_view_copy(NormCtx *c, int s, const SimTensorDesc *res);
/* The shape (ndim dims) in a descriptor, for nrm_view_copy's `res`. */
SimTensorDesc nrm_shape_of(const int64_t *dims, int ndim);

/* ---- planning ---- */
/* Every present slot's memory checked ([aclsim]), a nonzero workspace of 512 + roundUp32(16 *
 * rows) bytes, the executor created (ops_finish). */
static inline int nrm_finish(NormCtx *c, int64_t rows, uint64_t *ws, void **exec) {
  return ops_finish(c->op, &c->plan, rows, ws, exec);
}
/* CANN's early SUCCESS paths: workspace 0, the task writes nothing or only the filled slots. */
static inline void nrm_fill(NormCtx *c, int s, double v) { ops_fill(&c->plan, s, v); }
static inline int nrm_finish_early(NormCtx *c, SimRunMode run, uint64_t *ws, void **exec) {
  return ops_finish_early(c->op, &c->plan, run, ws, exec);
}

/* ---- the generated operators (opbase's individual-op framework, hicann/opbase aa3cd74b7f6d
 * src/nnopbase/individual_op; sim_ops_rms_norm.c's header comment cites each step) ---- */
/* NULL tensor or out-param: 161001 "Check <name> != nullptr failed". */
int nrm_gen_null(NormCtx *c, const void *h, const char *name);
/* The (dtype, format) of slots 0..n-1 must equal one row of `rows` (ND, or a format like ND):
 * else 161002 with the framework's two texts. */
int nrm_gen_combo(NormCtx *c, const int32_t (*rows)[6], int nrows, int n);
/* A tiling failure: its reason, then "Failed to execute tiling function"; 561002. */
int nrm_gen_tiling_fail(NormCtx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* nrm_gen_combo for n slots (rows of n dtypes each, flat), an absent optional slot matching any
 * row: the framework's first text (161002). */
int nrm_gen_rows(NormCtx *c, const int32_t *rows, int nrows, int n);
/* Slots from..to all empty: the framework skips the launch (SUCCESS, nothing written). */
bool nrm_all_empty(const NormCtx *c, int from, int to);
/* CheckInputShape4RmsNorm (ops-nn norm/rms_norm/op_host/rms_norm_tiling.cpp:113-196), shared by
 * RmsNorm and GemmaRmsNorm (Tiling4GemmaRmsNorm :649-707) on slots x 0, gamma 1, y 2, rstd 3;
 * `node` is the op type its texts name (context->GetNodeName()). 561002 on failure. */
int nrm_rms_norm_shapes(NormCtx *c, const char *node);

/* ---- AddRmsNorm's kernels, shared with aclnnInplaceAddRmsNorm (sim_ops_add_rms_norm.c) ---- */
/* GetCoreNumAiv() of an A2/A3 SoC into *cores; a SoC the simulator does not know -> 161002 naming
 * `what`, the kernel whose template depends on it. */
int nrm_aiv_cores(NormCtx *c, const char *what, int *cores);
/* The intermediate dtypes of the SoC's template for slot 0's dtype (plan.norm_dt). */
int nrm_add_rms_norm_plan(NormCtx *c, int64_t rows, int64_t cols);
/* x = x1 + x2, rstd, y with slots {x1, x2, gamma, y, rstd, x}; rstd and x stored when asked. */
int nrm_add_rms_norm_compute(const SimPlan *p, const int slots[6], bool store_rstd, bool store_x);

/* ---- aclnnLayerNorm's phase-1 steps, shared with aclnnFastLayerNorm (sim_ops_layer_norm.c);
 * ops-nn's aclnn_layer_norm.cpp and aclnn_fast_layer_norm.cpp state each one alike ---- */
/* The tensor slots of both operators: their prototypes list the tensors in this order. */
enum { LN_X, LN_W, LN_B, LN_Y, LN_MEAN, LN_RSTD };
enum { LN_MAX_DIM = 8 }; /* MAX_DIM_LEN: aclnn_layer_norm.cpp:34, aclnn_fast_layer_norm.cpp:32 */
/* Their names as CANN's messages print them (the prototypes' parameter names), by slot. */
extern const char *const nrm_ln_names[6];
/* CheckNotNull / CheckFastNotNull: input, normalizedShape, out (161001); then each tensor in its
 * slot (nrm_get) and normalizedShape's entries into norm[LN_MAX_DIM + 1], its length into *nlen
 * (not a live aclIntArray -> 161002). */
int nrm_ln_args(NormCtx *c, const void *input, const void *normalizedShape, const void *weight, const void *bias,
                const void *out, const void *meanOut, const void *rstdOut, int64_t *norm, uint64_t *nlen);
/* CheckInputDtype's rule for weight or bias (slot s, absent passes): in `l`, and FLOAT or input's
 * dtype (OP_CHECK_DTYPE_NOT_SUPPORT, then OP_CHECK_DTYPE_NOT_SAME naming `shown` and input). */
int nrm_ln_param_dtype(NormCtx *c, int s, const NrmDtList *l, const char *shown);
/* CheckShape's step 6 (aclnn_fast_layer_norm.cpp:141-182 CheckNormalizeShape): per index i of
 * normalizedShape (nlen <= input's rank), norm[i] equals input's dim at rank - nlen + i, then a
 * present weight's dim i, then a present bias's (161002). */
int nrm_ln_normalized_dims(NormCtx *c, const int64_t *norm, int64_t nlen);
/* The shape of the l0 operators' mean and rstd: input's view shape with the dims from `axis` on
 * set to 1 (layer_norm_v3.cpp:50-53, layer_norm_v4.cpp:33-37), for nrm_view_copy. */
SimTensorDesc nrm_ln_stat_shape(const NormCtx *c, int axis);

/* LayerNorm of one row of cols in double (the fused LayerNorms' sims): mean, biased variance,
 * rstd = 1/sqrt(var + eps), y = (x - mean) * rstd * g + b. */
void nrm_ln_row(const double *x, int64_t cols, double eps, const double *g, const double *b, double *y, double *mean,
                double *rstd);

/* LayerNorm's backward of rows x cols in double at x with the given per-row mean and rstd (the
 * fused LayerNorm backward sims): xh = (x - mean) * rstd, g = dy * gamma, dx = rstd * (g -
 * mean(g) - xh * mean(g * xh)); dgamma += dy * xh and dbeta += dy over the rows (zeroed first). */
void nrm_ln_grad_rows(const double *dy, const double *x, const double *mean, const double *rstd, const double *gamma,
                      int64_t rows, int64_t cols, double *dx, double *dgamma, double *dbeta);

/* zero-filled array of n doubles (at least one element) of the run's scratch (ops_zalloc) */
static inline double *nrm_zalloc(int64_t n) { return ops_zalloc(n); }

#endif
