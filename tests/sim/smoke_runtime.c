/*
 * Software CANN ("aclsim") smoke test: the runtime: its errors, aclGetRecentErrMsg's per-thread queue,
 * process-wide state in forked children (aclInit counts, device references), aclrtMalloc's
 * padding, and the device-address registry's lookups.
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

/* ---- runtime errors ------------------------------------------------------------------------ */
static void *thread_without_device(void *arg) {
  (void)arg;
  void *p = NULL;
  expect_error_nodev(aclrtMalloc(&p, 64, 0), 107002, "aclrtSetDevice", "malloc on a thread without a device");
  /* a new message on a device-less thread comes first, followed by the kept older text */
  expect_error_nodev(aclrtGetDevice(NULL), 100000, "deviceId is NULL", "second error on a thread without a device");
  const char *both = aclGetRecentErrMsg();
  const char *prefix = "aclrtGetDevice: deviceId is NULL\n\naclrtMalloc: no device";
  CHECK(both && strncmp(both, prefix, strlen(prefix)) == 0,
        "new text + \"\\n\" + the kept text: '%s'", both ? both : "(NULL)");
  CHECK(aclrtSetDevice(0) == 0, "set device on the second thread");
  CHECK(aclGetRecentErrMsg() == NULL, "with a device set the kept text is cleared by the device-message callback");
  CHECK(aclrtMalloc(&p, 64, 0) == 0 && aclrtFree(p) == 0, "malloc/free after aclrtSetDevice");
  CHECK(aclrtResetDevice(0) == 0, "reset the second thread's reference");
  return NULL;
}

void test_runtime_errors(void) {
  void *p = NULL, *q = NULL;
  expect_error(aclrtMalloc(&p, 0, 0), 100000, "size is 0", "malloc(0)");
  CHECK(aclrtMalloc(&p, 100, 0) == 0, "malloc");
  CHECK(((uintptr_t)p % 512) == 0, "512-byte alignment");
  expect_error(aclrtFree((char *)p + 16), 107000, "16 bytes into", "interior free");
  int local = 0;
  expect_error(aclrtFree(&local), 107000, "not device memory", "host pointer free");
  char host[200];
  expect_error(aclrtMemcpy(p, 100, host, 200, 1), 107000, "destMax", "count > destMax");
  expect_error(aclrtMemcpy(p, 200, host, 200, 1), 107000, "inside one live device allocation", "out of bounds H2D");
  expect_error(aclrtMemcpy(host, 100, p, 100, 1), 107000, "device allocation", "H2D with reversed pointers");
  CHECK(aclrtMalloc(&q, 100, 0) == 0, "malloc q");
  expect_error(aclrtMemcpy(q, 100, p, 100, 1), 107000, "must be host memory", "H2D from device memory");
  CHECK(aclrtMemcpy(q, 100, p, 100, 3) == 0, "D2D");
  CHECK(aclrtMemset(p, 100, 0, 100) == 0, "memset");
  expect_error(aclrtMemset(p, 200, 0, 200), 107000, "device allocation", "memset out of bounds");

  /* runtime memory.cpp aclrtMemcpyImpl / aclrtMemsetImpl and api_error.cc MemCopySync */
  CHECK(aclrtMemcpy(NULL, 0, NULL, 0, 1) == 0, "memcpy count 0 with NULL pointers: 0");
  CHECK(aclrtMemcpy(NULL, 0, NULL, 0, 77) == 0, "memcpy count 0 comes before the kind check");
  expect_error(aclrtMemcpy(NULL, 8, host, 8, 1), 100000, "dst is NULL", "memcpy NULL dst");
  expect_error(aclrtMemcpy(p, 100, host, 8, 6), 100000, "aclrtMemcpyKind", "memcpy kind 6");
  expect_error(aclrtMemcpy(p, 0, host, 8, 1), 107000, "destMax is 0", "memcpy destMax 0");
  memset(host, 0x5A, 8);
  CHECK(aclrtMemcpy(p, 100, host, 8, 5) == 0, "kind 5 (ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE) is host to device");
  CHECK(aclrtMemcpy(p, 100, p, 100, 1) == 0, "dst == src: 0 without copying (even with a wrong kind)");
  unsigned char back[8] = {0};
  CHECK(aclrtMemcpy(back, 8, p, 8, 2) == 0 && back[0] == 0x5A && back[7] == 0x5A, "kind 5 copied");
  CHECK(aclrtMemset(NULL, 0, 7, 0) == 0, "memset count 0 with a NULL pointer: 0");
  expect_error(aclrtMemset(NULL, 8, 0, 8), 100000, "devPtr is NULL", "memset NULL");
  expect_error(aclrtMemset(p, 8, 0, 16), 107000, "maxCount", "memset count > maxCount");
  CHECK(aclrtMemset(p, 100, 0x1AB, 4) == 0 && aclrtMemcpy(back, 8, p, 8, 2) == 0, "memset 0x1AB");
  CHECK(back[0] == 0xAB && back[3] == 0xAB && back[4] == 0x5A, "the value is truncated to a byte (%#x)", back[0]);
  CHECK(aclrtMemset(p, 100, -1, 2) == 0 && aclrtMemcpy(back, 8, p, 8, 2) == 0 && back[1] == 0xFF, "memset -1");
  CHECK(aclrtFree(p) == 0, "free p");
  expect_error(aclrtFree(p), 107000, "already freed", "double free");
  CHECK(aclrtFree(q) == 0, "free q");
  void *h = NULL;
  CHECK(aclrtMallocHost(&h, 64) == 0 && aclrtFreeHost(h) == 0, "host alloc/free");
  expect_error(aclrtSetDevice(7), 107001, "invalid", "bad device id");
  int32_t dev = -1;
  CHECK(aclrtGetDevice(&dev) == 0 && dev == 0, "aclrtGetDevice");
  uint32_t n = 0;
  CHECK(aclrtGetDeviceCount(&n) == 0 && n == 1, "device count %u", n);
  CHECK(strcmp(aclrtGetSocName(), "Ascend950PR_9599") == 0, "default soc name %s", aclrtGetSocName());
  size_t fr = 0, tot = 0;
  CHECK(aclrtGetMemInfo(1, &fr, &tot) == 0 && fr <= tot && tot > 0, "mem info");
  int64_t dims[] = {2, 2}, strides[] = {2, 1}, st = 4;
  CHECK(aclCreateTensor(dims, 9, 0, strides, 0, 2, &st, 1, NULL) == NULL, "9 dims rejected");
  CHECK(aclGetRecentErrMsg() != NULL, "message for 9 dims");
  CHECK(aclCreateTensor(dims, 2, 99, strides, 0, 2, &st, 1, NULL) == NULL, "unknown dtype rejected");
  CHECK(aclGetRecentErrMsg() != NULL, "message for unknown dtype");
  pthread_t th;
  pthread_create(&th, NULL, thread_without_device, NULL);
  pthread_join(th, NULL);
}


