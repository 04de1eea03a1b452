/*
 * Software HCCL ("aclsim") smoke test. Built by scripts/build_sim.ts into build/sim/hccl_smoke,
 * linked like an HCCL application (libhccl, libhcomm, libacl_rt) plus libaclsim_core for the
 * fp16/bf16 conversions. Every multi-rank case forks one child process per rank, each with its own
 * simulated device (ACLSIM_DEVICE_COUNT=8, aclrtSetDevice(rank)); rank 0 calls HcclGetRootInfo and
 * hands the 4108 bytes to the others through pipes. Exit status 0 = every check passed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"
#include "sim_api.h"
#include "sim_hccl_api.h"

static int g_checks, g_failures;
static char g_tag[64] = "parent";

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

/* A status and an error text containing `needle` (on a thread with a device: read once). */
static void expect(int got, int want, const char *needle, const char *what) {
  const char *msg = aclGetRecentErrMsg();
  CHECK(got == want, "%s: status %d, want %d (msg: %s)", what, got, want, msg ? msg : "(none)");
  if (needle) {
    CHECK(msg != NULL, "%s: no error text", what);
    if (msg) CHECK(strstr(msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, msg, needle);
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int64_t hstat(int i) {
  int64_t s[5];
  CHECK(aclsimHcclGetStats(s, 5) == 5, "aclsimHcclGetStats count");
  return s[i];
}

/* The counters that must return to zero: live communicators, queued collectives. */
static void expect_released(const char *what) {
  CHECK(hstat(0) == 0, "%s: live communicators %lld", what, (long long)hstat(0));
  CHECK(hstat(1) == 0, "%s: queued collectives %lld", what, (long long)hstat(1));
}

static void *dev_alloc(size_t bytes) {
  void *p = NULL;
  CHECK(aclrtMalloc(&p, bytes, 0) == 0, "aclrtMalloc %zu", bytes);
  return p;
}
static void put(void *dev, const void *host, size_t bytes) {
  CHECK(aclrtMemcpy(dev, bytes, host, bytes, 1) == 0, "memcpy H2D");
}
static void get(void *host, const void *dev, size_t bytes) {
  CHECK(aclrtMemcpy(host, bytes, dev, bytes, 2) == 0, "memcpy D2H");
}

/* ======================================================================================
 * Forking ranks
 * ====================================================================================== */
typedef struct {
  int rank, nranks;
  aclrtStream stream;
  HcclRootInfo ri;
  void *ctx;
} Rank;

typedef void (*RankFn)(Rank *r);

/* Runs fn in `n` child processes (rank 0..n-1, device = rank, stream created, root info from
 * rank 0); returns a bit mask of the ranks that failed (nonzero exit or killed after timeout_s). */
static unsigned run_ranks(const char *what, int n, RankFn fn, void *ctx, double timeout_s) {
  int pipes[8][2];
  pid_t pids[8];
  for (int r = 1; r < n; r++)
    if (pipe(pipes[r]) != 0) {
      perror("pipe");
      exit(2);
    }
  fflush(NULL);
  for (int r = 0; r < n; r++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      exit(2);
    }
    if (pid == 0) {
      snprintf(g_tag, sizeof g_tag, "%s rank %d pid %d", what, r, (int)getpid());
      g_failures = 0;
      Rank rk = {.rank = r, .nranks = n, .ctx = ctx};
      CHECK(aclInit(NULL) == 0, "aclInit");
      CHECK(aclrtSetDevice(r) == 0, "aclrtSetDevice(%d)", r);
      CHECK(aclrtCreateStream(&rk.stream) == 0, "aclrtCreateStream");
      if (r == 0) {
        CHECK(HcclGetRootInfo(&rk.ri) == 0, "HcclGetRootInfo: %s", aclGetRecentErrMsg());
        for (int k = 1; k < n; k++) CHECK(write(pipes[k][1], &rk.ri, sizeof rk.ri) == (ssize_t)sizeof rk.ri, "pipe write");
      } else {
        size_t got = 0;
        while (got < sizeof rk.ri) {
          ssize_t k = read(pipes[r][0], (char *)&rk.ri + got, sizeof rk.ri - got);
          if (k <= 0) break;
          got += (size_t)k;
        }
        CHECK(got == sizeof rk.ri, "root info read (%zu bytes)", got);
      }
      fn(&rk);
      CHECK(aclrtDestroyStream(rk.stream) == 0, "aclrtDestroyStream");
      fflush(NULL);
      _exit(g_failures ? 1 : 0);
    }
    pids[r] = pid;
  }
  for (int r = 1; r < n; r++) close(pipes[r][0]), close(pipes[r][1]);
  unsigned failed = 0, done = 0;
  double t0 = now_s();
  while (done != (1u << n) - 1) {
    for (int r = 0; r < n; r++) {
      if (done & (1u << r)) continue;
      int st;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        done |= 1u << r;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed |= 1u << r;
      }
    }
    if (now_s() - t0 > timeout_s) {
      for (int r = 0; r < n; r++)
        if (!(done & (1u << r))) {
          kill(pids[r], SIGKILL);
          waitpid(pids[r], NULL, 0);
          done |= 1u << r;
          failed |= 1u << r;
          fprintf(stderr, "FAIL %s: rank %d still running after %.0f s (killed)\n", what, r, timeout_s);
        }
    }
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  g_checks++;
  if (failed) {
    g_failures++;
    fprintf(stderr, "FAIL %s: rank mask 0x%x failed\n", what, failed);
  }
  return failed;
}

static HcclComm init_comm(Rank *r) {
  HcclComm comm = NULL;
  int rc = HcclCommInitRootInfo((uint32_t)r->nranks, &r->ri, (uint32_t)r->rank, &comm);
  CHECK(rc == 0 && comm != NULL, "HcclCommInitRootInfo: %d %s", rc, rc ? aclGetRecentErrMsg() : "");
  return comm;
}

static void init_config(HcclCommConfig *c, int32_t execTimeOut) {
  memset(c, 0, sizeof *c);
  HcclCommConfigHeader h = {sizeof *c, HCCL_COMM_CONFIG_MAGIC_WORD, HCCL_COMM_CONFIG_VERSION, 0};
  memcpy(c->reserved, &h, sizeof h);
  c->hcclBufferSize = c->hcclDeterministic = c->hcclRdmaTrafficClass = c->hcclRdmaServiceLevel = c->hcclQos =
      0xffffffffu;
  c->hcclExecTimeOut = execTimeOut;
  c->hcclSymWinMaxMemSizePerRank = 16;
}

static void destroy_comm(HcclComm comm) {
  CHECK(HcclCommDestroy(comm) == 0, "HcclCommDestroy: %s", aclGetRecentErrMsg());
  expect_released("after HcclCommDestroy");
}

/* ======================================================================================
 * Collectives on 2 and 4 ranks
 * ====================================================================================== */
static void rank_collectives(Rank *r) {
  const int n = r->nranks, me = r->rank;
  HcclComm comm = init_comm(r);
  if (!comm) return;
  CHECK(hstat(0) == 1, "one live communicator");
  CHECK(hstat(2) == 0, "the root-info server ended once everyone joined (%lld)", (long long)hstat(2));
  uint32_t v = 99;
  CHECK(HcclGetRankSize(comm, &v) == 0 && v == (uint32_t)n, "rank size %u", v);
  CHECK(HcclGetRankId(comm, &v) == 0 && v == (uint32_t)me, "rank id %u", v);
  enum { N = 37 };

  /* fp32 sum, out of place */
  float f[N], g[N];
  for (int i = 0; i < N; i++) f[i] = (float)((me + 1) * 0.25 + i);
  void *a = dev_alloc(sizeof f), *b = dev_alloc(sizeof f * 4);
  put(a, f, sizeof f);
  CHECK(HcclAllReduce(a, b, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, r->stream) == 0, "allreduce fp32");
  CHECK(hstat(1) == 1, "one collective queued");
  get(g, b, sizeof g);
  CHECK(isnan(g[0]), "asynchronous: nothing written before the sync (%g)", g[0]);
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync fp32: %s", aclGetRecentErrMsg());
  get(g, b, sizeof g);
  double base = 0.25 * n * (n + 1) / 2.0;
  for (int i = 0; i < N; i++) CHECK(g[i] == (float)(base + (double)n * i), "fp32 sum[%d] = %g", i, g[i]);

  /* fp32 in place, max / min / prod */
  put(a, f, sizeof f);
  CHECK(HcclAllReduce(a, a, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MAX, comm, r->stream) == 0, "allreduce max in place");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync max");
  get(g, a, sizeof g);
  for (int i = 0; i < N; i++) CHECK(g[i] == (float)(n * 0.25 + i), "max[%d] = %g", i, g[i]);
  put(a, f, sizeof f);
  CHECK(HcclAllReduce(a, a, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MIN, comm, r->stream) == 0, "allreduce min");
  put(b, f, sizeof f);
  CHECK(HcclAllReduce(b, b, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_PROD, comm, r->stream) == 0, "allreduce prod");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync min + prod");
  get(g, a, sizeof g);
  for (int i = 0; i < N; i++) CHECK(g[i] == (float)(0.25 + i), "min[%d] = %g", i, g[i]);
  get(g, b, sizeof g);
  for (int i = 0; i < N; i++) {
    double p = 1;
    for (int k = 0; k < n; k++) p *= (float)((k + 1) * 0.25 + i);
    CHECK(g[i] == (float)p, "prod[%d] = %g, want %g", i, g[i], (float)p);
  }

  /* fp16 and bf16: every rank's value converted, summed in double, rounded once */
  uint16_t h[N], hg[N];
  for (int dt = 0; dt < 2; dt++) {
    int32_t type = dt ? HCCL_DATA_TYPE_BFP16 : HCCL_DATA_TYPE_FP16;
    uint16_t (*to)(double) = dt ? sim_to_bf16 : sim_to_fp16;
    double (*from)(uint16_t) = dt ? sim_from_bf16 : sim_from_fp16;
    for (int i = 0; i < N; i++) h[i] = to((me + 1) * 0.3 + i * 1.7);
    /* element 0: 2048 on rank 0, 1 elsewhere -- rounded once, 2048 + 3 = 2051 -> 2052 in fp16
     * (summing in fp16 would stay at 2048) */
    h[0] = to(me == 0 ? 2048 : 1);
    put(a, h, sizeof h);
    CHECK(HcclAllReduce(a, a, N, type, HCCL_REDUCE_SUM, comm, r->stream) == 0, "allreduce %s", dt ? "bf16" : "fp16");
    CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync 16-bit");
    get(hg, a, sizeof hg);
    for (int i = 0; i < N; i++) {
      double s = 0;
      for (int k = 0; k < n; k++) s += i == 0 ? (k == 0 ? 2048 : 1) : from(to((k + 1) * 0.3 + i * 1.7));
      CHECK(hg[i] == to(s), "%s sum[%d] = %g, want %g", dt ? "bf16" : "fp16", i, from(hg[i]), from(to(s)));
    }
    if (!dt && n == 4) CHECK(from(hg[0]) == 2052, "fp16 rounded once: %g", from(hg[0]));
  }

  /* int32 sum wraps; int8 max */
  int32_t iv[N], ig[N];
  for (int i = 0; i < N; i++) iv[i] = i == 0 ? 0x7fffffff : me * 1000 - i;
  put(a, iv, sizeof iv);
  CHECK(HcclAllReduce(a, b, N, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comm, r->stream) == 0, "allreduce int32");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync int32");
  get(ig, b, sizeof ig);
  CHECK(ig[0] == (int32_t)(uint32_t)(0x7fffffffu * (uint32_t)n), "int32 wraps: %d", ig[0]);
  for (int i = 1; i < N; i++) CHECK(ig[i] == 1000 * n * (n - 1) / 2 - n * i, "int32 sum[%d] = %d", i, ig[i]);
  int8_t cv[N], cg[N];
  for (int i = 0; i < N; i++) cv[i] = (int8_t)(me == n - 1 ? -100 : (me * 7 - i) % 120);
  put(a, cv, sizeof cv);
  CHECK(HcclAllReduce(a, b, N, HCCL_DATA_TYPE_INT8, HCCL_REDUCE_MAX, comm, r->stream) == 0, "allreduce int8 max");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync int8");
  get(cg, b, sizeof cg);
  for (int i = 0; i < N; i++) {
    int8_t m = -128;
    for (int k = 0; k < n; k++) {
      int8_t x = (int8_t)(k == n - 1 ? -100 : (k * 7 - i) % 120);
      if (x > m) m = x;
    }
    CHECK(cg[i] == m, "int8 max[%d] = %d, want %d", i, cg[i], m);
  }

  /* allGather: rank-major, rank r's block at element r * sendCount */
  for (int i = 0; i < N; i++) iv[i] = me * 100000 + i;
  put(a, iv, sizeof iv);
  int32_t *all = calloc((size_t)n * N, sizeof *all);
  void *ag = dev_alloc((size_t)n * N * sizeof(int32_t));
  CHECK(HcclAllGather(a, ag, N, HCCL_DATA_TYPE_INT32, comm, r->stream) == 0, "allgather");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync allgather");
  get(all, ag, (size_t)n * N * sizeof(int32_t));
  for (int k = 0; k < n; k++)
    for (int i = 0; i < N; i++) CHECK(all[k * N + i] == k * 100000 + i, "allgather[%d][%d] = %d", k, i, all[k * N + i]);
  /* in place: the send block is this rank's block of the output */
  int32_t mine[N];
  for (int i = 0; i < N; i++) mine[i] = -(me * 100 + i);
  put((char *)ag + (size_t)me * N * sizeof(int32_t), mine, sizeof mine);
  CHECK(HcclAllGather((char *)ag + (size_t)me * N * sizeof(int32_t), ag, N, HCCL_DATA_TYPE_INT32, comm, r->stream) == 0,
        "allgather in place");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync allgather in place");
  get(all, ag, (size_t)n * N * sizeof(int32_t));
  for (int k = 0; k < n; k++) CHECK(all[k * N + 5] == -(k * 100 + 5), "allgather in place[%d] = %d", k, all[k * N + 5]);
  free(all);

  /* broadcast from the last rank */
  for (int i = 0; i < N; i++) f[i] = (float)(me * 10 + i);
  put(a, f, sizeof f);
  CHECK(HcclBroadcast(a, N, HCCL_DATA_TYPE_FP32, (uint32_t)(n - 1), comm, r->stream) == 0, "broadcast");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync broadcast");
  get(g, a, sizeof g);
  for (int i = 0; i < N; i++) CHECK(g[i] == (float)((n - 1) * 10 + i), "broadcast[%d] = %g", i, g[i]);

  /* barrier, and two collectives queued back to back before one sync */
  CHECK(HcclBarrier(comm, r->stream) == 0, "barrier");
  CHECK(HcclAllReduce(a, a, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, r->stream) == 0, "allreduce 1");
  CHECK(HcclAllReduce(a, a, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, r->stream) == 0, "allreduce 2");
  CHECK(hstat(1) == 3, "three collectives queued (%lld)", (long long)hstat(1));
  CHECK(HcclCommDestroy(comm) == HCCL_E_AGAIN, "destroy with queued collectives");
  CHECK(aclGetRecentErrMsg() == NULL, "HCCL_E_AGAIN is a warning only (no text)");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync barrier + 2 allreduces: %s", aclGetRecentErrMsg());
  get(g, a, sizeof g);
  for (int i = 0; i < N; i++) CHECK(g[i] == (float)((n - 1) * 10 + i) * n * n, "twice reduced[%d] = %g", i, g[i]);
  HcclResult async = HCCL_E_INTERNAL;
  CHECK(HcclGetCommAsyncError(comm, &async) == 0 && async == HCCL_SUCCESS, "async error %d", async);

  CHECK(aclrtFree(a) == 0 && aclrtFree(b) == 0 && aclrtFree(ag) == 0, "free");
  destroy_comm(comm);
  CHECK(hstat(3) >= 14, "collectives completed (%lld)", (long long)hstat(3));
  CHECK(hstat(4) == 0, "no collective failed (%lld)", (long long)hstat(4));
}

/* ======================================================================================
 * Init errors across processes
 * ====================================================================================== */
typedef struct {
  uint32_t claim[8];  /* the rank each process claims */
  uint32_t nranks[8]; /* the nRanks each process passes */
  int want[8];        /* the status each process must get */
  const char *needle; /* in every failing process's message */
} InitCase;

static void rank_init_case(Rank *r) {
  const InitCase *c = r->ctx;
  HcclComm comm = NULL;
  int rc = HcclCommInitRootInfo(c->nranks[r->rank], &r->ri, c->claim[r->rank], &comm);
  expect(rc, c->want[r->rank], rc ? c->needle : NULL, g_tag);
  if (rc == 0) destroy_comm(comm);
  CHECK(comm == NULL || rc == 0, "no comm on failure");
  expect_released("init case");
}

/* rank 0 only: the other rank never comes (a 600 ms connect timeout) */
static void rank_alone(Rank *r) {
  HcclComm comm = NULL;
  double t0 = now_s();
  expect(HcclCommInitRootInfo(2, &r->ri, 0, &comm), HCCL_E_TIMEOUT, "missing rank(s): 1", "a rank never joins");
  double dt = now_s() - t0;
  CHECK(dt > 0.4 && dt < 5, "timed out after %.2f s", dt);
  CHECK(hstat(2) == 0, "the server ended at its deadline");
  expect_released("alone");
}

/* ======================================================================================
 * Failures while a collective runs
 * ====================================================================================== */

/* Rank n-1 exits right after joining; the others' collective fails at once with 507048. */
static void rank_dies(Rank *r) {
  HcclComm comm = init_comm(r);
  if (!comm) return;
  if (r->rank == r->nranks - 1) _exit(0); /* no goodbye: the kernel closes its sockets */
  float f[64] = {0};
  void *a = dev_alloc(sizeof f);
  put(a, f, sizeof f);
  CHECK(HcclAllReduce(a, a, 64, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, r->stream) == 0, "allreduce");
  double t0 = now_s();
  char want[64];
  snprintf(want, sizeof want, "rank %d (process", r->nranks - 1);
  int rc = aclrtSynchronizeStream(r->stream);
  const char *msg = aclGetRecentErrMsg();
  CHECK(rc == 507048, "sync after a peer died: %d (%s)", rc, msg ? msg : "(none)");
  CHECK(msg && strstr(msg, "EI0002") && strstr(msg, "HcclAllReduce") && strstr(msg, "closed its connection"),
        "message: %s", msg ? msg : "(none)");
  /* The rank that detected it names the dead rank; a rank that saw another survivor bail out
   * first names that one instead. */
  if (msg && !strstr(msg, want)) fprintf(stderr, "[%s] note: %s\n", g_tag, msg);
  CHECK(now_s() - t0 < 10, "reported quickly (%.2f s)", now_s() - t0);
  CHECK(HcclAllReduce(a, a, 64, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, r->stream) == 0, "allreduce again");
  expect(aclrtSynchronizeStream(r->stream), 507048, "failed in collective #1", "a broken communicator");
  CHECK(hstat(4) == 2, "two collectives failed (%lld)", (long long)hstat(4));
  CHECK(aclrtFree(a) == 0, "free");
  destroy_comm(comm);
}

/* Rank 1 joins but never issues the collective: rank 0 waits for the exec timeout (1 s from
 * HcclCommConfig.hcclExecTimeOut on an Atlas A2, where 1 s is valid). */
static void rank_exec_timeout(Rank *r) {
  HcclCommConfig cfg;
  init_config(&cfg, 1);
  HcclComm comm = NULL;
  int rc = HcclCommInitRootInfoConfig(2, &r->ri, (uint32_t)r->rank, &cfg, &comm);
  CHECK(rc == 0, "init with config: %d %s", rc, rc ? aclGetRecentErrMsg() : "");
  if (rc) return;
  if (r->rank == 1) {
    sleep(3);
    destroy_comm(comm);
    return;
  }
  int32_t x[4] = {1, 2, 3, 4};
  void *a = dev_alloc(sizeof x);
  put(a, x, sizeof x);
  CHECK(HcclAllGather(a, dev_alloc(sizeof x * 2), 4, HCCL_DATA_TYPE_INT32, comm, r->stream) == 0, "allgather");
  double t0 = now_s();
  rc = aclrtSynchronizeStream(r->stream);
  double dt = now_s() - t0;
  const char *msg = aclGetRecentErrMsg();
  CHECK(rc == 507048, "exec timeout: %d (%s)", rc, msg ? msg : "(none)");
  CHECK(msg && strstr(msg, "HcclAllGather") && strstr(msg, "EI0002") && strstr(msg, "rank(s) [1]") &&
            strstr(msg, "1.00 s (HcclCommConfig.hcclExecTimeOut)"),
        "message: %s", msg ? msg : "(none)");
  CHECK(dt > 0.8 && dt < 2.5, "waited %.2f s for a 1 s exec timeout", dt);
  destroy_comm(comm);
}

/* Ranks that issue different collectives: both fail, and HcclGetCommAsyncError reports it. */
static void rank_mismatch(Rank *r) {
  HcclComm comm = init_comm(r);
  if (!comm) return;
  int32_t x[8] = {0};
  void *a = dev_alloc(sizeof x), *b = dev_alloc(sizeof x * 2);
  put(a, x, sizeof x);
  if (r->rank == 0) CHECK(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comm, r->stream) == 0, "ar");
  else CHECK(HcclAllGather(a, b, 8, HCCL_DATA_TYPE_INT32, comm, r->stream) == 0, "ag");
  expect(aclrtSynchronizeStream(r->stream), 507048, r->rank == 0 ? "issued HcclAllGather" : "issued HcclAllReduce",
         "mismatched collectives");
  HcclResult async = HCCL_SUCCESS;
  CHECK(HcclGetCommAsyncError(comm, &async) == 0 && async == HCCL_E_PARA, "async error %d", async);
  expect(0, 0, "EI0005", "async error text");
  destroy_comm(comm);
}

/* ======================================================================================
 * One process: argument checks on a one-rank communicator, no device, threads as ranks
 * ====================================================================================== */
static void set_soc(const char *s) {
  if (s) setenv("ACLSIM_SOC_NAME", s, 1);
  else unsetenv("ACLSIM_SOC_NAME");
}

static void single_process_checks(void) {
  snprintf(g_tag, sizeof g_tag, "single process");
  CHECK(aclInit(NULL) == 0, "aclInit");
  CHECK(aclrtSetDevice(0) == 0, "set device");
  aclrtStream s = NULL;
  CHECK(aclrtCreateStream(&s) == 0, "stream");
  HcclRootInfo ri;
  expect(HcclGetRootInfo(NULL), HCCL_E_PTR, "rootInfo", "GetRootInfo(NULL)");
  setenv("HCCL_CONNECT_TIMEOUT", "60", 1);
  expect(HcclGetRootInfo(&ri), HCCL_E_PARA, "HCCL_CONNECT_TIMEOUT", "HCCL_CONNECT_TIMEOUT below 120");
  setenv("HCCL_CONNECT_TIMEOUT", "12a", 1);
  expect(HcclGetRootInfo(&ri), HCCL_E_PARA, "timeRange[120s,7200s]", "HCCL_CONNECT_TIMEOUT not a number");
  setenv("HCCL_CONNECT_TIMEOUT", "7200", 1);
  CHECK(HcclGetRootInfo(&ri) == 0, "GetRootInfo");
  CHECK(hstat(2) == 1, "a root-info server runs (%lld)", (long long)hstat(2));
  unsetenv("HCCL_CONNECT_TIMEOUT");
  HcclComm comm = NULL;
  expect(HcclCommInitRootInfo(0, &ri, 0, &comm), HCCL_E_PARA, "nRanks[0] should be greater than 0", "nRanks 0");
  expect(HcclCommInitRootInfo(2, &ri, 2, &comm), HCCL_E_PARA, "rank[2] should be less than nRanks[2]", "rank >= nRanks");
  expect(HcclCommInitRootInfo(1, &ri, 0, NULL), HCCL_E_PTR, "comm", "NULL comm");
  expect(HcclCommInitRootInfo(1, NULL, 0, &comm), HCCL_E_PTR, "rootInfo", "NULL rootInfo");
  HcclRootInfo junk;
  memset(&junk, 7, sizeof junk);
  expect(HcclCommInitRootInfo(1, &junk, 0, &comm), HCCL_E_PARA, "HcclGetRootInfo", "root info not from GetRootInfo");
  HcclCommConfig cfg;
  init_config(&cfg, -1);
  expect(HcclCommInitRootInfoConfig(1, &ri, 0, NULL, &comm), HCCL_E_PTR, "config", "NULL config");
  cfg.reserved[8] = 0;
  expect(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &comm), HCCL_E_PARA, "HcclCommConfigInit()", "bad magic");
  init_config(&cfg, -1);
  cfg.hcclDeterministic = 3;
  expect(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &comm), HCCL_E_PARA, "hcclDeterministic", "deterministic 3");
  init_config(&cfg, -1);
  setenv("HCCL_EXEC_TIMEOUT", "1.234", 1);
  expect(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &comm), HCCL_E_PARA, "HCCL_EXEC_TIMEOUT", "3 decimals");
  setenv("HCCL_EXEC_TIMEOUT", "0", 1);
  expect(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &comm), HCCL_E_PARA, "greater than or equal to 1s",
         "0 s is invalid on the 950");
  set_soc("Ascend910B2");
  snprintf(cfg.hcclCommName, sizeof cfg.hcclCommName, "smoke-comm");
  CHECK(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &comm) == 0, "one-rank comm (HCCL_EXEC_TIMEOUT=0 valid on 910B): %s",
        aclGetRecentErrMsg());
  unsetenv("HCCL_EXEC_TIMEOUT");
  set_soc(NULL);
  CHECK(hstat(2) == 0 && hstat(0) == 1, "server done, one comm");

  float f[8] = {1, 2, 3, 4, 5, 6, 7, 8}, g[8];
  void *a = dev_alloc(sizeof f), *b = dev_alloc(sizeof f), *small = dev_alloc(8);
  put(a, f, sizeof f);
  /* count 0: SUCCESS before any pointer check, nothing queued, no text */
  CHECK(HcclAllReduce(NULL, NULL, 0, 99, 99, NULL, NULL) == 0, "count 0");
  CHECK(HcclAllGather(NULL, NULL, 0, 99, NULL, NULL) == 0 && HcclBroadcast(NULL, 0, 99, 99, NULL, NULL) == 0, "count 0");
  CHECK(aclGetRecentErrMsg() == NULL && hstat(1) == 0, "count 0 queues nothing");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, NULL, s), HCCL_E_PTR, "comm", "NULL comm");
  expect(HcclAllReduce(NULL, b, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_E_PTR, "sendBuf", "NULL send");
  expect(HcclAllReduce(a, NULL, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_E_PTR, "recvBuf", "NULL recv");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, NULL), HCCL_E_PTR, "stream", "NULL stream");
  expect(HcclAllReduce(a, b, 0x800000000ULL, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_E_PARA, "SYS_MAX_COUNT",
         "count too large");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_FP32, 4, comm, s), HCCL_E_NOT_SUPPORT, "op[4]", "bad op");
  /* data types per SoC */
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_UINT8, HCCL_REDUCE_SUM, comm, s), HCCL_E_NOT_SUPPORT, "uint8", "uint8");
  CHECK(HcclAllReduce(a, b, 2, HCCL_DATA_TYPE_FP64, HCCL_REDUCE_SUM, comm, s) == 0, "fp64 on the 950");
  CHECK(HcclAllReduce(a, b, 4, HCCL_DATA_TYPE_UINT64, HCCL_REDUCE_MAX, comm, s) == 0, "uint64 on the 950");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_BFP16, HCCL_REDUCE_PROD, comm, s), HCCL_E_NOT_SUPPORT, "prod",
         "bf16 prod on the 950");
  set_soc("Ascend910B4");
  expect(HcclAllReduce(a, b, 2, HCCL_DATA_TYPE_FP64, HCCL_REDUCE_SUM, comm, s), HCCL_E_NOT_SUPPORT, "Ascend910B",
         "fp64 on A2");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_INT16, HCCL_REDUCE_PROD, comm, s), HCCL_E_NOT_SUPPORT, "prod",
         "int16 prod on A2");
  CHECK(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_BFP16, HCCL_REDUCE_MAX, comm, s) == 0, "bf16 max on A2");
  set_soc("Ascend910A");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_BFP16, HCCL_REDUCE_SUM, comm, s), HCCL_E_NOT_SUPPORT, "Ascend910",
         "bf16 on 910");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_INT16, HCCL_REDUCE_SUM, comm, s), HCCL_E_NOT_SUPPORT, "int16",
         "int16 on 910");
  set_soc("Ascend310P3");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_INT16, HCCL_REDUCE_MAX, comm, s), HCCL_E_NOT_SUPPORT, "only op sum",
         "int16 max on 310P");
  CHECK(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_INT16, HCCL_REDUCE_SUM, comm, s) == 0, "int16 sum on 310P");
  expect(HcclAllGather(a, b, 4, HCCL_DATA_TYPE_BFP16, comm, s), HCCL_E_NOT_SUPPORT, "bfp16", "allgather bf16 on 310P");
  set_soc(NULL);
  CHECK(HcclAllGather(a, b, 8, HCCL_DATA_TYPE_FP8E4M3, comm, s) == 0, "allgather fp8 on the 950");
  expect(HcclAllGather(a, b, 8, 13, comm, s), HCCL_E_NOT_SUPPORT, "dataType[13]", "allgather dtype 13");
  CHECK(aclrtSynchronizeStream(s) == 0, "sync the one-rank collectives: %s", aclGetRecentErrMsg());
  /* buffers, root */
  expect(HcclBroadcast(a, 8, HCCL_DATA_TYPE_FP32, 1, comm, s), HCCL_E_PARA, "root[1] should be less than rankSize[1]",
         "root out of range");
  expect(HcclAllReduce(f, b, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_E_PARA, "not inside one live device",
         "host sendBuf");
  void *big = dev_alloc(1024);
  expect(HcclAllReduce(big, small, 64, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_E_PARA, "recvBuf",
         "recvBuf too small");
  CHECK(aclrtFree(big) == 0, "free big");
  expect(HcclAllGather(a, b, 8, HCCL_DATA_TYPE_FP32, comm, s), 0, NULL, "allgather of one rank fits");
  CHECK(aclrtSynchronizeStream(s) == 0, "sync");
  /* one rank: allreduce is a copy (rounded to the type) */
  CHECK(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s) == 0, "allreduce one rank");
  CHECK(aclrtSynchronizeStream(s) == 0, "sync");
  get(g, b, sizeof g);
  CHECK(memcmp(f, g, sizeof f) == 0, "one-rank allreduce copies");
  /* a buffer freed before the sync: 507000, and the communicator is broken afterwards */
  void *tmp = dev_alloc(sizeof f);
  CHECK(HcclAllReduce(tmp, b, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s) == 0, "allreduce");
  CHECK(aclrtFree(tmp) == 0, "free before sync");
  expect(aclrtSynchronizeStream(s), 507000, "sendBuf was freed", "freed buffer");
  /* stale handles */
  HcclComm bogus = (HcclComm)(uintptr_t)0x1234;
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, bogus, s), HCCL_E_PARA, "not a communicator",
         "not a comm");
  uint32_t v;
  expect(HcclGetRankSize(comm, NULL), HCCL_E_PTR, "rankSize", "NULL rankSize");
  expect(HcclGetRankId(NULL, &v), HCCL_E_PTR, "comm", "NULL comm rank id");
  HcclResult async;
  expect(HcclGetCommAsyncError(NULL, &async), HCCL_E_PTR, "EI0003", "async error of NULL");
  CHECK(HcclCommDestroy(NULL) == 0 && aclGetRecentErrMsg() == NULL, "destroy NULL: success, warning only");
  destroy_comm(comm);
  expect(HcclCommDestroy(comm), HCCL_E_PARA, "comm is not exist", "double destroy");
  expect(HcclGetRankSize(comm, &v), HCCL_E_PARA, "already destroyed", "rank size of a destroyed comm");
  expect(HcclBarrier(comm, s), HCCL_E_PARA, "already destroyed", "barrier on a destroyed comm");

  /* HcclGetErrorString (hcomm op_base.cc:4378-4403) */
  CHECK(!strcmp(HcclGetErrorString(HCCL_SUCCESS), "no error"), "0");
  CHECK(!strcmp(HcclGetErrorString(HCCL_E_RUNTIME), "call runtime api fail"), "15");
  CHECK(!strcmp(HcclGetErrorString(HCCL_E_OOM), "out of memory"), "24");
  CHECK(!strcmp(HcclGetErrorString((HcclResult)25), "unknown err"), "25");
  CHECK(!strcmp(HcclGetErrorString(HCCL_E_IN_STATUS), "unknown err"), "1041");
  CHECK(!strcmp(HcclGetErrorString(HCCL_E_RESERVED), "unknown error"), "1042");
  CHECK(!strcmp(HcclGetErrorString((HcclResult)-1), "unknown error"), "-1");

  CHECK(aclrtFree(a) == 0 && aclrtFree(b) == 0 && aclrtFree(small) == 0, "free");
  CHECK(aclrtDestroyStream(s) == 0, "destroy stream");
  expect_released("single process");
  CHECK(aclrtResetDevice(0) == 0, "reset");
}

