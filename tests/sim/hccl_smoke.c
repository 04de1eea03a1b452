/*
 * Software HCCL ("aclsim") smoke test. Built by scripts/build_sim.ts into build/sim/hccl_smoke,
 * linked like an HCCL application (libhccl, libhcomm, libacl_rt) plus libaclsim_core for the
 * fp16/bf16 conversions. Every multi-rank case forks one child process per rank, each with its own
 * simulated device (ACLSIM_DEVICE_COUNT=8, aclrtSetDevice(rank)); rank 0 calls HcclGetRootInfo and
 * hands the 4108 bytes to the others through pipes. Exit status 0 = every check passed.
 *
 * This file holds the harness (check counters, error-text expectations, device buffers, forking
 * ranks) and main; the checks are in hccl_smoke_collectives.c, hccl_smoke_failures.c and
 * hccl_smoke_one_process.c, sharing hccl_smoke.h.
 */
#define _GNU_SOURCE
#include "hccl_smoke.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int g_checks, g_failures;
char g_tag[64] = "parent";

/* A status and an error text containing `needle` (on a thread with a device: read once). */
void expect(int got, int want, const char *needle, const char *what) {
  const char *msg = aclGetRecentErrMsg();
  CHECK(got == want, "%s: status %d, want %d (msg: %s)", what, got, want, msg ? msg : "(none)");
  if (needle) {
    CHECK(msg != NULL, "%s: no error text", what);
    if (msg) CHECK(strstr(msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, msg, needle);
  }
}

double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int64_t hstat(int i) {
  int64_t s[5];
  CHECK(aclsimHcclGetStats(s, 5) == 5, "aclsimHcclGetStats count");
  return s[i];
}

/* The counters that must return to zero: live communicators, queued collectives. */
void expect_released(const char *what) {
  CHECK(hstat(0) == 0, "%s: live communicators %lld", what, (long long)hstat(0));
  CHECK(hstat(1) == 0, "%s: queued collectives %lld", what, (long long)hstat(1));
}

void *dev_alloc(size_t bytes) {
  void *p = NULL;
  CHECK(aclrtMalloc(&p, bytes, 0) == 0, "aclrtMalloc %zu", bytes);
  return p;
}
void put(void *dev, const void *host, size_t bytes) {
  CHECK(aclrtMemcpy(dev, bytes, host, bytes, 1) == 0, "memcpy H2D");
}
void get(void *host, const void *dev, size_t bytes) {
  CHECK(aclrtMemcpy(host, bytes, dev, bytes, 2) == 0, "memcpy D2H");
}

/* ======================================================================================
 * Forking ranks
 * ====================================================================================== */


/* Runs fn in `n` child processes (rank 0..n-1, device = rank, stream created, root info from
 * rank 0); returns a bit mask of the ranks that failed (nonzero exit or killed after timeout_s). */
unsigned run_ranks(const char *what, int n, RankFn fn, void *ctx, double timeout_s) {
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

HcclComm init_comm(Rank *r) {
  HcclComm comm = NULL;
  int rc = HcclCommInitRootInfo((uint32_t)r->nranks, &r->ri, (uint32_t)r->rank, &comm);
  CHECK(rc == 0 && comm != NULL, "HcclCommInitRootInfo: %d %s", rc, rc ? aclGetRecentErrMsg() : "");
  return comm;
}

void init_config(HcclCommConfig *c, int32_t execTimeOut) {
  memset(c, 0, sizeof *c);
  HcclCommConfigHeader h = {sizeof *c, HCCL_COMM_CONFIG_MAGIC_WORD, HCCL_COMM_CONFIG_VERSION, 0};
  memcpy(c->reserved, &h, sizeof h);
  c->hcclBufferSize = c->hcclDeterministic = c->hcclRdmaTrafficClass = c->hcclRdmaServiceLevel = c->hcclQos =
      0xffffffffu;
  c->hcclExecTimeOut = execTimeOut;
  c->hcclSymWinMaxMemSizePerRank = 16;
}

void destroy_comm(HcclComm comm) {
  CHECK(HcclCommDestroy(comm) == 0, "HcclCommDestroy: %s", aclGetRecentErrMsg());
  expect_released("after HcclCommDestroy");
}

void in_child(void (*fn)(void), const char *what) {
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
