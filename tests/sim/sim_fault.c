/*
 * Software CANN ("aclsim") -- fault injection (a test hook, not CANN): make the n-th aclrtMalloc,
 * aclrtMemcpy, operator kernel, phase 1, aclrtCreateStream or stream submission from now fail
 * with the status code and error text the real stack reports for that failure, or (`corrupt`)
 * make kernels succeed with every value they write perturbed by a relative 1e-2.
 *
 * Armed per call by the test-only export aclsimInjectFault (export_runtime.c) or by the
 * environment variable ACLSIM_FAULT, read at every call that can fail this way. The call sites
 * are sim_rt_malloc (sim_memory.c), sim_rt_memcpy and sim_rt_memcpy_async (sim_memcpy.c),
 * sim_rt_create_stream and run_task (sim_streams.c), sim_op_launch and sim_executor_create
 * (sim_executors.c); `corrupt`: run_task, through sim_set_store_scale of sim_numeric.c.
 * tests/sim/README_test_hooks.md "Fault injection" documents the design and the codes, each with
 * the CANN source it comes from.
 *
 * One fault per kind; arming a kind again replaces it. Everything is process-wide and guarded
 * by the simulator's lock.
 */
#define _GNU_SOURCE
#include "sim.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  bool armed;
  int64_t countdown; /* calls of this kind still to let through before the first failure */
  int64_t left;      /* failures still to inject (-1: every call until disarmed) */
  int64_t value;     /* status code, or the workspace size; 0 = the kind's default */
} Fault;

static Fault g_faults[SIM_FAULT_KINDS];
static int64_t g_fired;
static char *g_env_seen; /* the last ACLSIM_FAULT value acted upon (NULL: unset) */

static const char *const NAMES[SIM_FAULT_KINDS] = {
    [SIM_FAULT_MALLOC] = "malloc",       [SIM_FAULT_MEMCPY] = "memcpy",
    [SIM_FAULT_KERNEL] = "kernel",       [SIM_FAULT_WORKSPACE] = "workspace",
    [SIM_FAULT_CREATE_STREAM] = "create_stream", [SIM_FAULT_STREAM] = "stream",
    [SIM_FAULT_CORRUPT] = "corrupt",
};

const char *sim_fault_name(int kind) {
  return kind > 0 && kind < SIM_FAULT_KINDS ? NAMES[kind] : "none";
}

/* Arms (nth >= 1) or disarms (nth == 0) one kind; the lock is held by the caller. */
static void arm(int kind, int64_t nth, int64_t times, int64_t value) {
  Fault *f = &g_faults[kind];
  if (nth == 0) {
    memset(f, 0, sizeof *f);
    return;
  }
  f->armed = true;
  f->countdown = nth - 1;
  f->left = times;
  f->value = value;
}

/* Why the arguments are invalid, or NULL. */
static const char *invalid_args(int32_t kind, int64_t nth, int64_t times, int64_t value) {
  if (kind < 0 || kind >= SIM_FAULT_KINDS)
    return "unknown fault kind (1 malloc, 2 memcpy, 3 kernel, 4 workspace, 5 create_stream, 6 stream, 7 corrupt; 0 "
           "disarms every kind)";
  if (nth < 0) return "nth is negative";
  if (kind == 0 || nth == 0) return NULL;
  if (times == 0 || times < -1) return "times must be >= 1, or -1 for every call";
  if (value < 0) return "value is negative";
  if (kind != SIM_FAULT_WORKSPACE && kind != SIM_FAULT_CORRUPT && value > INT32_MAX)
    return "the status code does not fit an aclError";
  return NULL;
}

int32_t sim_fault_inject(int32_t kind, int64_t nth, int64_t times, int64_t value) {
  const char *why = invalid_args(kind, nth, times, value);
  if (why)
    return sim_fail(SIM_ACL_INVALID_PARAM,
                    "aclsimInjectFault(kind %d, nth %" PRId64 ", times %" PRId64 ", value %" PRId64 "): %s", kind,
                    nth, times, value, why);
  sim_lock();
  if (kind == 0) memset(g_faults, 0, sizeof g_faults);
  else arm(kind, nth, times, value);
  sim_unlock();
  return 0;
}

