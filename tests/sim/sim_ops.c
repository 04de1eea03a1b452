/*
 * Software CANN ("aclsim") -- the nine norm operators: phase-1 validation (the documented
 * 161001 / 161002 rules), planning, and the computation run at stream synchronisation.
 * Accumulation is in double; every output is rounded once to its own dtype (RNE).
 */
#define _GNU_SOURCE
#include "sim.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================================
 * Validation context
 * ====================================================================================== */
typedef struct {
  const char *op;
  SimPlan plan;
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

static void shape_str(const SimTensorDesc *d, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < d->ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, i ? ", %" PRId64 : "%" PRId64, d->dims[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
}

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

static int outparams(Ctx *c, const uint64_t *ws, void *const *exec) {
  if (!ws) return sim_fail(SIM_NN_NULLPTR, "%s: workspaceSize (out-param) is NULL", c->op);
  if (!exec) return sim_fail(SIM_NN_NULLPTR, "%s: executor (out-param) is NULL", c->op);
  return 0;
}

static int req(Ctx *c, const void *h, int slot) {
  if (!h) return sim_fail(SIM_NN_NULLPTR, "%s: %s is a null pointer", c->op, NAME(slot));
  return 0;
}

static int req_mask(Ctx *c, const void *h, int slot, const char *mask) {
  if (!h) return sim_fail(SIM_NN_NULLPTR, "%s: %s is a null pointer but %s is true", c->op, NAME(slot), mask);
  return 0;
}

/* Records a (possibly NULL) tensor argument in its slot. */
static int get(Ctx *c, const void *h, int slot) {
  if (!h) return 0;
  if (sim_lookup_tensor(h, T(slot)) != 0)
    return sim_fail(SIM_NN_INVALID, "%s: %s (%p) is not a live aclTensor (destroyed or never created)", c->op, NAME(slot), h);
  P(slot) = true;
  return 0;
}

static bool is_float(int32_t dt) { return dt == SIM_DT_FLOAT || dt == SIM_DT_FLOAT16 || dt == SIM_DT_BF16; }

static int dt_float(Ctx *c, int s) {
  if (P(s) && !is_float(T(s)->dtype))
    return sim_fail(SIM_NN_INVALID, "%s: %s dtype %s is not supported (expected FLOAT, FLOAT16 or BF16)", c->op, NAME(s),
                    sim_dtype_name(T(s)->dtype));
  return 0;
}

static int dt_only(Ctx *c, int s, int32_t dt) {
  if (P(s) && T(s)->dtype != dt)
    return sim_fail(SIM_NN_INVALID, "%s: %s dtype %s is not supported (must be %s)", c->op, NAME(s), sim_dtype_name(T(s)->dtype),
                    sim_dtype_name(dt));
  return 0;
}

static int dt_eq(Ctx *c, int a, int b) {
  if (P(a) && P(b) && T(a)->dtype != T(b)->dtype)
    return sim_fail(SIM_NN_INVALID, "%s: %s dtype %s must equal %s dtype %s", c->op, NAME(a), sim_dtype_name(T(a)->dtype),
                    NAME(b), sim_dtype_name(T(b)->dtype));
  return 0;
}

/* a's dtype must equal b's dtype or be FLOAT (mixed precision). */
static int dt_eq_or_f32(Ctx *c, int a, int b) {
  if (P(a) && P(b) && T(a)->dtype != T(b)->dtype && T(a)->dtype != SIM_DT_FLOAT)
    return sim_fail(SIM_NN_INVALID, "%s: %s dtype %s must equal %s dtype %s or be FLOAT", c->op, NAME(a),
                    sim_dtype_name(T(a)->dtype), NAME(b), sim_dtype_name(T(b)->dtype));
  return 0;
}

static bool private_format(int32_t f) {
  return f == SIM_FMT_NC1HWC0 || f == SIM_FMT_FRACTAL_Z || f == SIM_FMT_FRACTAL_NZ || f == SIM_FMT_NDC1HWC0 ||
         f == SIM_FMT_FRACTAL_Z_3D || f == -1;
}

static int fmt_ok(Ctx *c, int s) {
  if (P(s) && private_format(T(s)->format))
    return sim_fail(SIM_NN_INVALID,
                    "%s: %s format %s is not supported (private formats are rejected; use ND, NC, NCL, NCHW, NHWC, "
                    "NCDHW or NDHWC)",
                    c->op, NAME(s), sim_format_name(T(s)->format));
  return 0;
}

static int fmt_eq(Ctx *c, int a, int b) {
  if (P(a) && P(b) && T(a)->format != T(b)->format)
    return sim_fail(SIM_NN_INVALID, "%s: %s format %s must equal %s format %s", c->op, NAME(a), sim_format_name(T(a)->format),
                    NAME(b), sim_format_name(T(b)->format));
  return 0;
}

static int rank_in(Ctx *c, int s, int lo, int hi) {
  if (P(s) && (T(s)->ndim < lo || T(s)->ndim > hi)) {
    char sh[160];
    shape_str(T(s), sh, sizeof sh);
    if (lo == hi)
      return sim_fail(SIM_NN_INVALID, "%s: %s must be %d-D but has shape %s", c->op, NAME(s), lo, sh);
    return sim_fail(SIM_NN_INVALID, "%s: %s must have %d to %d dims but has shape %s", c->op, NAME(s), lo, hi, sh);
  }
  return 0;
}

static int numel_eq(Ctx *c, int s, int64_t want, const char *what) {
  if (P(s) && sim_desc_numel(T(s)) != want) {
    char sh[160];
    shape_str(T(s), sh, sizeof sh);
    return sim_fail(SIM_NN_INVALID, "%s: %s has %" PRId64 " elements (shape %s) but must have %s = %" PRId64, c->op, NAME(s),
                    sim_desc_numel(T(s)), sh, what, want);
  }
  return 0;
}

static int shape_eq(Ctx *c, int a, int b) {
  if (!P(a) || !P(b)) return 0;
  bool same = T(a)->ndim == T(b)->ndim;
  for (int i = 0; same && i < T(a)->ndim; i++) same = T(a)->dims[i] == T(b)->dims[i];
  if (!same) {
    char sa[160], sb[160];
    shape_str(T(a), sa, sizeof sa);
    shape_str(T(b), sb, sizeof sb);
    return sim_fail(SIM_NN_INVALID, "%s: %s shape %s must equal %s shape %s", c->op, NAME(a), sa, NAME(b), sb);
  }
  return 0;
}

static int64_t channel(Ctx *c, int s) { return T(s)->ndim >= 2 ? T(s)->dims[1] : 0; }

/* The view must fit its storage shape, and the storage must lie inside one live device
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
    return sim_fail(SIM_NN_INVALID,
                    "%s: %s view (shape %s, offset %" PRId64 ") reaches storage elements [%" PRId64 ", %" PRId64
                    "] but its storage shape holds %" PRId64 " elements",
                    c->op, NAME(s), sh, d->offset, lo, hi, sn);
  }
  if (d->data == NULL)
    return sim_fail(SIM_NN_INVALID, "%s: %s has a NULL data pointer but a non-empty view", c->op, NAME(s));
  uint64_t bytes = (uint64_t)sn * sim_dtype_size(d->dtype);
  uint64_t id = sim_dev_range_alloc(d->data, bytes);
  if (id == 0) {
    char why[256];
    sim_describe_ptr(d->data, why, sizeof why);
    return sim_fail(SIM_NN_INVALID,
                    "%s: %s data must be device memory holding its whole storage (%" PRId64 " x %s = %" PRIu64
                    " bytes) inside one live aclrtMalloc allocation, but %s",
                    c->op, NAME(s), sn, sim_dtype_name(d->dtype), bytes, why);
  }
  d->alloc_id = id;
  return 0;
}

static int get_mask(Ctx *c, const void *h, const char *name) {
  if (!h) return sim_fail(SIM_NN_NULLPTR, "%s: %s is a null pointer", c->op, name);
  bool v[8] = {false};
  uint64_t n = 0;
  if (sim_lookup_bool_array(h, v, 8, &n) != 0)
    return sim_fail(SIM_NN_INVALID, "%s: %s (%p) is not a live aclBoolArray", c->op, name, h);
  if (n != 3) return sim_fail(SIM_NN_INVALID, "%s: %s has %" PRIu64 " elements but must have 3", c->op, name, n);
  for (int i = 0; i < 3; i++) c->plan.mask[i] = v[i];
  return 0;
}

/* Workspace formula: 512 + 16 * R bytes rounded up to 32, R = reduction rows (C for the batch
 * norm family, N * C for group norm): always nonzero, like CANN's reduce kernels. */
static int finish(Ctx *c, int64_t rows, uint64_t *ws, void **exec) {
  for (int i = 0; i < c->plan.n_in + c->plan.n_out; i++) TRY(mem_ok(c, i));
  uint64_t r = rows > 0 ? (uint64_t)rows : 0;
  c->plan.ws_size = 512 + ((16 * r + 31) / 32) * 32;
  return sim_executor_create(&c->plan, ws, exec);
}

static const int64_t *dims_of(const SimTensorDesc *d) { return d->dims; }

/* zero-filled array of n doubles (at least one element, so n == 0 is fine) */
static double *zalloc(int64_t n) { return calloc(n > 0 ? (size_t)n : 1, sizeof(double)); }

/* ======================================================================================
 * 1. aclnnBatchNormReduceBackward
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
  TRY(outparams(c, ws, exec));
  TRY(req(c, gradOut, RB_DY));
  TRY(req(c, input, RB_X));
  TRY(req(c, mean, RB_MEAN));
  TRY(req(c, invstd, RB_INVSTD));
  if (inputG) {
    TRY(req_mask(c, sumDy, RB_SUMDY, "inputG"));
    TRY(req_mask(c, sumDyXmu, RB_SUMDYXMU, "inputG"));
  }
  if (weightG) TRY(req_mask(c, gradWeight, RB_GW, "weightG"));
  if (biasG) TRY(req_mask(c, gradBias, RB_GB, "biasG"));
  c->plan.mask[0] = inputG;
  c->plan.mask[1] = weightG;
  c->plan.mask[2] = biasG;
  TRY(get(c, gradOut, RB_DY));
  TRY(get(c, input, RB_X));
  TRY(get(c, mean, RB_MEAN));
  TRY(get(c, invstd, RB_INVSTD));
  TRY(get(c, weight, RB_W)); /* optional (older releases); values unused */
  if (inputG) {
    TRY(get(c, sumDy, RB_SUMDY));
    TRY(get(c, sumDyXmu, RB_SUMDYXMU));
  }
  if (weightG) TRY(get(c, gradWeight, RB_GW));
  if (biasG) TRY(get(c, gradBias, RB_GB));
  for (int s = RB_DY; s <= RB_GB; s++) TRY(dt_float(c, s));
  TRY(dt_eq(c, RB_DY, RB_X));
  for (int s = RB_DY; s <= RB_GB; s++) TRY(fmt_ok(c, s));
  TRY(fmt_eq(c, RB_DY, RB_X));
  TRY(rank_in(c, RB_DY, 2, 8));
  TRY(rank_in(c, RB_X, 2, 8));
  TRY(shape_eq(c, RB_DY, RB_X));
  int64_t C = channel(c, RB_X);
  if (C == 0) return sim_fail(SIM_NN_INVALID, "%s: the channel axis (dim 1) of input must not be 0", c->op);
  TRY(numel_eq(c, RB_MEAN, C, "C (input dim 1)"));
  TRY(numel_eq(c, RB_INVSTD, C, "C (input dim 1)"));
  TRY(numel_eq(c, RB_W, C, "C (input dim 1)"));
  for (int s = RB_SUMDY; s <= RB_GB; s++) TRY(numel_eq(c, s, C, "C (input dim 1)"));
  c->plan.C = C;
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
 * ====================================================================================== */
enum { BB_DY, BB_X, BB_W, BB_RM, BB_RV, BB_SM, BB_SI, BB_GI, BB_GW, BB_GB };

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
  TRY(req(c, gradOut, BB_DY));
  TRY(req(c, input, BB_X));
  TRY(get_mask(c, outputMask, "outputMask"));
  if (c->plan.mask[0]) TRY(req_mask(c, gradInput, BB_GI, "outputMask[0]"));
  if (c->plan.mask[1]) TRY(req_mask(c, gradWeight, BB_GW, "outputMask[1]"));
  if (c->plan.mask[2]) TRY(req_mask(c, gradBias, BB_GB, "outputMask[2]"));
  c->plan.training = training;
  c->plan.eps = eps;
  TRY(get(c, gradOut, BB_DY));
  TRY(get(c, input, BB_X));
  TRY(get(c, weight, BB_W));
  TRY(get(c, runningMean, BB_RM));
  TRY(get(c, runningVar, BB_RV));
  TRY(get(c, saveMean, BB_SM));
  TRY(get(c, saveInvstd, BB_SI));
  if (c->plan.mask[0]) TRY(get(c, gradInput, BB_GI));
  if (c->plan.mask[1]) TRY(get(c, gradWeight, BB_GW));
  if (c->plan.mask[2]) TRY(get(c, gradBias, BB_GB));
  for (int s = BB_DY; s <= BB_GB; s++) TRY(dt_float(c, s));
  TRY(dt_eq(c, BB_X, BB_DY));
  TRY(dt_eq(c, BB_GI, BB_DY));
  for (int s = BB_W; s <= BB_SI; s++) TRY(dt_eq_or_f32(c, s, BB_DY));
  TRY(dt_eq(c, BB_RV, BB_RM));
  TRY(dt_eq(c, BB_SI, BB_SM));
  int wref = P(BB_W) ? BB_W : BB_DY;
  TRY(dt_eq_or_f32(c, BB_GW, wref));
  TRY(dt_eq_or_f32(c, BB_GB, wref));
  for (int s = BB_DY; s <= BB_GB; s++) TRY(fmt_ok(c, s));
  TRY(fmt_eq(c, BB_X, BB_DY));
  TRY(fmt_eq(c, BB_GI, BB_DY));
  TRY(rank_in(c, BB_DY, 2, 8));
  TRY(rank_in(c, BB_X, 2, 8));
  TRY(shape_eq(c, BB_X, BB_DY));
  TRY(shape_eq(c, BB_GI, BB_X));
  int64_t C = channel(c, BB_X);
  TRY(numel_eq(c, BB_W, C, "C (input dim 1)"));
  TRY(numel_eq(c, BB_RM, C, "C (input dim 1)"));
  TRY(numel_eq(c, BB_RV, C, "C (input dim 1)"));
  for (int s = BB_SM; s <= BB_SI; s++) {
    if (!training && P(s) && sim_desc_numel(T(s)) == 0) continue; /* inference: may be empty */
    TRY(numel_eq(c, s, C, training ? "C (input dim 1)" : "C (input dim 1) or 0 in inference"));
  }
  TRY(numel_eq(c, BB_GW, C, "C (input dim 1)"));
  TRY(numel_eq(c, BB_GB, C, "C (input dim 1)"));
  c->plan.C = C;
  return finish(c, C, ws, exec);
}

static int run_bn_backward(const SimPlan *p) {
  const SimTensorDesc *xd = &p->t[BB_X];
  int64_t C = p->C, numel = sim_desc_numel(xd);
  double *x = sim_load(xd), *dy = sim_load(&p->t[BB_DY]);
  double *w = per_channel_or(p, BB_W, C, 1.0);
  double *mean, *invstd;
  if (p->training) {
    mean = per_channel_or(p, BB_SM, C, 0.0);
    invstd = per_channel_or(p, BB_SI, C, 1.0);
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
 * ====================================================================================== */
enum { GB_DY, GB_X, GB_MEAN, GB_RSTD, GB_GAMMA, GB_GI, GB_GG, GB_GBETA };

static int gn_ints(Ctx *c, int64_t N, int64_t C, int64_t HxW, int64_t group) {
  if (N < 0 || C < 0 || HxW < 0)
    return sim_fail(SIM_NN_INVALID, "%s: N (%" PRId64 "), C (%" PRId64 ") and HxW (%" PRId64 ") must not be negative", c->op, N,
                    C, HxW);
  if (group <= 0) return sim_fail(SIM_NN_INVALID, "%s: group (%" PRId64 ") must be greater than 0", c->op, group);
  if (C % group != 0)
    return sim_fail(SIM_NN_INVALID, "%s: C (%" PRId64 ") must be divisible by group (%" PRId64 ")", c->op, C, group);
  c->plan.N = N;
  c->plan.C = C;
  c->plan.HxW = HxW;
  c->plan.group = group;
  return 0;
}

int sim_gn_backward_ws(const void *gradOut, const void *input, const void *mean, const void *rstd, const void *gamma,
                       int64_t N, int64_t C, int64_t HxW, int64_t group, const void *outputMask, void *gradInput,
                       void *gradGamma, void *gradBeta, uint64_t *ws, void **exec) {
  static const char *const names[] = {"gradOut", "input", "mean", "rstd", "gamma", "gradInput", "gradGammaOut", "gradBetaOut"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_GN_BACKWARD, "aclnnGroupNormBackward", 5, 3, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec));
  TRY(req(c, gradOut, GB_DY));
  TRY(req(c, input, GB_X));
  TRY(req(c, mean, GB_MEAN));
  TRY(req(c, rstd, GB_RSTD));
  TRY(get_mask(c, outputMask, "outputMask"));
  if (c->plan.mask[0]) TRY(req_mask(c, gradInput, GB_GI, "outputMask[0]"));
  if (c->plan.mask[1]) TRY(req_mask(c, gradGamma, GB_GG, "outputMask[1]"));
  if (c->plan.mask[2]) TRY(req_mask(c, gradBeta, GB_GBETA, "outputMask[2]"));
  TRY(get(c, gradOut, GB_DY));
  TRY(get(c, input, GB_X));
  TRY(get(c, mean, GB_MEAN));
  TRY(get(c, rstd, GB_RSTD));
  TRY(get(c, gamma, GB_GAMMA));
  if (c->plan.mask[0]) TRY(get(c, gradInput, GB_GI));
  if (c->plan.mask[1]) TRY(get(c, gradGamma, GB_GG));
  if (c->plan.mask[2]) TRY(get(c, gradBeta, GB_GBETA));
  TRY(dt_float(c, GB_DY));
  TRY(dt_eq(c, GB_X, GB_DY));
  TRY(dt_float(c, GB_MEAN));
  TRY(dt_eq_or_f32(c, GB_MEAN, GB_DY));
  TRY(dt_eq(c, GB_RSTD, GB_MEAN));
  TRY(dt_eq(c, GB_GAMMA, GB_MEAN));
  TRY(dt_eq(c, GB_GI, GB_DY));
  TRY(dt_eq(c, GB_GG, GB_MEAN));
  TRY(dt_eq(c, GB_GBETA, GB_MEAN));
  for (int s = GB_DY; s <= GB_GBETA; s++) TRY(fmt_ok(c, s));
  TRY(shape_eq(c, GB_GI, GB_X));
  if (P(GB_GAMMA)) {
    TRY(shape_eq(c, GB_GG, GB_GAMMA));
    TRY(shape_eq(c, GB_GBETA, GB_GAMMA));
  } else {
    TRY(numel_eq(c, GB_GG, C, "C (gamma is NULL)"));
    TRY(numel_eq(c, GB_GBETA, C, "C (gamma is NULL)"));
  }
  TRY(gn_ints(c, N, C, HxW, group));
  TRY(numel_eq(c, GB_X, N * C * HxW, "N * C * HxW"));
  TRY(numel_eq(c, GB_DY, N * C * HxW, "N * C * HxW"));
  TRY(numel_eq(c, GB_MEAN, N * group, "N * group"));
  TRY(numel_eq(c, GB_RSTD, N * group, "N * group"));
  TRY(numel_eq(c, GB_GAMMA, C, "C"));
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
  for (int64_t n = 0; n < N; n++) {
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
 * ====================================================================================== */
enum { ST_X, ST_MEAN, ST_INVSTD };

int sim_bn_stats_ws(const void *input, double eps, void *mean, void *invstd, uint64_t *ws, void **exec) {
  static const char *const names[] = {"input", "mean", "invstd"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_STATS, "aclnnBatchNormStats", 1, 2, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec));
  TRY(req(c, input, ST_X));
  TRY(req(c, mean, ST_MEAN));
  TRY(req(c, invstd, ST_INVSTD));
  TRY(get(c, input, ST_X));
  TRY(get(c, mean, ST_MEAN));
  TRY(get(c, invstd, ST_INVSTD));
  c->plan.eps = eps;
  TRY(dt_float(c, ST_X));
  TRY(dt_only(c, ST_MEAN, SIM_DT_FLOAT));
  TRY(dt_only(c, ST_INVSTD, SIM_DT_FLOAT));
  for (int s = ST_X; s <= ST_INVSTD; s++) TRY(fmt_ok(c, s));
  TRY(rank_in(c, ST_X, 2, 8));
  TRY(rank_in(c, ST_MEAN, 1, 1));
  TRY(rank_in(c, ST_INVSTD, 1, 1));
  int64_t C = channel(c, ST_X);
  TRY(numel_eq(c, ST_MEAN, C, "C (input dim 1)"));
  TRY(numel_eq(c, ST_INVSTD, C, "C (input dim 1)"));
  if (C == 0) return sim_fail(SIM_NN_INVALID, "%s: the channel axis (dim 1) of input must not be 0", c->op);
  c->plan.C = C;
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
  int64_t M = channel_mean_var(&p->t[ST_X], x, mean, var);
  for (int64_t i = 0; i < C; i++) var[i] = M > 0 ? 1.0 / sqrt(var[i] + p->eps) : 0; /* empty: zero-filled */
  sim_store(&p->t[ST_MEAN], mean);
  sim_store(&p->t[ST_INVSTD], var);
  free(x), free(mean), free(var);
  return 0;
}

/* ======================================================================================
 * 5. aclnnBatchNormGatherStatsWithCounts
 * ====================================================================================== */
enum { GS_X, GS_MEAN, GS_INVSTD, GS_RM, GS_RV, GS_COUNTS, GS_MEANALL, GS_INVSTDALL };

int sim_bn_gather_stats_ws(const void *input, const void *mean, const void *invstd, void *runningMean, void *runningVar,
                           double momentum, double eps, const void *counts, void *meanAll, void *invstdAll, uint64_t *ws,
                           void **exec) {
  static const char *const names[] = {"input", "mean", "invstd", "runningMean", "runningVar", "counts", "meanAll", "invstdAll"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_GATHER_STATS, "aclnnBatchNormGatherStatsWithCounts", 6, 2, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec));
  TRY(req(c, input, GS_X));
  TRY(req(c, mean, GS_MEAN));
  TRY(req(c, invstd, GS_INVSTD));
  TRY(req(c, counts, GS_COUNTS));
  TRY(req(c, meanAll, GS_MEANALL));
  TRY(req(c, invstdAll, GS_INVSTDALL));
  TRY(get(c, input, GS_X));
  TRY(get(c, mean, GS_MEAN));
  TRY(get(c, invstd, GS_INVSTD));
  TRY(get(c, runningMean, GS_RM));
  TRY(get(c, runningVar, GS_RV));
  TRY(get(c, counts, GS_COUNTS));
  TRY(get(c, meanAll, GS_MEANALL));
  TRY(get(c, invstdAll, GS_INVSTDALL));
  c->plan.momentum = momentum;
  c->plan.eps = eps;
  for (int s = GS_X; s <= GS_INVSTDALL; s++) TRY(dt_float(c, s));
  for (int s = GS_X; s <= GS_INVSTDALL; s++) TRY(fmt_ok(c, s));
  TRY(rank_in(c, GS_X, 2, 8));
  TRY(rank_in(c, GS_MEAN, 2, 2));
  TRY(rank_in(c, GS_INVSTD, 2, 2));
  TRY(rank_in(c, GS_COUNTS, 1, 1));
  int64_t C = channel(c, GS_X), W = T(GS_MEAN)->dims[0];
  if (T(GS_INVSTD)->dims[0] != W || T(GS_COUNTS)->dims[0] != W)
    return sim_fail(SIM_NN_INVALID, "%s: the first dims of counts (%" PRId64 "), mean (%" PRId64 ") and invstd (%" PRId64
                    ") must be equal", c->op, T(GS_COUNTS)->dims[0], W, T(GS_INVSTD)->dims[0]);
  if (T(GS_MEAN)->dims[1] != C || T(GS_INVSTD)->dims[1] != C)
    return sim_fail(SIM_NN_INVALID, "%s: dim 1 of mean (%" PRId64 ") and invstd (%" PRId64 ") must equal C = %" PRId64
                    " (input dim 1)", c->op, T(GS_MEAN)->dims[1], T(GS_INVSTD)->dims[1], C);
  TRY(numel_eq(c, GS_RM, C, "C (input dim 1)"));
  TRY(numel_eq(c, GS_RV, C, "C (input dim 1)"));
  TRY(numel_eq(c, GS_MEANALL, C, "C (input dim 1)"));
  TRY(numel_eq(c, GS_INVSTDALL, C, "C (input dim 1)"));
  c->plan.C = C;
  return finish(c, C, ws, exec);
}

static int run_gather_stats(const SimPlan *p) {
  int64_t C = p->C, W = p->t[GS_MEAN].dims[0];
  double *mean = sim_load(&p->t[GS_MEAN]), *invstd = sim_load(&p->t[GS_INVSTD]);
  double *counts = sim_load(&p->t[GS_COUNTS]);
  double *ma = zalloc(C), *ia = zalloc(C);
  double *rm = p->present[GS_RM] ? sim_load(&p->t[GS_RM]) : NULL;
  double *rv = p->present[GS_RV] ? sim_load(&p->t[GS_RV]) : NULL;
  for (int64_t ch = 0; ch < C; ch++) {
    double n = 0, avg = 0, var_n = 0;
    for (int64_t w = 0; w < W; w++) { /* parallel (Chan) merge of per-device statistics */
      double cnt = counts[w], m = mean[w * C + ch], sd = 1.0 / invstd[w * C + ch];
      double v = (sd * sd - p->eps) * cnt;
      double f = 1.0 / (n + cnt);
      var_n += v + (avg - m) * (avg - m) * n * cnt * f;
      avg = n * f * avg + cnt * f * m;
      n += cnt;
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
 * ====================================================================================== */
enum { EB_DY, EB_X, EB_MEAN, EB_INVSTD, EB_W, EB_SUMDY, EB_SUMDYXMU, EB_COUNTER, EB_GI };

int sim_bn_elemt_backward_ws(const void *gradOut, const void *input, const void *mean, const void *invstd,
                             const void *weight, const void *sumDy, const void *sumDyXmu, void *counter, void *gradInput,
                             uint64_t *ws, void **exec) {
  static const char *const names[] = {"gradOut", "input", "mean", "invstd", "weight", "sumDy", "sumDyXmu", "counter", "gradInput"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_ELEMT_BACKWARD, "aclnnBatchNormElemtBackward", 8, 1, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec));
  const void *hs[] = {gradOut, input, mean, invstd, weight, sumDy, sumDyXmu, counter, gradInput};
  for (int s = EB_DY; s <= EB_GI; s++)
    if (s != EB_W) TRY(req(c, hs[s], s));
  for (int s = EB_DY; s <= EB_GI; s++) TRY(get(c, hs[s], s));
  for (int s = EB_DY; s <= EB_GI; s++)
    if (s != EB_COUNTER) TRY(dt_float(c, s));
  if (T(EB_COUNTER)->dtype != SIM_DT_INT32 && T(EB_COUNTER)->dtype != SIM_DT_FLOAT16 && T(EB_COUNTER)->dtype != SIM_DT_FLOAT)
    return sim_fail(SIM_NN_INVALID, "%s: counter dtype %s is not supported (expected INT32, FLOAT16 or FLOAT)", c->op,
                    sim_dtype_name(T(EB_COUNTER)->dtype));
  for (int s = EB_DY; s <= EB_GI; s++) TRY(fmt_ok(c, s));
  TRY(rank_in(c, EB_X, 2, 8));
  TRY(rank_in(c, EB_DY, 0, 8));
  TRY(rank_in(c, EB_GI, 0, 8));
  TRY(rank_in(c, EB_COUNTER, 0, 8));
  int64_t C = channel(c, EB_X);
  if (C == 0) return sim_fail(SIM_NN_INVALID, "%s: the channel axis (dim 1) of input must not be 0", c->op);
  TRY(shape_eq(c, EB_DY, EB_X));
  TRY(shape_eq(c, EB_GI, EB_X));
  for (int s = EB_MEAN; s <= EB_SUMDYXMU; s++) TRY(numel_eq(c, s, C, "C (input dim 1)"));
  c->plan.C = C;
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
  double total = 0;
  for (int64_t i = 0; i < sim_desc_numel(&p->t[EB_COUNTER]); i++) total += cnt[i];
  double *gi = zalloc(numel);
  int64_t inner = numel / (xd->dims[0] * C);
  for (int64_t i = 0; i < numel; i++) {
    int64_t ch = (i / inner) % C;
    double is = invstd[ch];
    gi[i] = (dy[i] - sdy[ch] / total - (x[i] - mean[ch]) * is * is * sdx[ch] / total) * is * w[ch];
  }
  sim_store(&p->t[EB_GI], gi);
  free(x), free(dy), free(mean), free(invstd), free(w), free(sdy), free(sdx), free(cnt), free(gi);
  return 0;
}

/* ======================================================================================
 * 7. aclnnBatchNorm
 * ====================================================================================== */
enum { BN_X, BN_W, BN_B, BN_RM, BN_RV, BN_Y, BN_SM, BN_SI };

int sim_bn_ws(const void *input, const void *weight, const void *bias, void *runningMean, void *runningVar, bool training,
              double momentum, double eps, void *output, void *saveMean, void *saveInvstd, uint64_t *ws, void **exec) {
  static const char *const names[] = {"input", "weight", "bias", "runningMean", "runningVar", "output", "saveMean", "saveInvstd"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN, "aclnnBatchNorm", 5, 3, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec));
  TRY(req(c, input, BN_X));
  TRY(req(c, output, BN_Y));
  if (training) {
    TRY(req_mask(c, saveMean, BN_SM, "training"));
    TRY(req_mask(c, saveInvstd, BN_SI, "training"));
  }
  c->plan.training = training;
  c->plan.momentum = momentum;
  c->plan.eps = eps;
  TRY(get(c, input, BN_X));
  TRY(get(c, weight, BN_W));
  TRY(get(c, bias, BN_B));
  TRY(get(c, runningMean, BN_RM));
  TRY(get(c, runningVar, BN_RV));
  TRY(get(c, output, BN_Y));
  if (training) { /* saveMean / saveInvstd are outputs of the training mode only */
    TRY(get(c, saveMean, BN_SM));
    TRY(get(c, saveInvstd, BN_SI));
  }
  for (int s = BN_X; s <= BN_SI; s++) TRY(dt_float(c, s));
  TRY(dt_eq(c, BN_Y, BN_X));
  for (int s = BN_X; s <= BN_SI; s++) TRY(fmt_ok(c, s));
  TRY(fmt_eq(c, BN_Y, BN_X));
  TRY(rank_in(c, BN_X, 2, 8));
  TRY(shape_eq(c, BN_Y, BN_X));
  int64_t C = channel(c, BN_X);
  for (int s = BN_W; s <= BN_RV; s++) TRY(numel_eq(c, s, C, "C (input dim 1)"));
  TRY(numel_eq(c, BN_SM, C, "C (input dim 1)"));
  TRY(numel_eq(c, BN_SI, C, "C (input dim 1)"));
  c->plan.C = C;
  return finish(c, C, ws, exec);
}

static int run_bn(const SimPlan *p) {
  const SimTensorDesc *xd = &p->t[BN_X];
  int64_t C = p->C, numel = sim_desc_numel(xd);
  double *x = sim_load(xd);
  double *w = per_channel_or(p, BN_W, C, 1.0), *b = per_channel_or(p, BN_B, C, 0.0);
  double *mean = zalloc(C), *var = zalloc(C);
  double *invstd = zalloc(C);
  if (p->training) {
    int64_t M = C > 0 ? channel_mean_var(xd, x, mean, var) : 0;
    for (int64_t i = 0; i < C; i++) invstd[i] = M > 0 ? 1.0 / sqrt(var[i] + p->eps) : 0;
    if (M > 0) {
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
    /* Atlas A2/A3 write Var(x) into saveInvstd, Ascend 950 invstd (aclnnBatchNorm doc). */
    store_if(p, BN_SI, sim_soc_bn_saves_variance() ? var : invstd);
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
 * ====================================================================================== */
enum { BE_X, BE_W, BE_B, BE_MEAN, BE_INVSTD, BE_Y };

int sim_bn_elemt_ws(const void *input, const void *weight, const void *bias, void *mean, void *invstd, double eps,
                    void *output, uint64_t *ws, void **exec) {
  static const char *const names[] = {"input", "weight", "bias", "mean", "invstd", "output"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_BN_ELEMT, "aclnnBatchNormElemt", 5, 1, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec));
  TRY(req(c, input, BE_X));
  TRY(req(c, mean, BE_MEAN));
  TRY(req(c, invstd, BE_INVSTD));
  TRY(req(c, output, BE_Y));
  const void *hs[] = {input, weight, bias, mean, invstd, output};
  for (int s = BE_X; s <= BE_Y; s++) TRY(get(c, hs[s], s));
  c->plan.eps = eps;
  for (int s = BE_X; s <= BE_Y; s++) TRY(dt_float(c, s));
  for (int s = BE_W; s <= BE_Y; s++) TRY(dt_eq(c, s, BE_X));
  for (int s = BE_X; s <= BE_Y; s++) TRY(fmt_ok(c, s));
  TRY(fmt_eq(c, BE_Y, BE_X));
  TRY(rank_in(c, BE_X, 2, 8));
  TRY(shape_eq(c, BE_Y, BE_X));
  int64_t C = channel(c, BE_X);
  if (C == 0) return sim_fail(SIM_NN_INVALID, "%s: the channel axis (dim 1) of input must not be 0", c->op);
  for (int s = BE_W; s <= BE_INVSTD; s++) {
    TRY(rank_in(c, s, 1, 1));
    TRY(numel_eq(c, s, C, "C (input dim 1)"));
  }
  c->plan.C = C;
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
  for (int64_t i = 0; i < numel; i++) {
    int64_t ch = (i / inner) % C;
    y[i] = (x[i] - mean[ch]) * invstd[ch] * w[ch] + b[ch];
  }
  sim_store(&p->t[BE_Y], y);
  free(x), free(mean), free(invstd), free(w), free(b), free(y);
  return 0;
}

/* ======================================================================================
 * 9. aclnnGroupNorm
 * ====================================================================================== */
enum { GN_X, GN_GAMMA, GN_BETA, GN_Y, GN_MEAN, GN_RSTD };

int sim_gn_ws(const void *self, const void *gamma, const void *beta, int64_t N, int64_t C, int64_t HxW, int64_t group,
              double eps, void *out, void *meanOut, void *rstdOut, uint64_t *ws, void **exec) {
  static const char *const names[] = {"self", "gamma", "beta", "out", "meanOut", "rstdOut"};
  Ctx cc, *c = &cc;
  ctx_init(c, SIM_OP_GN, "aclnnGroupNorm", 3, 3, names);
  TRY(opp_path(c->op));
  TRY(outparams(c, ws, exec));
  TRY(req(c, self, GN_X));
  TRY(req(c, out, GN_Y));
  TRY(req(c, meanOut, GN_MEAN));
  TRY(req(c, rstdOut, GN_RSTD));
  const void *hs[] = {self, gamma, beta, out, meanOut, rstdOut};
  for (int s = GN_X; s <= GN_RSTD; s++) TRY(get(c, hs[s], s));
  c->plan.eps = eps;
  for (int s = GN_X; s <= GN_RSTD; s++) TRY(dt_float(c, s));
  for (int s = GN_GAMMA; s <= GN_RSTD; s++) TRY(dt_eq(c, s, GN_X));
  for (int s = GN_X; s <= GN_RSTD; s++) TRY(fmt_ok(c, s));
  TRY(rank_in(c, GN_X, 2, 8));
  TRY(gn_ints(c, N, C, HxW, group));
  if (!(eps > 0)) return sim_fail(SIM_NN_INVALID, "%s: eps (%g) must be greater than 0", c->op, eps);
  TRY(shape_eq(c, GN_Y, GN_X));
  for (int s = GN_MEAN; s <= GN_RSTD; s++) {
    if (T(s)->ndim != 2 || T(s)->dims[0] != N || T(s)->dims[1] != group) {
      char sh[160];
      shape_str(T(s), sh, sizeof sh);
      return sim_fail(SIM_NN_INVALID, "%s: %s shape %s must be (N, group) = (%" PRId64 ", %" PRId64 ")", c->op, NAME(s), sh, N,
                      group);
    }
  }
  const SimTensorDesc *x = T(GN_X);
  if (x->dims[0] != N)
    return sim_fail(SIM_NN_INVALID, "%s: self dim 0 (%" PRId64 ") must equal N (%" PRId64 ")", c->op, x->dims[0], N);
  if (x->dims[1] != C)
    return sim_fail(SIM_NN_INVALID, "%s: self dim 1 (%" PRId64 ") must equal C (%" PRId64 ")", c->op, x->dims[1], C);
  int64_t rest = 1;
  for (int i = 2; i < x->ndim; i++) rest *= x->dims[i];
  if (rest != HxW)
    return sim_fail(SIM_NN_INVALID, "%s: the product of self dims 2.. (%" PRId64 ") must equal HxW (%" PRId64 ")", c->op, rest,
                    HxW);
  TRY(numel_eq(c, GN_X, N * C * HxW, "N * C * HxW"));
  for (int s = GN_GAMMA; s <= GN_BETA; s++) {
    TRY(rank_in(c, s, 1, 1));
    TRY(numel_eq(c, s, C, "C"));
  }
  TRY(fmt_eq(c, GN_Y, GN_X));
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
      if (cnt == 0) continue; /* empty group: zero-filled statistics */
      int64_t b0 = (n * C + g * D) * HxW, len = D * HxW;
      double s = 0, q = 0;
      for (int64_t i = 0; i < len; i++) s += x[b0 + i];
      double m = s / cnt;
      for (int64_t i = 0; i < len; i++) q += (x[b0 + i] - m) * (x[b0 + i] - m);
      double r = 1.0 / sqrt(q / cnt + p->eps); /* biased variance, like PyTorch */
      mo[n * G + g] = m;
      ro[n * G + g] = r;
      for (int64_t i = 0; i < len; i++) {
        int64_t ch = g * D + i / HxW;
        y[b0 + i] = (x[b0 + i] - m) * r * gamma[ch] + beta[ch];
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
int sim_op_run(const SimPlan *p, void *workspace) {
  (void)workspace;
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
    default: return -1;
  }
}
