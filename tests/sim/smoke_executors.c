/*
 * Software CANN ("aclsim") smoke test: the repeatable-executor API (opbase acl_op_api.cpp,
 * op_executor.cpp).
 * Part of build/sim/smoke (smoke.c has the harness and main); exit status 0 = every check passed.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "smoke.h"

/* ---- the repeatable-executor API (opbase acl_op_api.cpp, op_executor.cpp) --------------------- */
void test_executor_api(aclrtStream stream) {
  /* a [2, 3] input (C = 3): a signature no other test runs */
  const float dy[] = {1, 2, 3, 4, 5, 6}, x[] = {1, 1, 1, 3, 3, 3}, x2[] = {0, 0, 0, 4, 4, 4}, zeros[] = {0, 0, 0},
              ones[] = {1, 1, 1};
  const int64_t s23[] = {2, 3}, s3[] = {3};
  Buf gd = make(dy, s23, 2, 0), in = make(x, s23, 2, 0), in2 = make(x2, s23, 2, 0), mean = make(zeros, s3, 1, 0),
      inv = make(ones, s3, 1, 0), sdy = make(NULL, s3, 1, 0), sdx = make(NULL, s3, 1, 0);
  uint64_t wsSize = 0;
  aclOpExecutor *ex = NULL, *ex2 = NULL;
  int64_t s[15];
#define PHASE1(input, exec)                                                                                           \
  aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, (input), mean.t, inv.t, NULL, true, false, false, sdy.t, sdx.t, \
                                               NULL, NULL, &wsSize, (exec))

  /* NULL handles */
  expect_error(aclSetAclOpExecutorRepeatable(NULL), 561103, "executor cannot be a NULL pointer", "SetRepeatable(NULL)");
  expect_error(aclDestroyAclOpExecutor(NULL), 561103, "executor cannot be a NULL pointer", "Destroy(NULL)");
  expect_error(aclSetRawTensorAddr(NULL, in.dev), 161001, "tensor cannot be a NULL pointer", "SetRawTensorAddr(NULL)");
  expect_error(aclnnBatchNormReduceBackward(NULL, 0, NULL, stream), 161001, "executor is nullptr", "phase 2 NULL");
  expect_error(aclDestroyAclOpExecutor((aclOpExecutor *)(uintptr_t)0x1230), 561000, "never created", "unknown pointer");
  /* the address setters: the tensor first (index ignored), then the executor */
  void *raw = NULL;
  expect_error(aclSetOutputTensorAddr(NULL, 7, sdx.t, sdy.dev), 561103, "executor cannot be a NULL pointer",
               "NULL executor");
  CHECK(aclGetRawTensorAddr(sdx.t, &raw) == 0 && raw == sdy.dev, "the address was set before the executor check");
  CHECK(aclSetRawTensorAddr(sdx.t, sdx.dev) == 0, "restore sdx");
  expect_error(aclSetTensorAddr(NULL, 0, NULL, sdy.dev), 561103, "tensor cannot be a NULL pointer", "NULL tensor");

  /* ACLSIM_UNREPEATABLE_OPS: 561000, a warning only (no error text) */
  static const char *const lists[] = {"aclnnBatchNormStats, aclnnBatchNormReduceBackward", "*"};
  for (int i = 0; i < 2; i++) {
    setenv("ACLSIM_UNREPEATABLE_OPS", lists[i], 1);
    CHECK(PHASE1(in.t, &ex) == 0 && aclSetAclOpExecutorRepeatable(ex) == 561000, "unrepeatable (%s)", lists[i]);
    CHECK(aclGetRecentErrMsg() == NULL, "no error text (%s)", lists[i]);
    CHECK(aclDestroyAclOpExecutor(ex) == 0, "destroy the never-run executor");
  }
  setenv("ACLSIM_UNREPEATABLE_OPS", "aclnnBatchNorm,aclnnBatchNormReduceBackwardX", 1);
  CHECK(PHASE1(in.t, &ex) == 0 && aclSetAclOpExecutorRepeatable(ex) == 0, "other names listed: repeatable");
  unsetenv("ACLSIM_UNREPEATABLE_OPS");
  void *ws = ws_alloc(wsSize);

  /* a repeatable executor: any index, the current address read at every run */
  CHECK(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "run 1");
  expect_error(aclSetAclOpExecutorRepeatable(ex), 561000, "has already run", "SetRepeatable after a run");
  CHECK(aclSetTensorAddr(ex, 12345, in.t, in2.dev) == 0, "aclSetTensorAddr ignores the index");
  CHECK(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "run 2");
  float f[3];
  read_f32(&sdx, f);
  CHECK(f[0] != f[0], "nothing ran before synchronising (fresh memory is NaN)");
  CHECK(aclrtSynchronizeStream(stream) == 0, "sync");
  read_f32(&sdx, f);
  /* sumDyXmu = sum dy * (x - 0): run 2 reads x2 = {0, 0, 0, 4, 4, 4} */
  CHECK(f[0] == 16 && f[1] == 20 && f[2] == 24, "run 2 read the new address: %g %g %g", f[0], f[1], f[2]);
  stats(s);
  CHECK(s[7] == 1, "the repeatable executor survives its runs (%lld)", (long long)s[7]);
  /* memory freed before a relaunch: 161002 at the launch, the executor survives */
  CHECK(aclrtFree(in2.dev) == 0, "free in2");
  expect_error(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream), 161002, "already freed", "relaunch on freed memory");
  /* memory freed (and allocated again) after the launch: the allocation id catches it at sync */
  CHECK(aclrtMalloc(&in2.dev, 24, 0) == 0 && aclSetInputTensorAddr(ex, 0, in.t, in2.dev) == 0, "new in2");
  CHECK(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "launch on the new in2");
  void *old = in2.dev;
  CHECK(aclrtFree(in2.dev) == 0 && aclrtMalloc(&in2.dev, 24, 0) == 0, "free + malloc after the launch (%s address)",
        in2.dev == old ? "same" : "other");
  expect_error(aclrtSynchronizeStream(stream), 507000, "'input'", "the launched allocation is gone at sync");
  CHECK(aclSetRawTensorAddr(in.t, in.dev) == 0, "restore in");

  /* an executor that outlives its aclTensor: 561103 at relaunch, the executor survives */
  int64_t st6 = 6, str[] = {3, 1};
  aclTensor *alias = aclCreateTensor(s23, 2, 0, str, 0, 2, &st6, 1, in.dev);
  CHECK(PHASE1(alias, &ex2) == 0 && aclSetAclOpExecutorRepeatable(ex2) == 0, "repeatable executor on an alias");
  CHECK(aclDestroyTensor(alias) == 0, "destroy the alias");
  expect_error(aclnnBatchNormReduceBackward(ws, wsSize, ex2, stream), 561103, "outlived its tensor",
               "relaunch after aclDestroyTensor");
  CHECK(aclDestroyAclOpExecutor(ex2) == 0, "the executor is still destroyable");

  /* workspaceSize > 0 with a NULL workspace: 161001, and even a repeatable executor is deleted */
  stats(s);
  int64_t live = s[7];
  expect_error(aclnnBatchNormReduceBackward(NULL, wsSize, ex, stream), 161001, "workspace is nullptr", "NULL workspace");
  CHECK(stat_at(7) == live - 1, "the repeatable executor was deleted");
  expect_error(aclDestroyAclOpExecutor(ex), 561000, "NULL workspace", "destroy after that deletion");

  /* non-repeatable: consumed by its run; afterwards the signature is in CANN's executor cache */
  CHECK(PHASE1(in.t, &ex) == 0 && aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "non-repeatable run");
  expect_error(aclSetAclOpExecutorRepeatable(ex), 561000, "has already run", "SetRepeatable on a consumed executor");
  expect_error(aclDestroyAclOpExecutor(ex), 561000, "has already run", "destroy of a consumed executor");
  CHECK(PHASE1(in.t, &ex) == 0 && aclSetAclOpExecutorRepeatable(ex) == 561000, "phase 1 answered from the cache");
  CHECK(aclGetRecentErrMsg() == NULL, "cache hit: no error text");
  CHECK(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0 && stat_at(7) == 0, "it runs once, consumed");
  CHECK(aclSetRawTensorAddr(in2.t, in2.dev) == 0, "in2's new memory");
  CHECK(PHASE1(in2.t, &ex) == 0 && aclSetAclOpExecutorRepeatable(ex) == 561000,
        "another aclTensor with the same geometry: a cache hit too");
  CHECK(aclDestroyAclOpExecutor(ex) == 0, "destroy it unrun");
  CHECK(aclrtSynchronizeStream(stream) == 0, "sync");
  read_f32(&sdx, f);
  CHECK(f[0] == 13 && f[1] == 17 && f[2] == 21, "sumDyXmu over x = {1, 1, 1, 3, 3, 3}: %g %g %g", f[0], f[1], f[2]);
#undef PHASE1
  if (ws) CHECK(aclrtFree(ws) == 0, "free ws");
  drop(&gd), drop(&in), drop(&in2), drop(&mean), drop(&inv), drop(&sdy), drop(&sdx);
}
