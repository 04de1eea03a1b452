/*
 * Software HCCL ("aclsim") -- the transport between the ranks: Unix domain stream sockets in the
 * Linux abstract namespace (no files), so the ranks may be processes (or threads) of this machine.
 * Compiled into libaclsim_core.so; hccl_comms.c and hccl_collectives.c hold the API semantics.
 *
 * The flow copies CANN's root-info negotiation (hicann/hccl
 * docs/zh/user_guide/fault_diagnosis/cluster_info_nego.md:11-26; "hcomm" is the hcomm mirror xiaobingling93-pixel/cann-hcomm b5f3e5be):
 *
 * 1. HcclGetRootInfo binds and listens, starts a background thread (the "topo exchange server")
 *    that waits for every agent, and returns at once (cluster_info_nego.md:11-14; hcomm
 *    op_base.cc:1328-1349). The server's clock starts there (hcomm
 *    src/framework/common/src/topo/topoinfo_exchange_server.cc:302-317: Connect measures
 *    HCCL_CONNECT_TIMEOUT from its start).
 * 2. Every rank, the root's own included, connects to it as an agent and sends its rank and
 *    nRanks, then waits for the complete cluster information (cluster_info_nego.md:16-22). The
 *    server checks every agent: an agent id (= the rank) seen twice fails the server with
 *    HCCL_E_INTERNAL "GetConnection failed. agent[%s] has been connected."
 *    (topoinfo_exchange_server.cc:466-475), and a rank count different from the first agent's
 *    fails it with HCCL_E_INTERNAL "VerifyRemoteRankNum failed. remoteRankNum[%u] is difference
 *    with others[%u]." (:609-619). [aclsim] The server then tells every agent that had connected
 *    why (CANN's agents only see the server go away) and stops, like CANN's, so a later agent
 *    waits until its own timeout.
 * 3. When all nRanks ranks joined, the server sends the table to all and ends; each rank then
 *    connects to every other rank (the "parameter-plane links", also bounded by
 *    HCCL_CONNECT_TIMEOUT: param_link_stage.md:5). [aclsim] A full mesh of stream sockets: rank r
 *    connects to every lower rank and accepts every higher one.
 * 4. A collective sends a header and its payload to every peer and reads theirs (hccl_tp_exchange).
 *
 * Timeouts: an agent that cannot reach the server (nobody listening) keeps trying until its
 * timeout, then HCCL_E_TIMEOUT with EI0015 (hcomm topoinfo_exchange_agent.cc:406-423); a socket
 * error other than "still connecting" is HCCL_E_TCP_CONNECT (:427-429).
 */
#define _GNU_SOURCE
#include "hccl_sim.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define BOOT_MAGIC 0x48434253u /* "HCBS" */
#define MESH_MAGIC 0x4843424du /* "HCBM" */
#define MAX_AGENTS 256
#define REPLY_TEXT 1024

static atomic_long g_servers_running;
static atomic_uint g_name_counter;

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

