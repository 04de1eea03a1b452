/*
 * Software HCCL ("aclsim") -- the root-info server, compiled into libaclsim_core.so:
 * HcclGetRootInfo's background thread (the "topo exchange server") that collects every rank's
 * hello, checks them and answers every agent with the cluster table or the reason init failed
 * (steps 1-3 of the flow in hccl_transport_internal.h); and the sessions whose server runs in this
 * process.
 *
 * Citations: "hccl" is hicann/hccl, "hcomm" is the hcomm mirror xiaobingling93-pixel/cann-hcomm
 * b5f3e5be; "[aclsim]" marks the simulator's own choices. The negotiation's flow is described in
 * hccl_transport_internal.h.
 */
#define _GNU_SOURCE
#include "hccl_transport_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static atomic_long g_servers_running;

int64_t hccl_tp_servers_running(void) { return atomic_load(&g_servers_running); }

/* The sessions whose server runs in this process. An agent of the root's own process returns from
 * init only once its server answered every agent ([aclsim]: otherwise the root process could exit,
 * and take the server thread with it, before the other ranks heard back). */
static pthread_mutex_t g_srv_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_srv_cv = PTHREAD_COND_INITIALIZER;
static uint64_t g_srv_sessions[64];
static int g_nsrv;

static void server_add(uint64_t session) {
  pthread_mutex_lock(&g_srv_mu);
  if (g_nsrv < 64) g_srv_sessions[g_nsrv++] = session;
  pthread_mutex_unlock(&g_srv_mu);
}

static void server_remove(uint64_t session) {
  pthread_mutex_lock(&g_srv_mu);
  for (int i = 0; i < g_nsrv; i++)
    if (g_srv_sessions[i] == session) {
      g_srv_sessions[i] = g_srv_sessions[--g_nsrv];
      break;
    }
  pthread_cond_broadcast(&g_srv_cv);
  pthread_mutex_unlock(&g_srv_mu);
}

void server_wait(uint64_t session, int64_t wait_ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += wait_ms / 1000;
  ts.tv_nsec += (wait_ms % 1000) * 1000000;
  if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
  pthread_mutex_lock(&g_srv_mu);
  for (;;) {
    bool running = false;
    for (int i = 0; i < g_nsrv; i++) running |= g_srv_sessions[i] == session;
    if (!running || pthread_cond_timedwait(&g_srv_cv, &g_srv_mu, &ts) != 0) break;
  }
  pthread_mutex_unlock(&g_srv_mu);
}


typedef struct {
  int lfd;
  int64_t deadline;
  uint64_t session;
  char name[HCCL_TP_NAME_BYTES];
} Server;

typedef struct {
  int fd;
  size_t got;
  BootHello h;
} Agent;

static void reply_to(int fd, const BootReply *rep, const HcclTpPeer *table) {
  int64_t dl = now_ms() + 2000;
  if (write_full(fd, rep, sizeof *rep, dl) == 0 && table)
    (void)write_full(fd, table, rep->nranks * sizeof *table, dl);
}

/* The root-info server thread: collects one hello per rank until nRanks ranks joined, a check
 * fails, or the deadline passes; answers every agent; ends. */
