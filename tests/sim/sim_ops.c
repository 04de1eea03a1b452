/*
 * Software CANN ("aclsim") -- the nine norm operators: phase-1 validation as CANN performs it on
 * the SoC aclrtGetSocName() names, as its platform file describes it (return codes, order of the
 * checks and message texts of the CANN sources cited at each rule), planning, and the computation
 * run at stream synchronisation.  Accumulation is in double; every output is rounded once to its
 * own dtype, except the narrow-dtype intermediates of sim_decomposed.c.
 *
 * Sources (the behaviour of each rule is cited as repo + path + function):
 *   hicann/ops-nn   e5c3fa9327ea95ba26d06227e746923580d10921 (2026-08-22)
 *   hicann/ops-math c41933244c31e44fd496e3bb3212164f8c48c214 (2026-08-22)
 * Message macros (OP_CHECK_NULL, OP_CHECK_DTYPE_NOT_SUPPORT, ...) are those of ops-math
 * common/inc/external/aclnn_kernels/common/op_error_check.h, shipped with CANN as
 * aclnn_kernels/common/op_error_check.h.  A dtype list prints as "[DT_FLOAT,DT_FLOAT16,]" and a
 * shape as "[2, 3, 4]" (opbase src/nnopbase/common/utils/{data_type_utils,shape_utils}.cpp).
 *
 * Rules marked [aclsim] are the simulator's own, not CANN's: a kernel here must never read or
 * write out of bounds, and memory must be live device memory (mem_ok).  They run after every
 * CANN rule, so they never change which CANN error a call gets.
 * Every error text is "<operator>: <CANN's text>".
 */
#define _GNU_SOURCE
#include "sim.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================================
 * Validation context
 * ====================================================================================== */
typedef struct {
  const char *op;
  SimPlan plan;
  SimSocInfo soc; /* the platform file's facts (sim_soc.c) */
} Ctx;

#define T(s) (&c->plan.t[(s)])
#define P(s) (c->plan.present[(s)])
#define NAME(s) (c->plan.tname[(s)])
#define TRY(e) do { int _rc = (e); if (_rc) return _rc; } while (0)

static void ctx_init(Ctx *c, SimOpId op, const char *name, int n_in, int n_out, const char *const *names) {
  memset(c, 0, sizeof *c);
  c->op = name;
  c->plan.op = op;
  c->plan.name = name;
  c->plan.n_in = n_in;
  c->plan.n_out = n_out;
  for (int i = 0; i < n_in + n_out; i++) c->plan.tname[i] = names[i];
}

static int fail(Ctx *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(Ctx *c, int code, const char *fmt, ...) {
  char buf[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return sim_fail(code, "%s: %s", c->op, buf);
}

/* op::ToString(Shape): "[2, 3, 4]", "[]" for 0-d. */
static void dims_str(const int64_t *dims, int nd, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < nd && k < n; i++) k += (size_t)snprintf(buf + k, n - k, i ? ", %" PRId64 : "%" PRId64, dims[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
}

static void shape_str(const SimTensorDesc *d, char *buf, size_t n) { dims_str(d->dims, d->ndim, buf, n); }


static const char *fmt_str(int32_t f) { return sim_format_name(f); }

static int opp_path(const char *op) {
  const char *s = getenv("ASCEND_OPP_PATH");
  if (s == NULL || *s == '\0')
    return sim_fail(SIM_NN_OPP_PATH,
                    "%s: the environment variable ASCEND_OPP_PATH is not set, so the operator package cannot "
                    "be found; run `source <CANN install>/set_env.sh` (e.g. /usr/local/Ascend/ascend-toolkit/"
                    "set_env.sh) before starting the process",
                    op);
  return 0;
}

/* L2_DFX_PHASE_1 / OP_CHECK_COMM_INPUT (opbase include/nnopbase/opdev/op_dfx.h CheckPhase1Params):
 * a NULL workspaceSize or executor out-param is 161001. */
static int outparams(Ctx *c, const uint64_t *ws, void *const *exec) {
  if (!ws || !exec) return fail(c, SIM_NN_NULLPTR, "The workspaceSize or executor is nullptr.");
  return 0;
}

/* ---- the SoC ------------------------------------------------------------------------- */
/* The SoC name is read on every phase 1 (ACLSIM_SOC_NAME, default Ascend950PR_9599), like the
 * runtime's platform info, and its platform file gives SocVersion and NpuArch (sim_soc.c); the
 * chip-dependent rules are sim_rules.c's.  A SoC without a platform file is not refused here:
 * CANN runs the operator's checks with RESERVED_VERSION and DAV_RESV (opbase platform.cpp
 * 372-386) and fails where it would launch a kernel (no_kernel). */
static int soc_check(Ctx *c) {
  sim_soc_lookup(sim_rt_get_soc_name(), &c->soc);
  c->plan.regbase = sim_rule_regbase(&c->soc);
  c->plan.bn_saves_variance = sim_rule_bn_saves_variance(&c->soc);
  c->plan.npu_arch = c->soc.npu_arch;
  c->plan.overflow_mode = sim_soc_overflow_mode(&c->soc);
  return 0;
}

/* The documentation lists the product as unsupported ("产品支持情况" of ops-nn
 * norm/<op>/docs/aclnn<Op>.md, ops-math math/reduce_std_with_mean/docs/aclnnBatchNormStats.md;
 * sim_rules.c sim_rule_documented).  What the unsupported code path does is not in the sources
 * (no kernel for the chip); the simulator fails phase 1 with 161002 right after the out-params. */
static int op_supported(Ctx *c) {
  if (sim_rule_documented(c->plan.op, &c->soc)) return 0;
  return fail(c, SIM_NN_INVALID,
              "the operator is not supported on SoC %s (%s; Short_SoC_version %s, NpuArch %d): CANN's documentation "
              "of %s lists the %s as unsupported",
              c->soc.soc_name, c->soc.product, c->soc.family, (int)c->soc.npu_arch, c->op, c->soc.product);
}

/* No platform file for the SoC: once the checks pass, the launcher finds no kernel binary for it
 * (opbase src/nnopbase/composite_op/aclnn_engine/op_kernel.h GetWorkspace/SelectBin: "Op %s does
 * not has any binary.", "Cannot find binary for op %s."), the l0op call returns nullptr and the
 * operator returns ACLNN_ERR_INNER_NULLPTR (561103). */
static int no_kernel(Ctx *c) {
  if (c->soc.known) return 0;
  char dir[512];
  snprintf(dir, sizeof dir, "%s", sim_soc_config_dir());
  return fail(c, SIM_NN_INNER_NULLPTR,
              "no kernel binary for SoC \"%s\": there is no platform file %s/%s.ini, so CANN's checks ran with "
              "SocVersion RESERVED_VERSION and NpuArch DAV_RESV and the kernel launcher found no binary (opbase "
              "op_kernel.h: \"Op %%s does not has any binary.\")",
              c->soc.soc_name, dir[0] ? dir : "<no data/platform_config beside the libraries>", c->soc.soc_name);
}

static bool bf16_ok(const Ctx *c) { return sim_rule_bf16(c->plan.op, &c->soc); }

/* ops-math conversion/contiguous/op_host/op_api/contiguous.cpp 634-670 CheckViewCopyParams: the
 * operator's result (in `produced`, its kernel's dtype) is copied into the caller's output with
 * l0op::ViewCopy, which refuses another dtype; the operator's CHECK_RET turns the nullptr into
 * ACLNN_ERR_INNER_NULLPTR (561103). */
static int view_copy_dtype(Ctx *c, int s, int32_t produced) {
  if (!P(s) || T(s)->dtype == produced) return 0;
  return fail(c, SIM_NN_INNER_NULLPTR,
              "Input tensor's dtype[%s] should be same with output's dtype[%s]. (l0op::ViewCopy of the result into "
              "%s)",
              sim_dt_str(produced), sim_dt_str(T(s)->dtype), NAME(s));
}

/* ---- dtype lists ------------------------------------------------------------------------ */
typedef struct {
  int n;
  int32_t v[3];
} DtList;

static bool dl_has(const DtList *l, int32_t dt) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == dt) return true;
  return false;
}

static void dl_str(const DtList *l, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < l->n && k < n; i++) k += (size_t)snprintf(buf + k, n - k, "%s,", sim_dt_str(l->v[i]));
  if (k < n) snprintf(buf + k, n - k, "]");
}

/* {DT_FLOAT, DT_FLOAT16[, DT_BF16]}: the order of every ops-nn batch-norm list. */
static DtList dl_fhb(const Ctx *c) {
  DtList l = {2, {SIM_DT_FLOAT, SIM_DT_FLOAT16, 0}};
  if (bf16_ok(c)) l.v[l.n++] = SIM_DT_BF16;
  return l;
}

/* ---- CANN's check macros ------------------------------------------------------------------ */
/* OP_CHECK_NULL (IsNullptr): the demangled C++ type and the argument's variable name. */
static int null_arg(Ctx *c, const void *h, const char *type, const char *arg, int code) {
  if (h) return 0;
  return fail(c, code, "Expected a value of type [%s] for argument [%s] but instead found nullptr.", type, arg);
}
#define NULL_TENSOR(c, h, arg, code) null_arg((c), (h), "aclTensor", (arg), (code))

/* Records a (possibly NULL) tensor argument in its slot; a pointer that is not a live aclTensor
 * is 161002 [aclsim: real CANN would read freed memory]. */
static int get(Ctx *c, const void *h, int slot) {
  if (!h) return 0;
  if (sim_lookup_tensor(h, T(slot)) != 0)
    return fail(c, SIM_NN_INVALID, "%s (%p) is not a live aclTensor (destroyed or never created)", NAME(slot), h);
  P(slot) = true;
  return 0;
}

/* OP_CHECK_DTYPE_NOT_SUPPORT: "Tensor %s not implemented for %s, should be in dtype support
 * list %s."; prefix "" for the hand-written variants without "Tensor ". */
static int dt_list(Ctx *c, int s, const DtList *l, const char *prefix, const char *shown) {
  if (!P(s) || dl_has(l, T(s)->dtype)) return 0;
  char ls[128];
  dl_str(l, ls, sizeof ls);
  return fail(c, SIM_NN_INVALID, "%s%s not implemented for %s, should be in dtype support list %s.", prefix,
              shown ? shown : NAME(s), sim_dt_str(T(s)->dtype), ls);
}
#define DT_SUPPORT(c, s, l) dt_list((c), (s), (l), "Tensor ", NULL)

/* OP_CHECK_DTYPE_NOT_MATCH: "Tensor %s expected dtype is %s but found %s." */
static int dt_match(Ctx *c, int s, int32_t expected, const char *shown) {
  if (!P(s) || T(s)->dtype == expected) return 0;
  return fail(c, SIM_NN_INVALID, "Tensor %s expected dtype is %s but found %s.", shown ? shown : NAME(s),
              sim_dt_str(expected), sim_dt_str(T(s)->dtype));
}

/* OP_CHECK_DTYPE_NOT_SAME: "Expected both tensors to have same dtype, but found %s %s and %s %s." */
static int dt_same(Ctx *c, int a, int b) {
  if (!P(a) || !P(b) || T(a)->dtype == T(b)->dtype) return 0;
  return fail(c, SIM_NN_INVALID, "Expected both tensors to have same dtype, but found %s %s and %s %s.", NAME(a),
              sim_dt_str(T(a)->dtype), NAME(b), sim_dt_str(T(b)->dtype));
}

/* OP_CHECK_MAX_DIM / OP_CHECK_MIN_DIM */
static int max_dim(Ctx *c, int s, int n, const char *shown) {
  if (!P(s) || T(s)->ndim <= n) return 0;
  return fail(c, SIM_NN_INVALID, "The %s tensor cannot be larger than %d dimensions.", shown ? shown : NAME(s), n);
}
static int min_dim(Ctx *c, int s, int n, const char *shown) {
  if (!P(s) || T(s)->ndim >= n) return 0;
  return fail(c, SIM_NN_INVALID, "The %s tensor must have at least %d dimensions.", shown ? shown : NAME(s), n);
}

