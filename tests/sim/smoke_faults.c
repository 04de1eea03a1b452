/*
 * Software CANN ("aclsim") smoke test: fault injection (sim_fault.c; README_test_hooks.md
 * "Fault injection").
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

/* ---- fault injection (sim_fault.c; README_test_hooks.md "Fault injection") ------------------- */
static int64_t stat_now(int i) {
  int64_t s[15];
  stats(s);
  return s[i];
}

/* BatchNormStats of x = {0..7} as [4, 2] on `stream`: phase 1, workspace, phase 2 (returned). */
typedef struct {
  Buf x, mean, invstd;
  void *ws;
  uint64_t wsSize;
} StatsCall;

static StatsCall stats_call_make(void) {
  const float x[] = {0, 1, 2, 3, 4, 5, 6, 7}, ones[] = {-1, -1};
  const int64_t s42[] = {4, 2}, s2[] = {2};
  StatsCall c = {make(x, s42, 2, 0), make(ones, s2, 1, 0), make(ones, s2, 1, 0), NULL, 0};
  return c;
}

static int stats_call_run(StatsCall *c, aclrtStream stream) {
  aclOpExecutor *ex = NULL;
  uint64_t ws = 0;
  int rc = aclnnBatchNormStatsGetWorkspaceSize(c->x.t, 1e-5, c->mean.t, c->invstd.t, &ws, &ex);
  CHECK(rc == 0, "BatchNormStats phase 1: %d", rc);
  if (rc) return rc;
  if (ws > c->wsSize) {
    if (c->ws) CHECK(aclrtFree(c->ws) == 0, "free the smaller workspace");
    c->ws = ws_alloc(ws);
    c->wsSize = ws;
  }
  return aclnnBatchNormStats(c->ws, ws, ex, stream);
}

static void stats_call_drop(StatsCall *c) {
  if (c->ws) CHECK(aclrtFree(c->ws) == 0, "free ws");
  drop(&c->x), drop(&c->mean), drop(&c->invstd);
}

