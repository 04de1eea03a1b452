/*
 * Software CANN ("aclsim") -- the helpers of the LayerNorm / RMSNorm operators that the seed
 * operators do not share (sim_ops_norm.h states the contracts and the sources of the message
 * texts; the shared ones are sim_ops_common.c's).
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

/* ---- dtypes ------------------------------------------------------------------------------- */

double nrm_round(double v, int32_t dtype) {
  switch (dtype) {
    case SIM_DT_FLOAT: return (double)(float)v;
    case SIM_DT_FLOAT16: return sim_from_fp16(sim_to_fp16(v));
    case SIM_DT_BF16: return sim_from_bf16(sim_to_bf16(v));
    default: return v;
  }
}

/* ---- shapes ------------------------------------------------------------------------------- */
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
