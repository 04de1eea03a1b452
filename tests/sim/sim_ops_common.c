/*
 * Software CANN ("aclsim") -- the phase-1 routines of every operator (sim_ops_common.h states
 * their contracts), whichever family's context calls them (sim_ops_seed_checks.c,
 * sim_ops_norm.c).
 *
 * Message texts: the OP_CHECK_* macros (OP_CHECK_NULL, OP_CHECK_DTYPE_NOT_SUPPORT, ...) of ops-math
 * c41933244c31e44fd496e3bb3212164f8c48c214 common/inc/external/aclnn_kernels/common/op_error_check.h,
 * shipped with CANN as aclnn_kernels/common/op_error_check.h.  A dtype list prints as
 * "[DT_FLOAT,DT_FLOAT16,]" and a shape as "[2, 3, 4]" (opbase
 * src/nnopbase/common/utils/{data_type_utils,shape_utils}.cpp).  Rules marked [aclsim] are the
 * simulator's own: a kernel here must never read or write out of bounds, and memory must be live
 * device memory (mem_ok); they run after every CANN rule, so they never change which CANN error a
 * call gets.
 */
#define _GNU_SOURCE
#include "sim_ops_common.h"
#include "sim_scratch.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ops_plan_init(SimPlan *p, SimOpId op, const char *api, int n_in, int n_out, const char *const *names) {
  memset(p, 0, sizeof *p);
  p->op = op;
  p->name = api;
  p->n_in = n_in;
  p->n_out = n_out;
  for (int i = 0; i < n_in + n_out; i++) p->tname[i] = names[i];
}

int ops_fail(const char *op, int code, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return sim_fail(code, "%s: %s", op, buf);
}

int ops_opp_path(const char *op) {
  const char *s = getenv("ASCEND_OPP_PATH");
  if (s && *s) return 0;
  return sim_fail(SIM_NN_OPP_PATH,
                  "%s: the environment variable ASCEND_OPP_PATH is not set, so the operator package cannot "
                  "be found; run `source <CANN install>/set_env.sh` (e.g. /usr/local/Ascend/ascend-toolkit/"
                  "set_env.sh) before starting the process",
                  op);
}

/* L2_DFX_PHASE_1 / OP_CHECK_COMM_INPUT (opbase include/nnopbase/opdev/op_dfx.h CheckPhase1Params)
 * of the hand-written operators; the generated ones check the same out-params with their own
 * texts (sim_ops_rms_norm.c). */
int ops_outparams(const char *op, const uint64_t *ws, void *const *exec) {
  if (ws && exec) return 0;
  return ops_fail(op, SIM_NN_NULLPTR, "The workspaceSize or executor is nullptr.");
}

/* OP_CHECK_NULL (IsNullptr): the demangled C++ type and the argument's variable name. */
int ops_null(const char *op, const void *h, const char *type, const char *arg, int code) {
  if (h) return 0;
  return ops_fail(op, code, "Expected a value of type [%s] for argument [%s] but instead found nullptr.", type, arg);
}

int ops_get(const char *op, SimPlan *p, const void *h, int slot) {
  if (!h) return 0;
  if (sim_lookup_tensor(h, &p->t[slot]) != 0)
    return ops_fail(op, SIM_NN_INVALID, "%s (%p) is not a live aclTensor (destroyed or never created)", p->tname[slot],
                    h);
  p->present[slot] = true;
  return 0;
}

/* ---- shapes ------------------------------------------------------------------------------- */
void ops_dims_str(const int64_t *dims, int nd, const char *sep, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < nd && k < n; i++) k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, i ? sep : "", dims[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
}

static void shape_str(const SimTensorDesc *d, char *buf, size_t n) { ops_dims_str(d->dims, d->ndim, ", ", buf, n); }

bool ops_shape_is(const SimTensorDesc *a, const int64_t *dims, int nd) {
  if (a->ndim != nd) return false;
  for (int i = 0; i < nd; i++)
    if (a->dims[i] != dims[i]) return false;
  return true;
}

bool ops_same_shape(const SimTensorDesc *a, const SimTensorDesc *b) { return ops_shape_is(a, b->dims, b->ndim); }

/* ---- CANN's check macros ------------------------------------------------------------------ */
static const char *shown_or_name(const SimPlan *p, int s, const char *shown) { return shown ? shown : p->tname[s]; }

int ops_dt_support(const char *op, const SimPlan *p, int s, const OpsDtList *l, const char *prefix,
                   const char *shown) {
  if (!p->present[s]) return 0;
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == p->t[s].dtype) return 0;
  char ls[160];
  size_t k = (size_t)snprintf(ls, sizeof ls, "[");
  for (int i = 0; i < l->n && k < sizeof ls; i++)
    k += (size_t)snprintf(ls + k, sizeof ls - k, "%s,", sim_dt_str(l->v[i]));
  if (k < sizeof ls) snprintf(ls + k, sizeof ls - k, "]");
  return ops_fail(op, SIM_NN_INVALID, "%s%s not implemented for %s, should be in dtype support list %s.", prefix,
                  shown_or_name(p, s, shown), sim_dt_str(p->t[s].dtype), ls);
}

int ops_dt_match(const char *op, const SimPlan *p, int s, int32_t expected, const char *shown) {
  if (!p->present[s] || p->t[s].dtype == expected) return 0;
  return ops_fail(op, SIM_NN_INVALID, "Tensor %s expected dtype is %s but found %s.", shown_or_name(p, s, shown),
                  sim_dt_str(expected), sim_dt_str(p->t[s].dtype));
}