static bool same_shape(const SimTensorDesc *a, const SimTensorDesc *b) {
  if (a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

static bool shape_is(const SimTensorDesc *a, const int64_t *dims, int nd) {
  if (a->ndim != nd) return false;
  for (int i = 0; i < nd; i++)
    if (a->dims[i] != dims[i]) return false;
  return true;
}

/* OP_CHECK_SHAPE_NOT_EQUAL: "Expected tensor for %s to have same size as tensor for %s, but %s
 * does not equal %s." */
static int shape_same(Ctx *c, int a, int b, const char *na, const char *nb) {
  if (!P(a) || !P(b) || same_shape(T(a), T(b))) return 0;
  char sa[160], sb[160];
  shape_str(T(a), sa, sizeof sa);
  shape_str(T(b), sb, sizeof sb);
  return fail(c, SIM_NN_INVALID, "Expected tensor for %s to have same size as tensor for %s, but %s does not equal %s.",
              na ? na : NAME(a), nb ? nb : NAME(b), sa, sb);
}

/* OP_CHECK_SHAPE_NOT_EQUAL_WITH_EXPECTED_SIZE: "Expected tensor for %s to have same size as %s,
 * but got %s." */
static int shape_expect(Ctx *c, int s, const int64_t *dims, int nd, const char *shown) {
  if (!P(s) || shape_is(T(s), dims, nd)) return 0;
  char want[160], got[160];
  dims_str(dims, nd, want, sizeof want);
  shape_str(T(s), got, sizeof got);
  return fail(c, SIM_NN_INVALID, "Expected tensor for %s to have same size as %s, but got %s.", shown ? shown : NAME(s),
              want, got);
}

/* OP_CHECK_WRONG_DIMENSION: "Expected %zu dimension input, but got %s with sizes %s." */
static int wrong_dim(Ctx *c, int s, int n) {
  if (!P(s) || T(s)->ndim == n) return 0;
  char got[160];
  shape_str(T(s), got, sizeof got);
  return fail(c, SIM_NN_INVALID, "Expected %d dimension input, but got %s with sizes %s.", n, NAME(s), got);
}

/* op::IsPrivateFormat (opbase): NC1HWC0, FRACTAL_Z, FRACTAL_NZ, NDC1HWC0, FRACTAL_Z_3D, ... */
static bool private_format(int32_t f) {
  return f == SIM_FMT_NC1HWC0 || f == SIM_FMT_FRACTAL_Z || f == SIM_FMT_FRACTAL_NZ || f == SIM_FMT_NDC1HWC0 ||
         f == SIM_FMT_FRACTAL_Z_3D || f == -1;
}
static bool is_private(const Ctx *c, int s) { return c->plan.present[s] && private_format(c->plan.t[s].format); }

static bool is_empty(const SimTensorDesc *d) { return sim_desc_numel(d) == 0 && d->ndim > 0; }

/* [aclsim] A per-channel tensor the kernel reads (or writes) C values of must hold C elements. */
static int numel_c(Ctx *c, int s, int64_t C, const char *why) {
  if (!P(s) || sim_desc_numel(T(s)) == C) return 0;
  char sh[160];
  shape_str(T(s), sh, sizeof sh);
  return fail(c, SIM_NN_INVALID,
              "[aclsim] %s has %" PRId64 " elements (shape %s) but the kernel %s C = %" PRId64
              " of them; CANN does not check this (its kernel would access memory out of bounds), the simulator "
              "rejects it",
              NAME(s), sim_desc_numel(T(s)), sh, why, C);
}

/* [aclsim] The view must fit its storage shape, and the storage must lie inside one live device
 * allocation.  Records the allocation id for the liveness check at execution time. */
static int mem_ok(Ctx *c, int s) {
  if (!P(s)) return 0;
  SimTensorDesc *d = T(s);
  d->alloc_id = 0;
  if (sim_desc_numel(d) == 0) return 0; /* empty view: touches no memory */
  int64_t lo = d->offset, hi = d->offset;
  for (int i = 0; i < d->ndim; i++) {
    int64_t ext = (d->dims[i] - 1) * d->strides[i];
    if (ext < 0) lo += ext;
    else hi += ext;
  }
  int64_t sn = sim_desc_storage_numel(d);
  if (lo < 0 || hi >= sn) {
    char sh[160];
    shape_str(d, sh, sizeof sh);
    return fail(c, SIM_NN_INVALID,
                "%s view (shape %s, offset %" PRId64 ") reaches storage elements [%" PRId64 ", %" PRId64
                "] but its storage shape holds %" PRId64 " elements",
                NAME(s), sh, d->offset, lo, hi, sn);
  }
  if (d->data == NULL) return fail(c, SIM_NN_INVALID, "%s has a NULL data pointer but a non-empty view", NAME(s));
  uint64_t bytes = (uint64_t)sn * sim_dtype_size(d->dtype);
  uint64_t id = sim_dev_range_alloc(d->data, bytes);
  if (id == 0) {
    char why[256];
    sim_describe_ptr(d->data, why, sizeof why);
    return fail(c, SIM_NN_INVALID,
                "%s data must be device memory holding its whole storage (%" PRId64 " x %s = %" PRIu64
                " bytes) inside one live aclrtMalloc allocation, but %s",
                NAME(s), sn, sim_dtype_name(d->dtype), bytes, why);
  }
  d->alloc_id = id;
  return 0;
}

/* Looks an aclBoolArray up: plan.mask = its first 3 values, *n = its length. */
static int lookup_mask(Ctx *c, const void *h, uint64_t *n) {
  bool v[64] = {false};
  if (sim_lookup_bool_array(h, v, 64, n) != 0)
    return fail(c, SIM_NN_INVALID, "outputMask (%p) is not a live aclBoolArray", h);
  for (int i = 0; i < 3; i++) c->plan.mask[i] = (uint64_t)i < *n ? v[i] : false;
  return 0;
}

/* Workspace formula: 512 + 16 * R bytes rounded up to 32, R = reduction rows (C for the batch
 * norm family, N * C for group norm): always nonzero for a computing plan, like CANN's reduce
 * kernels. */
static int finish(Ctx *c, int64_t rows, uint64_t *ws, void **exec) {
  TRY(no_kernel(c));
  for (int i = 0; i < c->plan.n_in + c->plan.n_out; i++) TRY(mem_ok(c, i));
  uint64_t r = rows > 0 ? (uint64_t)rows : 0;
  c->plan.run = SIM_RUN_COMPUTE;
  c->plan.ws_size = 512 + ((16 * r + 31) / 32) * 32;
  return sim_executor_create(&c->plan, ws, exec);
}

/* CANN's early SUCCESS paths: workspace 0 and an executor whose task writes nothing
 * (SIM_RUN_NOTHING) or only fills the slots marked with fill_slot (SIM_RUN_FILL), at
 * synchronisation like every other write.  Only the filled slots must be device memory. */
static void fill_slot(Ctx *c, int s, double v) {
  if (!P(s)) return;
  c->plan.fill_on[s] = true;
  c->plan.fill[s] = v;
}

static int finish_early(Ctx *c, SimRunMode run, uint64_t *ws, void **exec) {
  if (run == SIM_RUN_FILL) TRY(no_kernel(c)); /* the fill is a kernel (ProcessEmptyTensorWithValue) */
  for (int i = 0; i < c->plan.n_in + c->plan.n_out; i++) {
    if (run == SIM_RUN_FILL && c->plan.fill_on[i]) TRY(mem_ok(c, i));
    else c->plan.t[i].alloc_id = 0; /* neither read nor written */
  }
  c->plan.run = run;
  c->plan.ws_size = 0;
  return sim_executor_create(&c->plan, ws, exec);
}

static const int64_t *dims_of(const SimTensorDesc *d) { return d->dims; }

/* zero-filled array of n doubles (at least one element, so n == 0 is fine) */
static double *zalloc(int64_t n) { return calloc(n > 0 ? (size_t)n : 1, sizeof(double)); }

/* [aclsim] A channels-last storage format on DAV_3510 makes CANN take C from the LAST dim
 * (ops-nn aclnn_batch_norm.cpp GetBatchNormDimC, aclnn_batch_norm_backward.cpp GetDimC); the
 * simulator's kernels always use dim 1, so it rejects that case rather than compute wrongly. */
static int regbase_channels_last(Ctx *c, int s) {
  int32_t f = T(s)->format;
  if (c->plan.regbase && (f == SIM_FMT_NHWC || f == SIM_FMT_NDHWC))
    return fail(c, SIM_NN_INVALID,
                "[aclsim] %s has storage format %s: on DAV_3510 CANN then takes C from the last dim, which the "
                "simulator does not model (pass ND/NCL/NCHW/NCDHW; the channel is view dim 1)",
                NAME(s), fmt_str(f));
  return 0;
}

/* ======================================================================================
 * 1. aclnnBatchNormReduceBackward
 *    ops-nn norm/sync_batch_norm_backward_reduce/op_api/aclnn_batch_norm_backward_reduce.cpp
 * ====================================================================================== */
enum { RB_DY, RB_X, RB_MEAN, RB_INVSTD, RB_W, RB_SUMDY, RB_SUMDYXMU, RB_GW, RB_GB };

int sim_bn_reduce_backward_ws(const void *gradOut, const void *input, const void *mean, const void *invstd,
                              const void *weight, bool inputG, bool weightG, bool biasG, void *sumDy, void *sumDyXmu,
                              void *gradWeight, void *gradBias, uint64_t *ws, void **exec) {
  static const char *const names[] = {"gradOut", "input", "mean", "invstd", "weight",
                                      "sumDy", "sumDyXmu", "gradWeight", "gradBias"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_REDUCE_BACKWARD, "aclnnBatchNormReduceBackward", 5, 4, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec)); /* OP_CHECK_COMM_INPUT */
  TRY(soc_check(c));
  TRY(op_supported(c));
  /* CheckInputNotNull / CheckOutputNotNull (GetMaskIdx: inputG -> sumDy and sumDyXmu, weightG ->
   * gradWeight, biasG -> gradBias): custom text logged with 561103, returned as 161001. */
  const void *hs[] = {gradOut, input, mean, invstd, weight, sumDy, sumDyXmu, gradWeight, gradBias};
  const bool need[] = {true, true, true, true, false, inputG, inputG, weightG, biasG};
  for (int s = RB_DY; s <= RB_GB; s++)
    if (need[s] && !hs[s])
      return fail(c, SIM_NN_NULLPTR, "expected a proper Tensor but got null for argument %s.", NAME(s));
  c->plan.mask[0] = inputG;
  c->plan.mask[1] = weightG;
  c->plan.mask[2] = biasG;
  for (int s = RB_DY; s <= RB_W; s++) TRY(get(c, hs[s], s));
  for (int s = RB_SUMDY; s <= RB_GB; s++)
    if (need[s]) TRY(get(c, hs[s], s)); /* a masked-off output is neither checked nor written */
  /* CheckDtypeValid: gradOut, input, mean, invstd in the list ("%s not implemented ..." without
   * "Tensor "), then OP_CHECK_DTYPE_NOT_MATCH(inputParamTensorList[0].param, input dtype), then
   * the masked outputs.  weight's dtype is never checked (it is unused). */
  DtList l = dl_fhb(c); /* GetDtypeSupportList: DAV_2201 or regbase -> + BF16 */
  for (int s = RB_DY; s <= RB_INVSTD; s++) TRY(dt_list(c, s, &l, "", NULL));
  TRY(dt_match(c, RB_DY, T(RB_X)->dtype, "inputParamTensorList[0].param"));
  for (int s = RB_SUMDY; s <= RB_GB; s++) TRY(dt_list(c, s, &l, "", NULL));
  /* CheckFormat */
  if (T(RB_DY)->format != T(RB_X)->format)
    return fail(c, SIM_NN_INVALID, "Format of gradOut and input should be equal. self [%s], out [%s].",
                fmt_str(T(RB_DY)->format), fmt_str(T(RB_X)->format));
  for (int s = RB_DY; s <= RB_GB; s++)
    if (s != RB_W && is_private(c, s))
      return fail(c, SIM_NN_INVALID, "Format only support ND, NCHW, NHWC, HWCN, NDHWC, NCDHW;but %s format is %s, please check.",
                  NAME(s), fmt_str(T(s)->format));
  /* CheckShape: rank 2..8, C != 0, every masked output exactly [C].  mean, invstd and weight
   * shapes and gradOut == input are NOT checked by CANN. */
  TRY(min_dim(c, RB_DY, 2, NULL));
  TRY(max_dim(c, RB_DY, 8, NULL));
  TRY(min_dim(c, RB_X, 2, NULL));
  TRY(max_dim(c, RB_X, 8, NULL));
  int64_t C = T(RB_X)->dims[1];
  if (C == 0) return fail(c, SIM_NN_INVALID, "channel size of input should not be zero.");
  for (int s = RB_SUMDY; s <= RB_GB; s++) {
    if (!P(s) || shape_is(T(s), &C, 1)) continue;
    char got[160];
    shape_str(T(s), got, sizeof got);
    return fail(c, SIM_NN_INVALID, "expected tensor for %s to have same size as [%" PRId64 "], but got %s.", NAME(s), C,
                got);
  }
  c->plan.C = C;
  /* Empty gradOut, input, mean or invstd (after CheckParams): DAV_3510 fills every masked output
   * with 0, other architectures write nothing (OutputParamFillZeroForEmptyTensor). */
  if (is_empty(T(RB_DY)) || is_empty(T(RB_X)) || is_empty(T(RB_MEAN)) || is_empty(T(RB_INVSTD))) {
    if (!c->plan.regbase) return finish_early(c, SIM_RUN_NOTHING, ws, exec);
    for (int s = RB_SUMDY; s <= RB_GB; s++) fill_slot(c, s, 0.0);
    return finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  /* [aclsim] the kernel reads dy in input's layout and C values of mean and invstd. */
  if (!same_shape(T(RB_DY), T(RB_X))) {
    char a[160], b[160];
    shape_str(T(RB_DY), a, sizeof a);
    shape_str(T(RB_X), b, sizeof b);
    return fail(c, SIM_NN_INVALID,
                "[aclsim] gradOut shape %s differs from input shape %s; CANN does not check this (its reductions would "
                "then read mismatched data), the simulator rejects it",
                a, b);
  }
  TRY(numel_c(c, RB_MEAN, C, "reads"));
  TRY(numel_c(c, RB_INVSTD, C, "reads"));
  return finish(c, C, ws, exec);
}

/* Per-channel sums over every dim but 1: sumDy and sum dy * (x - mean[c]). */
static void channel_sums(const SimTensorDesc *xd, const double *x, const double *dy, const double *mean, double *sdy,
                         double *sdx) {
  const int64_t *dm = dims_of(xd);
  int64_t N = dm[0], C = dm[1], inner = 1;
  for (int i = 2; i < xd->ndim; i++) inner *= dm[i];
  for (int64_t ch = 0; ch < C; ch++) {
    double a = 0, b = 0, m = mean ? mean[ch] : 0;
    for (int64_t n = 0; n < N; n++) {
      int64_t base = (n * C + ch) * inner;
      for (int64_t k = 0; k < inner; k++) {
        a += dy[base + k];
        b += dy[base + k] * (x[base + k] - m);
      }
    }
    sdy[ch] = a;
    sdx[ch] = b;
  }
}

static double *per_channel_or(const SimPlan *p, int s, int64_t C, double dflt) {
  if (p->present[s] && sim_desc_numel(&p->t[s]) == C) return sim_load(&p->t[s]);
  double *v = zalloc(C);
  for (int64_t i = 0; i < C; i++) v[i] = dflt;
  return v;
}

static void store_if(const SimPlan *p, int s, const double *v) {
  if (p->present[s]) sim_store(&p->t[s], v);
}

static int run_reduce_backward(const SimPlan *p) {
  int64_t C = p->C;
  double *x = sim_load(&p->t[RB_X]), *dy = sim_load(&p->t[RB_DY]);
  double *mean = sim_load(&p->t[RB_MEAN]), *invstd = sim_load(&p->t[RB_INVSTD]);
  double *sdy = zalloc(C), *sdx = zalloc(C);
  double *gw = zalloc(C);
  /* sumDyXmu = sum(dy * x) - mean * sum(dy) on the device (arch35 sync_batch_norm_backward_reduce_dag.h);
   * the two-pass form here is the same value, computed more accurately. weight is unused. */
  channel_sums(&p->t[RB_X], x, dy, mean, sdy, sdx);
  for (int64_t i = 0; i < C; i++) gw[i] = sdx[i] * invstd[i];
  store_if(p, RB_SUMDY, sdy);
  store_if(p, RB_SUMDYXMU, sdx);
  store_if(p, RB_GW, gw);
  store_if(p, RB_GB, sdy);
  free(x), free(dy), free(mean), free(invstd), free(sdy), free(sdx), free(gw);
  return 0;
}

/* ======================================================================================
 * 2. aclnnBatchNormBackward
 *    ops-nn norm/batch_norm_grad_v3/op_host/op_api/aclnn_batch_norm_backward.cpp
 * ====================================================================================== */
enum { BB_DY, BB_X, BB_W, BB_RM, BB_RV, BB_SM, BB_SI, BB_GI, BB_GW, BB_GB };

/* RegbaseCheckDtypeSame / CheckDtypeMatchReferenceOrFloat: "Dtype of %s:[%s] should be float or
 * same as %s, %s dtype: [%s]." (no check when either tensor is NULL). */
static int dt_ref_or_float(Ctx *c, int s, int ref) {
  if (!P(s) || !P(ref)) return 0;
  if (T(s)->dtype == T(ref)->dtype || T(s)->dtype == SIM_DT_FLOAT) return 0;
  return fail(c, SIM_NN_INVALID, "Dtype of %s:[%s] should be float or same as %s, %s dtype: [%s].", NAME(s),
              sim_dt_str(T(s)->dtype), NAME(ref), NAME(ref), sim_dt_str(T(ref)->dtype));
}

/* CheckOtherShape / CheckSaveMeanSaveInvstdShape / CheckGradWeightGradBiasShape: "Dim of %s
 * should be one and shape is channel num of input[%d], but got [%s]." (the shape string has its
 * own brackets, so "[[1, 3]]"). */
static int bb_dim_c(Ctx *c, int s, int64_t C, bool allow_zero) {
  if (!P(s)) return 0;
  const SimTensorDesc *d = T(s);
  if (d->ndim == 1 && (d->dims[0] == C || (allow_zero && d->dims[0] == 0))) return 0;
  char got[160];
  shape_str(d, got, sizeof got);
  return fail(c, SIM_NN_INVALID, "Dim of %s should be one and shape is channel num of input[%d], but got [%s].", NAME(s),
              (int)C, got);
}

/* RegbaseCheckDtypeSame's last rule, on the caller's pointers rather than the masked slots. */
static int bb_grad_dtypes_same(Ctx *c, const void *gradWeight, const void *gradBias) {
  if (gradWeight == NULL || gradBias == NULL) return 0;
  SimTensorDesc w, b;
  if (sim_lookup_tensor(gradWeight, &w) != 0)
    return fail(c, SIM_NN_INVALID, "gradWeight (%p) is not a live aclTensor (destroyed or never created)", gradWeight);
  if (sim_lookup_tensor(gradBias, &b) != 0)
    return fail(c, SIM_NN_INVALID, "gradBias (%p) is not a live aclTensor (destroyed or never created)", gradBias);
  if (w.dtype == b.dtype) return 0;
  return fail(c, SIM_NN_INVALID, "Expected both tensors to have same dtype, but found gradWeight %s and gradBias %s.",
              sim_dt_str(w.dtype), sim_dt_str(b.dtype));
}

int sim_bn_backward_ws(const void *gradOut, const void *input, const void *weight, const void *runningMean,
                       const void *runningVar, const void *saveMean, const void *saveInvstd, bool training, double eps,
                       const void *outputMask, void *gradInput, void *gradWeight, void *gradBias, uint64_t *ws,
                       void **exec) {
  static const char *const names[] = {"gradOut", "input", "weight", "runningMean", "runningVar",
                                      "saveMean", "saveInvstd", "gradInput", "gradWeight", "gradBias"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_BACKWARD, "aclnnBatchNormBackward", 7, 3, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec));
  TRY(soc_check(c));
  TRY(op_supported(c));
  c->plan.training = training;
  c->plan.eps = eps;
  /* CheckInputNotNull -> 161001 */
  TRY(NULL_TENSOR(c, gradOut, "gradOut", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, input, "input", SIM_NN_NULLPTR));
  TRY(get(c, gradOut, BB_DY));
  TRY(get(c, input, BB_X));
  /* input or gradOut empty: workspace 0, SUCCESS, nothing written, before any other check
   * (aclnnBatchNormBackwardGetWorkspaceSize). */
  if (is_empty(T(BB_X)) || is_empty(T(BB_DY))) return finish_early(c, SIM_RUN_NOTHING, ws, exec);
  /* CheckMaskNotNull: every failure is returned as 161001 (CheckParams maps false to
   * ACLNN_ERR_PARAM_NULLPTR), including a wrong length on DAV_3510. */
  TRY(null_arg(c, outputMask, "aclBoolArray", "outputMask", SIM_NN_NULLPTR));
  uint64_t mlen = 0;
  TRY(lookup_mask(c, outputMask, &mlen));
  if (mlen < 1) return fail(c, SIM_NN_NULLPTR, "outputMask size should not less than 1.");
  if (c->plan.regbase && mlen != 3)
    return fail(c, SIM_NN_NULLPTR, "outputMask size should be 3, but got %" PRIu64 ".", mlen);
  if (mlen < 3) /* [aclsim] non-regbase CANN reads (*outputMask)[1] and [2] anyway: out of bounds */
    return fail(c, SIM_NN_NULLPTR,
                "[aclsim] outputMask has %" PRIu64 " element(s): CANN on this SoC reads outputMask[1] and outputMask[2] "
                "regardless (an out-of-bounds read); the simulator rejects it",
                mlen);
  if (c->plan.mask[0]) TRY(NULL_TENSOR(c, gradInput, "gradInput", SIM_NN_NULLPTR));
  if (c->plan.mask[1]) TRY(NULL_TENSOR(c, gradWeight, "gradWeight", SIM_NN_NULLPTR));
  if (c->plan.mask[2]) TRY(NULL_TENSOR(c, gradBias, "gradBias", SIM_NN_NULLPTR));
  TRY(get(c, weight, BB_W));
  TRY(get(c, runningMean, BB_RM));
  TRY(get(c, runningVar, BB_RV));
  TRY(get(c, saveMean, BB_SM));
  TRY(get(c, saveInvstd, BB_SI));
  if (c->plan.mask[0]) TRY(get(c, gradInput, BB_GI));
  if (c->plan.mask[1]) TRY(get(c, gradWeight, BB_GW));
  if (c->plan.mask[2]) TRY(get(c, gradBias, BB_GB));
  /* CheckDtypeValid, CheckGradDtypeValid, CheckOtherDtypeValid: list membership only
   * (GetDtypeSupportList: DAV_2201 or regbase -> + BF16); input's dtype == gradOut's. */
  DtList l = dl_fhb(c);
  TRY(DT_SUPPORT(c, BB_DY, &l));
  TRY(DT_SUPPORT(c, BB_X, &l));
  TRY(dt_same(c, BB_X, BB_DY));
  for (int s = BB_GI; s <= BB_GB; s++) TRY(DT_SUPPORT(c, s, &l));
  for (int s = BB_W; s <= BB_SI; s++) TRY(DT_SUPPORT(c, s, &l));
  /* DAV_3510 only: RegbaseCheckDtypeSame (the mixed-precision rules). */
  if (c->plan.regbase) {
    TRY(dt_ref_or_float(c, BB_W, BB_DY));
    TRY(dt_ref_or_float(c, BB_RM, BB_DY));
    TRY(dt_ref_or_float(c, BB_RV, BB_DY));
    TRY(dt_same(c, BB_RM, BB_RV));
    TRY(dt_ref_or_float(c, BB_SM, BB_DY));
    TRY(dt_ref_or_float(c, BB_SI, BB_DY));
    TRY(dt_same(c, BB_SI, BB_SM));
    TRY(dt_same(c, BB_GI, BB_DY));
    TRY(dt_ref_or_float(c, BB_GW, BB_W));
    TRY(dt_ref_or_float(c, BB_GB, BB_W));
    /* aclnn_batch_norm_backward.cpp 355-357: gradWeight and gradBias must share a dtype whenever
     * both pointers are non-NULL, whatever outputMask says (a masked-off output is checked too). */
    TRY(bb_grad_dtypes_same(c, gradWeight, gradBias));
  }
  /* CheckFormat */
  if (T(BB_DY)->format != T(BB_X)->format)
    return fail(c, SIM_NN_INVALID, "Format of gradOut and input should be equal, gradOut [%s], input [%s].",
                fmt_str(T(BB_DY)->format), fmt_str(T(BB_X)->format));
  if (P(BB_GI) && T(BB_DY)->format != T(BB_GI)->format)
    return fail(c, SIM_NN_INVALID, "Format of gradOut and gradInput should be equal, gradOut [%s], gradInput [%s].",
                fmt_str(T(BB_DY)->format), fmt_str(T(BB_GI)->format));
  if (c->plan.regbase) {
    int32_t f = T(BB_X)->format;
    if (T(BB_X)->ndim == 5 && f != SIM_FMT_NCDHW && f != SIM_FMT_NDHWC)
      return fail(c, SIM_NN_INVALID, "Format of input should be NCDHW or NDHWC, when input dim is 5.");
    if (P(BB_GI) && T(BB_GI)->ndim == 5 && T(BB_GI)->format != SIM_FMT_NCDHW && T(BB_GI)->format != SIM_FMT_NDHWC)
      return fail(c, SIM_NN_INVALID, "Format of output should be NCDHW or NDHWC, when input dim is 5.");
  }
  if (is_private(c, BB_DY) || is_private(c, BB_X))
    return fail(c, SIM_NN_INVALID, "Format only support NC, NCL, NCHW, NCDHW.");
  /* CheckShape */
  TRY(max_dim(c, BB_X, 8, NULL));
  TRY(min_dim(c, BB_X, 2, NULL));
  TRY(max_dim(c, BB_DY, 8, NULL));
  TRY(min_dim(c, BB_DY, 2, NULL));
  TRY(shape_same(c, BB_DY, BB_X, NULL, NULL));
  if (P(BB_GI)) {
    TRY(max_dim(c, BB_GI, 8, NULL));
    TRY(min_dim(c, BB_GI, 2, NULL));
    TRY(shape_same(c, BB_GI, BB_DY, NULL, NULL));
  }
  TRY(regbase_channels_last(c, BB_X));
  int64_t C = T(BB_X)->dims[1];
  /* CheckOtherShape: weight, runningMean, runningVar exactly [C] (every SoC). */
  TRY(bb_dim_c(c, BB_W, C, false));
  TRY(bb_dim_c(c, BB_RM, C, false));
  TRY(bb_dim_c(c, BB_RV, C, false));
  if (c->plan.regbase) {
    /* CheckSaveMeanSaveInvstdShape ([C]; [0] allowed in inference), CheckGradWeightGradBiasShape */
    TRY(bb_dim_c(c, BB_SM, C, !training));
    TRY(bb_dim_c(c, BB_SI, C, !training));
    TRY(bb_dim_c(c, BB_GW, C, false));
    TRY(bb_dim_c(c, BB_GB, C, false));
    /* every mask bit false: SUCCESS, workspace 0, nothing to do (canEarlyReturn) */
    if (!c->plan.mask[0] && !c->plan.mask[1] && !c->plan.mask[2]) return finish_early(c, SIM_RUN_NOTHING, ws, exec);
  } else {
    /* Non-regbase CANN never checks saveMean/saveInvstd/gradWeight/gradBias shapes.
     * [aclsim] the kernel reads C saved statistics (training) and writes C gradients. */
    if (training) {
      TRY(numel_c(c, BB_SM, C, "reads"));
      TRY(numel_c(c, BB_SI, C, "reads"));
    }
    TRY(numel_c(c, BB_GW, C, "writes"));
    TRY(numel_c(c, BB_GB, C, "writes"));
  }
  c->plan.C = C;
  /* Off DAV_3510 gradInput is BNTrainingReduceGrad's result, in input's dtype, copied by
   * BatchNormPost's ViewCopy (aclnn_batch_norm_backward.cpp 394-413, 881-884); DAV_3510 requires
   * gradInput's dtype == gradOut's above (RegbaseCheckDtypeSame). */
  TRY(no_kernel(c));
  if (!c->plan.regbase) TRY(view_copy_dtype(c, BB_GI, T(BB_X)->dtype));
  return finish(c, C, ws, exec);
}

static int run_bn_backward(const SimPlan *p) {
  const SimTensorDesc *xd = &p->t[BB_X];
  int64_t C = p->C, numel = sim_desc_numel(xd);
  double *x = sim_load(xd), *dy = sim_load(&p->t[BB_DY]);
  /* NULL optionals are filled before dispatch: runningMean 0, runningVar 1, weight 1, saveMean 0,
   * saveInvstd 1 (ops-nn .../op_host/op_api/aclnn_batch_norm_backward.cpp BatchNormBackward,
   * op::FillScalar; BatchNormBackwardRegbase likewise). */
  double *w = per_channel_or(p, BB_W, C, 1.0);
  double *mean, *invstd;
  if (p->training) {
    mean = per_channel_or(p, BB_SM, C, 0.0);
    invstd = per_channel_or(p, BB_SI, C, 1.0);
    /* Non-regbase: saveInvstd goes to the kernel input `batch_variance` of BNTrainingUpdateGrad /
     * BNTrainingReduceGrad (BatchNormBackwardProc; proto in ops-nn
     * common/inc/op_graph/op_nn_proto_extend.h), i.e. it is read as the biased VARIANCE, the value
     * aclnnBatchNorm writes there on these SoCs.  DAV_3510's BatchNormGradV3 reads `save_rstd`. */
    if (p->bn_saves_variance)
      for (int64_t i = 0; i < C; i++) invstd[i] = 1.0 / sqrt(invstd[i] + p->eps);
  } else {
    mean = per_channel_or(p, BB_RM, C, 0.0);
    invstd = per_channel_or(p, BB_RV, C, 1.0);
    for (int64_t i = 0; i < C; i++) invstd[i] = 1.0 / sqrt(invstd[i] + p->eps);
  }
  double *sdy = zalloc(C), *sdx = zalloc(C);
  double *gw = zalloc(C);
  if (C > 0) channel_sums(xd, x, dy, mean, sdy, sdx);
  for (int64_t i = 0; i < C; i++) gw[i] = sdx[i] * invstd[i];
  if (p->present[BB_GI] && numel > 0) {
    double *gi = zalloc(numel);
    int64_t inner = numel / (xd->dims[0] * C);
    double M = (double)(numel / C);
    for (int64_t i = 0; i < numel; i++) {
      int64_t ch = (i / inner) % C;
      if (p->training)
        gi[i] = w[ch] * invstd[ch] *
                (dy[i] - sdy[ch] / M - (x[i] - mean[ch]) * invstd[ch] * invstd[ch] * sdx[ch] / M);
      else
        gi[i] = dy[i] * w[ch] * invstd[ch];
    }
    sim_store(&p->t[BB_GI], gi);
    free(gi);
  }
  store_if(p, BB_GW, gw);
  store_if(p, BB_GB, sdy);
  free(x), free(dy), free(w), free(mean), free(invstd), free(sdy), free(sdx), free(gw);
  return 0;
}

/* ======================================================================================
 * 3. aclnnGroupNormBackward
 *    ops-nn norm/group_norm_grad/op_host/op_api/aclnn_group_norm_backward.cpp
 * ====================================================================================== */
enum { GB_DY, GB_X, GB_MEAN, GB_RSTD, GB_GAMMA, GB_GI, GB_GG, GB_GBETA };

int sim_gn_backward_ws(const void *gradOut, const void *input, const void *mean, const void *rstd, const void *gamma,
                       int64_t N, int64_t C, int64_t HxW, int64_t group, const void *outputMask, void *gradInput,
                       void *gradGamma, void *gradBeta, uint64_t *ws, void **exec) {
  static const char *const names[] = {"gradOut", "input", "mean", "rstd", "gamma", "gradInput", "gradGammaOut", "gradBetaOut"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_GN_BACKWARD, "aclnnGroupNormBackward", 5, 3, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec)); /* OP_CHECK_COMM_INPUT */
  TRY(soc_check(c));
  TRY(op_supported(c));
  /* CheckNotNull -> 161001 */
  TRY(NULL_TENSOR(c, gradOut, "gradOut", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, input, "input", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, mean, "mean", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, rstd, "rstd", SIM_NN_NULLPTR));
  /* CheckMaskNotNull: every failure is returned as 161002 (CheckParams maps it to
   * ACLNN_ERR_PARAM_INVALID; the doc says 161001 for the NULL outputs). */
  TRY(null_arg(c, outputMask, "aclBoolArray", "outputMask", SIM_NN_INVALID));
  uint64_t mlen = 0;
  TRY(lookup_mask(c, outputMask, &mlen));
  if (mlen != 3)
    return fail(c, SIM_NN_INVALID, "Expected aclnnGroupNormBackward outputMask len to be 3, but got %" PRIu64 ".", mlen);
  if (c->plan.mask[0]) TRY(NULL_TENSOR(c, gradInput, "gradInput", SIM_NN_INVALID));
  if (c->plan.mask[1]) TRY(NULL_TENSOR(c, gradGamma, "gradGammaOut", SIM_NN_INVALID));
  if (c->plan.mask[2]) TRY(NULL_TENSOR(c, gradBeta, "gradBetaOut", SIM_NN_INVALID));
  TRY(get(c, gradOut, GB_DY));
  TRY(get(c, input, GB_X));
  TRY(get(c, mean, GB_MEAN));
  TRY(get(c, rstd, GB_RSTD));
  TRY(get(c, gamma, GB_GAMMA));
  if (c->plan.mask[0]) TRY(get(c, gradInput, GB_GI));
  if (c->plan.mask[1]) TRY(get(c, gradGamma, GB_GG));
  if (c->plan.mask[2]) TRY(get(c, gradBeta, GB_GBETA));
  /* CheckDtypeValid: gradOut in GetDtypeSupportListV2 (DAV_2201 or regbase -> + BF16). */
  DtList l = dl_fhb(c);
  TRY(DT_SUPPORT(c, GB_DY, &l));
  int32_t dyt = T(GB_DY)->dtype;
  if (sim_rule_gnb_mixed_precision(&c->soc)) {
    /* DAV_3510: mean in the list, then CheckMixPrecisionDtype. */
    TRY(DT_SUPPORT(c, GB_MEAN, &l));
    TRY(dt_match(c, GB_X, dyt, NULL));
    TRY(dt_match(c, GB_GI, dyt, NULL));
    if (dyt == SIM_DT_FLOAT) {
      TRY(dt_match(c, GB_MEAN, SIM_DT_FLOAT, NULL));
    } else if (dyt == SIM_DT_FLOAT16) {
      const DtList fh = {2, {SIM_DT_FLOAT, SIM_DT_FLOAT16, 0}}; /* REGBASE_FP16_FP32_SUPPORT_LIST */
      TRY(DT_SUPPORT(c, GB_MEAN, &fh));
    } else if (dyt == SIM_DT_BF16) {
      const DtList fb = {2, {SIM_DT_FLOAT, SIM_DT_BF16, 0}}; /* REGBASE_BF16_FP32_SUPPORT_LIST */
      TRY(DT_SUPPORT(c, GB_MEAN, &fb));
    }
    int32_t mt = T(GB_MEAN)->dtype;
    TRY(dt_match(c, GB_RSTD, mt, NULL));
    TRY(dt_match(c, GB_GAMMA, mt, NULL));
    TRY(dt_match(c, GB_GG, mt, NULL));
    TRY(dt_match(c, GB_GBETA, mt, NULL));
  } else {
    /* every other architecture: everything equals gradOut's dtype (no mixed precision) */
    for (int s = GB_X; s <= GB_GBETA; s++) TRY(dt_match(c, s, dyt, NULL));
  }
  /* CheckAttr */
  if (group <= 0) return fail(c, SIM_NN_INVALID, "Expected group to be greater than 0, got %" PRId64 ".", group);
  if (C % group != 0) return fail(c, SIM_NN_INVALID, "Expected C can be divided by group, but got false.");
  /* DAV_2201 only (sim_rule_gnb_limits): C / group <= 8000, C <= 240000 */
  int64_t max_per_group = 0, max_channels = 0;
  if (sim_rule_gnb_limits(&c->soc, &max_per_group, &max_channels)) {
    if (C / group > max_per_group)
      return fail(c, SIM_NN_INVALID, "Expected C / group <= %" PRId64 " to be true, but got false.", max_per_group);
    if (C > max_channels)
      return fail(c, SIM_NN_INVALID, "Expecting C to not exceed %" PRId64 ", got %" PRId64 ".", max_channels, C);
  }
  /* CheckShape: only element counts (and gradOut rank <= 8) */
  TRY(max_dim(c, GB_DY, 8, NULL));
  if (sim_desc_numel(T(GB_DY)) != N * C * HxW)
    return fail(c, SIM_NN_INVALID, "Expected gradOut.numel() == N * C * HxW to be true, but got false.");
  if (sim_desc_numel(T(GB_X)) != N * C * HxW)
    return fail(c, SIM_NN_INVALID, "Expected input.numel() == N * C * HxW to be true, but got false.");
  if (sim_desc_numel(T(GB_MEAN)) != N * group)
    return fail(c, SIM_NN_INVALID, "Expected mean.numel() == N * group to be true, but got false.");
  if (sim_desc_numel(T(GB_RSTD)) != N * group)
    return fail(c, SIM_NN_INVALID, "Expected rstd.numel() == N * group to be true, but got false.");
  if (P(GB_GAMMA) && sim_desc_numel(T(GB_GAMMA)) != C)
    return fail(c, SIM_NN_INVALID, "Expected gamma.numel() == C to be true, but got false.");
  TRY(shape_expect(c, GB_GI, T(GB_X)->dims, T(GB_X)->ndim, NULL));
  const int64_t cdims[1] = {C};
  const int64_t *gdims = P(GB_GAMMA) ? T(GB_GAMMA)->dims : cdims;
  int gnd = P(GB_GAMMA) ? T(GB_GAMMA)->ndim : 1;
  TRY(shape_expect(c, GB_GG, gdims, gnd, NULL));
  TRY(shape_expect(c, GB_GBETA, gdims, gnd, NULL));
  /* [aclsim] negative sizes pass CANN's checks only in combinations no kernel can run */
  if (N < 0 || C < 0 || HxW < 0)
    return fail(c, SIM_NN_INVALID, "[aclsim] N (%" PRId64 "), C (%" PRId64 ") and HxW (%" PRId64 ") must not be negative",
                N, C, HxW);
  c->plan.N = N;
  c->plan.C = C;
  c->plan.HxW = HxW;
  c->plan.group = group;
  c->plan.decomposed = sim_rule_gnb_decomposed(&c->soc); /* sim_decomposed.c */
  /* Empty tensors (after CheckParams): other architectures return SUCCESS with nothing written
   * when gradOut or input is empty; DAV_3510 launches GroupNormGrad, whose dgamma/dbeta for an
   * empty input are zeros, when gradOut, input, mean or rstd is empty and gamma (ones [C] when
   * NULL) is not (ComputeGroupNormBackwardEmptyInput), and writes nothing when gamma is empty. */
  bool any_empty = is_empty(T(GB_DY)) || is_empty(T(GB_X));
  if (!c->plan.regbase) {
    if (any_empty) return finish_early(c, SIM_RUN_NOTHING, ws, exec);
  } else {
    bool gamma_empty = P(GB_GAMMA) ? sim_desc_numel(T(GB_GAMMA)) == 0 : C == 0;
    any_empty = any_empty || is_empty(T(GB_MEAN)) || is_empty(T(GB_RSTD));
    if (any_empty && !gamma_empty) {
      fill_slot(c, GB_GG, 0.0);
      fill_slot(c, GB_GBETA, 0.0);
      return finish_early(c, SIM_RUN_FILL, ws, exec);
    }
    if (gamma_empty) return finish_early(c, SIM_RUN_NOTHING, ws, exec);
  }
  /* [aclsim] the kernels read base layouts only */
  for (int s = GB_DY; s <= GB_GBETA; s++)
    if (is_private(c, s))
      return fail(c, SIM_NN_INVALID, "[aclsim] %s has the private format %s, which the simulator does not model", NAME(s),
                  fmt_str(T(s)->format));
  return finish(c, N * C, ws, exec);
}

