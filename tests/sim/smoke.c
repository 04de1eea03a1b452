/*
 * Software CANN ("aclsim") smoke test.  Built by scripts/build_sim.ts into build/sim/smoke and
 * linked like a CANN application (libacl_rt, libnnopbase, libopapi_nn, libopapi_math) plus
 * libaclsim_core for the fp16/bf16 rounding checks.  Exit status 0 = every check passed.
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

int g_checks, g_failures;

/* Checks a status and that aclGetRecentErrMsg() holds a text containing `needle` (on a thread
 * with a device set: a second read returns NULL). */
void expect_error(int got, int want, const char *needle, const char *what) {
  const char *msg = aclGetRecentErrMsg();
  CHECK(got == want, "%s: status %d, want %d (msg: %s)", what, got, want, msg ? msg : "(none)");
  CHECK(msg != NULL, "%s: no error text", what);
  if (msg && needle) CHECK(strstr(msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, msg, needle);
  CHECK(aclGetRecentErrMsg() == NULL, "%s: error text not cleared after reading", what);
}

/* The same on a thread with NO device set: the text is kept in the thread-local copy that only
 * the device-message callback clears, so a second read returns the same text again (runtime
 * acl.cpp aclGetRecentErrMsgImpl). */
void expect_error_nodev(int got, int want, const char *needle, const char *what) {
  const char *msg = aclGetRecentErrMsg();
  CHECK(got == want, "%s: status %d, want %d (msg: %s)", what, got, want, msg ? msg : "(none)");
  CHECK(msg != NULL, "%s: no error text", what);
  if (!msg) return;
  if (needle) CHECK(strstr(msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, msg, needle);
  char *copy = strdup(msg);
  const char *again = aclGetRecentErrMsg();
  CHECK(again != NULL && strcmp(again, copy) == 0, "%s: no device: a second read returns the text again ('%s')", what,
        again ? again : "(NULL)");
  free(copy);
}

bool near(double a, double b, double tol) { return fabs(a - b) <= tol * (1.0 + fabs(b)); }

/* A contiguous tensor in fresh device memory; data (float values) converted to dtype. */
Buf make(const float *data, const int64_t *shape, int nd, aclDataType dt) {
  Buf b = {0};
  int64_t strides[8], n = 1;
  for (int i = nd - 1; i >= 0; i--) {
    strides[i] = n;
    n *= shape[i];
  }
  b.n = n;
  size_t es = dt == 0 || dt == 3 ? 4 : 2;
  size_t bytes = (size_t)(n > 0 ? n : 1) * es;
  int rc = aclrtMalloc(&b.dev, bytes, 0);
  CHECK(rc == 0, "aclrtMalloc %d", rc);
  if (data && n > 0) {
    unsigned char *host = malloc(bytes);
    for (int64_t i = 0; i < n; i++) {
      if (dt == 0) memcpy(host + 4 * i, &data[i], 4);
      else if (dt == 3) { int32_t v = (int32_t)data[i]; memcpy(host + 4 * i, &v, 4); }
      else { uint16_t h = dt == 1 ? sim_to_fp16(data[i]) : sim_to_bf16(data[i]); memcpy(host + 2 * i, &h, 2); }
    }
    rc = aclrtMemcpy(b.dev, bytes, host, bytes, 1);
    CHECK(rc == 0, "aclrtMemcpy H2D %d", rc);
    free(host);
  }
  int64_t storage = n;
  b.t = aclCreateTensor(shape, (uint64_t)nd, dt, strides, 0, 2, &storage, 1, b.dev);
  CHECK(b.t != NULL, "aclCreateTensor");
  return b;
}

void drop(Buf *b) {
  if (b->t) CHECK(aclDestroyTensor(b->t) == 0, "aclDestroyTensor");
  if (b->dev) CHECK(aclrtFree(b->dev) == 0, "aclrtFree");
  b->t = NULL;
  b->dev = NULL;
}

void read_f32(const Buf *b, float *out) {
  int rc = aclrtMemcpy(out, (size_t)b->n * 4, b->dev, (size_t)b->n * 4, 2);
  CHECK(rc == 0, "aclrtMemcpy D2H %d", rc);
}

void *ws_alloc(uint64_t size) {
  void *p = NULL;
  if (size) CHECK(aclrtMalloc(&p, size, 0) == 0, "workspace malloc");
  return p;
}

void stats(int64_t *s) { CHECK(aclsimGetStats(s, 15) == 15, "aclsimGetStats count"); }


int main(void) {
  unsetenv("ASCEND_OPP_PATH");
  unsetenv("ACLSIM_SOC_NAME"); /* the default SoC, Ascend950PR_9599 */
  CHECK(aclGetRecentErrMsg() == NULL, "no error text at start");
  in_child(child_init_finalize, "aclInit / aclFinalize in a fresh process");
  CHECK(aclInit(NULL) == 0, "aclInit");
  CHECK(aclInit(NULL) == 100002, "second aclInit");
  CHECK(aclGetRecentErrMsg() == NULL, "100002 queues no message (runtime logs it at INFO only)");
  void *p = NULL;
  expect_error_nodev(aclrtMalloc(&p, 64, 0), 107002, "no device", "malloc before aclrtSetDevice");
  CHECK(aclrtSetDevice(0) == 0, "aclrtSetDevice");
  aclrtStream stream = NULL;
  CHECK(aclrtCreateStream(&stream) == 0, "aclrtCreateStream");
  int64_t dims[] = {2, 2}, strides[] = {2, 1}, st = 4;
  aclTensor *t = aclCreateTensor(dims, 2, 0, strides, 0, 2, &st, 1, NULL);
  uint64_t ws;
  aclOpExecutor *ex;
  expect_error(aclnnBatchNormStatsGetWorkspaceSize(t, 1e-5, t, t, &ws, &ex), 561107, "ASCEND_OPP_PATH", "no OPP path");
  CHECK(aclDestroyTensor(t) == 0, "destroy t");
  expect_error(aclDestroyTensor(t), 161002, "already destroyed", "double destroy of a tensor");
  setenv("ASCEND_OPP_PATH", "/simulated/opp", 1);

  test_rounding();
  test_reduce_backward_seed(stream);
  test_group_norm(stream);
  test_batch_norm_family(stream);
  test_dtypes_and_misc(stream);
  test_soc_fidelity(stream);
  test_runtime_errors();
  test_error_queue();
  test_malloc_padding();
  test_registry();
  test_executor_api(stream);
  test_fault_injection(stream);
  in_child(child_device_refs, "aclrtSetDevice / aclrtResetDevice reference counts");

  CHECK(aclrtDestroyStream(stream) == 0, "aclrtDestroyStream");
  int64_t s[15];
  stats(s);
  static const char *const names[] = {"device allocations", "device bytes", "host allocations", "tensors", "bool arrays",
                                      "int arrays", "scalars", "executors", "streams", "pending tasks", "contexts"};
  for (int i = 0; i < 11; i++) CHECK(s[i] == 0, "live %s = %lld at exit", names[i], (long long)s[i]);
  CHECK(s[11] > 0, "tasks executed (%lld)", (long long)s[11]);
  CHECK(s[13] == 1, "one device reference left (%lld)", (long long)s[13]);
  CHECK(aclrtResetDevice(0) == 0, "aclrtResetDevice");
  CHECK(stat_at(13) == 0, "no device reference left");
  int32_t dev = -1;
  expect_error_nodev(aclrtGetDevice(&dev), 107002, "no device", "the last reset unbound the thread");
  expect_error_nodev(aclrtResetDevice(0), 507007, "has already been reset", "one reset too many");
  CHECK(aclFinalize() == 0, "aclFinalize");
  printf("aclsim smoke: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures ? 1 : 0;
}
