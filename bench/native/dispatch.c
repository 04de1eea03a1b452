/*
 * The C baseline of issue 8's "dispatch at C speed": the sequence of CANN calls that one small
 * batchNormReduceBackward with preallocated outputs makes, timed from C against the software
 * CANN in build/sim, so that bench/dispatch.ts can report the library's cost as a ratio of it,
 * measured in the same run on the same machine.
 *
 *   full       per call: 9 x aclCreateTensor, phase 1, phase 2, 9 x aclDestroyTensor
 *              (what an application without any caching does);
 *   repeatable phase 1 once + aclSetAclOpExecutorRepeatable, then per call only phase 2
 *              (the best a C caller can do).
 *
 * Both synchronise the stream every 1024 launches, as the library does, so the simulator's
 * own kernel time is part of both sides. Prints one JSON line: {"fullUs":..,"repeatableUs":..}.
 * Built and run by bench/dispatch.ts; the prototypes are the public ones of tests/sim/sim_api.h.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sim_api.h"

#define SYNC_EVERY 1024
#define CHECK(call)                                                               \
  do {                                                                            \
    int rc_ = (call);                                                             \
    if (rc_ != 0) {                                                               \
      const char *m_ = aclGetRecentErrMsg();                                      \
      fprintf(stderr, "%s failed: %d %s\n", #call, rc_, m_ ? m_ : "");            \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* The call's tensors: gradOut, input [2, 4, 3]; mean, invstd, weight and 4 outputs [4]. */
static const int64_t DATA_DIMS[3] = {2, 4, 3}, DATA_STRIDES[3] = {12, 3, 1}, DATA_STORAGE[1] = {24};
static const int64_t C_DIMS[1] = {4}, C_STRIDES[1] = {1}, C_STORAGE[1] = {4};

static void *device_buffer(uint64_t bytes) {
  void *p = NULL;
  CHECK(aclrtMalloc(&p, bytes, 0));
  CHECK(aclrtMemset(p, bytes, 0, bytes));
  return p;
}

static void create_all(void *const *data, aclTensor **t) {
  for (int i = 0; i < 9; i++) {
    int big = i < 2;
    t[i] = aclCreateTensor(big ? DATA_DIMS : C_DIMS, big ? 3 : 1, 0, big ? DATA_STRIDES : C_STRIDES, 0,
                           big ? 47 : 2, big ? DATA_STORAGE : C_STORAGE, 1, data[i]);
    if (!t[i]) {
      fprintf(stderr, "aclCreateTensor failed\n");
      exit(1);
    }
  }
}

static aclOpExecutor *phase1(aclTensor *const *t, uint64_t *ws) {
  aclOpExecutor *e = NULL;
  CHECK(aclnnBatchNormReduceBackwardGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], true, true, true, t[5], t[6],
                                                     t[7], t[8], ws, &e));
  return e;
}

int main(int argc, char **argv) {
  long calls = argc > 1 ? atol(argv[1]) : 20000;
  (void)aclInit(NULL); /* 0, or 100002 when already initialised: both fine */
  CHECK(aclrtSetDevice(0));
  aclrtStream stream = NULL;
  CHECK(aclrtCreateStream(&stream));
  void *data[9];
  for (int i = 0; i < 9; i++) data[i] = device_buffer(i < 2 ? 24 * 4 : 4 * 4);
  void *workspace = device_buffer(1 << 16);
  aclTensor *t[9];

  /* The repeatable executor is made first: CANN refuses aclSetAclOpExecutorRepeatable (561000)
   * when phase 1 was served from its op cache, which the full rows below fill with this
   * signature (opbase op_executor.cpp SetRepeatable, op_cache.cpp GetFromCache). */
  aclTensor *r[9];
  create_all(data, r);
  uint64_t ws = 0;
  aclOpExecutor *e = phase1(r, &ws);
  CHECK(aclSetAclOpExecutorRepeatable(e));

  /* full: everything per call */
  double best_full = 1e30;
  for (int round = 0; round < 3; round++) {
    double start = now_us();
    for (long n = 0; n < calls; n++) {
      create_all(data, t);
      uint64_t ws = 0;
      aclOpExecutor *e = phase1(t, &ws);
      CHECK(aclnnBatchNormReduceBackward(ws ? workspace : NULL, ws, e, stream));
      for (int i = 0; i < 9; i++) CHECK(aclDestroyTensor(t[i]));
      if ((n + 1) % SYNC_EVERY == 0) CHECK(aclrtSynchronizeStream(stream));
    }
    CHECK(aclrtSynchronizeStream(stream));
    double us = (now_us() - start) / (double)calls;
    if (us < best_full) best_full = us;
  }

  /* repeatable: phase 2 only */
  double best_repeat = 1e30;
  for (int round = 0; round < 3; round++) {
    double start = now_us();
    for (long n = 0; n < calls; n++) {
      CHECK(aclnnBatchNormReduceBackward(ws ? workspace : NULL, ws, e, stream));
      if ((n + 1) % SYNC_EVERY == 0) CHECK(aclrtSynchronizeStream(stream));
    }
    CHECK(aclrtSynchronizeStream(stream));
    double us = (now_us() - start) / (double)calls;
    if (us < best_repeat) best_repeat = us;
  }
  CHECK(aclDestroyAclOpExecutor(e));
  for (int i = 0; i < 9; i++) CHECK(aclDestroyTensor(r[i]));
  printf("{\"fullUs\":%.3f,\"repeatableUs\":%.3f,\"calls\":%ld}\n", best_full, best_repeat, calls);
  return 0;
}