static int run_gn_backward(const SimPlan *p) {
  int64_t N = p->N, C = p->C, HxW = p->HxW, G = p->group, D = C / G;
  double *x = sim_load(&p->t[GB_X]), *dy = sim_load(&p->t[GB_DY]);
  double *mean = sim_load(&p->t[GB_MEAN]), *rstd = sim_load(&p->t[GB_RSTD]);
  double *gamma = per_channel_or(p, GB_GAMMA, C, 1.0);
  int64_t total = N * C * HxW;
  double *gi = zalloc(total);
  double *gg = zalloc(C), *gb = zalloc(C);
  double cnt = (double)(D * HxW);
  if (p->decomposed) /* every tensor has gradOut's dtype off DAV_3510 (CheckDtypeValid) */
    sim_gn_backward_decomposed(x, dy, mean, rstd, gamma, N, C, HxW, G, p->t[GB_DY].dtype, p->overflow_mode, gi, gg, gb);
  for (int64_t n = 0; n < N && !p->decomposed; n++) {
    for (int64_t g = 0; g < G; g++) {
      double m = mean[n * G + g], r = rstd[n * G + g], s1 = 0, s2 = 0;
      for (int64_t ch = g * D; ch < (g + 1) * D; ch++) {
        for (int64_t k = 0; k < HxW; k++) {
          int64_t i = (n * C + ch) * HxW + k;
          double xh = (x[i] - m) * r, dxh = dy[i] * gamma[ch];
          s1 += dxh;
          s2 += dxh * xh;
          gg[ch] += dy[i] * xh;
          gb[ch] += dy[i];
        }
      }
      for (int64_t ch = g * D; ch < (g + 1) * D; ch++) {
        for (int64_t k = 0; k < HxW; k++) {
          int64_t i = (n * C + ch) * HxW + k;
          double xh = (x[i] - m) * r, dxh = dy[i] * gamma[ch];
          gi[i] = r * (dxh - s1 / cnt - xh * s2 / cnt);
        }
      }
    }
  }
  if (p->present[GB_GI]) sim_store(&p->t[GB_GI], gi);
  store_if(p, GB_GG, gg);
  store_if(p, GB_GBETA, gb);
  free(x), free(dy), free(mean), free(rstd), free(gamma), free(gi), free(gg), free(gb);
  return 0;
}