/* ---- aclGetRecentErrMsg: the per-thread queue (runtime acl.cpp, error_manager.cc) ---------- */
static int count_char(const char *str, char c) {
  int n = 0;
  for (; *str; str++) n += *str == c;
  return n;
}

void test_error_queue(void) {
  /* on the main thread, device 0 set */
  void *p = NULL;
  CHECK(aclGetRecentErrMsg() == NULL, "nothing pending: NULL, not \"\"");
  CHECK(aclrtMalloc(&p, 0, 0) == 100000, "first failure");
  CHECK(aclrtSetDevice(99) == 107001, "second failure");
  CHECK(aclrtMalloc(&p, 0, 0) == 100000, "the first failure again (an identical item is not queued twice)");
  const char *m = aclGetRecentErrMsg();
  const char *want = "aclrtMalloc: size is 0\nTraceBack (most recent call last):\n        aclrtSetDevice: device id 99 ";
  CHECK(m && strncmp(m, want, strlen(want)) == 0, "ErrorManager format: '%s'", m ? m : "(NULL)");
  CHECK(m && count_char(m, '\n') == 3, "three lines, each ending in a newline: '%s'", m ? m : "(NULL)");
  CHECK(aclGetRecentErrMsg() == NULL, "cleared by the read");
  for (int i = 0; i < 1005; i++) CHECK(aclrtSetDevice(1000 + i) == 107001, "failure %d", i);
  m = aclGetRecentErrMsg();
  CHECK(m && count_char(m, '\n') == 1001, "1000 items: the first line, the TraceBack line and 999 more (%d)",
        m ? count_char(m, '\n') : -1);
  CHECK(m && strstr(m, "device id 1999 ") != NULL && strstr(m, "device id 2000 ") == NULL,
        "items after the 1000th are dropped");
  CHECK(aclGetRecentErrMsg() == NULL, "cleared after 1000 items");
}

/* ---- work in a forked child: process-wide state (aclInit counts, device references) -------- */
void in_child(void (*fn)(void), const char *what) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    g_failures = 0;
    fn();
    fflush(stderr);
    _exit(g_failures ? 1 : 0);
  }
  int wstatus = 0;
  CHECK(pid > 0 && waitpid(pid, &wstatus, 0) == pid && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0,
        "%s: a check failed in the child process (FAIL lines above)", what);
}

