/*
 * Software HCCL ("aclsim") -- internal header of the HCCL simulator.
 *
 * The state (communicators, root-info servers, counters) lives in libaclsim_core.so like every
 * other simulator state; hccl_comms.c, hccl_config.c, hccl_dtypes.c, hccl_reduce.c and
 * hccl_collectives.c (API semantics, reductions; hccl_sim_internal.h joins them) and
 * the hccl_transport_*.c files (Unix sockets between the processes of this machine;
 * hccl_transport_internal.h joins them) are compiled into it.
 * The sim_hccl_* functions below are exported from the core only; libhcomm.so (export_hcomm.c) and libhccl.so
 * (export_hccl.c) export exactly the HCCL symbols of sim_hccl_api.h and forward to them.
 * The hccl_tp_* functions are internal to the core (hidden visibility).
 */
#ifndef ACLSIM_HCCL_SIM_H
#define ACLSIM_HCCL_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim.h"
#include "sim_hccl_api.h"

/* ACL_ERROR_RT_FFTS_PLUS_TIMEOUT, "The execution of the internal task times out": what
 * aclrtSynchronizeStream returns when a collective's notify wait times out (hicann/runtime
 * include/external/acl/error_codes/rt_error_codes.h:140; torch_npu
 * docs/zh/user_guide/troubleshooting/troubleshooting_cases/HCCL_timeout.md:5-16). */
#define SIM_RT_FFTS_PLUS_TIMEOUT 507048

/* ---- API (hccl_comms.c, hccl_collectives.c), exported from libaclsim_core.so ------------- */
SIM_CORE_API int sim_hccl_get_root_info(HcclRootInfo *rootInfo);
SIM_CORE_API int sim_hccl_comm_init(const char *fn, uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                                    const HcclCommConfig *config, bool with_config, HcclComm *comm);
SIM_CORE_API int sim_hccl_comm_destroy(HcclComm comm);
SIM_CORE_API int sim_hccl_get_rank_size(HcclComm comm, uint32_t *rankSize);
SIM_CORE_API int sim_hccl_get_rank_id(HcclComm comm, uint32_t *rank);
SIM_CORE_API int sim_hccl_barrier(HcclComm comm, void *stream);
SIM_CORE_API const char *sim_hccl_error_string(int code);
SIM_CORE_API int sim_hccl_get_async_error(HcclComm comm, HcclResult *asyncError);
SIM_CORE_API int sim_hccl_all_reduce(void *sendBuf, void *recvBuf, uint64_t count, int32_t dtype, int32_t op,
                                     HcclComm comm, void *stream);
SIM_CORE_API int sim_hccl_broadcast(void *buf, uint64_t count, int32_t dtype, uint32_t root, HcclComm comm,
                                    void *stream);
SIM_CORE_API int sim_hccl_all_gather(void *sendBuf, void *recvBuf, uint64_t sendCount, int32_t dtype,
                                     HcclComm comm, void *stream);
SIM_CORE_API int32_t sim_hccl_get_stats(int64_t *out, uint64_t n);

/* ---- transport (hccl_transport_*.c), internal to the core --------------------------------- */
#define HCCL_TP_MAX_RANKS 64
#define HCCL_TP_NAME_BYTES 100 /* an abstract AF_UNIX name, NUL-terminated here */

/* What HcclGetRootInfo writes into HcclRootInfo.internal (the rest of the 4108 bytes is 0).
 * CANN puts an HcclRootHandle there {ip[64], port, nicDeploy, identifier[128], rankId} (hcomm
 * op_base.cc:1336-1345, topoinfo_struct.h:116-124); this layout is the simulator's own. */
typedef struct {
  char magic[8];        /* "ACLSHCCL" */
  uint32_t version;     /* 1 */
  int32_t root_pid;     /* the process that called HcclGetRootInfo (it hosts the server) */
  uint64_t session;     /* random: tells communicators apart */
  int64_t created_us;   /* CLOCK_REALTIME of HcclGetRootInfo, microseconds */
  int32_t root_device;  /* the device set on the root's thread */
  uint32_t reserved;
  char server[HCCL_TP_NAME_BYTES];   /* abstract AF_UNIX socket name of the root-info server */
  char identifier[128]; /* like CANN's "<ip>%<nic>_<port>_<device>_<timestamp>" */
} HcclSimRootInfo;