/* ======================================================================================
 * 4. aclnnBatchNormStats
 *    ops-math math/reduce_std_with_mean/op_api/aclnn_batch_norm_stats.cpp
 * ====================================================================================== */
enum { ST_X, ST_MEAN, ST_INVSTD };

int sim_bn_stats_ws(const void *input, double eps, void *mean, void *invstd, uint64_t *ws, void **exec) {
  static const char *const names[] = {"input", "mean", "invstd"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_STATS, "aclnnBatchNormStats", 1, 2, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec)); /* OP_CHECK_COMM_INPUT */
  TRY(soc_check(c));
  TRY(op_supported(c));
  /* CheckNotNull -> 161001 */
  TRY(NULL_TENSOR(c, input, "input", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, mean, "mean", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, invstd, "invstd", SIM_NN_NULLPTR));
  TRY(get(c, input, ST_X));
  TRY(get(c, mean, ST_MEAN));
  TRY(get(c, invstd, ST_INVSTD));
  c->plan.eps = eps;
  /* CheckDtypeValid: input in {FLOAT, FLOAT16} (+ BF16 on regbase only), mean and invstd FLOAT */
  DtList l = dl_fhb(c);
  const DtList f = {1, {SIM_DT_FLOAT, 0, 0}};
  TRY(DT_SUPPORT(c, ST_X, &l));
  TRY(DT_SUPPORT(c, ST_MEAN, &f));
  TRY(DT_SUPPORT(c, ST_INVSTD, &f));
  /* CheckFormat */
  if (is_private(c, ST_X)) return fail(c, SIM_NN_INVALID, "Input format only support ND, NCL, NCHW, NCDHW.");
  if (is_private(c, ST_MEAN)) return fail(c, SIM_NN_INVALID, "Mean format only support ND, NCL, NCHW, NCDHW.");
  if (is_private(c, ST_INVSTD)) return fail(c, SIM_NN_INVALID, "Invstd format only support ND, NCL, NCHW, NCDHW.");
  /* CheckShape */
  TRY(max_dim(c, ST_X, 8, NULL));
  TRY(min_dim(c, ST_X, 2, NULL));
  TRY(wrong_dim(c, ST_MEAN, 1));
  TRY(wrong_dim(c, ST_INVSTD, 1));
  int64_t C = T(ST_X)->dims[1];
  if (C == 0) return fail(c, SIM_NN_INVALID, "Channel size of input should not be zero.");
  TRY(shape_expect(c, ST_MEAN, &C, 1, NULL));
  TRY(shape_expect(c, ST_INVSTD, &C, 1, NULL));
  c->plan.C = C;
  /* Empty input (after CheckParams): mean = 0, invstd = NaN (ProcessEmptyTensorWithValue). */
  if (is_empty(T(ST_X))) {
    fill_slot(c, ST_MEAN, 0.0);
    fill_slot(c, ST_INVSTD, NAN);
    return finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  return finish(c, C, ws, exec);
}

