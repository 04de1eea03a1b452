/*
 * Software CANN ("aclsim") -- the helpers of the LayerNorm / RMSNorm operators (sim_ops_norm.h
 * states the contracts and the sources of the message texts).
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nrm_init(NormCtx *c, SimOpId op, const char *api, int n_in, int n_out, const char *const *names) {
  memset(c, 0, sizeof *c);
  c->op = api;
  c->plan.op = op;
  c->plan.name = api;
  c->plan.n_in = n_in;
  c->plan.n_out = n_out;
  for (int i = 0; i < n_in + n_out; i++) c->plan.tname[i] = names[i];
}

int nrm_fail(NormCtx *c, int code, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return sim_fail(code, "%s: %s", c->op, buf);
}

int nrm_opp_path(NormCtx *c) {
  const char *s = getenv("ASCEND_OPP_PATH");
  if (s && *s) return 0;
  return sim_fail(SIM_NN_OPP_PATH,
                  "%s: the environment variable ASCEND_OPP_PATH is not set, so the operator package cannot be "
                  "found; run `source <CANN install>/set_env.sh` before starting the process",
                  c->op);
}

/* OP_CHECK_COMM_INPUT (opbase include/nnopbase/opdev/op_dfx.h CheckPhase1Params) for the
 * hand-written operators; the generated ones check the same out-params with their own texts
 * (sim_ops_rms_norm.c). */
int nrm_outparams(NormCtx *c, const uint64_t *ws, void *const *exec) {
  if (ws && exec) return 0;
  return nrm_fail(c, SIM_NN_NULLPTR, "The workspaceSize or executor is nullptr.");
}

/* op::SocVersion (opbase include/nnopbase/opdev/platform.h: ASCEND910 = 0, ASCEND910B,
 * ASCEND910_93, ASCEND910_95 == ASCEND950, ASCEND910E, ASCEND310, ASCEND310P, ASCEND310B, ...,
 * ASCEND350 = 12) -> the product the documentation names. */
static unsigned product_of(int32_t soc_version) {
  switch (soc_version) {
    case 0: return NP_910;
    case 1: return NP_A2;
    case 2: return NP_A3;
    case 3: return NP_950;
    case 6: return NP_310P;
    case 7: return NP_310B;
    default: return 0; /* 910E, 310, 310C, 610Lite, Kirin, 350: named by none of these documents */
  }
}

const char *nrm_product_name(unsigned product) {
  switch (product) {
    case NP_910: return "Atlas training series";
    case NP_A2: return "Atlas A2 training/inference series";
    case NP_A3: return "Atlas A3 training/inference series";
    case NP_950: return "Ascend 950PR/950DT";
    case NP_310P: return "Atlas inference series";
    case NP_310B: return "Atlas 200I/500 A2 inference products";
    default: return "a product the documentation does not name";
  }
}

/* The SoC name is read on every phase 1 (ACLSIM_SOC_NAME, default Ascend950PR_9599) and mapped
 * to its family; only the family's Short_SoC_version, NpuArch and SocVersion are used here. */
int nrm_soc(NormCtx *c) {
  const char *name = sim_rt_get_soc_name();
  sim_soc_lookup(name, &c->soc);
  if (!c->soc.known)
    return nrm_fail(c, SIM_NN_INVALID,
                    "the SoC \"%s\" (aclrtGetSocName) is in no SoC family the simulator knows, so it cannot tell "
                    "which NpuArch / SocVersion branch CANN would take; set ACLSIM_SOC_NAME to a known SoC name",
                    name);
  c->product = product_of(c->soc.soc_version);
  c->plan.regbase = c->soc.npu_arch == NRM_DAV_3510;
  return 0;
}

/* What CANN does on a product its documentation lists as unsupported is not in the sources (no
 * kernel binary, or a generated operator's "SoC version ... verification failed"); like
 * sim_ops_seed_checks.c op_supported, the simulator fails phase 1 with 161002 right after the out-params. */