/* runtime acl.cpp aclInitImpl / aclFinalizeImpl; opbase aclnn_init.cpp. Runs before any aclInit. */
void child_init_finalize(void) {
  CHECK(aclFinalize() == 0, "aclFinalize in a process that never called aclInit: 0 the first time");
  expect_error_nodev(aclFinalize(), 100037, "repeatedly finalized", "second aclFinalize");
  CHECK(aclInit(NULL) == 0, "aclInit after aclFinalize");
  CHECK(aclInit(NULL) == 100002 && aclInit("other.json") == 100002, "repeated aclInit: 100002 (count 3)");
  const char *m = aclGetRecentErrMsg();
  CHECK(m && strstr(m, "repeatedly finalized") && !strstr(m, "aclInit"),
        "100002 queues no message (the kept 100037 text comes back: no device): '%s'", m ? m : "(NULL)");
  CHECK(aclFinalize() == 0, "aclFinalize zeroes the count (3) in one call");
  CHECK(aclFinalize() == 100037, "then it is a repeated finalize");
  CHECK(aclInit(NULL) == 0, "the count was zeroed: aclInit initialises again");
  CHECK(aclnnInit(NULL) == 0 && aclnnInit(NULL) == 0 && aclnnInit("x.json") == 0, "aclnnInit: always 0");
  CHECK(aclnnFinalize() == 0 && aclnnFinalize() == 0, "aclnnFinalize: always 0");
  CHECK(aclFinalize() == 0, "final aclFinalize");
}

int64_t stat_at(int i) {
  int64_t s[15];
  stats(s);
  return s[i];
}

/* runtime runtime.cc PrimaryContextRetain / PrimaryContextRelease, api_error.cc DeviceReset. */
void child_device_refs(void) {
  setenv("ACLSIM_DEVICE_COUNT", "2", 1);
  int64_t refs = stat_at(13);
  CHECK(refs == 1, "the parent's one reference of device 0 (%lld)", (long long)refs);
  expect_error(aclrtSetDevice(2), 107001, "invalid", "bad device id");
  CHECK(stat_at(13) == refs, "a failed aclrtSetDevice adds no reference");
  expect_error(aclrtResetDevice(1), 507007,
               "Resetting the device failed. Reason: The device has not been set or has already been reset",
               "aclrtResetDevice without a reference");
  expect_error(aclrtResetDevice(-1), 107001, "invalid", "aclrtResetDevice of a bad id");
  CHECK(aclrtSetDevice(1) == 0 && aclrtSetDevice(1) == 0, "two references of device 1");
  CHECK(stat_at(13) == refs + 2, "counted per call");
  aclrtStream s1 = NULL;
  aclrtContext c1 = NULL;
  CHECK(aclrtCreateStream(&s1) == 0 && aclrtGetCurrentContext(&c1) == 0, "a stream in device 1's default context");
  CHECK(aclrtResetDevice(1) == 0, "one reference released");
  int32_t dev = -1;
  CHECK(aclrtGetDevice(&dev) == 0 && dev == 1, "still bound while a reference remains");
  CHECK(aclrtSynchronizeStream(s1) == 0, "its streams live on");
  void *d = NULL;
  char src[64] = {0};
  CHECK(aclrtMalloc(&d, 64, 0) == 0 && aclrtMemcpyAsync(d, 64, src, 64, 1, s1) == 0, "a task queued on the stream");
  int64_t st[15];
  stats(st);
  int64_t failed = st[12], streams = st[8];
  CHECK(aclrtResetDevice(1) == 0, "the last reference");
  stats(st);
  CHECK(st[13] == refs, "references back to the parent's (%lld)", (long long)st[13]);
  CHECK(st[9] == 0 && st[12] == failed + 1, "the queued task was discarded");
  CHECK(st[8] == streams - 1, "the user stream was torn down");
  expect_error_nodev(aclrtGetDevice(&dev), 107002, "no device", "the calling thread was unbound");
  CHECK(aclrtSetDevice(1) == 0, "set device 1 again");
  expect_error(aclrtSynchronizeStream(s1), 107000, "tore the device's default context down",
               "a stream of the torn-down context");
  expect_error(aclrtDestroyStream(s1), 107000, "not a live aclrtStream", "destroying it");
  expect_error(aclrtSetCurrentContext(c1), 107000, "torn down", "the torn-down default context");
  CHECK(aclrtFree(d) == 0, "device memory is not released by the reset");
  CHECK(aclrtSetDevice(0) == 0, "bind device 0 (a second reference)");
  CHECK(aclrtResetDevice(1) == 0, "last reference of device 1 from a thread bound to device 0");
  CHECK(aclrtGetDevice(&dev) == 0 && dev == 0, "the thread stays on device 0");
  CHECK(aclrtResetDevice(0) == 0 && stat_at(13) == refs, "the extra device 0 reference released");
}

