/*
 * Software CANN ("aclsim") -- what the nine seed operators (aclnnBatchNorm, ...Backward,
 * ...Stats, ...GatherStatsWithCounts, ...Elemt, ...ElemtBackward, ...ReduceBackward,
 * aclnnGroupNorm, ...Backward; each in its sim_ops_<operator>.c) share, internal to the core:
 * the validation context and CANN's check macros (sim_ops_common.c, which cites the macros'
 * sources, wrapped here for Ctx; sim_ops_seed_checks.c, which explains the conventions, for the
 * SoC and what only these operators check), the computations' per-channel helpers
 * (sim_ops_seed_per_channel.c), and their runs for sim_op_run (sim_ops.c).
 */
#ifndef ACLSIM_SIM_OPS_SEED_H
#define ACLSIM_SIM_OPS_SEED_H

#include <string.h>

#include "sim_ops_common.h"

/* ---- validation context (sim_ops_seed_checks.c) ----------------------------------------- */
typedef struct {
  const char *op;
  SimPlan plan;
  SimSocInfo soc; /* the platform file's facts (sim_soc.c) */
} Ctx;

#define T(s) (&c->plan.t[(s)])
#define P(s) (c->plan.present[(s)])
#define NAME(s) (c->plan.tname[(s)])
#define TRY(e) do { int _rc = (e); if (_rc) return _rc; } while (0)

/* The routines of sim_ops_common.h for a Ctx: the operator's name c->op, its plan c->plan. */
static inline void ctx_init(Ctx *c, SimOpId op, const char *name, int n_in, int n_out, const char *const *names) {
  memset(c, 0, sizeof *c);
  c->op = name;
  ops_plan_init(&c->plan, op, name, n_in, n_out, names);
}
#define fail(c, code, ...) ops_fail((c)->op, (code), __VA_ARGS__) /* "<operator>: " before the text */
static inline void shape_str(const SimTensorDesc *d, char *buf, size_t n) { /* op::ToString(Shape) */
  ops_dims_str(d->dims, d->ndim, ", ", buf, n);
}
const char *fmt_str(int32_t f);
static inline int opp_path(const char *op) { return ops_opp_path(op); }
static inline int outparams(Ctx *c, const uint64_t *ws, void *const *exec) { return ops_outparams(c->op, ws, exec); }

/* the SoC */
int soc_check(Ctx *c);
int op_supported(Ctx *c);
int no_kernel(Ctx *c);
bool bf16_ok(const Ctx *c);
int view_copy_dtype(Ctx *c, int s, int32_t produced);

/* dtype lists */
typedef OpsDtList DtList;
DtList dl_fhb(const Ctx *c); /* {DT_FLOAT, DT_FLOAT16[, DT_BF16]} */

/* CANN's check macros (`shown` NULL: the slot's name) */
static inline int null_arg(Ctx *c, const void *h, const char *type, const char *arg, int code) {
  return ops_null(c->op, h, type, arg, code);
}
#define NULL_TENSOR(c, h, arg, code) null_arg((c), (h), "aclTensor", (arg), (code))
static inline int get(Ctx *c, const void *h, int slot) { return ops_get(c->op, &c->plan, h, slot); }
static inline int dt_list(Ctx *c, int s, const DtList *l, const char *prefix, const char *shown) {
  return ops_dt_support(c->op, &c->plan, s, l, prefix, shown);
}
#define DT_SUPPORT(c, s, l) dt_list((c), (s), (l), "Tensor ", NULL)
static inline int dt_match(Ctx *c, int s, int32_t expected, const char *shown) {
  return ops_dt_match(c->op, &c->plan, s, expected, shown);
}
static inline int dt_same(Ctx *c, int a, int b) { return ops_dt_same(c->op, &c->plan, a, NULL, b, NULL); }
static inline int max_dim(Ctx *c, int s, int n, const char *shown) { return ops_max_dim(c->op, &c->plan, s, n, shown); }
static inline int min_dim(Ctx *c, int s, int n, const char *shown) { return ops_min_dim(c->op, &c->plan, s, n, shown); }
static inline bool same_shape(const SimTensorDesc *a, const SimTensorDesc *b) { return ops_same_shape(a, b); }
static inline bool shape_is(const SimTensorDesc *a, const int64_t *dims, int nd) { return ops_shape_is(a, dims, nd); }
static inline int shape_same(Ctx *c, int a, int b, const char *na, const char *nb) {
  return ops_shape_same(c->op, &c->plan, a, na, b, nb);
}
/* OP_CHECK_SHAPE_NOT_EQUAL_WITH_EXPECTED_SIZE */
int shape_expect(Ctx *c, int s, const int64_t *dims, int nd, const char *shown);
static inline int wrong_dim(Ctx *c, int s, int n) { return ops_wrong_dim(c->op, &c->plan, s, n, NULL); }
bool private_format(int32_t f);
bool is_private(const Ctx *c, int s);
bool is_empty(const SimTensorDesc *d);
int numel_c(Ctx *c, int s, int64_t C, const char *why);
int lookup_mask(Ctx *c, const void *h, uint64_t *n);

/* planning: a computing executor, or one of CANN's early SUCCESS paths (ops_finish,
 * ops_finish_early after no_kernel) */
int finish(Ctx *c, int64_t rows, uint64_t *ws, void **exec);
static inline void fill_slot(Ctx *c, int s, double v) { ops_fill(&c->plan, s, v); }
int finish_early(Ctx *c, SimRunMode run, uint64_t *ws, void **exec);
int regbase_channels_last(Ctx *c, int s);

/* ---- the computations' helpers (sim_ops_seed_per_channel.c) ------------------------------ */
static inline double *zalloc(int64_t n) { return ops_zalloc(n); }
const int64_t *dims_of(const SimTensorDesc *d);
void channel_sums(const SimTensorDesc *xd, const double *x, const double *dy, const double *mean, double *sdy,
                  double *sdx);
double *per_channel_or(const SimPlan *p, int s, int64_t C, double dflt);
void store_if(const SimPlan *p, int s, const double *v);
int64_t channel_mean_var(const SimTensorDesc *xd, const double *x, double *mean, double *var);

/* ---- their computations, called by sim_op_run at synchronisation (sim_ops.c) ------------- */
int sim_run_bn_reduce_backward(const SimPlan *p);
int sim_run_bn_backward(const SimPlan *p); /* aclnnFastBatchNormBackward's too */
int sim_run_gn_backward(const SimPlan *p);
int sim_run_bn_stats(const SimPlan *p);
int sim_run_bn_gather_stats(const SimPlan *p);
int sim_run_bn_elemt_backward(const SimPlan *p);
int sim_run_bn(const SimPlan *p);
int sim_run_bn_elemt(const SimPlan *p);
int sim_run_gn(const SimPlan *p);

#endif
