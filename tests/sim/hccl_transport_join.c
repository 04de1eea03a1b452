/*
 * Software HCCL ("aclsim") -- joining a communicator, compiled into libaclsim_core.so:
 * HcclCommInitRootInfo's agent, which reaches the root-info server, waits for the cluster table
 * and connects every rank to every other (steps 2-3 of the flow in hccl_transport_internal.h);
 * and closing those connections.
 *
 * Citations: "hccl" is hicann/hccl, "hcomm" is the hcomm mirror xiaobingling93-pixel/cann-hcomm
 * b5f3e5be; "[aclsim]" marks the simulator's own choices. The negotiation's flow is described in
 * hccl_transport_internal.h.
 */
#define _GNU_SOURCE
#include "hccl_transport_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static atomic_uint g_name_counter;

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