static void *server_main(void *arg) {
  Server *sv = arg;
  static const char *const kind = "HcclCommInitRootInfo";
  Agent *ag = calloc(MAX_AGENTS, sizeof *ag);
  int na = 0;
  int by_rank[HCCL_TP_MAX_RANKS];
  for (int i = 0; i < HCCL_TP_MAX_RANKS; i++) by_rank[i] = -1;
  uint32_t nranks = 0, joined = 0;
  BootReply rep;
  memset(&rep, 0, sizeof rep);
  rep.magic = BOOT_MAGIC;
  rep.status = -1;
  int culprit = -1; /* an agent that failed a check (not registered) */
  while (ag && rep.status < 0) {
    int wait = left_ms(sv->deadline);
    if (wait == 0) {
      /* topoinfo_exchange_server.cc:311-317: "topo exchange server get socket timeout!", and the
       * connected ranks are listed (DisplayConnectedRank). */
      uint64_t missing = 0;
      for (uint32_t r = 0; r < nranks; r++)
        if (by_rank[r] < 0) missing |= 1ULL << r;
      char list[256];
      rank_list(list, sizeof list, missing);
      rep.status = HCCL_E_TIMEOUT;
      snprintf(rep.text, sizeof rep.text,
               "%s: EI0015: topo exchange server get socket timeout! %u of %u rank(s) joined within the connect "
               "timeout (HCCL_CONNECT_TIMEOUT, measured from HcclGetRootInfo); missing rank(s): %s",
               kind, joined, nranks, nranks ? list : "(no rank joined)");
      break;
    }
    struct pollfd p[1 + MAX_AGENTS];
    int idx[1 + MAX_AGENTS];
    int np = 0;
    p[np].fd = sv->lfd;
    p[np].events = POLLIN;
    idx[np++] = -1;
    for (int i = 0; i < na; i++)
      if (ag[i].fd >= 0 && ag[i].got < sizeof(BootHello)) {
        p[np].fd = ag[i].fd;
        p[np].events = POLLIN;
        idx[np++] = i;
      }
    int r = poll(p, (nfds_t)np, wait < 0 || wait > 1000 ? 1000 : wait);
    if (r <= 0) continue;
    if (p[0].revents & POLLIN)
      for (;;) {
        int fd = accept4(sv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        if (na >= MAX_AGENTS) {
          close(fd);
          continue;
        }
        ag[na].fd = fd;
        ag[na].got = 0;
        na++;
      }
    for (int k = 1; k < np && rep.status < 0; k++) {
      if (!p[k].revents) continue;
      Agent *a = &ag[idx[k]];
      ssize_t n = recv(a->fd, (char *)&a->h + a->got, sizeof a->h - a->got, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) { /* the agent went away */
        close(a->fd);
        a->fd = -1;
        continue;
      }
      if (n < 0) continue;
      a->got += (size_t)n;
      if (a->got < sizeof a->h) continue;
      const BootHello *h = &a->h;
      if (h->magic != BOOT_MAGIC || h->session != sv->session) {
        BootReply bad = {.magic = BOOT_MAGIC, .status = HCCL_E_PARA};
        snprintf(bad.text, sizeof bad.text, "%s: [aclsim] the root info does not belong to this root-info server", kind);
        reply_to(a->fd, &bad, NULL);
        close(a->fd);
        a->fd = -1;
        continue;
      }
      if (nranks == 0) nranks = h->nranks;
      if (h->nranks != nranks) {
        rep.status = HCCL_E_INTERNAL;
        snprintf(rep.text, sizeof rep.text,
                 "%s: [Verify][RemoteRankNum]VerifyRemoteRankNum failed. remoteRankNum[%u] is difference with "
                 "others[%u]. (rank %u of process %d passed nRanks %u; the ranks that joined before passed %u; "
                 "every rank must pass the same nRanks: HcclCommInitRootInfo.md:93)",
                 kind, h->nranks, nranks, h->rank, h->pid, h->nranks, nranks);
        culprit = idx[k];
      } else if (h->rank >= nranks) {
        rep.status = HCCL_E_INTERNAL; /* topoinfo_exchange_server.cc:485-487 */
        snprintf(rep.text, sizeof rep.text, "%s: [Get][Connection]rank num[%u] from remote[%u] invalid.", kind,
                 nranks, h->rank);
        culprit = idx[k];
      } else if (by_rank[h->rank] >= 0) {
        const BootHello *o = &ag[by_rank[h->rank]].h;
        rep.status = HCCL_E_INTERNAL;
        snprintf(rep.text, sizeof rep.text,
                 "%s: [Get][Connection]GetConnection failed. agent[%u] has been connected. (rank %u claimed twice: "
                 "by process %d on device %d and by process %d on device %d)",
                 kind, h->rank, h->rank, o->pid, o->device, h->pid, h->device);
        culprit = idx[k];
      } else {
        by_rank[h->rank] = idx[k];
        if (++joined == nranks) rep.status = 0;
      }
    }
  }
  close(sv->lfd); /* late agents find nobody listening */
  if (ag) {
    HcclTpPeer table[HCCL_TP_MAX_RANKS];
    if (rep.status == 0) {
      rep.nranks = nranks;
      for (uint32_t r = 0; r < nranks; r++) {
        const BootHello *h = &ag[by_rank[r]].h;
        table[r].pid = h->pid;
        table[r].device = h->device;
        memcpy(table[r].name, h->name, sizeof table[r].name);
        table[r].name[HCCL_TP_NAME_BYTES - 1] = '\0';
      }
    }
    for (uint32_t r = 0; r < HCCL_TP_MAX_RANKS; r++)
      if (by_rank[r] >= 0 && ag[by_rank[r]].fd >= 0) reply_to(ag[by_rank[r]].fd, &rep, rep.status == 0 ? table : NULL);
    if (culprit >= 0 && ag[culprit].fd >= 0) reply_to(ag[culprit].fd, &rep, NULL);
    for (int i = 0; i < na; i++)
      if (ag[i].fd >= 0) close(ag[i].fd);
    free(ag);
  }
  atomic_fetch_sub(&g_servers_running, 1);
  server_remove(sv->session);
  free(sv);
  return NULL;
}

/* The server thread runs code of this library: keep the library mapped even if the process
 * dlclose()s it while the thread still runs (Deno closes FFI libraries). */
static void pin_library(void) {
  Dl_info info;
  if (dladdr((void *)&pin_library, &info) && info.dli_fname)
    (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

static uint64_t random_u64(void) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    v = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40);
  }
  return v;
}