/* A fresh process without aclrtSetDevice: HCCL_E_RUNTIME (15) from everything that refreshes it. */
static void child_no_device(void) {
  HcclRootInfo ri;
  HcclComm comm = NULL;
  CHECK(aclInit(NULL) == 0, "aclInit");
  expect(HcclGetRootInfo(&ri), HCCL_E_RUNTIME, "please make sure that device is set", "GetRootInfo without a device");
  memset(&ri, 0, sizeof ri);
  expect(HcclCommInitRootInfo(1, &ri, 0, &comm), HCCL_E_RUNTIME, "please make sure that device is set",
         "init without a device");
  expect(HcclCommDestroy(NULL), HCCL_E_RUNTIME, "device", "destroy(NULL) without a device (the device check is first)");
}

/* The hccl example's layout: one process, one thread per device and rank. */
typedef struct {
  int rank;
  const HcclRootInfo *ri;
  float out[4];
  int rc_init, rc_sync;
} ThreadRank;

static void *thread_rank(void *arg) {
  ThreadRank *t = arg;
  aclrtSetDevice(t->rank);
  aclrtStream s = NULL;
  aclrtCreateStream(&s);
  HcclComm comm = NULL;
  t->rc_init = HcclCommInitRootInfo(2, t->ri, (uint32_t)t->rank, &comm);
  if (t->rc_init) return NULL;
  float x[4] = {1.0f + t->rank, 2, 3, 4};
  void *a = NULL;
  aclrtMalloc(&a, sizeof x, 0);
  aclrtMemcpy(a, sizeof x, x, sizeof x, 1);
  HcclAllReduce(a, a, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s);
  t->rc_sync = aclrtSynchronizeStream(s);
  aclrtMemcpy(t->out, sizeof x, a, sizeof x, 2);
  aclrtFree(a);
  HcclCommDestroy(comm);
  aclrtDestroyStream(s);
  return NULL;
}

