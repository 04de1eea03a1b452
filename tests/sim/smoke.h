/*
 * Software CANN ("aclsim") smoke test -- what its files share: the check counters and CHECK
 * (smoke_check.h), the error-text expectations, device buffers, and each file's tests for main
 * (smoke.c).
 */
#ifndef ACLSIM_SMOKE_H
#define ACLSIM_SMOKE_H

#include <stdio.h>

#include "sim.h"
#include "sim_api.h"
#include "smoke_check.h"

/* ---- the harness (smoke.c) ------------------------------------------------------------- */
void expect_error(int got, int want, const char *needle, const char *what);
void expect_error_nodev(int got, int want, const char *needle, const char *what);
bool near(double a, double b, double tol);

typedef struct {
  aclTensor *t;
  void *dev;
  int64_t n;
} Buf;

/* A contiguous tensor in fresh device memory; data (float values) converted to dtype. */
Buf make(const float *data, const int64_t *shape, int nd, aclDataType dt);
void drop(Buf *b);
void read_f32(const Buf *b, float *out);
void *ws_alloc(uint64_t size);
void stats(int64_t *s);

/* ---- helpers other files use ------------------------------------------------------------ */
void set_soc(const char *name);                   /* smoke_socs.c: NULL = the default SoC */
int64_t stat_at(int i);                           /* smoke_runtime.c: one aclsimGetStats counter */
void in_child(void (*fn)(void), const char *what); /* smoke_runtime.c: fn in a forked child */
void child_init_finalize(void);
void child_device_refs(void);

/* ---- the tests, in main's order --------------------------------------------------------- */
void test_rounding(void);                           /* smoke_seed_ops.c */
void test_reduce_backward_seed(aclrtStream stream); /* smoke_seed_ops.c */
void test_group_norm(aclrtStream stream);           /* smoke_seed_ops.c */
void test_batch_norm_family(aclrtStream stream);    /* smoke_seed_ops.c */
void test_dtypes_and_misc(aclrtStream stream);      /* smoke_dtypes.c */
void test_soc_fidelity(aclrtStream stream);         /* smoke_socs.c */
void test_runtime_errors(void);                     /* smoke_runtime.c */
void test_error_queue(void);                        /* smoke_runtime.c */
void test_malloc_padding(void);                     /* smoke_runtime.c */
void test_registry(void);                           /* smoke_runtime.c */
void test_executor_api(aclrtStream stream);         /* smoke_executors.c */
void test_fault_injection(aclrtStream stream);      /* smoke_faults.c */

#endif
