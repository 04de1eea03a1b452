/*
 * Software HCCL ("aclsim") -- one collective's exchange, compiled into libaclsim_core.so: every
 * rank sends its header (and payload) to every other rank and reads theirs, setting aside the
 * peers that closed their connection or disagree (step 4 of the flow in
 * hccl_transport_internal.h).
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
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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