static void child_threads(void) {
  CHECK(aclInit(NULL) == 0, "aclInit");
  CHECK(aclrtSetDevice(0) == 0, "device 0");
  HcclRootInfo ri;
  CHECK(HcclGetRootInfo(&ri) == 0, "root info");
  ThreadRank t[2] = {{.rank = 0, .ri = &ri}, {.rank = 1, .ri = &ri}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, thread_rank, &t[i]);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++) {
    CHECK(t[i].rc_init == 0 && t[i].rc_sync == 0, "thread rank %d: init %d sync %d", i, t[i].rc_init, t[i].rc_sync);
    CHECK(t[i].out[0] == 3 && t[i].out[3] == 8, "thread rank %d: %g %g", i, t[i].out[0], t[i].out[3]);
  }
  expect_released("threads");
}

static void in_child(void (*fn)(void), const char *what) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    snprintf(g_tag, sizeof g_tag, "%s", what);
    g_failures = 0;
    fn();
    fflush(NULL);
    _exit(g_failures ? 1 : 0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s (child status 0x%x)", what, st);
}

int main(void) {
  setenv("ACLSIM_DEVICE_COUNT", "8", 1);
  unsetenv("ACLSIM_SOC_NAME");
  unsetenv("HCCL_CONNECT_TIMEOUT");
  unsetenv("HCCL_EXEC_TIMEOUT");
  unsetenv("ACLSIM_HCCL_EXEC_TIMEOUT_MS");
  setenv("ACLSIM_HCCL_CONNECT_TIMEOUT_MS", "20000", 1); /* a hung case fails in 20 s, not 140 */
  double t0 = now_s();

  run_ranks("collectives, 2 ranks", 2, rank_collectives, NULL, 60);
  run_ranks("collectives, 4 ranks", 4, rank_collectives, NULL, 60);

  InitCase dup = {.claim = {0, 0}, .nranks = {2, 2}, .want = {HCCL_E_INTERNAL, HCCL_E_INTERNAL},
                  .needle = "has been connected"};
  run_ranks("duplicate rank", 2, rank_init_case, &dup, 30);
  InitCase world = {.claim = {0, 1}, .nranks = {2, 3}, .want = {HCCL_E_INTERNAL, HCCL_E_INTERNAL},
                    .needle = "VerifyRemoteRankNum failed"};
  run_ranks("ranks disagree on nRanks", 2, rank_init_case, &world, 30);
  setenv("ACLSIM_HCCL_CONNECT_TIMEOUT_MS", "600", 1);
  run_ranks("a rank never joins", 1, rank_alone, NULL, 30);
  setenv("ACLSIM_HCCL_CONNECT_TIMEOUT_MS", "20000", 1);

  setenv("ACLSIM_HCCL_EXEC_TIMEOUT_MS", "30000", 1); /* a safety net: the death is seen at once */
  run_ranks("a rank exits, 4 ranks", 4, rank_dies, NULL, 60);
  run_ranks("mismatched collectives", 2, rank_mismatch, NULL, 60);
  unsetenv("ACLSIM_HCCL_EXEC_TIMEOUT_MS");
  setenv("ACLSIM_SOC_NAME", "Ascend910B1", 1); /* 1 s is a valid exec timeout on an A2 */
  run_ranks("exec timeout", 2, rank_exec_timeout, NULL, 60);
  unsetenv("ACLSIM_SOC_NAME");

  in_child(child_no_device, "no device set");
  in_child(child_threads, "two threads as two ranks");
  single_process_checks();
  printf("aclsim hccl smoke: %d checks, %d failures (%.1f s)\n", g_checks, g_failures, now_s() - t0);
  return g_failures ? 1 : 0;
}