/* mean and biased variance per channel (two-pass); returns the element count per channel. */
static int64_t channel_mean_var(const SimTensorDesc *xd, const double *x, double *mean, double *var) {
  int64_t N = xd->dims[0], C = xd->dims[1], inner = 1;
  for (int i = 2; i < xd->ndim; i++) inner *= xd->dims[i];
  int64_t M = N * inner;
  for (int64_t ch = 0; ch < C; ch++) {
    double s = 0, q = 0;
    for (int64_t n = 0; n < N; n++)
      for (int64_t k = 0; k < inner; k++) s += x[(n * C + ch) * inner + k];
    double m = M > 0 ? s / (double)M : 0;
    for (int64_t n = 0; n < N; n++)
      for (int64_t k = 0; k < inner; k++) {
        double d = x[(n * C + ch) * inner + k] - m;
        q += d * d;
      }
    mean[ch] = m;
    var[ch] = M > 0 ? q / (double)M : 0;
  }
  return M;
}

static int run_bn_stats(const SimPlan *p) {
  int64_t C = p->C;
  double *x = sim_load(&p->t[ST_X]);
  double *mean = zalloc(C), *var = zalloc(C);
  /* invstd = 1/sqrt(biased var + eps) (ReduceStdWithMean invert=true / ReduceVar + Pow) */
  int64_t M = channel_mean_var(&p->t[ST_X], x, mean, var);
  for (int64_t i = 0; i < C; i++) var[i] = M > 0 ? 1.0 / sqrt(var[i] + p->eps) : NAN;
  sim_store(&p->t[ST_MEAN], mean);
  sim_store(&p->t[ST_INVSTD], var);
  free(x), free(mean), free(var);
  return 0;
}

/* ======================================================================================
 * 5. aclnnBatchNormGatherStatsWithCounts
 *    ops-nn norm/sync_batch_norm_gather_stats_with_counts/op_host/op_api/
 *    aclnn_batch_norm_gather_stats_with_counts.cpp
 * ====================================================================================== */
enum { GS_X, GS_MEAN, GS_INVSTD, GS_RM, GS_RV, GS_COUNTS, GS_MEANALL, GS_INVSTDALL };

int sim_bn_gather_stats_ws(const void *input, const void *mean, const void *invstd, void *runningMean, void *runningVar,
                           double momentum, double eps, const void *counts, void *meanAll, void *invstdAll, uint64_t *ws,
                           void **exec) {
  static const char *const names[] = {"input", "mean", "invstd", "runningMean", "runningVar", "counts", "meanAll", "invstdAll"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_GATHER_STATS, "aclnnBatchNormGatherStatsWithCounts", 6, 2, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec)); /* OP_CHECK_COMM_INPUT */
  TRY(soc_check(c));
  TRY(op_supported(c));
  /* CheckNotNull (CHECK_COND -> 161001) */
  const void *hs[] = {input, mean, invstd, runningMean, runningVar, counts, meanAll, invstdAll};
  for (int s = GS_X; s <= GS_INVSTDALL; s++)
    if (s != GS_RM && s != GS_RV) TRY(NULL_TENSOR(c, hs[s], NAME(s), SIM_NN_NULLPTR));
  for (int s = GS_X; s <= GS_INVSTDALL; s++) TRY(get(c, hs[s], s));
  c->plan.momentum = momentum;
  c->plan.eps = eps;
  /* CheckDtypeValid: every tensor (counts too: a float dtype) in the list; BF16 when SocVersion is
   * in [ASCEND910B, ASCEND910E] or ASCEND950 (CheckSocVersionGe910B, IsSocVersion950). */
  DtList l = dl_fhb(c);
  for (int s = GS_X; s <= GS_INVSTD; s++) TRY(DT_SUPPORT(c, s, &l));
  TRY(DT_SUPPORT(c, GS_RM, &l));
  TRY(DT_SUPPORT(c, GS_RV, &l));
  TRY(DT_SUPPORT(c, GS_COUNTS, &l));
  TRY(DT_SUPPORT(c, GS_MEANALL, &l));
  TRY(DT_SUPPORT(c, GS_INVSTDALL, &l));
  /* CheckFormat */
  if (is_private(c, GS_X) || is_private(c, GS_MEAN) || is_private(c, GS_INVSTD) || is_private(c, GS_COUNTS))
    return fail(c, SIM_NN_INVALID, "Format only support ND,NCHW,NCL,NCDHW.");
  /* CheckShape, in its order */
  TRY(max_dim(c, GS_X, 8, NULL));
  TRY(min_dim(c, GS_X, 2, NULL));
  TRY(wrong_dim(c, GS_MEAN, 2));
  TRY(wrong_dim(c, GS_INVSTD, 2));
  /* counts.shape[0] is read before counts' rank is checked; [aclsim] a 0-d counts fails here */
  if (T(GS_MEAN)->dims[0] != T(GS_INVSTD)->dims[0] || T(GS_COUNTS)->ndim < 1 ||
      T(GS_COUNTS)->dims[0] != T(GS_MEAN)->dims[0]) {
    char a[160], b[160], k[160];
    shape_str(T(GS_MEAN), a, sizeof a);
    shape_str(T(GS_INVSTD), b, sizeof b);
    shape_str(T(GS_COUNTS), k, sizeof k);
    return fail(c, SIM_NN_INVALID,
                "first dimension of mean, invstd and count should be the same, but got mean: %s, invstd: %s, counts: %s.",
                a, b, k);
  }
  int64_t C = T(GS_X)->dims[1];
  if (T(GS_MEAN)->dims[1] != C || T(GS_INVSTD)->dims[1] != C) {
    char a[160], b[160];
    shape_str(T(GS_MEAN), a, sizeof a);
    shape_str(T(GS_INVSTD), b, sizeof b);
    return fail(c, SIM_NN_INVALID,
                "second dimension of mean/invstd should be the channel size of input %" PRId64 ", but gotmean: %s, "
                "invstd: %s.",
                C, a, b);
  }
  TRY(shape_expect(c, GS_RM, &C, 1, NULL));
  TRY(shape_expect(c, GS_RV, &C, 1, NULL));
  if (T(GS_COUNTS)->ndim != 1) return fail(c, SIM_NN_INVALID, "dim of counts should be one.");
  TRY(shape_expect(c, GS_MEANALL, &C, 1, NULL));
  TRY(shape_expect(c, GS_INVSTDALL, &C, 1, NULL));
  c->plan.C = C;
  /* Only an empty `mean` short-circuits (input's data is never read): meanAll = 0, invstdAll =
   * NaN, running statistics untouched. */
  if (is_empty(T(GS_MEAN))) {
    fill_slot(c, GS_MEANALL, 0.0);
    fill_slot(c, GS_INVSTDALL, NAN);
    return finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  /* runningMean given, runningVar NULL: CopyRunningTensorToDst returns early only when
   * runningMeanDst is NULL and then evaluates runningVarDst->GetDataType() (line 326) -- a NULL
   * dereference during GetWorkspaceSize (the 950 path's CopyResultTensorToDst passes the NULL to
   * l0op::ViewCopy).  The process dies; the simulator dies loudly the same way. */
  if (P(GS_RM) && !P(GS_RV)) {
    fprintf(stderr,
            "aclsim: aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize: runningMean is given but runningVar is NULL; "
            "CANN dereferences the NULL runningVar here (hicann/ops-nn norm/sync_batch_norm_gather_stats_with_counts/"
            "op_host/op_api/aclnn_batch_norm_gather_stats_with_counts.cpp:326, CopyRunningTensorToDst: "
            "runningVarDst->GetDataType()) and the process crashes: aborting\n");
    fflush(stderr);
    abort();
  }
  /* runningVar given, runningMean NULL: both copy-back functions return early when runningMeanDst
   * is NULL, so runningVar is silently NOT updated (run_gather_stats). */
  return finish(c, C, ws, exec);
}