/* Parses one `kind[:nth[:times[:value]]]` item of ACLSIM_FAULT into *out; false if malformed. */
static bool parse_item(const char *item, size_t len, int *kind, int64_t f[3]) {
  char buf[128];
  if (len == 0 || len >= sizeof buf) return false;
  memcpy(buf, item, len);
  buf[len] = '\0';
  char *save = NULL, *tok = strtok_r(buf, ":", &save);
  if (!tok) return false;
  *kind = 0;
  for (int k = 1; k < SIM_FAULT_KINDS; k++)
    if (strcmp(tok, NAMES[k]) == 0) *kind = k;
  if (*kind == 0) return false;
  /* nth, times, value; `corrupt` alone corrupts every launch until disarmed */
  f[0] = 1, f[1] = *kind == SIM_FAULT_CORRUPT ? -1 : 1, f[2] = 0;
  for (int i = 0; i < 3 && (tok = strtok_r(NULL, ":", &save)) != NULL; i++) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(tok, &end, 0);
    if (errno || end == tok || *end != '\0') return false;
    f[i] = v;
  }
  return strtok_r(NULL, ":", &save) == NULL;
}

/* ACLSIM_FAULT, read at every call that can fail: when its value differs from the last one acted
 * upon, every kind it lists is armed afresh (counting from this call). A malformed value is
 * reported on stderr and ignored. The lock is held by the caller. */
static void sync_env(void) {
  const char *env = getenv("ACLSIM_FAULT");
  if (env && !*env) env = NULL;
  if (!env) {
    free(g_env_seen);
    g_env_seen = NULL;
    return;
  }
  if (g_env_seen && strcmp(env, g_env_seen) == 0) return;
  free(g_env_seen);
  g_env_seen = strdup(env);
  int kinds[16];
  int64_t args[16][3];
  int n = 0;
  for (const char *p = env; *p;) {
    const char *q = p;
    while (*q && *q != ',') q++;
    const char *s = p, *e = q;
    while (s < e && *s == ' ') s++;
    while (e > s && e[-1] == ' ') e--;
    if (n == 16 || !parse_item(s, (size_t)(e - s), &kinds[n], args[n]) ||
        invalid_args(kinds[n], args[n][0], args[n][1], args[n][2]) != NULL) {
      fprintf(stderr,
              "[aclsim] ACLSIM_FAULT=%s is ignored: expected kind[:nth[:times[:value]]] items separated by "
              "commas, kind one of malloc, memcpy, kernel, workspace, create_stream, stream, corrupt\n",
              env);
      return;
    }
    n++;
    p = *q ? q + 1 : q;
  }
  for (int i = 0; i < n; i++) arm(kinds[i], args[i][0], args[i][1], args[i][2]);
}

bool sim_fault_fire(int kind, int64_t *value) {
  sim_lock();
  sync_env();
  Fault *f = &g_faults[kind];
  bool fire = false;
  if (f->armed) {
    if (f->countdown > 0) {
      f->countdown--;
    } else {
      fire = true;
      *value = f->value;
      g_fired++;
      if (f->left > 0 && --f->left == 0) f->armed = false;
    }
  }
  sim_unlock();
  return fire;
}

int64_t sim_fault_fired(void) {
  sim_lock();
  int64_t n = g_fired;
  sim_unlock();
  return n;
}

/* [aclsim] `corrupt`: CANN has no such fault. A kernel that runs while it is armed succeeds, and
 * every value it stores (outputs, in-place running statistics, empty-input fills) is multiplied
 * by 1 + value * 1e-6 before its rounding to the tensor's dtype (value 0: 1e-2), so zeros and NaN
 * stay as they are. No status, no error text: a silent wrong result, for tests of checkers such
 * as `deno task verify:npu`. Counted per kernel execution at synchronisation. */
double sim_fault_corrupt_factor(void) {
  int64_t v = 0;
  if (!sim_fault_fire(SIM_FAULT_CORRUPT, &v)) return 1.0;
  return 1.0 + (double)(v ? v : 10000) * 1e-6;
}
