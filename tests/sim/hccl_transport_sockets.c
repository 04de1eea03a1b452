/*
 * Software HCCL ("aclsim") -- the transport's socket helpers, compiled into libaclsim_core.so:
 * abstract-namespace AF_UNIX addresses, listening, and reads / writes that give up at a deadline;
 * and the text helpers of its error messages.
 *
 * Citations: "hccl" is hicann/hccl, "hcomm" is the hcomm mirror xiaobingling93-pixel/cann-hcomm
 * b5f3e5be; "[aclsim]" marks the simulator's own choices. The negotiation's flow is described in
 * hccl_transport_internal.h.
 */
#define _GNU_SOURCE
#include "hccl_transport_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before `deadline` for poll(): -1 = forever (deadline < 0), else >= 0. */
int left_ms(int64_t deadline) {
  if (deadline < 0) return -1;
  int64_t l = deadline - now_ms();
  if (l < 0) return 0;
  return l > 1000000000 ? 1000000000 : (int)l;
}

socklen_t abstract_addr(struct sockaddr_un *a, const char *name) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  size_t n = strnlen(name, HCCL_TP_NAME_BYTES - 1);
  memcpy(a->sun_path + 1, name, n); /* sun_path[0] = '\0': the abstract namespace */
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int listen_abstract(const char *name) {
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
int wait_fd(int fd, short ev, int64_t deadline) {
  for (;;) {
    struct pollfd p = {.fd = fd, .events = ev};
    int r = poll(&p, 1, left_ms(deadline));
    if (r > 0) return 1;
    if (r == 0) return 0;
    if (errno != EINTR) return -1;
  }
}

/* 0: done, 1: deadline passed, 2: end of stream or socket error. */
int read_full(int fd, void *buf, size_t n, int64_t deadline) {
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

int write_full(int fd, const void *buf, size_t n, int64_t deadline) {
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

void append(char *buf, size_t n, const char *fmt, ...) {
  size_t k = strlen(buf);
  if (k + 1 >= n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + k, n - k, fmt, ap);
  va_end(ap);
}

/* "0, 2, 3" for the bits of `mask`. */
void rank_list(char *buf, size_t n, uint64_t mask) {
  buf[0] = '\0';
  bool first = true;
  for (int r = 0; r < 64; r++)
    if (mask & (1ULL << r)) {
      append(buf, n, "%s%d", first ? "" : ", ", r);
      first = false;
    }
}