static int run_gather_stats(const SimPlan *p) {
  int64_t C = p->C, W = p->t[GS_MEAN].dims[0];
  double *mean = sim_load(&p->t[GS_MEAN]), *invstd = sim_load(&p->t[GS_INVSTD]);
  double *counts = sim_load(&p->t[GS_COUNTS]);
  double *ma = zalloc(C), *ia = zalloc(C);
  double *rm = p->present[GS_RM] ? sim_load(&p->t[GS_RM]) : NULL;
  /* runningVar is written back only together with runningMean (CopyRunningTensorToDst) */
  double *rv = p->present[GS_RV] && p->present[GS_RM] ? sim_load(&p->t[GS_RV]) : NULL;
  /* meanAll = sum_w counts_w * mean_w / countSum (non-950: ReduceMeanWithCount, ops-nn
   * aclnn_batch_norm_gather_stats_with_counts.cpp 461-480);
   * var_sum = sum_w counts_w * ((1/invstd_w)^2 - eps + (mean_w - meanAll)^2),
   * invstdAll = 1/sqrt(var_sum/countSum + eps), runningVar takes var_sum/(countSum - 1)
   * (950: sync_batch_norm_gather_stats_fused op_kernel/..._first_axis_common.inl 149-190 and
   * ..._compute.h 49-50, 139-186; the non-950 TBE kernel is not public and is taken to agree).
   * Sums weighted by the counts, not PyTorch CUDA's sequential merge: a rank of count 0 adds
   * nothing wherever it is (its invstd must still be finite: 0 * NaN is NaN). */
  for (int64_t ch = 0; ch < C; ch++) {
    double n = 0, weighted = 0;
    for (int64_t w = 0; w < W; w++) {
      n += counts[w];
      weighted += counts[w] * mean[w * C + ch];
    }
    double avg = weighted / n, var_n = 0;
    for (int64_t w = 0; w < W; w++) {
      double m = mean[w * C + ch], sd = 1.0 / invstd[w * C + ch];
      var_n += counts[w] * (sd * sd - p->eps + (m - avg) * (m - avg));
    }
    ma[ch] = avg;
    ia[ch] = 1.0 / sqrt(var_n / n + p->eps);
    if (rm) rm[ch] = (1 - p->momentum) * rm[ch] + p->momentum * avg;
    if (rv) rv[ch] = (1 - p->momentum) * rv[ch] + p->momentum * (var_n / (n - 1));
  }
  sim_store(&p->t[GS_MEANALL], ma);
  sim_store(&p->t[GS_INVSTDALL], ia);
  if (rm) sim_store(&p->t[GS_RM], rm);
  if (rv) sim_store(&p->t[GS_RV], rv);
  free(mean), free(invstd), free(counts), free(ma), free(ia), free(rm), free(rv);
  return 0;
}

/* ======================================================================================
 * 6. aclnnBatchNormElemtBackward
 *    ops-nn norm/sync_batch_norm_backward_elemt/op_api/aclnn_batch_norm_elemt_backward.cpp
 * ====================================================================================== */
enum { EB_DY, EB_X, EB_MEAN, EB_INVSTD, EB_W, EB_SUMDY, EB_SUMDYXMU, EB_COUNTER, EB_GI };

int sim_bn_elemt_backward_ws(const void *gradOut, const void *input, const void *mean, const void *invstd,
                             const void *weight, const void *sumDy, const void *sumDyXmu, void *counter, void *gradInput,
                             uint64_t *ws, void **exec) {
  static const char *const names[] = {"gradOut", "input", "mean", "invstd", "weight", "sumDy", "sumDyXmu", "counter", "gradInput"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_ELEMT_BACKWARD, "aclnnBatchNormElemtBackward", 8, 1, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec)); /* OP_CHECK_COMM_INPUT */
  TRY(soc_check(c));
  TRY(op_supported(c));
  /* CheckNotNull (CHECK_COND -> 161001): everything but weight */
  const void *hs[] = {gradOut, input, mean, invstd, weight, sumDy, sumDyXmu, counter, gradInput};
  for (int s = EB_DY; s <= EB_GI; s++)
    if (s != EB_W) TRY(NULL_TENSOR(c, hs[s], NAME(s), SIM_NN_NULLPTR));
  for (int s = EB_DY; s <= EB_GI; s++) TRY(get(c, hs[s], s));
  /* CheckParams: + BF16 on SocVersion ASCEND910B / ASCEND910_93 or regbase (not 910E);
   * counter in {FLOAT, FLOAT16, INT32} on every SoC.  No same-dtype rule. */
  DtList l = dl_fhb(c);
  const DtList cl = {3, {SIM_DT_FLOAT, SIM_DT_FLOAT16, SIM_DT_INT32}}; /* COUNTER_DTYPE_SUPPORT_LIST */
  for (int s = EB_DY; s <= EB_GI; s++) TRY(DT_SUPPORT(c, s, s == EB_COUNTER ? &cl : &l));
  /* CheckFormat */
  const int fs[] = {EB_DY, EB_X, EB_GI};
  for (int i = 0; i < 3; i++)
    if (is_private(c, fs[i]))
      return fail(c, SIM_NN_INVALID, "Format of %s only support ND, NCHW, NCL, NCDHW.", NAME(fs[i]));
  /* CheckShape */
  TRY(min_dim(c, EB_X, 2, NULL));
  TRY(max_dim(c, EB_X, 8, NULL));
  TRY(max_dim(c, EB_DY, 8, NULL));
  TRY(max_dim(c, EB_GI, 8, NULL));
  TRY(max_dim(c, EB_COUNTER, 8, NULL));
  int64_t C = T(EB_X)->dims[1];
  if (C == 0) return fail(c, SIM_NN_INVALID, "Input channel size should not be zero.");
  TRY(shape_same(c, EB_DY, EB_X, NULL, NULL));
  TRY(shape_same(c, EB_GI, EB_X, NULL, NULL));
  for (int s = EB_MEAN; s <= EB_SUMDYXMU; s++) TRY(shape_expect(c, s, &C, 1, NULL));
  c->plan.C = C;
  /* input or gradOut empty (after the checks): SUCCESS, nothing written */
  if (is_empty(T(EB_X)) || is_empty(T(EB_DY))) return finish_early(c, SIM_RUN_NOTHING, ws, exec);
  return finish(c, C, ws, exec);
}

static int run_elemt_backward(const SimPlan *p) {
  const SimTensorDesc *xd = &p->t[EB_X];
  int64_t C = p->C, numel = sim_desc_numel(xd);
  if (numel == 0) return 0;
  double *x = sim_load(xd), *dy = sim_load(&p->t[EB_DY]);
  double *mean = sim_load(&p->t[EB_MEAN]), *invstd = sim_load(&p->t[EB_INVSTD]);
  double *w = per_channel_or(p, EB_W, C, 1.0);
  double *sdy = sim_load(&p->t[EB_SUMDY]), *sdx = sim_load(&p->t[EB_SUMDYXMU]);
  double *cnt = sim_load(&p->t[EB_COUNTER]);
  /* total = sum of counter over all its elements (MeanByCounter) */
  double total = 0;
  for (int64_t i = 0; i < sim_desc_numel(&p->t[EB_COUNTER]); i++) total += cnt[i];
  double *gi = zalloc(numel);
  int64_t inner = numel / (xd->dims[0] * C);
  /* GetPromoteType (aclnn_batch_norm_elemt_backward.cpp 191-202): FLOAT16 only when every input
   * but counter is FLOAT16, a NULL weight being a float32 fill (FillScalar); else FLOAT. */
  bool all16 = p->present[EB_W];
  for (int s = EB_DY; s <= EB_SUMDYXMU; s++) all16 = all16 && p->t[s].dtype == SIM_DT_FLOAT16;
  sim_elemt_backward(dy, x, mean, invstd, w, sdy, sdx, total, numel, C, inner,
                     all16 ? SIM_DT_FLOAT16 : SIM_DT_FLOAT, p->overflow_mode, gi);
  sim_store(&p->t[EB_GI], gi); /* Cast to gradInput's dtype (405), then ViewCopy */
  free(x), free(dy), free(mean), free(invstd), free(w), free(sdy), free(sdx), free(cnt), free(gi);
  return 0;
}

/* ======================================================================================
 * 7. aclnnBatchNorm
 *    ops-nn norm/batch_norm_v3/op_host/op_api/aclnn_batch_norm.cpp
 * ====================================================================================== */
enum { BN_X, BN_W, BN_B, BN_RM, BN_RV, BN_Y, BN_SM, BN_SI };

/* CheckOtherShape: "Dim of %s should be one and shape is channel num of input." */
static int bn_dim_c(Ctx *c, int s, int64_t C) {
  if (!P(s) || (T(s)->ndim == 1 && T(s)->dims[0] == C)) return 0;
  return fail(c, SIM_NN_INVALID, "Dim of %s should be one and shape is channel num of input.", NAME(s));
}

/* The BatchNormV3 kernel's rule for the label of a 4-D/5-D input (sim_rules.c
 * sim_rule_bn_v3_format, with its sources): a refused tiling fails ADD_TO_LAUNCHER_LIST_AICORE
 * ("BatchNormV3 ADD_TO_LAUNCHER_LIST_AICORE failed.", op_api/batch_norm.cpp:136-141, 161-166)
 * and phase 1 returns ACLNN_ERR_INNER_NULLPTR (aclnn_batch_norm.cpp:640-647 CHECK_RET). */
static int bn_v3_format(Ctx *c, bool training) {
  const SimTensorDesc *x = T(BN_X);
  bool known = true;
  const char *want = sim_rule_bn_v3_format(&c->soc, training, x->format, x->ndim, x->dims[1], &known);
  if (want == NULL) return 0;
  if (!known)
    return fail(c, SIM_NN_INNER_NULLPTR,
                "BatchNormV3: x's format %s is not supported; expected %s (BatchNormV3 tiling). BatchNormV3 "
                "ADD_TO_LAUNCHER_LIST_AICORE failed.",
                fmt_str(x->format), want);
  return fail(c, SIM_NN_INNER_NULLPTR,
              "BatchNormV3: x has %d dims, expected %s (BatchNormV3 tiling). BatchNormV3 ADD_TO_LAUNCHER_LIST_AICORE "
              "failed.",
              x->ndim, want);
}

