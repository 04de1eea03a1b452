/*
 * Software CANN ("aclsim") -- the phase-1 checks the nine seed operators share (aclnnBatchNorm,
 * ...Backward, ...Stats, ...GatherStatsWithCounts, ...Elemt, ...ElemtBackward, ...ReduceBackward,
 * aclnnGroupNorm, ...Backward: sim_ops_<operator>.c, declared in sim_ops_seed.h): the validation
 * context, CANN's check macros and their texts, the SoC checks, and planning.  Each operator
 * validates as CANN performs it on the SoC aclrtGetSocName() names, as its platform file describes
 * it (return codes, order of the checks and message texts of the CANN sources cited at each rule),
 * plans, and computes at stream synchronisation.  Accumulation is in double; every output is
 * rounded once to its own dtype, except the narrow-dtype intermediates of sim_decomposed.c.
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
#include "sim_ops_seed.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================================
 * Validation context
 * ====================================================================================== */
void ctx_init(Ctx *c, SimOpId op, const char *name, int n_in, int n_out, const char *const *names) {
  memset(c, 0, sizeof *c);
  c->op = name;
  c->plan.op = op;
  c->plan.name = name;
  c->plan.n_in = n_in;
  c->plan.n_out = n_out;
  for (int i = 0; i < n_in + n_out; i++) c->plan.tname[i] = names[i];
}