void test_fault_injection(aclrtStream stream) {
  int64_t fired0 = stat_now(14);
  void *p = NULL, *q = NULL;

  /* the hook's arguments */
  expect_error(aclsimInjectFault(8, 1, 1, 0), 100000, "unknown fault kind", "unknown kind");
  expect_error(aclsimInjectFault(-1, 1, 1, 0), 100000, "unknown fault kind", "negative kind");
  expect_error(aclsimInjectFault(1, -1, 1, 0), 100000, "nth is negative", "negative nth");
  expect_error(aclsimInjectFault(1, 1, 0, 0), 100000, "times must be", "times 0");
  expect_error(aclsimInjectFault(1, 1, -2, 0), 100000, "times must be", "times -2");
  expect_error(aclsimInjectFault(2, 1, 1, -5), 100000, "negative", "negative code");
  expect_error(aclsimInjectFault(2, 1, 1, 1LL << 40), 100000, "does not fit", "code out of range");
  CHECK(aclsimInjectFault(0, 0, 0, 0) == 0 && aclsimInjectFault(3, 0, 0, 0) == 0, "disarming is always fine");

  /* aclrtMalloc: the 2nd call from now fails once with the driver's out-of-memory */
  int64_t allocs = stat_now(0), bytes = stat_now(1);
  CHECK(aclsimInjectFault(1, 2, 1, 0) == 0, "arm malloc:2");
  CHECK(aclrtMalloc(&p, 64, 0) == 0, "the 1st malloc from now succeeds");
  expect_error(aclrtMalloc(&q, 64, 0), 207001, "Failed to allocate memory requested by APP module", "injected OOM");
  CHECK(q == NULL, "nothing returned");
  CHECK(stat_now(0) == allocs + 1, "the failed call allocated nothing");
  CHECK(aclrtMalloc(&q, 64, 0) == 0, "the next malloc succeeds (times 1)");
  CHECK(aclrtFree(p) == 0 && aclrtFree(q) == 0, "free both");
  CHECK(stat_now(0) == allocs && stat_now(1) == bytes, "live counters back");
  CHECK(stat_now(14) == fired0 + 1, "one fault injected");
  /* parameter errors come first and do not count */
  CHECK(aclsimInjectFault(1, 1, 2, 507899) == 0, "arm malloc:1:2:507899");
  expect_error(aclrtMalloc(&p, 0, 0), 100000, "size is 0", "size 0 is still a parameter error");
  expect_error(aclrtMalloc(&p, 64, 0), 507899, "APP module", "custom code (1/2)");
  expect_error(aclrtMalloc(&p, 64, 0), 507899, "APP module", "custom code (2/2)");
  CHECK(aclrtMalloc(&p, 64, 0) == 0 && aclrtFree(p) == 0, "times 2: the third succeeds");
  CHECK(aclsimInjectFault(1, 1, -1, 0) == 0, "arm malloc for every call");
  for (int i = 0; i < 3; i++) expect_error(aclrtMalloc(&p, 64, 0), 207001, "APP module", "times -1");
  CHECK(aclsimInjectFault(1, 0, 0, 0) == 0, "disarm malloc");
  CHECK(aclrtMalloc(&p, 64, 0) == 0, "disarmed");

  /* aclrtMemcpy: the driver's copy fails, nothing is copied; count 0 and bad arguments do not count */
  char host[64], back[64];
  memset(host, 0x11, sizeof host);
  CHECK(aclrtMemcpy(p, 64, host, 64, 1) == 0, "H2D");
  memset(host, 0x22, sizeof host);
  CHECK(aclsimInjectFault(2, 1, 1, 0) == 0, "arm memcpy");
  CHECK(aclrtMemcpy(p, 64, host, 0, 1) == 0, "count 0 is not a copy");
  expect_error(aclrtMemcpy(p, 8, host, 64, 1), 107000, "exceeds destMax", "count > destMax is checked first");
  expect_error(aclrtMemcpy(p, 64, host, 64, 1), 507899, "drvMemcpy failed", "injected memcpy failure");
  CHECK(aclrtMemcpy(back, 64, p, 64, 2) == 0 && back[0] == 0x11 && back[63] == 0x11,
        "the failed copy wrote nothing; the next copy works");
  CHECK(aclrtFree(p) == 0, "free");

  /* aclrtCreateStream: no stream resource */
  int64_t streams = stat_now(8);
  aclrtStream s2 = NULL;
  CHECK(aclsimInjectFault(5, 1, 1, 0) == 0, "arm create_stream");
  expect_error(aclrtCreateStream(&s2), 207008, "no stream resource", "injected stream creation failure");
  CHECK(s2 == NULL && stat_now(8) == streams, "no stream was created");
  CHECK(aclrtCreateStream(&s2) == 0 && aclrtDestroyStream(s2) == 0, "the next one is created");

  StatsCall c = stats_call_make();
  float f[2];
  int64_t failed = stat_now(12), execs = stat_now(7);

  /* a kernel failure at synchronisation: AI Core exception; the output keeps its old contents */
  CHECK(aclsimInjectFault(3, 1, 1, 0) == 0, "arm kernel");
  CHECK(stats_call_run(&c, stream) == 0, "the launch itself succeeds");
  CHECK(stat_now(9) == 1, "queued");
  expect_error(aclrtSynchronizeStream(stream), 507015, "aicore exception", "AI Core exception at synchronize");
  CHECK(stat_now(12) == failed + 1 && stat_now(9) == 0, "the task failed");
  read_f32(&c.mean, f);
  CHECK(f[0] == -1 && f[1] == -1, "nothing written: %g %g", f[0], f[1]);
  CHECK(stats_call_run(&c, stream) == 0 && aclrtSynchronizeStream(stream) == 0, "the stream works afterwards");
  read_f32(&c.mean, f);
  CHECK(f[0] == 3 && f[1] == 4, "mean = %g %g", f[0], f[1]);
  CHECK(aclsimInjectFault(3, 2, 1, 507035) == 0, "arm kernel:2 with a vector core exception");
  CHECK(stats_call_run(&c, stream) == 0 && stats_call_run(&c, stream) == 0 && stats_call_run(&c, stream) == 0,
        "three launches");
  expect_error(aclrtSynchronizeStream(stream), 507035, "Kernel task happen error", "the second one fails");
  CHECK(stat_now(12) == failed + 3, "the failed task and the one after it (discarded)");

  /* phase 1 asks for a workspace no aclrtMalloc can give */
  size_t freeB = 0, total = 0;
  CHECK(aclrtGetMemInfo(0, &freeB, &total) == 0, "mem info");
  aclOpExecutor *ex = NULL;
  uint64_t ws = 0;
  CHECK(aclsimInjectFault(4, 1, 1, 0) == 0, "arm workspace");
  CHECK(aclnnBatchNormStatsGetWorkspaceSize(c.x.t, 1e-5, c.mean.t, c.invstd.t, &ws, &ex) == 0, "phase 1 succeeds");
  CHECK(ws == total + 1, "workspace = device memory + 1 (%llu)", (unsigned long long)ws);
  expect_error(aclrtMalloc(&p, ws, 0), 207001, "out of device memory", "the caller's aclrtMalloc fails");
  CHECK(aclDestroyAclOpExecutor(ex) == 0 && stat_now(7) == execs, "the caller destroys the executor");
  CHECK(aclsimInjectFault(4, 1, 1, 12345) == 0, "arm workspace with a size");
  CHECK(aclnnBatchNormStatsGetWorkspaceSize(c.x.t, 1e-5, c.mean.t, c.invstd.t, &ws, &ex) == 0 && ws == 12345,
        "workspace = the armed size (%llu)", (unsigned long long)ws);
  CHECK(aclDestroyAclOpExecutor(ex) == 0, "destroy");
  CHECK(aclnnBatchNormStatsGetWorkspaceSize(c.x.t, 1e-5, c.mean.t, c.invstd.t, &ws, &ex) == 0 && ws < 4096,
        "the next phase 1 is normal (%llu)", (unsigned long long)ws);
  CHECK(aclDestroyAclOpExecutor(ex) == 0, "destroy");

  /* a stream that refuses a task: the launch fails with 361001, naming the runtime's 107023 */
  CHECK(stats_call_run(&c, stream) == 0, "one task queued before the failure");
  CHECK(aclsimInjectFault(6, 1, 1, 0) == 0, "arm stream");
  expect_error(stats_call_run(&c, stream), 361001, "aclrtLaunchKernelWithHostArgs failed: 107023",
               "launch on a stream in abort state");
  CHECK(stat_now(7) == execs, "the executor was consumed by its phase 2");
  CHECK(stat_now(9) == 1, "the task queued before is kept");
  CHECK(aclrtSynchronizeStream(stream) == 0, "and runs");
  char h8[8] = {0};
  CHECK(aclsimInjectFault(6, 1, 1, 0) == 0, "arm stream again");
  expect_error(aclrtMemcpyAsync(c.mean.dev, 8, h8, 8, 1, stream), 107023, "abort state", "aclrtMemcpyAsync refused");
  CHECK(stat_now(9) == 0, "nothing queued");
  CHECK(stats_call_run(&c, stream) == 0 && aclrtSynchronizeStream(stream) == 0, "the stream works afterwards");

  /* ACLSIM_FAULT: read at every call; a new value arms afresh, the same value does not re-arm */
  setenv("ACLSIM_FAULT", "malloc:2", 1);
  CHECK(aclrtMalloc(&p, 64, 0) == 0, "env malloc:2 -- 1st");
  expect_error(aclrtMalloc(&q, 64, 0), 207001, "APP module", "env malloc:2 -- 2nd");
  CHECK(aclrtMalloc(&q, 64, 0) == 0, "env malloc:2 -- 3rd");
  CHECK(aclrtFree(p) == 0 && aclrtFree(q) == 0, "free");
  CHECK(aclrtMalloc(&p, 64, 0) == 0 && aclrtMalloc(&q, 64, 0) == 0, "the same value does not fire again");
  CHECK(aclrtFree(p) == 0 && aclrtFree(q) == 0, "free");
  setenv("ACLSIM_FAULT", " memcpy:1:1:0x7b, kernel ", 1);
  expect_error(aclrtMemcpy(h8, 8, c.mean.dev, 8, 2), 123, "drvMemcpy", "env memcpy with code 0x7b");
  CHECK(stats_call_run(&c, stream) == 0, "launch");
  expect_error(aclrtSynchronizeStream(stream), 507015, "aicore exception", "env kernel");
  setenv("ACLSIM_FAULT", "malloc:x", 1);
  fprintf(stderr, "(the next line is expected)\n");
  CHECK(aclrtMalloc(&p, 64, 0) == 0 && aclrtFree(p) == 0, "a malformed value is ignored");
  unsetenv("ACLSIM_FAULT");
  CHECK(aclrtMalloc(&p, 64, 0) == 0 && aclrtFree(p) == 0, "unset");

  stats_call_drop(&c);
  CHECK(aclsimInjectFault(0, 0, 0, 0) == 0, "disarm everything");
  CHECK(stat_now(14) == fired0 + 17, "faults injected: %lld", (long long)(stat_now(14) - fired0));
}