int sim_bn_ws(const void *input, const void *weight, const void *bias, void *runningMean, void *runningVar, bool training,
              double momentum, double eps, void *output, void *saveMean, void *saveInvstd, uint64_t *ws, void **exec) {
  static const char *const names[] = {"input", "weight", "bias", "runningMean", "runningVar", "output", "saveMean", "saveInvstd"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN, "aclnnBatchNorm", 5, 3, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec));
  TRY(soc_check(c));
  c->plan.training = training;
  c->plan.momentum = momentum;
  c->plan.eps = eps;
  /* CheckNotNull -> 161001: input and out; saveMean and saveInvstd in training only */
  TRY(NULL_TENSOR(c, input, "input", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, output, "out", SIM_NN_NULLPTR));
  if (training) {
    TRY(NULL_TENSOR(c, saveMean, "saveMean", SIM_NN_NULLPTR));
    TRY(NULL_TENSOR(c, saveInvstd, "saveInvstd", SIM_NN_NULLPTR));
  }
  TRY(get(c, input, BN_X));
  /* Empty input, before any dtype or shape check: saveMean = 0 and saveInvstd = NaN when they
   * are non-NULL, whatever `training` says; output and running statistics untouched
   * (aclnnBatchNormGetWorkspaceSize, ProcessEmptyTensorWithValue). */
  if (is_empty(T(BN_X))) {
    TRY(get(c, saveMean, BN_SM));
    TRY(get(c, saveInvstd, BN_SI));
    fill_slot(c, BN_SM, 0.0);
    fill_slot(c, BN_SI, NAN);
    return finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  TRY(get(c, weight, BN_W));
  TRY(get(c, bias, BN_B));
  TRY(get(c, runningMean, BN_RM));
  TRY(get(c, runningVar, BN_RV));
  TRY(get(c, output, BN_Y));
  if (training) { /* saveMean / saveInvstd are outputs of the training mode only */
    TRY(get(c, saveMean, BN_SM));
    TRY(get(c, saveInvstd, BN_SI));
  }
  /* CheckDtypeValid: GetSupportDtypeList(npuArch) has no entry -> "support for npuArch %u is not
   * implemented" (sim_rule_bn_has_dtype_list: every NpuArch but 2002, 1001, 2201, 3510). */
  if (!sim_rule_bn_has_dtype_list(&c->soc))
    return fail(c, SIM_NN_INVALID, "support for npuArch %u is not implemented (SoC %s, %s)",
                (unsigned)(uint32_t)c->soc.npu_arch, c->soc.soc_name, c->soc.product);
  /* Each tensor against the list independently, no same-dtype rule: input, out, [saveMean,
   * saveInvstd], then CheckOtherDtypeValid: weight, bias, runningMean, runningVar. */
  DtList l = dl_fhb(c);
  TRY(DT_SUPPORT(c, BN_X, &l));
  TRY(dt_list(c, BN_Y, &l, "Tensor ", "out"));
  TRY(DT_SUPPORT(c, BN_SM, &l));
  TRY(DT_SUPPORT(c, BN_SI, &l));
  for (int s = BN_W; s <= BN_RV; s++) TRY(DT_SUPPORT(c, s, &l));
  /* CheckFormat */
  int32_t fi = T(BN_X)->format, fo = T(BN_Y)->format;
  if (fi != fo)
    return fail(c, SIM_NN_INVALID, "Format of input and output should be equal, input [%s], output [%s].", fmt_str(fi),
                fmt_str(fo));
  if (c->plan.regbase) {
    if (T(BN_X)->ndim == 5 && fi != SIM_FMT_NCDHW && fi != SIM_FMT_NDHWC)
      return fail(c, SIM_NN_INVALID, "Format of input should be NCDHW or NDHWC, when input dim is 5.");
    if (T(BN_Y)->ndim == 5 && fo != SIM_FMT_NCDHW && fo != SIM_FMT_NDHWC)
      return fail(c, SIM_NN_INVALID, "Format of output should be NCDHW or NDHWC, when input dim is 5.");
  } else {
    if (T(BN_X)->ndim == 5 && fi != SIM_FMT_NCDHW)
      return fail(c, SIM_NN_INVALID, "Format of input should be NCDHW, when input dim is 5.");
    if (T(BN_Y)->ndim == 5 && fo != SIM_FMT_NCDHW)
      return fail(c, SIM_NN_INVALID, "Format of output should be NCDHW, when input dim is 5.");
  }
  if (private_format(fi)) return fail(c, SIM_NN_INVALID, "Format only support ND、NCL、NCHW、NCDHW.");
  /* CheckShape, CheckOtherShape, then (training) saveMean / saveInvstd exactly [C] */
  TRY(max_dim(c, BN_X, 8, NULL));
  TRY(min_dim(c, BN_X, 2, NULL));
  TRY(max_dim(c, BN_Y, 8, "out"));
  TRY(min_dim(c, BN_Y, 2, "out"));
  TRY(shape_same(c, BN_Y, BN_X, "out", NULL));
  TRY(regbase_channels_last(c, BN_X));
  int64_t C = T(BN_X)->dims[1];
  for (int s = BN_W; s <= BN_RV; s++) TRY(bn_dim_c(c, s, C));
  if (training) {
    TRY(shape_expect(c, BN_SM, &C, 1, NULL));
    TRY(shape_expect(c, BN_SI, &C, 1, NULL));
  }
  c->plan.C = C;
  TRY(bn_v3_format(c, training));
  /* every path's result is in input's dtype (BNInfer, BNTrainingUpdate, BatchNormV3 allocate y as
   * x's, op_api/batch_norm.cpp 30, 82, 127; the regbase path casts to it, aclnn_batch_norm.cpp
   * 544), then ViewCopy into out (aclnn_batch_norm.cpp 333-337) */
  TRY(no_kernel(c));
  TRY(view_copy_dtype(c, BN_Y, T(BN_X)->dtype));
  return finish(c, C, ws, exec);
}

static int run_bn(const SimPlan *p) {
  const SimTensorDesc *xd = &p->t[BN_X];
  int64_t C = p->C, numel = sim_desc_numel(xd);
  double *x = sim_load(xd);
  /* NULL optionals: weight 1, bias 0, runningMean 0, runningVar 1 (BatchNorm(): FillScalar) */
  double *w = per_channel_or(p, BN_W, C, 1.0), *b = per_channel_or(p, BN_B, C, 0.0);
  double *mean = zalloc(C), *var = zalloc(C);
  double *invstd = zalloc(C);
  if (p->training) {
    int64_t M = C > 0 ? channel_mean_var(xd, x, mean, var) : 0;
    for (int64_t i = 0; i < C; i++) invstd[i] = M > 0 ? 1.0 / sqrt(var[i] + p->eps) : 0;
    if (M > 0) {
      /* running = (1 - momentum) * running + momentum * batch, unbiased variance var * M / (M - 1);
       * written back only when the caller passed them */
      double *rm = p->present[BN_RM] ? sim_load(&p->t[BN_RM]) : NULL;
      double *rv = p->present[BN_RV] ? sim_load(&p->t[BN_RV]) : NULL;
      for (int64_t i = 0; i < C; i++) {
        if (rm) rm[i] = (1 - p->momentum) * rm[i] + p->momentum * mean[i];
        if (rv) rv[i] = (1 - p->momentum) * rv[i] + p->momentum * var[i] * (double)M / (double)(M - 1);
      }
      if (rm) sim_store(&p->t[BN_RM], rm);
      if (rv) sim_store(&p->t[BN_RV], rv);
      free(rm), free(rv);
    }
    store_if(p, BN_SM, mean);
    /* saveInvstd: the biased batch variance on every non-DAV_3510 family (BNTrainingUpdate's
     * `batch_variance`, BatchNormV3 full-reduce's `save_var`; the doc: "saveInvstd表示input的方差"
     * on Atlas training/inference/A2/A3), 1/sqrt(var + eps) on DAV_3510 (arch35 BatchNormV3
     * `batch_rstd`) -- ops-nn norm/batch_norm_v3/op_host/op_api/aclnn_batch_norm.cpp BatchNorm(),
     * docs/aclnnBatchNorm.md; sim_rules.c sim_rule_bn_saves_variance. */
    store_if(p, BN_SI, p->bn_saves_variance ? var : invstd);
  } else {
    double *rm = per_channel_or(p, BN_RM, C, 0.0), *rv = per_channel_or(p, BN_RV, C, 1.0);
    for (int64_t i = 0; i < C; i++) {
      mean[i] = rm[i];
      invstd[i] = 1.0 / sqrt(rv[i] + p->eps);
    }
    free(rm), free(rv);
  }
  if (numel > 0) {
    double *y = zalloc(numel);
    int64_t inner = numel / (xd->dims[0] * C);
    for (int64_t i = 0; i < numel; i++) {
      int64_t ch = (i / inner) % C;
      y[i] = (x[i] - mean[ch]) * invstd[ch] * w[ch] + b[ch];
    }
    sim_store(&p->t[BN_Y], y);
    free(y);
  }
  free(x), free(w), free(b), free(mean), free(var), free(invstd);
  return 0;
}

/* ======================================================================================
 * 8. aclnnBatchNormElemt
 *    ops-nn norm/batch_norm_elemt/op_host/op_api/aclnn_batch_norm_elemt.cpp
 * ====================================================================================== */
enum { BE_X, BE_W, BE_B, BE_MEAN, BE_INVSTD, BE_Y };

int sim_bn_elemt_ws(const void *input, const void *weight, const void *bias, void *mean, void *invstd, double eps,
                    void *output, uint64_t *ws, void **exec) {
  static const char *const names[] = {"input", "weight", "bias", "mean", "invstd", "output"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_ELEMT, "aclnnBatchNormElemt", 5, 1, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec));
  TRY(soc_check(c));
  TRY(op_supported(c));
  /* CheckBatchNormElemtParams: CHECK_RET(CheckNotNull(input, mean, invstd, out),
   * ACLNN_ERR_PARAM_INVALID) -- a NULL input, mean, invstd or out is 161002 (the doc says
   * 161001). weight and bias are optional (FillScalar 1 and 0). */
  TRY(NULL_TENSOR(c, input, "input", SIM_NN_INVALID));
  TRY(NULL_TENSOR(c, mean, "mean", SIM_NN_INVALID));
  TRY(NULL_TENSOR(c, invstd, "invstd", SIM_NN_INVALID));
  TRY(NULL_TENSOR(c, output, "out", SIM_NN_INVALID));
  const void *hs[] = {input, weight, bias, mean, invstd, output};
  for (int s = BE_X; s <= BE_Y; s++) TRY(get(c, hs[s], s));
  c->plan.eps = eps;
  /* CheckDtypeValid<...>: each tensor in the list (+ BF16 for SocVersion in [ASCEND910B,
   * ASCEND910E] or ASCEND950), the message always says "input"; no same-dtype rule. */
  DtList l = dl_fhb(c);
  for (int s = BE_X; s <= BE_Y; s++) TRY(dt_list(c, s, &l, "", "input"));
  /* CheckFormat */
  if (T(BE_X)->format != T(BE_Y)->format)
    return fail(c, SIM_NN_INVALID, "Format of input and out should be equal, input [%s], out [%s].",
                fmt_str(T(BE_X)->format), fmt_str(T(BE_Y)->format));
  if (is_private(c, BE_X)) return fail(c, SIM_NN_INVALID, "Format only support ND,NCHW,NCL,NCDHW.");
  /* CheckShape */
  TRY(max_dim(c, BE_X, 8, NULL));
  TRY(min_dim(c, BE_X, 2, NULL));
  TRY(max_dim(c, BE_Y, 8, "out"));
  TRY(min_dim(c, BE_Y, 2, "out"));
  TRY(shape_same(c, BE_Y, BE_X, "out", NULL));
  int64_t C = T(BE_X)->dims[1];
  if (C == 0) return fail(c, SIM_NN_INVALID, "Input channel size should not be zero.");
  for (int s = BE_W; s <= BE_INVSTD; s++)
    if (P(s) && T(s)->ndim != 1) return fail(c, SIM_NN_INVALID, "Weight/bias/mean/invstd dim size should be one.");
  for (int s = BE_W; s <= BE_INVSTD; s++)
    if (P(s) && T(s)->dims[0] != C)
      return fail(c, SIM_NN_INVALID, "Weight/bias/mean/invstd shape should be same as the channel size of input.");
  c->plan.C = C;
  /* empty input (after the checks): workspace 0, SUCCESS, nothing written */
  if (is_empty(T(BE_X))) return finish_early(c, SIM_RUN_NOTHING, ws, exec);
  /* BatchNorm's result is in input's dtype (aclnn_batch_norm.cpp BatchNorm(): BNInfer's y, or the
   * regbase Cast to input's dtype), then ViewCopy into out (aclnn_batch_norm_elemt.cpp 205-218). */
  TRY(no_kernel(c));
  TRY(view_copy_dtype(c, BE_Y, T(BE_X)->dtype));
  return finish(c, C, ws, exec);
}

static int run_bn_elemt(const SimPlan *p) {
  const SimTensorDesc *xd = &p->t[BE_X];
  int64_t C = p->C, numel = sim_desc_numel(xd);
  if (numel == 0) return 0;
  double *x = sim_load(xd), *mean = sim_load(&p->t[BE_MEAN]), *invstd = sim_load(&p->t[BE_INVSTD]);
  double *w = per_channel_or(p, BE_W, C, 1.0), *b = per_channel_or(p, BE_B, C, 0.0);
  double *y = zalloc(numel);
  int64_t inner = numel / (xd->dims[0] * C);
  /* CANN rebuilds variance = 1/invstd^2 - eps in invstd's dtype (sim_elemt_rebuild_variance) and
   * runs BatchNorm in inference mode with mean and that variance: BNInfer / the arch35 infer
   * kernel compute rsqrt(variance + eps) with the float eps attribute, then
   * y = (x - mean) * rstd * weight + bias (aclnn_batch_norm_elemt.cpp 171-202; mean, weight and
   * bias enter in their own dtypes, exact in double). */
  double *var = zalloc(C);
  sim_elemt_rebuild_variance(invstd, C, p->t[BE_INVSTD].dtype, p->eps, p->overflow_mode, var);
  double eps_f = (double)(float)p->eps;
  for (int64_t i = 0; i < numel; i++) {
    int64_t ch = (i / inner) % C;
    y[i] = (x[i] - mean[ch]) / sqrt(var[ch] + eps_f) * w[ch] + b[ch];
  }
  sim_store(&p->t[BE_Y], y);
  free(x), free(mean), free(invstd), free(w), free(b), free(y), free(var);
  return 0;
}

/* ======================================================================================
 * 9. aclnnGroupNorm
 *    ops-nn norm/group_norm/op_host/op_api/aclnn_group_norm.cpp
 * ====================================================================================== */