int nrm_product(NormCtx *c, unsigned supported, const char *doc) {
  if (c->product & supported) return 0;
  if (c->product == 0)
    return nrm_fail(c, SIM_NN_INVALID,
                    "the operator is not supported on SoC %s (Short_SoC_version %s, NpuArch %d, SocVersion %d): "
                    "CANN's documentation (%s) names no product of this SoC",
                    c->soc.soc_name, c->soc.family, (int)c->soc.npu_arch, (int)c->soc.soc_version, doc);
  return nrm_fail(c, SIM_NN_INVALID,
                  "the operator is not supported on SoC %s (%s; Short_SoC_version %s, NpuArch %d): CANN's "
                  "documentation (%s) lists the %s as unsupported",
                  c->soc.soc_name, nrm_product_name(c->product), c->soc.family, (int)c->soc.npu_arch, doc,
                  nrm_product_name(c->product));
}

bool nrm_regbase(const NormCtx *c) { return c->soc.npu_arch == NRM_DAV_3510; }

int nrm_get(NormCtx *c, const void *h, int slot) {
  if (!h) return 0;
  if (sim_lookup_tensor(h, NT(c, slot)) != 0)
    return nrm_fail(c, SIM_NN_INVALID, "%s (%p) is not a live aclTensor (destroyed or never created)", NNAME(c, slot),
                    h);
  NP(c, slot) = true;
  return 0;
}

int nrm_null(NormCtx *c, const void *h, const char *type, const char *arg, int code) {
  if (h) return 0;
  return nrm_fail(c, code, "Expected a value of type [%s] for argument [%s] but instead found nullptr.", type, arg);
}

/* ---- dtypes ------------------------------------------------------------------------------- */

static bool dl_has(const NrmDtList *l, int32_t dt) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == dt) return true;
  return false;
}

int nrm_dt_support(NormCtx *c, int s, const NrmDtList *l, const char *shown) {
  if (!NP(c, s) || dl_has(l, NT(c, s)->dtype)) return 0;
  char ls[160];
  size_t k = (size_t)snprintf(ls, sizeof ls, "[");
  for (int i = 0; i < l->n && k < sizeof ls; i++) k += (size_t)snprintf(ls + k, sizeof ls - k, "%s,", sim_dt_str(l->v[i]));
  if (k < sizeof ls) snprintf(ls + k, sizeof ls - k, "]");
  return nrm_fail(c, SIM_NN_INVALID, "Tensor %s not implemented for %s, should be in dtype support list %s.", shown,
                  sim_dt_str(NT(c, s)->dtype), ls);
}

int nrm_dt_same(NormCtx *c, int a, const char *sa, int b, const char *sb) {
  if (!NP(c, a) || !NP(c, b) || NT(c, a)->dtype == NT(c, b)->dtype) return 0;
  return nrm_fail(c, SIM_NN_INVALID, "Expected both tensors to have same dtype, but found %s %s and %s %s.", sa,
                  sim_dt_str(NT(c, a)->dtype), sb, sim_dt_str(NT(c, b)->dtype));
}

int nrm_dt_match(NormCtx *c, int s, int32_t expected, const char *shown) {
  if (!NP(c, s) || NT(c, s)->dtype == expected) return 0;
  return nrm_fail(c, SIM_NN_INVALID, "Tensor %s expected dtype is %s but found %s.", shown, sim_dt_str(expected),
                  sim_dt_str(NT(c, s)->dtype));
}

double nrm_round(double v, int32_t dtype) {
  switch (dtype) {
    case SIM_DT_FLOAT: return (double)(float)v;
    case SIM_DT_FLOAT16: return sim_from_fp16(sim_to_fp16(v));
    case SIM_DT_BF16: return sim_from_bf16(sim_to_bf16(v));
    default: return v;
  }
}

/* ---- shapes ------------------------------------------------------------------------------- */
static void dims_str(const SimTensorDesc *d, char *buf, size_t n, const char *sep) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < d->ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, i ? sep : "", d->dims[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
}
void nrm_shape_str(const SimTensorDesc *d, char *buf, size_t n) { dims_str(d, buf, n, ", "); }
void nrm_shape_str_compact(const SimTensorDesc *d, char *buf, size_t n) { dims_str(d, buf, n, ","); }

