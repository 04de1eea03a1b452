/*
 * Software HCCL ("aclsim") smoke test -- what its files share: the check counters and CHECK, the
 * error-text expectations, device buffers, forking ranks and each file's tests for main
 * (hccl_smoke.c).
 */
#ifndef ACLSIM_HCCL_SMOKE_H
#define ACLSIM_HCCL_SMOKE_H

#include <stdint.h>
#include <stdio.h>

#include "sim.h"
#include "sim_api.h"
#include "sim_hccl_api.h"

extern int g_checks, g_failures;
extern char g_tag[64]; /* names the process (or case) in a failure */

#define CHECK(cond, ...)                                                           \
  do {                                                                             \
    g_checks++;                                                                    \
    if (!(cond)) {                                                                 \
      g_failures++;                                                                \
      fprintf(stderr, "FAIL [%s] %s:%d: %s -- ", g_tag, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                \
      fprintf(stderr, "\n");                                                       \
    }                                                                              \
  } while (0)

/* ---- the harness (hccl_smoke.c) -------------------------------------------------------- */
/* A status and an error text containing `needle` (on a thread with a device: read once). */
void expect(int got, int want, const char *needle, const char *what);
double now_s(void);
int64_t hstat(int i);
/* The counters that must return to zero: live communicators, queued collectives. */
void expect_released(const char *what);
void *dev_alloc(size_t bytes);
void put(void *dev, const void *host, size_t bytes);
void get(void *host, const void *dev, size_t bytes);

/* A forked rank: its number, the communicator size, its stream, rank 0's root info, the case. */
typedef struct {
  int rank, nranks;
  aclrtStream stream;
  HcclRootInfo ri;
  void *ctx;
} Rank;

typedef void (*RankFn)(Rank *r);

/* Runs fn in `n` child processes (rank 0..n-1, device = rank, stream created, root info from
 * rank 0); returns a bit mask of the ranks that failed (nonzero exit or killed after timeout_s). */
unsigned run_ranks(const char *what, int n, RankFn fn, void *ctx, double timeout_s);
HcclComm init_comm(Rank *r);
void init_config(HcclCommConfig *c, int32_t execTimeOut);
void destroy_comm(HcclComm comm);
/* Runs fn in a forked child; one check: it exited with 0. */
void in_child(void (*fn)(void), const char *what);

/* ---- the tests, in main's order ---------------------------------------------------------- */
void rank_collectives(Rank *r); /* hccl_smoke_collectives.c */

/* An init error case of rank_init_case (hccl_smoke_failures.c). */
typedef struct {
  uint32_t claim[8];  /* the rank each process claims */
  uint32_t nranks[8]; /* the nRanks each process passes */
  int want[8];        /* the status each process must get */
  const char *needle; /* in every failing process's message */
} InitCase;
void rank_init_case(Rank *r);    /* hccl_smoke_failures.c */
void rank_alone(Rank *r);        /* hccl_smoke_failures.c */
void rank_dies(Rank *r);         /* hccl_smoke_failures.c */
void rank_mismatch(Rank *r);     /* hccl_smoke_failures.c */
void rank_exec_timeout(Rank *r); /* hccl_smoke_failures.c */
void child_no_device(void);       /* hccl_smoke_one_process.c */
void child_threads(void);         /* hccl_smoke_one_process.c */
void single_process_checks(void); /* hccl_smoke_one_process.c */

#endif