enum { GN_X, GN_GAMMA, GN_BETA, GN_Y, GN_MEAN, GN_RSTD };

/* "Expected gamma to be a vector of size equal to the number of channels in input, but got
 * gamma of shape %s and input of shape %s." */
static int gn_vector_c(Ctx *c, int s, int64_t C) {
  if (!P(s) || (T(s)->ndim == 1 && T(s)->dims[0] == C)) return 0;
  char a[160], b[160];
  shape_str(T(s), a, sizeof a);
  shape_str(T(GN_X), b, sizeof b);
  return fail(c, SIM_NN_INVALID,
              "Expected %s to be a vector of size equal to the number of channels in input, but got %s of shape %s and "
              "input of shape %s.",
              NAME(s), NAME(s), a, b);
}

int sim_gn_ws(const void *self, const void *gamma, const void *beta, int64_t N, int64_t C, int64_t HxW, int64_t group,
              double eps, void *out, void *meanOut, void *rstdOut, uint64_t *ws, void **exec) {
  static const char *const names[] = {"self", "gamma", "beta", "out", "meanOut", "rstdOut"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_GN, "aclnnGroupNorm", 3, 3, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec));
  TRY(soc_check(c));
  TRY(op_supported(c));
  /* CheckNotNull4Tensor(self, out, meanOut, rstdOut) (ops-nn common/inc/op_api/level2_base.h):
   * its parameters are t0..t3, which is what OP_CHECK_NULL prints. */
  TRY(NULL_TENSOR(c, self, "t0", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, out, "t1", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, meanOut, "t2", SIM_NN_NULLPTR));
  TRY(NULL_TENSOR(c, rstdOut, "t3", SIM_NN_NULLPTR));
  const void *hs[] = {self, gamma, beta, out, meanOut, rstdOut};
  for (int s = GN_X; s <= GN_RSTD; s++) TRY(get(c, hs[s], s));
  c->plan.eps = eps;
  /* CheckDtypeValid (group_norm/op_host/op_api/aclnn_group_norm.cpp 69-87): self in
   * {FLOAT16, [BF16,] FLOAT} (DAV_2201 or regbase: + BF16, 59-67); then gamma, beta, out, meanOut,
   * rstdOut, in that order, each exactly self's dtype (77-85), with no branch on the chip: no
   * mixed precision on any SoC. (aclnnGroupNormSilu's CheckDtypeValid, group_norm_silu/op_host/
   * op_api/aclnn_group_norm_silu.cpp 73-121, takes FLOAT gamma/beta; aclnnGroupNorm does not.) */
  DtList l = {1, {SIM_DT_FLOAT16, 0, 0}};
  if (bf16_ok(c)) l.v[l.n++] = SIM_DT_BF16;
  l.v[l.n++] = SIM_DT_FLOAT;
  TRY(DT_SUPPORT(c, GN_X, &l));
  for (int s = GN_GAMMA; s <= GN_RSTD; s++) TRY(dt_match(c, s, T(GN_X)->dtype, NULL));
  /* CheckAttr */
  if (group <= 0) return fail(c, SIM_NN_INVALID, "Expected group to be greater than 0, got %" PRId64 ".", group);
  if (C % group != 0) {
    char sh[160];
    shape_str(T(GN_X), sh, sizeof sh);
    return fail(c, SIM_NN_INVALID,
                "Expected number of channels in input to be divisible by group, but got input of shape %s and "
                "group=%" PRId64 ".",
                sh, group);
  }
  if (!(eps > 0.0)) return fail(c, SIM_NN_INVALID, "Expected eps to be greater than 0, got %lf.", eps);
  /* CheckShape, in its order */
  TRY(min_dim(c, GN_X, 2, NULL));
  TRY(max_dim(c, GN_X, 8, NULL));
  TRY(shape_same(c, GN_Y, GN_X, NULL, NULL));
  const int64_t ng[2] = {N, group};
  TRY(shape_expect(c, GN_MEAN, ng, 2, NULL));
  TRY(shape_expect(c, GN_RSTD, ng, 2, NULL));
  const SimTensorDesc *x = T(GN_X);
  if (x->dims[0] != N) return fail(c, SIM_NN_INVALID, "Expected self.shape[0] == N to be true, but got false.");
  if (x->dims[1] != C) return fail(c, SIM_NN_INVALID, "Expected self.shape[1] == C to be true, but got false.");
  int64_t rest = 1;
  for (int i = 2; i < x->ndim; i++) rest *= x->dims[i];
  if (rest != HxW)
    return fail(c, SIM_NN_INVALID,
                "Expected the size of self outside the N and C dimensions == HxW to be true, but got false.");
  if (sim_desc_numel(x) != N * C * HxW)
    return fail(c, SIM_NN_INVALID, "Expected self.numel() == N * C * HxW to be true, but got false.");
  TRY(gn_vector_c(c, GN_GAMMA, C));
  TRY(gn_vector_c(c, GN_BETA, C));
  /* CheckFormat (group_norm/op_host/op_api/aclnn_group_norm.cpp:175-191): self == out; private
   * formats and NHWC, HWCN, NDHWC rejected. No other rule reads the label: the kernels
   * (GroupNormSilu on DAV_2201/DAV_2002/regbase, GroupNorm elsewhere, :343-365) declare only ND for
   * x (group_norm_silu/op_host/group_norm_silu_def.cpp:22-26, 82-86, 122-126; group_norm/op_host/
   * group_norm_def.cpp:22-26), and kernel selection ignores the format of an ND-only input (opbase
   * src/nnopbase/composite_op/aclnn_engine/kernel_arg.cpp:107-115). */
  if (x->format != T(GN_Y)->format)
    return fail(c, SIM_NN_INVALID, "Format of self and out should be equal, but got self [%s], out [%s]",
                fmt_str(x->format), fmt_str(T(GN_Y)->format));
  if (private_format(x->format) || x->format == SIM_FMT_NHWC || x->format == SIM_FMT_HWCN || x->format == SIM_FMT_NDHWC)
    return fail(c, SIM_NN_INVALID, "Format only support ND、NCL、NCHW、NCDHW.");
  c->plan.N = N;
  c->plan.C = C;
  c->plan.HxW = HxW;
  c->plan.group = group;
  c->plan.decomposed = sim_rule_gn_fp16_stats_cast(&c->soc) && x->dtype == SIM_DT_FLOAT16; /* run_gn */
  /* empty self (after the checks): meanOut = 0, rstdOut = NaN, in their own dtype; workspace 0 */
  if (is_empty(x)) {
    fill_slot(c, GN_MEAN, 0.0);
    fill_slot(c, GN_RSTD, NAN);
    return finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  return finish(c, N * C, ws, exec);
}

static int run_gn(const SimPlan *p) {
  int64_t N = p->N, C = p->C, HxW = p->HxW, G = p->group, D = C / G;
  int64_t total = N * C * HxW;
  double *x = sim_load(&p->t[GN_X]);
  double *gamma = per_channel_or(p, GN_GAMMA, C, 1.0), *beta = per_channel_or(p, GN_BETA, C, 0.0);
  double *y = zalloc(total);
  double *mo = zalloc(N * G);
  double *ro = zalloc(N * G);
  double cnt = (double)(D * HxW);
  for (int64_t n = 0; n < N; n++) {
    for (int64_t g = 0; g < G; g++) {
      if (cnt == 0) continue; /* unreachable: an empty self takes the fill path */
      int64_t b0 = (n * C + g * D) * HxW, len = D * HxW;
      double s = 0, q = 0;
      for (int64_t i = 0; i < len; i++) s += x[b0 + i];
      double m = s / cnt;
      for (int64_t i = 0; i < len; i++) q += (x[b0 + i] - m) * (x[b0 + i] - m);
      /* population (biased) variance: GroupNorm proto "Per-group population variance",
       * GroupNormSilu likewise; rstd = 1/sqrt(var + eps) */
      double r = 1.0 / sqrt(q / cnt + p->eps);
      mo[n * G + g] = m;
      ro[n * G + g] = r;
      if (p->decomposed) { /* DAV_1001, float16: Cast(mean), Rsqrt(Add(Cast(variance), eps)) in float16 */
        mo[n * G + g] = sim_round_dtype(m, SIM_DT_FLOAT16, p->overflow_mode);
        ro[n * G + g] = sim_gn_rstd_from_variance(q / cnt, p->eps, SIM_DT_FLOAT16, p->overflow_mode);
      }
      for (int64_t i = 0; i < len; i++) {
        int64_t ch = g * D + i / HxW;
        y[b0 + i] = (x[b0 + i] - m) * r * gamma[ch] + beta[ch];
        if (p->decomposed) y[b0 + i] = sim_round_dtype(y[b0 + i], SIM_DT_FLOAT16, p->overflow_mode); /* Cast(y) */
      }
    }
  }
  if (total > 0) sim_store(&p->t[GN_Y], y);
  sim_store(&p->t[GN_MEAN], mo);
  sim_store(&p->t[GN_RSTD], ro);
  free(x), free(gamma), free(beta), free(y), free(mo), free(ro);
  return 0;
}

/* ====================================================================================== */
static void run_fill(const SimPlan *p) {
  for (int s = 0; s < p->n_in + p->n_out; s++) {
    if (!p->present[s] || !p->fill_on[s]) continue;
    int64_t n = sim_desc_numel(&p->t[s]);
    double *v = zalloc(n);
    for (int64_t i = 0; i < n; i++) v[i] = p->fill[s];
    sim_store(&p->t[s], v);
    free(v);
  }
}

int sim_op_run(const SimPlan *p, void *workspace) {
  (void)workspace;
  if (p->run == SIM_RUN_NOTHING) return 0;
  if (p->run == SIM_RUN_FILL) {
    run_fill(p);
    return 0;
  }
  switch (p->op) {
    case SIM_OP_BN_REDUCE_BACKWARD: return run_reduce_backward(p);
    case SIM_OP_BN_BACKWARD: return run_bn_backward(p);
    case SIM_OP_GN_BACKWARD: return run_gn_backward(p);
    case SIM_OP_BN_STATS: return run_bn_stats(p);
    case SIM_OP_BN_GATHER_STATS: return run_gather_stats(p);
    case SIM_OP_BN_ELEMT_BACKWARD: return run_elemt_backward(p);
    case SIM_OP_BN: return run_bn(p);
    case SIM_OP_BN_ELEMT: return run_bn_elemt(p);
    case SIM_OP_GN: return run_gn(p);
    case SIM_OP_LAYER_NORM: return sim_run_layer_norm(p);
    case SIM_OP_LAYER_NORM_BACKWARD: return sim_run_layer_norm_backward(p);
    case SIM_OP_RMS_NORM: return sim_run_rms_norm(p);
    case SIM_OP_RMS_NORM_GRAD: return sim_run_rms_norm_grad(p);
    case SIM_OP_ADD_RMS_NORM: return sim_run_add_rms_norm(p);
    case SIM_OP_GEMMA_RMS_NORM: return sim_run_gemma_rms_norm(p);
    case SIM_OP_INPLACE_ADD_RMS_NORM: return sim_run_inplace_add_rms_norm(p);
    case SIM_OP_BN_REDUCE: return sim_run_bn_reduce(p);
    case SIM_OP_SYNC_BN_GATHER_STATS: return sim_run_sync_bn_gather_stats(p);
    case SIM_OP_ADD_LAYER_NORM: return sim_run_add_layer_norm(p);
    case SIM_OP_DEEP_NORM: return sim_run_deep_norm(p);
    case SIM_OP_INSTANCE_NORM: return sim_run_instance_norm(p);
    /* aclnnFastBatchNormBackward: aclnnBatchNormBackward's computation (the same BatchNormGradV3
     * on A2, its only product; sim_ops_fast_batch_norm_backward.c). */
    case SIM_OP_FAST_BN_BACKWARD: return run_bn_backward(p);
    case SIM_OP_ADD_RMS_NORM_CAST: return sim_run_add_rms_norm_cast(p);
    case SIM_OP_ADA_LAYER_NORM:
    case SIM_OP_ADA_LAYER_NORM_V2: return sim_run_ada_layer_norm(p);
    case SIM_OP_ADD_LAYER_NORM_GRAD: return sim_run_add_layer_norm_grad(p);
    case SIM_OP_DEEP_NORM_GRAD: return sim_run_deep_norm_grad(p);
    case SIM_OP_GN_SILU: return sim_run_gn_silu(p);
    case SIM_OP_GN_SWISH: return sim_run_gn_swish(p);
    /* aclnnFastLayerNorm: aclnnLayerNorm's computation with LayerNormV4's dtypes
     * (sim_ops_fast_layer_norm.c plans it in aclnnLayerNorm's slot order). */
    case SIM_OP_FAST_LAYER_NORM: return sim_run_layer_norm(p);
    case SIM_OP_GN_SWISH_GRAD: return sim_run_gn_swish_grad(p);
    case SIM_OP_ADA_LAYER_NORM_GRAD: return sim_run_ada_layer_norm_grad(p);
    default: return -1;
  }
}