bool nrm_same_shape(const SimTensorDesc *a, const SimTensorDesc *b) {
  if (a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

int nrm_max_dim(NormCtx *c, int s, int n, const char *shown) {
  if (!NP(c, s) || NT(c, s)->ndim <= n) return 0;
  return nrm_fail(c, SIM_NN_INVALID, "The %s tensor cannot be larger than %d dimensions.", shown, n);
}

int nrm_min_dim(NormCtx *c, int s, int n, const char *shown) {
  if (!NP(c, s) || NT(c, s)->ndim >= n) return 0;
  return nrm_fail(c, SIM_NN_INVALID, "The %s tensor must have at least %d dimensions.", shown, n);
}

int nrm_wrong_dim(NormCtx *c, int s, int n, const char *shown) {
  if (!NP(c, s) || NT(c, s)->ndim == n) return 0;
  char got[200];
  nrm_shape_str(NT(c, s), got, sizeof got);
  return nrm_fail(c, SIM_NN_INVALID, "Expected %d dimension input, but got %s with sizes %s.", n, shown, got);
}

int nrm_shape_same(NormCtx *c, int a, const char *sa, int b, const char *sb) {
  if (!NP(c, a) || !NP(c, b) || nrm_same_shape(NT(c, a), NT(c, b))) return 0;
  char x[200], y[200];
  nrm_shape_str(NT(c, a), x, sizeof x);
  nrm_shape_str(NT(c, b), y, sizeof y);
  return nrm_fail(c, SIM_NN_INVALID, "Expected tensor for %s to have same size as tensor for %s, but %s does not equal %s.",
                  sa, sb, x, y);
}

void nrm_rows_cols(const SimTensorDesc *d, int axis, int64_t *rows, int64_t *cols) {
  *rows = 1;
  *cols = 1;
  for (int i = 0; i < d->ndim; i++) {
    if (i < axis) *rows *= d->dims[i];
    else *cols *= d->dims[i];
  }
}

int nrm_numel_is(NormCtx *c, int s, int64_t want, const char *what) {
  if (!NP(c, s) || sim_desc_numel(NT(c, s)) == want) return 0;
  char sh[200];
  nrm_shape_str(NT(c, s), sh, sizeof sh);
  return nrm_fail(c, SIM_NN_INVALID,
                  "[aclsim] %s has %" PRId64 " elements (shape %s) but the kernel %s %" PRId64
                  " of them in row-major order; CANN does not check this, the simulator rejects it",
                  NNAME(c, s), sim_desc_numel(NT(c, s)), sh, what, want);
}

bool nrm_view_copy_ok(const NormCtx *c, int s, const SimTensorDesc *res) {
  const SimTensorDesc *out = &c->plan.t[s];
  if (nrm_same_shape(res, out)) return true;
  return sim_desc_numel(res) == 1 && sim_desc_numel(out) == 1; /* contiguous.cpp:658-666 */
}

int nrm_view_copy(NormCtx *c, int s, const SimTensorDesc *res) {
  if (nrm_view_copy_ok(c, s, res)) return 0;
  char a[200], b[200];
  nrm_shape_str(res, a, sizeof a);
  nrm_shape_str(NT(c, s), b, sizeof b);
  nrm_fail(c, SIM_NN_INNER_NULLPTR, "Input tensor's shape[%s] should be same with output's shape[%s].", a, b);
  return nrm_fail(c, SIM_NN_INNER_NULLPTR, "Params check failed.");
}

SimTensorDesc nrm_shape_of(const int64_t *dims, int ndim) {
  SimTensorDesc d;
  memset(&d, 0, sizeof d);
  d.ndim = ndim;
  for (int i = 0; i < ndim; i++) d.dims[i] = dims[i];
  return d;
}

/* ---- planning ----------------------------------------------------------------------------- */
/* [aclsim] The view must fit its storage shape, and the storage must lie inside one live device
 * allocation; records the allocation id for the liveness check at execution time. */
static int mem_ok(NormCtx *c, int s) {
  if (!NP(c, s)) return 0;
  SimTensorDesc *d = NT(c, s);
  d->alloc_id = 0;
  if (sim_desc_numel(d) == 0) return 0;
  int64_t lo = d->offset, hi = d->offset;
  for (int i = 0; i < d->ndim; i++) {
    int64_t ext = (d->dims[i] - 1) * d->strides[i];
    if (ext < 0) lo += ext;
    else hi += ext;
  }
  int64_t sn = sim_desc_storage_numel(d);
  if (lo < 0 || hi >= sn) {
    char sh[200];
    nrm_shape_str(d, sh, sizeof sh);
    return nrm_fail(c, SIM_NN_INVALID,
                    "%s view (shape %s, offset %" PRId64 ") reaches storage elements [%" PRId64 ", %" PRId64
                    "] but its storage shape holds %" PRId64 " elements",
                    NNAME(c, s), sh, d->offset, lo, hi, sn);
  }
  if (d->data == NULL) return nrm_fail(c, SIM_NN_INVALID, "%s has a NULL data pointer but a non-empty view", NNAME(c, s));
  uint64_t bytes = (uint64_t)sn * sim_dtype_size(d->dtype);
  uint64_t id = sim_dev_range_alloc(d->data, bytes);
  if (id == 0) {
    char why[256];
    sim_describe_ptr(d->data, why, sizeof why);
    return nrm_fail(c, SIM_NN_INVALID,
                    "%s data must be device memory holding its whole storage (%" PRId64 " x %s = %" PRIu64
                    " bytes) inside one live aclrtMalloc allocation, but %s",
                    NNAME(c, s), sn, sim_dtype_name(d->dtype), bytes, why);
  }
  d->alloc_id = id;
  return 0;
}

int nrm_finish(NormCtx *c, int64_t rows, uint64_t *ws, void **exec) {
  for (int i = 0; i < c->plan.n_in + c->plan.n_out; i++) NTRY(mem_ok(c, i));
  uint64_t r = rows > 0 ? (uint64_t)rows : 0;
  c->plan.run = SIM_RUN_COMPUTE;
  c->plan.ws_size = 512 + ((16 * r + 31) / 32) * 32;
  return sim_executor_create(&c->plan, ws, exec);
}

void nrm_fill(NormCtx *c, int s, double v) {
  if (!NP(c, s)) return;
  c->plan.fill_on[s] = true;
  c->plan.fill[s] = v;
}

int nrm_finish_early(NormCtx *c, SimRunMode run, uint64_t *ws, void **exec) {
  for (int i = 0; i < c->plan.n_in + c->plan.n_out; i++) {
    if (run == SIM_RUN_FILL && c->plan.fill_on[i]) NTRY(mem_ok(c, i));
    else c->plan.t[i].alloc_id = 0; /* neither read nor written */
  }
  c->plan.run = run;
  c->plan.ws_size = 0;
  return sim_executor_create(&c->plan, ws, exec);
}

double *nrm_zalloc(int64_t n) { return calloc(n > 0 ? (size_t)n : 1, sizeof(double)); }

/* ---- the generated operators' framework (sim_ops_norm.h) ----------------------------------- */
int nrm_gen_null(NormCtx *c, const void *h, const char *name) {
  if (h) return 0;
  return nrm_fail(c, SIM_NN_NULLPTR, "Check %s != nullptr failed", name);
}

/* The storage format as the framework matches it: FormatsLikeND count as ND. */
static int32_t gen_format(int32_t f) {
  return (f == SIM_FMT_NCL || f == SIM_FMT_NCDHW || f == SIM_FMT_NHWC || f == SIM_FMT_NCHW) ? SIM_FMT_ND : f;
}

int nrm_gen_combo(NormCtx *c, const int32_t (*rows)[6], int nrows, int n) {
  for (int r = 0; r < nrows; r++) {
    bool ok = true;
    for (int s = 0; s < n && ok; s++) ok = NT(c, s)->dtype == rows[r][s] && gen_format(NT(c, s)->format) == SIM_FMT_ND;
    if (ok) return 0;
  }
  char got[512], list[1024];
  size_t k = 0, m = 0;
  got[0] = list[0] = '\0';
  for (int s = 0; s < n && k < sizeof got; s++)
    k += (size_t)snprintf(got + k, sizeof got - k, "%s%s(%s, %s)", s ? ", " : "", NNAME(c, s), sim_dt_str(NT(c, s)->dtype),
                          sim_format_name(gen_format(NT(c, s)->format)));
  for (int r = 0; r < nrows && m < sizeof list; r++) {
    m += (size_t)snprintf(list + m, sizeof list - m, " SupportInfo[%d]:", r);
    for (int s = 0; s < n && m < sizeof list; s++)
      m += (size_t)snprintf(list + m, sizeof list - m, " %s(%s, ND)", NNAME(c, s), sim_dt_str(rows[r][s]));
  }
  nrm_fail(c, SIM_NN_INVALID,
           "The dtype or format of the actual input or output parameter of the operator is inconsistent with that "
           "defined in the operator prototype OpDef, details of parameter are %s",
           got);
  return nrm_fail(c, SIM_NN_INVALID, "Supported dtype and format list is:%s", list);
}

int nrm_gen_tiling_fail(NormCtx *c, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  nrm_fail(c, SIM_NN_TILING, "%s", buf);
  return nrm_fail(c, SIM_NN_TILING, "Failed to execute tiling function");
}

bool nrm_all_empty(const NormCtx *c, int from, int to) {
  for (int s = from; s <= to; s++)
    if (sim_desc_numel(&c->plan.t[s]) != 0) return false;
  return true;
}

int nrm_gen_rows(NormCtx *c, const int32_t *rows, int nrows, int n) {
  for (int r = 0; r < nrows; r++) {
    bool ok = true;
    for (int s = 0; s < n && ok; s++)
      ok = !NP(c, s) || (NT(c, s)->dtype == rows[r * n + s] && gen_format(NT(c, s)->format) == SIM_FMT_ND);
    if (ok) return 0;
  }
  char got[768];
  size_t k = 0;
  got[0] = '\0';
  for (int s = 0; s < n && k < sizeof got; s++)
    if (NP(c, s))
      k += (size_t)snprintf(got + k, sizeof got - k, "%s%s(%s, %s)", k ? ", " : "", NNAME(c, s),
                            sim_dt_str(NT(c, s)->dtype), sim_format_name(gen_format(NT(c, s)->format)));
  return nrm_fail(c, SIM_NN_INVALID,
                  "The dtype or format of the actual input or output parameter of the operator is inconsistent with "
                  "that defined in the operator prototype OpDef, details of parameter are %s",
                  got);
}

void nrm_ln_row(const double *x, int64_t cols, double eps, const double *g, const double *b, double *y, double *mean,
                double *rstd) {
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < cols; i++) sum += x[i];
  *mean = sum / (double)cols;
  for (int64_t i = 0; i < cols; i++) sq += (x[i] - *mean) * (x[i] - *mean);
  *rstd = 1.0 / sqrt(sq / (double)cols + eps);
  for (int64_t i = 0; i < cols; i++) y[i] = (x[i] - *mean) * *rstd * g[i] + b[i];
}

void nrm_ln_grad_rows(const double *dy, const double *x, const double *mean, const double *rstd, const double *gamma,
                      int64_t rows, int64_t cols, double *dx, double *dgamma, double *dbeta) {
  for (int64_t i = 0; i < cols; i++) dgamma[i] = dbeta[i] = 0;
  for (int64_t r = 0; r < rows; r++) {
    const double *e = dy + r * cols, *xr = x + r * cols;
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < cols; i++) {
      double xh = (xr[i] - mean[r]) * rstd[r], g = e[i] * gamma[i];
      s1 += g;
      s2 += g * xh;
      dgamma[i] += e[i] * xh;
      dbeta[i] += e[i];
    }
    for (int64_t i = 0; i < cols; i++) {
      double xh = (xr[i] - mean[r]) * rstd[r];
      dx[r * cols + i] = rstd[r] * (e[i] * gamma[i] - s1 / (double)cols - xh * s2 / (double)cols);
    }
  }
}
