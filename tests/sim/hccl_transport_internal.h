/*
 * Software HCCL ("aclsim") -- declarations shared by the transport's sources
 * (hccl_transport_sockets.c, hccl_transport_connect_timeout.c, hccl_transport_root_server.c,
 * hccl_transport_join.c, hccl_transport_exchange.c) and by nothing else: the negotiation's
 * messages and the socket helpers. Their entry points, hccl_tp_*, are declared in hccl_sim.h.
 * Nothing here is exported (the core is built with -fvisibility=hidden).
 *
 * The transport between the ranks: Unix domain stream sockets in the Linux abstract namespace (no
 * files), so the ranks may be processes (or threads) of this machine. Compiled into
 * libaclsim_core.so; hccl_comms.c and hccl_collectives.c hold the API semantics.
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
#ifndef ACLSIM_HCCL_TRANSPORT_INTERNAL_H
#define ACLSIM_HCCL_TRANSPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "hccl_sim.h"

#define BOOT_MAGIC 0x48434253u /* "HCBS" */
#define MESH_MAGIC 0x4843424du /* "HCBM" */
#define MAX_AGENTS 256
#define REPLY_TEXT 1024

/* ---- the root-info server's sessions (hccl_transport_root_server.c) -------------------- */
/* Waits up to wait_ms until the server of `session`, if it runs in this process, answered every
 * agent. */
void server_wait(uint64_t session, int64_t wait_ms);

/* ---- sockets with deadlines, and text helpers (hccl_transport_sockets.c) --------------- */
int64_t now_ms(void);
/* Milliseconds left before `deadline` for poll(): -1 = forever (deadline < 0), else >= 0. */
int left_ms(int64_t deadline);
socklen_t abstract_addr(struct sockaddr_un *a, const char *name);
int listen_abstract(const char *name);
/* 1: fd ready, 0: deadline passed, -1: poll error. */
int wait_fd(int fd, short ev, int64_t deadline);
/* 0: done, 1: deadline passed, 2: end of stream or socket error. */
int read_full(int fd, void *buf, size_t n, int64_t deadline);
int write_full(int fd, const void *buf, size_t n, int64_t deadline);
void append(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "0, 2, 3" for the bits of `mask`. */
void rank_list(char *buf, size_t n, uint64_t mask);

/* ---- the negotiation's messages ------------------------------------------------------- */
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

#endif