int hccl_tp_server_start(HcclSimRootInfo *ri, int device, int64_t timeout_ms, char *err, size_t errn) {
  memset(ri, 0, sizeof *ri);
  memcpy(ri->magic, "ACLSHCCL", 8);
  ri->version = 1;
  ri->root_pid = getpid();
  ri->session = random_u64();
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ri->created_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
  ri->root_device = device;
  snprintf(ri->server, sizeof ri->server, "aclsim-hccl-%d-%016" PRIx64, (int)ri->root_pid, ri->session);
  /* CANN's identifier looks like "127.10.0.1%enp_60000_0_1761275812718970" (<ip>%<nic>_<port>_
   * <device>_<timestamp us>; hccl docs/zh/user_guide/fault_diagnosis/task_exec_stage.md:151). */
  snprintf(ri->identifier, sizeof ri->identifier, "unix%%aclsim_%d_%d_%" PRId64, (int)ri->root_pid, device,
           ri->created_us);
  int lfd = listen_abstract(ri->server);
  if (lfd < 0) {
    /* A port already bound is EI0019 and HcclGetRootInfo fails with HCCL_E_UNAVAIL
     * (cluster_info_nego.md:53-70). */
    int e = errno;
    snprintf(err, errn, "HcclGetRootInfo: cannot listen on the abstract socket '%s': %s", ri->server, strerror(e));
    return e == EADDRINUSE ? HCCL_E_UNAVAIL : HCCL_E_SYSCALL;
  }
  Server *sv = calloc(1, sizeof *sv);
  if (!sv) {
    close(lfd);
    snprintf(err, errn, "HcclGetRootInfo: out of memory");
    return HCCL_E_MEMORY;
  }
  sv->lfd = lfd;
  sv->deadline = now_ms() + timeout_ms;
  sv->session = ri->session;
  memcpy(sv->name, ri->server, sizeof sv->name);
  pin_library();
  atomic_fetch_add(&g_servers_running, 1);
  server_add(sv->session);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t th;
  int rc = pthread_create(&th, &attr, server_main, sv);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    atomic_fetch_sub(&g_servers_running, 1);
    server_remove(sv->session);
    close(lfd);
    free(sv);
    snprintf(err, errn, "HcclGetRootInfo: cannot start the root-info server thread: %s", strerror(rc));
    return HCCL_E_SYSCALL;
  }
  return HCCL_SUCCESS;
}