/* ---- aclrtMalloc's padding (runtime memory.cpp GetAlignedAndPaddingSize) -------------------- */
void test_malloc_padding(void) {
  static const struct {
    const char *soc;
    uint64_t size, want;
  } cases[] = {
      {NULL, 100, 128},          {NULL, 1, 32},           {NULL, 32, 32},           {NULL, 33, 64},
      {"Ascend350_354f", 64, 64}, {"Ascend910B4", 100, 160}, {"Ascend910B4", 1, 64},    {"Ascend910B4", 32, 64},
      {"Ascend910B4", 33, 96},   {"Ascend910A", 64, 96},  {"Ascend310P3", 64, 96},  {"Ascend910_9391", 64, 96},
      {"Ascend310B1", 64, 96},   {"NoSuchSoc", 64, 96},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    set_soc(cases[i].soc);
    const char *soc = cases[i].soc ? cases[i].soc : "default";
    int64_t b0 = stat_at(1);
    size_t fr0 = 0, fr1 = 0, tot = 0;
    void *p = NULL;
    CHECK(aclrtGetMemInfo(1, &fr0, &tot) == 0 && aclrtMalloc(&p, cases[i].size, 0) == 0, "%s malloc", soc);
    CHECK(aclrtGetMemInfo(1, &fr1, &tot) == 0 && fr0 - fr1 == cases[i].want, "%s: aclrtGetMemInfo counts %zu bytes for %llu",
          soc, fr0 - fr1, (unsigned long long)cases[i].size);
    CHECK(stat_at(1) - b0 == (int64_t)cases[i].want, "%s: live bytes +%lld for %llu (want %llu)", soc,
          (long long)(stat_at(1) - b0), (unsigned long long)cases[i].size, (unsigned long long)cases[i].want);
    CHECK(aclrtMemset(p, cases[i].want, 0, cases[i].want) == 0, "%s: the padding is addressable", soc);
    CHECK(aclrtMemset(p, cases[i].want + 1, 0, cases[i].want + 1) == 107000, "%s: one byte past it is not", soc);
    CHECK(aclGetRecentErrMsg() != NULL, "%s: message", soc);
    CHECK(aclrtFree(p) == 0 && stat_at(1) == b0, "%s free", soc);
  }
  set_soc(NULL);
}

/* ---- device-address lookups: correctness with many allocations, O(log n) ------------------- */
/* Registry entries compared per lookup (a count, not a time: timings flake on a shared VM). */
static double lookup_probes(void *const *ptrs, int n) {
  enum { CALLS = 20000 };
  uint64_t before = sim_registry_probes();
  for (int k = 0; k < CALLS; k++) (void)sim_dev_range_alloc((const char *)ptrs[k % n] + 8, 8);
  return (double)(sim_registry_probes() - before) / CALLS;
}

void test_registry(void) {
  enum { N = 1200 };
  static void *p[N];
  static uint64_t id[N];
  for (int i = 0; i < N; i++) CHECK(aclrtMalloc(&p[i], 64 + (uint64_t)(i % 7) * 32, 0) == 0, "malloc %d", i);
  for (int i = 0; i < N; i++) id[i] = sim_dev_range_alloc(p[i], 1);
  for (int i = 0; i < N; i += 3) CHECK(aclrtFree(p[i]) == 0, "free %d", i);
  int bad = 0;
  for (int i = 0; i < N; i++) {
    bool live = i % 3 != 0;
    uint64_t got = sim_dev_range_alloc((char *)p[i] + 16, 16);
    bad += live ? got != id[i] || !sim_dev_alloc_live(id[i]) : got != 0 || sim_dev_alloc_live(id[i]);
    bad += sim_is_device_ptr((char *)p[i] + 63) != live;
    bad += sim_dev_range_alloc((char *)p[i] + 16, 1 << 20) != 0; /* past the end */
  }
  CHECK(bad == 0, "%d wrong lookups over %d allocations", bad, N);
  expect_error(aclrtFree(p[0]), 107000, "already freed", "double free among many");
  expect_error(aclrtFree((char *)p[1] + 8), 107000, "8 bytes into", "interior free among many");
  static void *live[N];
  int nl = 0;
  for (int i = 0; i < N; i++)
    if (i % 3 != 0) live[nl++] = p[i];
  double many = lookup_probes(live, nl);
  for (int i = 10; i < nl; i++) CHECK(aclrtFree(live[i]) == 0, "free live %d", i);
  double few = lookup_probes(live, 10);
  /* A binary search compares at most ceil(log2(n + 1)) entries per search (11 for 800). */
  CHECK(few > 0 && many <= 3 * 11, "lookups over %d live allocations compare %.1f entries, over 10 %.1f (binary search expected)",
        nl, many, few);
  for (int i = 0; i < 10; i++) CHECK(aclrtFree(live[i]) == 0, "free live %d", i);
}