static void server_wait(uint64_t session, int64_t wait_ms) {
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

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before `deadline` for poll(): -1 = forever (deadline < 0), else >= 0. */
static int left_ms(int64_t deadline) {
  if (deadline < 0) return -1;
  int64_t l = deadline - now_ms();
  if (l < 0) return 0;
  return l > 1000000000 ? 1000000000 : (int)l;
}

static socklen_t abstract_addr(struct sockaddr_un *a, const char *name) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  size_t n = strnlen(name, HCCL_TP_NAME_BYTES - 1);
  memcpy(a->sun_path + 1, name, n); /* sun_path[0] = '\0': the abstract namespace */
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static int listen_abstract(const char *name) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_un a;
  socklen_t len = abstract_addr(&a, name);
  if (bind(fd, (struct sockaddr *)&a, len) != 0 || listen(fd, 256) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

/* 1: fd ready, 0: deadline passed, -1: poll error. */
static int wait_fd(int fd, short ev, int64_t deadline) {
  for (;;) {
    struct pollfd p = {.fd = fd, .events = ev};
    int r = poll(&p, 1, left_ms(deadline));
    if (r > 0) return 1;
    if (r == 0) return 0;
    if (errno != EINTR) return -1;
  }
}

/* 0: done, 1: deadline passed, 2: end of stream or socket error. */
static int read_full(int fd, void *buf, size_t n, int64_t deadline) {
  char *p = buf;
  while (n > 0) {
    ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= (size_t)r;
      continue;
    }
    if (r == 0) return 2;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return 2;
    int w = wait_fd(fd, POLLIN, deadline);
    if (w == 0) return 1;
    if (w < 0) return 2;
  }
  return 0;
}

static int write_full(int fd, const void *buf, size_t n, int64_t deadline) {
  const char *p = buf;
  while (n > 0) {
    ssize_t r = send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (r > 0) {
      p += r;
      n -= (size_t)r;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return 2;
    int w = wait_fd(fd, POLLOUT, deadline);
    if (w == 0) return 1;
    if (w < 0) return 2;
  }
  return 0;
}

/* ======================================================================================
 * HCCL_CONNECT_TIMEOUT
 *
 * hccl docs/zh/user_guide/hccl_env/HCCL_CONNECT_TIMEOUT.md:7-9: integer seconds in [120, 7200],
 * default 120; the effective wait is value + 20 s. hcomm src/platform/common/externalinput.cc:557-585
 * ParseLinkConnTimeOut: not all digits, or out of [HCCL_MIN_LINK_TIME_OUT_S 120,
 * HCCL_MAX_LINK_TIME_OUT_S 7200] -> an error and HCCL_E_PARA, which init returns as HCCL_E_PARA
 * (op_base.cc:1829-1831). An empty value counts as unset (GET_ENV's "EmptyString"). The server
 * and an agent trying to reach it give up after the value (topoinfo_exchange_server.cc:302-317,
 * topoinfo_exchange_agent.cc:406-423); an agent that reached it waits 20 s more for the verdict
 * (hccl_tp_grace_ms). [aclsim] ACLSIM_HCCL_CONNECT_TIMEOUT_MS (a positive integer), for tests
 * only, replaces the value after HCCL_CONNECT_TIMEOUT has been validated; the extra wait is then a
 * sixth of it (200 ms to 20 s).
 * ====================================================================================== */
static bool all_digits(const char *s) {
  if (!*s) return false;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return false;
  return true;
}

int64_t hccl_tp_connect_timeout_ms(char *err, size_t errn) {
  long secs = 120;
  const char *s = getenv("HCCL_CONNECT_TIMEOUT");
  if (s && *s) {
    if (strlen(s) > 10 || !all_digits(s) || (secs = strtol(s, NULL, 10)) < 120 || secs > 7200) {
      snprintf(err, errn,
               "environmental variable HCCL_CONNECT_TIMEOUT error: timeOutEnv[%ss] timeRange[120s,7200s] "
               "(hcomm externalinput.cc ParseLinkConnTimeOut)",
               s);
      return -1;
    }
  }
  const char *o = getenv("ACLSIM_HCCL_CONNECT_TIMEOUT_MS");
  if (o && *o) {
    if (strlen(o) > 12 || !all_digits(o) || strtoll(o, NULL, 10) <= 0) {
      snprintf(err, errn, "[aclsim] ACLSIM_HCCL_CONNECT_TIMEOUT_MS must be a positive integer (milliseconds), got '%s'",
               o);
      return -1;
    }
    return strtoll(o, NULL, 10);
  }
  return secs * 1000;
}

int64_t hccl_tp_grace_ms(int64_t timeout_ms) {
  int64_t g = timeout_ms / 6; /* 20 s for the default 120 s */
  return g < 200 ? 200 : g > 20000 ? 20000 : g;
}

/* ======================================================================================
 * Root-info negotiation messages
 * ====================================================================================== */
typedef struct {
  uint32_t magic;
  uint32_t version;
  uint64_t session;
  uint32_t rank, nranks;
  int32_t pid, device;
  char name[HCCL_TP_NAME_BYTES]; /* the agent's data-plane socket */
} BootHello;

typedef struct {
  uint32_t magic;
  int32_t status; /* HcclResult; 0: nranks HcclTpPeer follow */
  uint32_t nranks;
  uint32_t reserved;
  char text[REPLY_TEXT];
} BootReply;

typedef struct {
  uint32_t magic;
  uint32_t rank;
  uint64_t session;
} MeshHello;

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

static void append(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t n, const char *fmt, ...) {
  size_t k = strlen(buf);
  if (k + 1 >= n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + k, n - k, fmt, ap);
  va_end(ap);
}

/* "0, 2, 3" for the bits of `mask`. */
static void rank_list(char *buf, size_t n, uint64_t mask) {
  buf[0] = '\0';
  bool first = true;
  for (int r = 0; r < 64; r++)
    if (mask & (1ULL << r)) {
      append(buf, n, "%s%d", first ? "" : ", ", r);
      first = false;
    }
}

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

/* ======================================================================================
 * Agents: HcclCommInitRootInfo
 * ====================================================================================== */

/* Connects to an abstract socket, retrying while nobody listens yet (CANN's agent keeps a
 * socket in SOCKET_CONNECTING until its timeout). 0: connected (*fd), 1: deadline, 2: error. */
static int connect_retry(const char *name, int64_t deadline, int *out, int *err_no) {
  struct sockaddr_un a;
  socklen_t len = abstract_addr(&a, name);
  for (;;) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      *err_no = errno;
      return 2;
    }
    if (connect(fd, (struct sockaddr *)&a, len) == 0) {
      *out = fd;
      return 0;
    }
    int e = errno;
    close(fd);
    if (e != ECONNREFUSED && e != ENOENT && e != EAGAIN && e != EINTR) {
      *err_no = e;
      return 2;
    }
    if (left_ms(deadline) == 0) return 1;
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

void hccl_tp_close(HcclTpMesh *m) {
  for (uint32_t r = 0; r < HCCL_TP_MAX_RANKS; r++)
    if (m->fds[r] >= 0) {
      close(m->fds[r]);
      m->fds[r] = -1;
    }
}

int hccl_tp_join(const HcclSimRootInfo *ri, uint32_t nranks, uint32_t rank, int device, int64_t timeout_ms,
                 HcclTpMesh *m, char *err, size_t errn) {
  static const char *const fn = "HcclCommInitRootInfo";
  /* Reaching the server: the connect timeout; hearing back and linking up: 20 s more (scaled
   * down with the simulator-only override), "used to tell every node why init failed"
   * (HCCL_CONNECT_TIMEOUT.md:9), so the server's verdict arrives before the agent gives up. */
  int64_t connect_deadline = now_ms() + timeout_ms;
  int64_t deadline = connect_deadline + hccl_tp_grace_ms(timeout_ms);
  memset(m, 0, sizeof *m);
  for (int r = 0; r < HCCL_TP_MAX_RANKS; r++) m->fds[r] = -1;
  m->nranks = nranks;
  m->rank = rank;
  m->session = ri->session;

  BootHello h;
  memset(&h, 0, sizeof h);
  h.magic = BOOT_MAGIC;
  h.version = 1;
  h.session = ri->session;
  h.rank = rank;
  h.nranks = nranks;
  h.pid = getpid();
  h.device = device;
  snprintf(h.name, sizeof h.name, "aclsim-hccl-%016" PRIx64 "-r%u-%d-%u", ri->session, rank, (int)h.pid,
           atomic_fetch_add(&g_name_counter, 1));
  int lfd = listen_abstract(h.name);
  if (lfd < 0) {
    snprintf(err, errn, "%s: cannot listen on the abstract socket '%s': %s", fn, h.name, strerror(errno));
    return HCCL_E_SYSCALL;
  }
  char server[HCCL_TP_NAME_BYTES];
  memcpy(server, ri->server, sizeof server);
  server[sizeof server - 1] = '\0';
  int sfd = -1, e = 0, rc = HCCL_SUCCESS;
  int c = connect_retry(server, connect_deadline, &sfd, &e);
  if (c == 1) {
    snprintf(err, errn,
             "%s: EI0015: topo exchange agent get socket timeout! Rank %u could not reach the root-info server "
             "'%s' (process %d) within the connect timeout (%" PRId64 " ms): the root process is not running "
             "HcclGetRootInfo's server any more (it exited, or its own timeout passed), or HCCL_CONNECT_TIMEOUT "
             "is too short",
             fn, rank, server, (int)ri->root_pid, timeout_ms);
    rc = HCCL_E_TIMEOUT;
    goto out;
  }
  if (c == 2) {
    snprintf(err, errn, "%s: [Get][Connection]server: get socket failed: %s", fn, strerror(e));
    rc = HCCL_E_TCP_CONNECT;
    goto out;
  }
  int w = write_full(sfd, &h, sizeof h, deadline);
  BootReply rep;
  if (w == 0) w = read_full(sfd, &rep, sizeof rep, deadline);
  if (ri->root_pid == getpid()) server_wait(ri->session, 3000);
  if (w == 1) {
    snprintf(err, errn,
             "%s: EI0015: topo exchange agent get socket timeout! Rank %u of %u waited for the cluster information "
             "from the root-info server (process %d) for the whole connect timeout (%" PRId64 " ms): not every "
             "rank called HcclCommInitRootInfo in time",
             fn, rank, nranks, (int)ri->root_pid, timeout_ms);
    rc = HCCL_E_TIMEOUT;
    goto out;
  }
  if (w == 2 || rep.magic != BOOT_MAGIC) {
    snprintf(err, errn,
             "%s: the root-info server (process %d) closed the connection before sending the cluster information "
             "(its process exited?)",
             fn, (int)ri->root_pid);
    rc = HCCL_E_TCP_CONNECT;
    goto out;
  }
  if (rep.status != 0) {
    rep.text[sizeof rep.text - 1] = '\0';
    snprintf(err, errn, "%s", rep.text);
    rc = rep.status;
    goto out;
  }
  if (rep.nranks != nranks ||
      read_full(sfd, m->peers, nranks * sizeof m->peers[0], deadline) != 0) {
    snprintf(err, errn, "%s: [aclsim] the cluster information from the root-info server is incomplete", fn);
    rc = HCCL_E_TCP_TRANSFER;
    goto out;
  }
  /* The links between ranks: connect to every lower rank, accept every higher one. */
  MeshHello mh = {.magic = MESH_MAGIC, .rank = rank, .session = ri->session};
  for (uint32_t j = 0; j < rank; j++) {
    int fd = -1;
    c = connect_retry(m->peers[j].name, deadline, &fd, &e);
    if (c == 0 && write_full(fd, &mh, sizeof mh, deadline) != 0) c = 2;
    if (c != 0) {
      if (fd >= 0) close(fd);
      snprintf(err, errn,
               "%s: rank %u could not connect to rank %u (process %d): %s (the peer left before the links between "
               "the ranks were set up)",
               fn, rank, j, (int)m->peers[j].pid, c == 1 ? "timeout" : strerror(e));
      rc = c == 1 ? HCCL_E_TIMEOUT : HCCL_E_TCP_CONNECT;
      goto out;
    }
    m->fds[j] = fd;
  }
  for (uint32_t got = 0; got < nranks - 1 - rank;) {
    int wr = wait_fd(lfd, POLLIN, deadline);
    if (wr <= 0) {
      uint64_t missing = 0;
      for (uint32_t j = rank + 1; j < nranks; j++)
        if (m->fds[j] < 0) missing |= 1ULL << j;
      char list[256];
      rank_list(list, sizeof list, missing);
      snprintf(err, errn, "%s: rank %u: rank(s) %s did not connect within the connect timeout (%" PRId64 " ms)", fn,
               rank, list, timeout_ms);
      rc = HCCL_E_TIMEOUT;
      goto out;
    }
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) continue;
    MeshHello in;
    if (read_full(fd, &in, sizeof in, deadline) != 0 || in.magic != MESH_MAGIC || in.session != ri->session ||
        in.rank <= rank || in.rank >= nranks || m->fds[in.rank] >= 0) {
      close(fd); /* not one of ours */
      continue;
    }
    m->fds[in.rank] = fd;
    got++;
  }
out:
  if (sfd >= 0) close(sfd);
  close(lfd);
  if (rc != HCCL_SUCCESS) hccl_tp_close(m);
  return rc;
}

/* ======================================================================================
 * Collectives: every rank sends its header (+ payload) to every other rank and reads theirs.
 * ====================================================================================== */
static const char *kind_name(uint32_t k) {
  static const char *const n[] = {"?", "HcclAllReduce", "HcclAllGather", "HcclBroadcast", "HcclBarrier"};
  return k < 5 ? n[k] : "?";
}

static void describe_hdr(char *buf, size_t n, const HcclTpHdr *h) {
  snprintf(buf, n, "%s collective #%" PRIu64 " (count %" PRIu64 ", dataType %d, %s %d, %" PRIu64 " bytes)",
           kind_name(h->kind), h->seq, h->count, h->dtype,
           h->kind == HCCL_TP_BROADCAST ? "root" : "op", h->arg, h->bytes);
}

HcclTpStatus hccl_tp_exchange(HcclTpMesh *m, const HcclTpHdr *mine, const HcclTpXfer *x, int64_t timeout_ms,
                              uint64_t *bad, char *err, size_t errn) {
  const uint32_t n = m->nranks, me = m->rank;
  const uint64_t H = sizeof(HcclTpHdr);
  HcclTpHdr out[HCCL_TP_MAX_RANKS], in[HCCL_TP_MAX_RANKS];
  uint64_t sent[HCCL_TP_MAX_RANKS] = {0}, rcvd[HCCL_TP_MAX_RANKS] = {0};
  /* A peer whose connection closed, or whose header differs from ours, is set aside; the exchange
   * goes on with the others, so the ranks that are fine finish with each other and every one of
   * them names the same culprits (a survivor never closes a link another survivor still needs). To
   * a mismatched peer only our header is finished, so it sees the mismatch too. */
  uint64_t dead = 0, odd = 0;
  char odd_text[600] = "";
  *bad = 0;
  err[0] = '\0';
  for (uint32_t r = 0; r < n; r++) {
    out[r] = *mine;
    out[r].bytes = x[r].send_bytes;
  }
  int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
  for (;;) {
    struct pollfd p[HCCL_TP_MAX_RANKS];
    uint32_t who[HCCL_TP_MAX_RANKS];
    nfds_t np = 0;
    for (uint32_t r = 0; r < n; r++) {
      if (r == me || (dead & (1ULL << r))) continue;
      bool is_odd = odd & (1ULL << r);
      bool send_left = sent[r] < (is_odd ? H : H + x[r].send_bytes);
      bool recv_left = !is_odd && rcvd[r] < H + x[r].recv_bytes;
      if (!send_left && !recv_left) continue;
      p[np].fd = m->fds[r];
      p[np].events = (short)((send_left ? POLLOUT : 0) | (recv_left ? POLLIN : 0));
      p[np].revents = 0;
      who[np++] = r;
    }
    if (np == 0) break;
    int wait = left_ms(deadline);
    int pr = wait == 0 ? 0 : poll(p, np, wait);
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) {
      snprintf(err, errn, "poll failed: %s", strerror(errno));
      return HCCL_TP_SYSCALL;
    }
    if (pr == 0) {
      /* Ranks whose data never (fully) arrived; if every rank's did, the ones not reading ours. */
      uint64_t late = 0;
      for (nfds_t i = 0; i < np; i++)
        if (!(odd & (1ULL << who[i])) && rcvd[who[i]] < H + x[who[i]].recv_bytes) late |= 1ULL << who[i];
      bool reading = late != 0;
      if (!reading)
        for (nfds_t i = 0; i < np; i++) late |= 1ULL << who[i];
      char list[256];
      rank_list(list, sizeof list, late);
      snprintf(err, errn, "rank(s) [%s] %s within the exec timeout", list,
               reading ? "did not send their part of this collective" : "did not read this rank's part");
      if (dead) {
        char d[256];
        rank_list(d, sizeof d, dead);
        append(err, errn, "; rank(s) [%s] closed their connection", d);
      }
      *bad = late | dead;
      return HCCL_TP_TIMEOUT;
    }
    for (nfds_t i = 0; i < np; i++) {
      uint32_t r = who[i];
      short ev = p[i].revents;
      if (!ev) continue;
      bool closed = false, is_odd = odd & (1ULL << r);
      if ((ev & (POLLIN | POLLHUP | POLLERR)) && !is_odd && rcvd[r] < H + x[r].recv_bytes) {
        char *dst;
        uint64_t want;
        if (rcvd[r] < H) {
          dst = (char *)&in[r] + rcvd[r];
          want = H - rcvd[r];
        } else {
          dst = (char *)x[r].recv + (rcvd[r] - H);
          want = H + x[r].recv_bytes - rcvd[r];
        }
        ssize_t k = recv(m->fds[r], dst, want, MSG_DONTWAIT);
        if (k > 0) {
          bool had_hdr = rcvd[r] >= H;
          rcvd[r] += (uint64_t)k;
          if (!had_hdr && rcvd[r] >= H) {
            HcclTpHdr want_hdr = *mine;
            want_hdr.bytes = x[r].recv_bytes;
            if (memcmp(&in[r], &want_hdr, H) != 0) {
              odd |= 1ULL << r;
              is_odd = true;
              if (!odd_text[0]) {
                char a[256], b[256];
                describe_hdr(a, sizeof a, &in[r]);
                describe_hdr(b, sizeof b, &want_hdr);
                if (in[r].magic != HCCL_TP_WIRE_MAGIC)
                  snprintf(odd_text, sizeof odd_text, "rank %u sent something that is not a collective", r);
                else
                  snprintf(odd_text, sizeof odd_text, "rank %u issued %.250s where this rank issued %.250s", r, a, b);
              }
            }
          }
        } else if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          closed = true;
        }
      }
      uint64_t send_end = is_odd ? H : H + x[r].send_bytes;
      if (!closed && (ev & (POLLOUT | POLLHUP | POLLERR)) && sent[r] < send_end) {
        const char *src;
        uint64_t left;
        if (sent[r] < H) {
          src = (const char *)&out[r] + sent[r];
          left = H - sent[r];
        } else {
          src = (const char *)x[r].send + (sent[r] - H);
          left = send_end - sent[r];
        }
        ssize_t k = send(m->fds[r], src, left, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k > 0) sent[r] += (uint64_t)k;
        else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) closed = true;
      }
      if (closed) dead |= 1ULL << r;
    }
  }
  if (dead) {
    *bad = dead;
    for (uint32_t r = 0; r < n; r++)
      if (dead & (1ULL << r))
        append(err, errn, "%srank %u (process %d)", err[0] ? ", " : "", r, (int)m->peers[r].pid);
    append(err, errn, " closed %s connection: %s process exited or destroyed the communicator in the middle of "
           "the collective", (dead & (dead - 1)) ? "their" : "its", (dead & (dead - 1)) ? "their" : "its");
    return HCCL_TP_PEER_CLOSED;
  }
  if (odd) {
    *bad = odd;
    snprintf(err, errn, "%s", odd_text);
    return HCCL_TP_MISMATCH;
  }
  return HCCL_TP_OK;
}
