/*
 * Software CANN ("aclsim") -- what the phase 1 of every operator shares, whichever family's
 * context it validates in (sim_ops_seed.h's Ctx for the nine seed operators, sim_ops_norm.h's
 * NormCtx for the others): the operator's name before every error text, CANN's check macros with
 * their message texts, recording tensor arguments, the [aclsim] memory rule, and planning.  Each
 * routine takes the operator's name (`op`, the aclnn API: the prefix of every error text) and its
 * plan; the two families' headers wrap them for their contexts.  Core-internal (hidden symbols of
 * libaclsim_core.so); sim_ops_common.c cites the sources of the texts.
 */
#ifndef ACLSIM_SIM_OPS_COMMON_H
#define ACLSIM_SIM_OPS_COMMON_H

#include "sim.h"

/* A dtype support list, in CANN's order (Ctx's DtList, NormCtx's NrmDtList). */
typedef struct {
  int n;
  int32_t v[4];
} OpsDtList;

/* The plan of operator `op` (aclnn API `api`) with n_in inputs then n_out outputs, named `names`
 * in slot order; every other field zero. */
void ops_plan_init(SimPlan *p, SimOpId op, const char *api, int n_in, int n_out, const char *const *names);
/* sim_fail with "<op>: " before the text; returns `code`. */
int ops_fail(const char *op, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* ASCEND_OPP_PATH unset or empty -> 561107, naming set_env.sh. */
int ops_opp_path(const char *op);
/* A NULL workspaceSize or executor out-param -> 161001 (OP_CHECK_COMM_INPUT's text). */
int ops_outparams(const char *op, const uint64_t *ws, void *const *exec);
/* OP_CHECK_NULL: NULL `h` -> `code`, "Expected a value of type [type] for argument [arg] but
 * instead found nullptr." */
int ops_null(const char *op, const void *h, const char *type, const char *arg, int code);
/* Records tensor argument `h` in slot `slot` (NULL: the slot stays absent); a pointer that is not
 * a live aclTensor -> 161002 [aclsim: real CANN would read freed memory]. */
int ops_get(const char *op, SimPlan *p, const void *h, int slot);

/* ---- shapes ---- */
/* "[" dims joined by `sep` "]": op::ToString(Shape) with ", ", Ops::Base::ToString with ",". */
void ops_dims_str(const int64_t *dims, int nd, const char *sep, char *buf, size_t n);
bool ops_shape_is(const SimTensorDesc *a, const int64_t *dims, int nd);
bool ops_same_shape(const SimTensorDesc *a, const SimTensorDesc *b);

/* ---- CANN's check macros on slots of p: an absent slot passes; `shown` is the name CANN
 * prints (NULL: the slot's name) ---- */
/* OP_CHECK_DTYPE_NOT_SUPPORT: "<prefix><shown> not implemented for <dtype>, should be in dtype
 * support list [DT_FLOAT,DT_FLOAT16,]." (prefix "Tensor ", or "" for the hand-written texts). */
int ops_dt_support(const char *op, const SimPlan *p, int s, const OpsDtList *l, const char *prefix,
                   const char *shown);
int ops_dt_match(const char *op, const SimPlan *p, int s, int32_t expected, const char *shown); /* _NOT_MATCH */
int ops_dt_same(const char *op, const SimPlan *p, int a, const char *sa, int b, const char *sb); /* _NOT_SAME */
int ops_max_dim(const char *op, const SimPlan *p, int s, int n, const char *shown);   /* OP_CHECK_MAX_DIM */
int ops_min_dim(const char *op, const SimPlan *p, int s, int n, const char *shown);   /* OP_CHECK_MIN_DIM */
int ops_wrong_dim(const char *op, const SimPlan *p, int s, int n, const char *shown); /* _WRONG_DIMENSION */
/* OP_CHECK_SHAPE_NOT_EQUAL on slots a and b (both present). */
int ops_shape_same(const char *op, const SimPlan *p, int a, const char *sa, int b, const char *sb);

/* ---- planning ---- */
/* A computing executor: every present slot's memory checked ([aclsim]: the view fits its
 * storage, the storage lies in one live device allocation, whose id is recorded for the check at
 * execution), a workspace of 512 + roundUp32(16 * rows) bytes. */
int ops_finish(const char *op, SimPlan *p, int64_t rows, uint64_t *ws, void **exec);
/* Marks present slot s to be filled with v by a SIM_RUN_FILL task. */
void ops_fill(SimPlan *p, int s, double v);
/* CANN's early SUCCESS paths: workspace 0, a task that writes nothing (SIM_RUN_NOTHING) or only
 * the filled slots (SIM_RUN_FILL), which alone must be device memory. */
int ops_finish_early(const char *op, SimPlan *p, SimRunMode run, uint64_t *ws, void **exec);
/* A zero-filled array of n doubles (at least one element) from the run's scratch (sim_scratch.h):
 * valid until the operator's run returns, never freed by its caller. */
double *ops_zalloc(int64_t n);

#endif