int ops_dt_same(const char *op, const SimPlan *p, int a, const char *sa, int b, const char *sb) {
  if (!p->present[a] || !p->present[b] || p->t[a].dtype == p->t[b].dtype) return 0;
  return ops_fail(op, SIM_NN_INVALID, "Expected both tensors to have same dtype, but found %s %s and %s %s.",
                  shown_or_name(p, a, sa), sim_dt_str(p->t[a].dtype), shown_or_name(p, b, sb),
                  sim_dt_str(p->t[b].dtype));
}

int ops_max_dim(const char *op, const SimPlan *p, int s, int n, const char *shown) {
  if (!p->present[s] || p->t[s].ndim <= n) return 0;
  return ops_fail(op, SIM_NN_INVALID, "The %s tensor cannot be larger than %d dimensions.", shown_or_name(p, s, shown),
                  n);
}

int ops_min_dim(const char *op, const SimPlan *p, int s, int n, const char *shown) {
  if (!p->present[s] || p->t[s].ndim >= n) return 0;
  return ops_fail(op, SIM_NN_INVALID, "The %s tensor must have at least %d dimensions.", shown_or_name(p, s, shown),
                  n);
}

int ops_wrong_dim(const char *op, const SimPlan *p, int s, int n, const char *shown) {
  if (!p->present[s] || p->t[s].ndim == n) return 0;
  char got[200];
  shape_str(&p->t[s], got, sizeof got);
  return ops_fail(op, SIM_NN_INVALID, "Expected %d dimension input, but got %s with sizes %s.", n,
                  shown_or_name(p, s, shown), got);
}

int ops_shape_same(const char *op, const SimPlan *p, int a, const char *sa, int b, const char *sb) {
  if (!p->present[a] || !p->present[b] || ops_same_shape(&p->t[a], &p->t[b])) return 0;
  char x[200], y[200];
  shape_str(&p->t[a], x, sizeof x);
  shape_str(&p->t[b], y, sizeof y);
  return ops_fail(op, SIM_NN_INVALID,
                  "Expected tensor for %s to have same size as tensor for %s, but %s does not equal %s.",
                  shown_or_name(p, a, sa), shown_or_name(p, b, sb), x, y);
}

/* ---- planning ----------------------------------------------------------------------------- */
/* [aclsim] The view must fit its storage shape, and the storage must lie inside one live device
 * allocation; records the allocation id for the liveness check at execution time. */
static int mem_ok(const char *op, SimPlan *p, int s) {
  if (!p->present[s]) return 0;
  SimTensorDesc *d = &p->t[s];
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
    char sh[200];
    shape_str(d, sh, sizeof sh);
    return ops_fail(op, SIM_NN_INVALID,
                    "%s view (shape %s, offset %" PRId64 ") reaches storage elements [%" PRId64 ", %" PRId64
                    "] but its storage shape holds %" PRId64 " elements",
                    p->tname[s], sh, d->offset, lo, hi, sn);
  }
  if (d->data == NULL)
    return ops_fail(op, SIM_NN_INVALID, "%s has a NULL data pointer but a non-empty view", p->tname[s]);
  uint64_t bytes = (uint64_t)sn * sim_dtype_size(d->dtype);
  uint64_t id = sim_dev_range_alloc(d->data, bytes);
  if (id == 0) {
    char why[256];
    sim_describe_ptr(d->data, why, sizeof why);
    return ops_fail(op, SIM_NN_INVALID,
                    "%s data must be device memory holding its whole storage (%" PRId64 " x %s = %" PRIu64
                    " bytes) inside one live aclrtMalloc allocation, but %s",
                    p->tname[s], sn, sim_dtype_name(d->dtype), bytes, why);
  }
  d->alloc_id = id;
  return 0;
}

/* The workspace: 512 + 16 * rows bytes rounded up to 32, rows = the reduction rows (C for the
 * batch norm family, N * C for group norm, the normalized rows of the row norms): always nonzero
 * for a computing plan, like CANN's reduce kernels. */
int ops_finish(const char *op, SimPlan *p, int64_t rows, uint64_t *ws, void **exec) {
  for (int i = 0; i < p->n_in + p->n_out; i++) {
    int rc = mem_ok(op, p, i);
    if (rc) return rc;
  }
  uint64_t r = rows > 0 ? (uint64_t)rows : 0;
  p->run = SIM_RUN_COMPUTE;
  p->ws_size = 512 + ((16 * r + 31) / 32) * 32;
  return sim_executor_create(p, ws, exec);
}

void ops_fill(SimPlan *p, int s, double v) {
  if (!p->present[s]) return;
  p->fill_on[s] = true;
  p->fill[s] = v;
}

int ops_finish_early(const char *op, SimPlan *p, SimRunMode run, uint64_t *ws, void **exec) {
  for (int i = 0; i < p->n_in + p->n_out; i++) {
    if (run == SIM_RUN_FILL && p->fill_on[i]) {
      int rc = mem_ok(op, p, i);
      if (rc) return rc;
    } else {
      p->t[i].alloc_id = 0; /* neither read nor written */
    }
  }
  p->run = run;
  p->ws_size = 0;
  return sim_executor_create(p, ws, exec);
}

double *ops_zalloc(int64_t n) {
  double *v = sim_scratch_doubles(n);
  if (v) memset(v, 0, (size_t)(n > 0 ? n : 1) * sizeof(double));
  return v;
}
