/*
 * Software CANN ("aclsim") -- what the nine seed operators (aclnnBatchNorm, ...Backward,
 * ...Stats, ...GatherStatsWithCounts, ...Elemt, ...ElemtBackward, ...ReduceBackward,
 * aclnnGroupNorm, ...Backward; each in its sim_ops_<operator>.c) share, internal to the core:
 * the validation context and CANN's check macros (sim_ops_seed_checks.c, which explains the
 * conventions and cites the macros' sources), the computations' per-channel helpers
 * (sim_ops_seed_per_channel.c), and their runs for sim_op_run (sim_ops.c).
 */
#ifndef ACLSIM_SIM_OPS_SEED_H
#define ACLSIM_SIM_OPS_SEED_H

#include "sim.h"

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

void ctx_init(Ctx *c, SimOpId op, const char *name, int n_in, int n_out, const char *const *names);
/* sim_fail with "<operator>: " before the text. */
int fail(Ctx *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void shape_str(const SimTensorDesc *d, char *buf, size_t n); /* op::ToString(Shape) */
const char *fmt_str(int32_t f);
int opp_path(const char *op);
int outparams(Ctx *c, const uint64_t *ws, void *const *exec);

/* the SoC */
int soc_check(Ctx *c);
int op_supported(Ctx *c);
int no_kernel(Ctx *c);
bool bf16_ok(const Ctx *c);
int view_copy_dtype(Ctx *c, int s, int32_t produced);

/* dtype lists */
typedef struct {
  int n;
  int32_t v[3];
} DtList;
DtList dl_fhb(const Ctx *c); /* {DT_FLOAT, DT_FLOAT16[, DT_BF16]} */

/* CANN's check macros */
int null_arg(Ctx *c, const void *h, const char *type, const char *arg, int code);
#define NULL_TENSOR(c, h, arg, code) null_arg((c), (h), "aclTensor", (arg), (code))
int get(Ctx *c, const void *h, int slot);
int dt_list(Ctx *c, int s, const DtList *l, const char *prefix, const char *shown);
#define DT_SUPPORT(c, s, l) dt_list((c), (s), (l), "Tensor ", NULL)
int dt_match(Ctx *c, int s, int32_t expected, const char *shown);
int dt_same(Ctx *c, int a, int b);
int max_dim(Ctx *c, int s, int n, const char *shown);
int min_dim(Ctx *c, int s, int n, const char *shown);
bool same_shape(const SimTensorDesc *a, const SimTensorDesc *b);
bool shape_is(const SimTensorDesc *a, const int64_t *dims, int nd);
int shape_same(Ctx *c, int a, int b, const char *na, const char *nb);
int shape_expect(Ctx *c, int s, const int64_t *dims, int nd, const char *shown);
int wrong_dim(Ctx *c, int s, int n);
bool private_format(int32_t f);
bool is_private(const Ctx *c, int s);
bool is_empty(const SimTensorDesc *d);
int numel_c(Ctx *c, int s, int64_t C, const char *why);
int mem_ok(Ctx *c, int s);
int lookup_mask(Ctx *c, const void *h, uint64_t *n);

/* planning: a computing executor, or one of CANN's early SUCCESS paths */
int finish(Ctx *c, int64_t rows, uint64_t *ws, void **exec);
void fill_slot(Ctx *c, int s, double v);
int finish_early(Ctx *c, SimRunMode run, uint64_t *ws, void **exec);
int regbase_channels_last(Ctx *c, int s);

/* ---- the computations' helpers (sim_ops_seed_per_channel.c) ------------------------------ */
double *zalloc(int64_t n); /* zero-filled array of n doubles (at least one element) */
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