int fail(Ctx *c, int code, const char *fmt, ...) {
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

void shape_str(const SimTensorDesc *d, char *buf, size_t n) { dims_str(d->dims, d->ndim, buf, n); }


const char *fmt_str(int32_t f) { return sim_format_name(f); }

int opp_path(const char *op) {
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
int outparams(Ctx *c, const uint64_t *ws, void *const *exec) {
  if (!ws || !exec) return fail(c, SIM_NN_NULLPTR, "The workspaceSize or executor is nullptr.");
  return 0;
}

/* ---- the SoC ------------------------------------------------------------------------- */
/* The SoC name is read on every phase 1 (ACLSIM_SOC_NAME, default Ascend950PR_9599), like the
 * runtime's platform info, and its platform file gives SocVersion and NpuArch (sim_soc.c); the
 * chip-dependent rules are sim_rules.c's.  A SoC without a platform file is not refused here:
 * CANN runs the operator's checks with RESERVED_VERSION and DAV_RESV (opbase platform.cpp
 * 372-386) and fails where it would launch a kernel (no_kernel). */
int soc_check(Ctx *c) {
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
int op_supported(Ctx *c) {
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
int no_kernel(Ctx *c) {
  if (c->soc.known) return 0;
  char dir[512];
  snprintf(dir, sizeof dir, "%s", sim_soc_config_dir());
  return fail(c, SIM_NN_INNER_NULLPTR,
              "no kernel binary for SoC \"%s\": there is no platform file %s/%s.ini, so CANN's checks ran with "
              "SocVersion RESERVED_VERSION and NpuArch DAV_RESV and the kernel launcher found no binary (opbase "
              "op_kernel.h: \"Op %%s does not has any binary.\")",
              c->soc.soc_name, dir[0] ? dir : "<no data/platform_config beside the libraries>", c->soc.soc_name);
}

bool bf16_ok(const Ctx *c) { return sim_rule_bf16(c->plan.op, &c->soc); }

/* ops-math conversion/contiguous/op_host/op_api/contiguous.cpp 634-670 CheckViewCopyParams: the
 * operator's result (in `produced`, its kernel's dtype) is copied into the caller's output with
 * l0op::ViewCopy, which refuses another dtype; the operator's CHECK_RET turns the nullptr into
 * ACLNN_ERR_INNER_NULLPTR (561103). */
int view_copy_dtype(Ctx *c, int s, int32_t produced) {
  if (!P(s) || T(s)->dtype == produced) return 0;
  return fail(c, SIM_NN_INNER_NULLPTR,
              "Input tensor's dtype[%s] should be same with output's dtype[%s]. (l0op::ViewCopy of the result into "
              "%s)",
              sim_dt_str(produced), sim_dt_str(T(s)->dtype), NAME(s));
}

/* ---- dtype lists ------------------------------------------------------------------------ */
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
DtList dl_fhb(const Ctx *c) {
  DtList l = {2, {SIM_DT_FLOAT, SIM_DT_FLOAT16, 0}};
  if (bf16_ok(c)) l.v[l.n++] = SIM_DT_BF16;
  return l;
}

/* ---- CANN's check macros ------------------------------------------------------------------ */
/* OP_CHECK_NULL (IsNullptr): the demangled C++ type and the argument's variable name. */
int null_arg(Ctx *c, const void *h, const char *type, const char *arg, int code) {
  if (h) return 0;
  return fail(c, code, "Expected a value of type [%s] for argument [%s] but instead found nullptr.", type, arg);
}

/* Records a (possibly NULL) tensor argument in its slot; a pointer that is not a live aclTensor
 * is 161002 [aclsim: real CANN would read freed memory]. */
int get(Ctx *c, const void *h, int slot) {
  if (!h) return 0;
  if (sim_lookup_tensor(h, T(slot)) != 0)
    return fail(c, SIM_NN_INVALID, "%s (%p) is not a live aclTensor (destroyed or never created)", NAME(slot), h);
  P(slot) = true;
  return 0;
}

/* OP_CHECK_DTYPE_NOT_SUPPORT: "Tensor %s not implemented for %s, should be in dtype support
 * list %s."; prefix "" for the hand-written variants without "Tensor ". */
int dt_list(Ctx *c, int s, const DtList *l, const char *prefix, const char *shown) {
  if (!P(s) || dl_has(l, T(s)->dtype)) return 0;
  char ls[128];
  dl_str(l, ls, sizeof ls);
  return fail(c, SIM_NN_INVALID, "%s%s not implemented for %s, should be in dtype support list %s.", prefix,
              shown ? shown : NAME(s), sim_dt_str(T(s)->dtype), ls);
}

/* OP_CHECK_DTYPE_NOT_MATCH: "Tensor %s expected dtype is %s but found %s." */
int dt_match(Ctx *c, int s, int32_t expected, const char *shown) {
  if (!P(s) || T(s)->dtype == expected) return 0;
  return fail(c, SIM_NN_INVALID, "Tensor %s expected dtype is %s but found %s.", shown ? shown : NAME(s),
              sim_dt_str(expected), sim_dt_str(T(s)->dtype));
}

/* OP_CHECK_DTYPE_NOT_SAME: "Expected both tensors to have same dtype, but found %s %s and %s %s." */
int dt_same(Ctx *c, int a, int b) {
  if (!P(a) || !P(b) || T(a)->dtype == T(b)->dtype) return 0;
  return fail(c, SIM_NN_INVALID, "Expected both tensors to have same dtype, but found %s %s and %s %s.", NAME(a),
              sim_dt_str(T(a)->dtype), NAME(b), sim_dt_str(T(b)->dtype));
}

/* OP_CHECK_MAX_DIM / OP_CHECK_MIN_DIM */
int max_dim(Ctx *c, int s, int n, const char *shown) {
  if (!P(s) || T(s)->ndim <= n) return 0;
  return fail(c, SIM_NN_INVALID, "The %s tensor cannot be larger than %d dimensions.", shown ? shown : NAME(s), n);
}
int min_dim(Ctx *c, int s, int n, const char *shown) {
  if (!P(s) || T(s)->ndim >= n) return 0;
  return fail(c, SIM_NN_INVALID, "The %s tensor must have at least %d dimensions.", shown ? shown : NAME(s), n);
}

bool same_shape(const SimTensorDesc *a, const SimTensorDesc *b) {
  if (a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

bool shape_is(const SimTensorDesc *a, const int64_t *dims, int nd) {
  if (a->ndim != nd) return false;
  for (int i = 0; i < nd; i++)
    if (a->dims[i] != dims[i]) return false;
  return true;
}

/* OP_CHECK_SHAPE_NOT_EQUAL: "Expected tensor for %s to have same size as tensor for %s, but %s
 * does not equal %s." */
int shape_same(Ctx *c, int a, int b, const char *na, const char *nb) {
  if (!P(a) || !P(b) || same_shape(T(a), T(b))) return 0;
  char sa[160], sb[160];
  shape_str(T(a), sa, sizeof sa);
  shape_str(T(b), sb, sizeof sb);
  return fail(c, SIM_NN_INVALID, "Expected tensor for %s to have same size as tensor for %s, but %s does not equal %s.",
              na ? na : NAME(a), nb ? nb : NAME(b), sa, sb);
}

/* OP_CHECK_SHAPE_NOT_EQUAL_WITH_EXPECTED_SIZE: "Expected tensor for %s to have same size as %s,
 * but got %s." */
int shape_expect(Ctx *c, int s, const int64_t *dims, int nd, const char *shown) {
  if (!P(s) || shape_is(T(s), dims, nd)) return 0;
  char want[160], got[160];
  dims_str(dims, nd, want, sizeof want);
  shape_str(T(s), got, sizeof got);
  return fail(c, SIM_NN_INVALID, "Expected tensor for %s to have same size as %s, but got %s.", shown ? shown : NAME(s),
              want, got);
}

/* OP_CHECK_WRONG_DIMENSION: "Expected %zu dimension input, but got %s with sizes %s." */
int wrong_dim(Ctx *c, int s, int n) {
  if (!P(s) || T(s)->ndim == n) return 0;
  char got[160];
  shape_str(T(s), got, sizeof got);
  return fail(c, SIM_NN_INVALID, "Expected %d dimension input, but got %s with sizes %s.", n, NAME(s), got);
}

/* op::IsPrivateFormat (opbase): NC1HWC0, FRACTAL_Z, FRACTAL_NZ, NDC1HWC0, FRACTAL_Z_3D, ... */
bool private_format(int32_t f) {
  return f == SIM_FMT_NC1HWC0 || f == SIM_FMT_FRACTAL_Z || f == SIM_FMT_FRACTAL_NZ || f == SIM_FMT_NDC1HWC0 ||
         f == SIM_FMT_FRACTAL_Z_3D || f == -1;
}
bool is_private(const Ctx *c, int s) { return c->plan.present[s] && private_format(c->plan.t[s].format); }

bool is_empty(const SimTensorDesc *d) { return sim_desc_numel(d) == 0 && d->ndim > 0; }

/* [aclsim] A per-channel tensor the kernel reads (or writes) C values of must hold C elements. */
int numel_c(Ctx *c, int s, int64_t C, const char *why) {
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
int mem_ok(Ctx *c, int s) {
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
int lookup_mask(Ctx *c, const void *h, uint64_t *n) {
  bool v[64] = {false};
  if (sim_lookup_bool_array(h, v, 64, n) != 0)
    return fail(c, SIM_NN_INVALID, "outputMask (%p) is not a live aclBoolArray", h);
  for (int i = 0; i < 3; i++) c->plan.mask[i] = (uint64_t)i < *n ? v[i] : false;
  return 0;
}

/* Workspace formula: 512 + 16 * R bytes rounded up to 32, R = reduction rows (C for the batch
 * norm family, N * C for group norm): always nonzero for a computing plan, like CANN's reduce
 * kernels. */
int finish(Ctx *c, int64_t rows, uint64_t *ws, void **exec) {
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
void fill_slot(Ctx *c, int s, double v) {
  if (!P(s)) return;
  c->plan.fill_on[s] = true;
  c->plan.fill[s] = v;
}

int finish_early(Ctx *c, SimRunMode run, uint64_t *ws, void **exec) {
  if (run == SIM_RUN_FILL) TRY(no_kernel(c)); /* the fill is a kernel (ProcessEmptyTensorWithValue) */
  for (int i = 0; i < c->plan.n_in + c->plan.n_out; i++) {
    if (run == SIM_RUN_FILL && c->plan.fill_on[i]) TRY(mem_ok(c, i));
    else c->plan.t[i].alloc_id = 0; /* neither read nor written */
  }
  c->plan.run = run;
  c->plan.ws_size = 0;
  return sim_executor_create(&c->plan, ws, exec);
}

/* [aclsim] A channels-last storage format on DAV_3510 makes CANN take C from the LAST dim
 * (ops-nn aclnn_batch_norm.cpp GetBatchNormDimC, aclnn_batch_norm_backward.cpp GetDimC); the
 * simulator's kernels always use dim 1, so it rejects that case rather than compute wrongly. */
int regbase_channels_last(Ctx *c, int s) {
  int32_t f = T(s)->format;
  if (c->plan.regbase && (f == SIM_FMT_NHWC || f == SIM_FMT_NDHWC))
    return fail(c, SIM_NN_INVALID,
                "[aclsim] %s has storage format %s: on DAV_3510 CANN then takes C from the last dim, which the "
                "simulator does not model (pass ND/NCL/NCHW/NCDHW; the channel is view dim 1)",
                NAME(s), fmt_str(f));
  return 0;
}