typedef struct {
  int32_t pid, device;
  char name[HCCL_TP_NAME_BYTES]; /* the rank's data-plane listening socket */
} HcclTpPeer;

/* A joined communicator's connections: fds[r] is the stream socket to rank r (-1 for self). */
typedef struct {
  uint32_t nranks, rank;
  uint64_t session;
  int fds[HCCL_TP_MAX_RANKS];
  HcclTpPeer peers[HCCL_TP_MAX_RANKS];
} HcclTpMesh;

/* Every message of a collective starts with this header; a rank checks its peers' against its own. */
typedef struct {
  uint32_t magic;  /* HCCL_TP_WIRE_MAGIC */
  uint32_t kind;   /* HcclTpKind */
  uint64_t seq;    /* the communicator's collective number (1, 2, ...) */
  uint64_t count;
  int32_t dtype;
  int32_t arg;     /* reduce op, broadcast root, or 0 */
  uint64_t bytes;  /* payload bytes following the header */
} HcclTpHdr;
#define HCCL_TP_WIRE_MAGIC 0x48434c44u /* "HCLD" */
typedef enum { HCCL_TP_ALLREDUCE = 1, HCCL_TP_ALLGATHER, HCCL_TP_BROADCAST, HCCL_TP_BARRIER } HcclTpKind;

/* One peer's part of an exchange: what this rank sends it, and where its payload goes. */
typedef struct {
  const void *send;
  uint64_t send_bytes;
  void *recv;
  uint64_t recv_bytes;
} HcclTpXfer;

/* How an exchange ended. */
typedef enum { HCCL_TP_OK = 0, HCCL_TP_TIMEOUT, HCCL_TP_PEER_CLOSED, HCCL_TP_MISMATCH, HCCL_TP_SYSCALL } HcclTpStatus;

/* The connect timeout in milliseconds (HCCL_CONNECT_TIMEOUT, default 120 s, or the simulator-only
 * ACLSIM_HCCL_CONNECT_TIMEOUT_MS); -1 and *err set when HCCL_CONNECT_TIMEOUT is invalid. */
int64_t hccl_tp_connect_timeout_ms(char *err, size_t errn);
/* How much longer than the connect timeout an agent waits for the server's answer (20 s). */
int64_t hccl_tp_grace_ms(int64_t timeout_ms);
/* Starts the root-info server (a detached thread) and fills *ri. Returns an HcclResult. */
int hccl_tp_server_start(HcclSimRootInfo *ri, int device, int64_t timeout_ms, char *err, size_t errn);
/* Joins the communicator of `ri` as `rank` of `nranks` and connects every rank to every other.
 * Blocks until all ranks joined or the timeout. Returns an HcclResult (text in err). */
int hccl_tp_join(const HcclSimRootInfo *ri, uint32_t nranks, uint32_t rank, int device, int64_t timeout_ms,
                 HcclTpMesh *out, char *err, size_t errn);
void hccl_tp_close(HcclTpMesh *m);
/* Sends `mine` (its `bytes` replaced by x[r].send_bytes) followed by x[r].send to every other rank r,
 * and receives from every other rank r a header that must equal `mine` with `bytes` ==
 * x[r].recv_bytes, followed by that many bytes into x[r].recv. timeout_ms < 0 waits forever. On
 * failure *bad has bit r set for each rank at fault and err describes them. */
HcclTpStatus hccl_tp_exchange(HcclTpMesh *m, const HcclTpHdr *mine, const HcclTpXfer *x, int64_t timeout_ms,
                              uint64_t *bad, char *err, size_t errn);
/* Root-info servers still running in this process (counter 2). */
int64_t hccl_tp_servers_running(void);

#endif
