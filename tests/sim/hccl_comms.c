/*
 * Software HCCL ("aclsim") -- communicators and libhcomm.so's calls, compiled into
 * libaclsim_core.so: the registry of communicators (opaque handles with never-reused ids),
 * HcclGetRootInfo, HcclCommInitRootInfo[Config], HcclCommDestroy, HcclGetRankSize / Id,
 * HcclGetCommAsyncError, HcclGetErrorString and the hook aclsimHcclGetStats. libhcomm.so
 * (export_hcomm.c) exports the HCCL symbols and forwards here; hccl_transport_root_server.c and
 * hccl_transport_join.c negotiate the communicators between the ranks.
 * tests/sim/README_hccl.md ("Software HCCL") documents every choice.
 *
 * Citations name the CANN source a behaviour is modelled on:
 * "hcomm" is the CANN hcomm mirror xiaobingling93-pixel/cann-hcomm b5f3e5be (line numbers of that
 * snapshot), "hccl" is hicann/hccl 09300b70, "runtime" is hicann/runtime, "torch_npu" is
 * Ascend/pytorch 9e73e708. "[aclsim]" marks the simulator's own choices.
 *
 * Errors: every failing call reports a text with sim_fail, so aclGetRecentErrMsg() returns it on
 * the calling thread (CANN reports HCCL's input errors as EIxxxx messages through the same error
 * manager); a failure CANN only logs as a warning (count 0, destroying NULL, HCCL_E_AGAIN) queues
 * nothing.
 */
#define _GNU_SOURCE
#include "hccl_sim_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failure CANN only logs as a warning: returns `code`, queues no text (ACLSIM_VERBOSE prints). */
int quiet(int code, const char *fmt, ...) {
  if (getenv("ACLSIM_VERBOSE") == NULL) return code;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[aclsim] %d (HCCL warning only, no error message): %s\n", code, buf);
  return code;
}

/* ======================================================================================
 * Communicators: opaque handles with never-reused ids (a destroyed comm is always recognised)
 * ====================================================================================== */
#define COMM_BASE 0x4CC100000000ULL
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* registry and counters */
static Comm **g_comms;                                   /* by id; NULL once destroyed */
static uint64_t g_ncomms = 1, g_capcomms;
static int64_t g_live_comms;
int64_t g_pending_tasks, g_done, g_failed;

/* Under g_mu. */
static Comm *comm_get(HcclComm h, const char **why) {
  uintptr_t u = (uintptr_t)h;
  if (u < COMM_BASE + 16 || (u - COMM_BASE) % 16 != 0 || (u - COMM_BASE) / 16 >= g_ncomms) {
    *why = "is not a communicator made by HcclCommInitRootInfo";
    return NULL;
  }
  Comm *c = g_comms[(u - COMM_BASE) / 16];
  if (!c) *why = "was already destroyed";
  return c;
}

/* Resolves `h` and marks it in use by one more task (released by task_drop / unreserve).
 * A handle that is not a live communicator is HCCL_E_PARA, as HcclCommDestroy's "comm is not exist"
 * (hcomm op_base.cc:3297-3307); CANN would use freed memory on most other calls. */
int comm_reserve(const char *fn, HcclComm h, Comm **out) {
  const char *why = NULL;
  pthread_mutex_lock(&g_mu);
  Comm *c = comm_get(h, &why);
  if (c) {
    c->pending++;
    g_pending_tasks++;
  }
  pthread_mutex_unlock(&g_mu);
  if (!c) return sim_fail(HCCL_E_PARA, "%s: comm %p %s ([aclsim]: CANN would use freed memory)", fn, h, why);
  *out = c;
  return 0;
}

void comm_unreserve(Comm *c) {
  pthread_mutex_lock(&g_mu);
  c->pending--;
  g_pending_tasks--;
  pthread_mutex_unlock(&g_mu);
}

/* HcclDeviceRefresh -> hrtGetDeviceRefresh: aclrtGetDevice fails -> HCCL_E_RUNTIME, "rtGet device
 * fail, please make sure that device is set." (hcomm src/platform/common/adapter/adapter_rts.cc:221-234).
 * aclrtGetDevice's own 107002 text is queued first, as on CANN. */
int hccl_need_device(const char *fn, int32_t *dev) {
  int32_t d = -1;
  int rc = sim_rt_get_device(&d);
  if (rc)
    return sim_fail(HCCL_E_RUNTIME,
                    "%s: [Get][DeviceRefresh]rtGet device fail, please make sure that device is set. return[%d] "
                    "(HCCL_E_RUNTIME: call aclrtSetDevice on this thread first)",
                    fn, rc);
  if (dev) *dev = d;
  return 0;
}

/* ======================================================================================
 * Management (libhcomm.so)
 * ====================================================================================== */

/* hcomm op_base.cc:1312-1349 HcclGetRootInfo: HcclDeviceRefresh (:1316), then the server is set up
 * and left running in the background (TopoInfoDetect::SetupServer); returns at once. */
int sim_hccl_get_root_info(HcclRootInfo *rootInfo) {
  static const char *const fn = "HcclGetRootInfo";
  int32_t dev = -1;
  int rc = hccl_need_device(fn, &dev);
  if (rc) return rc;
  if (!rootInfo) return sim_fail(HCCL_E_PTR, "%s: ptr [rootInfo] is nullptr, return HCCL_E_PTR", fn);
  char err[1024];
  int64_t timeout = hccl_tp_connect_timeout_ms(err, sizeof err);
  if (timeout < 0) return sim_fail(HCCL_E_PARA, "%s: %s", fn, err);
  HcclSimRootInfo ri;
  rc = hccl_tp_server_start(&ri, dev, timeout, err, sizeof err);
  if (rc) return sim_fail(rc, "%s", err);
  memset(rootInfo, 0, sizeof *rootInfo);
  memcpy(rootInfo->internal, &ri, sizeof ri);
  return 0;
}

/* hcomm op_base.cc:1795-1835 HcclCommInitRootInfoInner (and :2017 HcclCommInitRootInfoConfig):
 * HcclDeviceRefresh; nRanks == 0 -> HCCL_E_PARA; rank >= nRanks -> HCCL_E_PARA; NULL comm or
 * rootInfo -> HCCL_E_PTR; the environment (HCCL_CONNECT_TIMEOUT, HCCL_EXEC_TIMEOUT) -> HCCL_E_PARA;
 * then the negotiation (hccl_transport_join.c), which blocks until every rank joined. */
int sim_hccl_comm_init(const char *fn, uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                       const HcclCommConfig *config, bool with_config, HcclComm *comm) {
  int32_t dev = -1;
  int rc = hccl_need_device(fn, &dev);
  if (rc) return rc;
  if (nRanks == 0) return sim_fail(HCCL_E_PARA, "%s: [Init][CommRootInfoInner] nRanks[%u] should be greater than 0.", fn, nRanks);
  if (rank >= nRanks)
    return sim_fail(HCCL_E_PARA, "%s: [Init][CommRootInfoInner] rank[%u] should be less than nRanks[%u].", fn, rank,
                    nRanks);
  if (!comm) return sim_fail(HCCL_E_PTR, "%s: ptr [comm] is nullptr, return HCCL_E_PTR", fn);
  if (!rootInfo) return sim_fail(HCCL_E_PTR, "%s: ptr [rootInfo] is nullptr, return HCCL_E_PTR", fn);
  char name[160] = "";
  bool exec_set = false;
  int32_t exec_cfg = HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET;
  if (with_config) {
    if (!config) return sim_fail(HCCL_E_PTR, "%s: ptr [config] is nullptr, return HCCL_E_PTR", fn);
    rc = load_config(fn, config, name, sizeof name, &exec_set, &exec_cfg);
    if (rc) return rc;
  }
  if (nRanks > HCCL_TP_MAX_RANKS)
    return sim_fail(HCCL_E_NOT_SUPPORT, "%s: [aclsim] nRanks[%u]: the simulator supports at most %d ranks", fn, nRanks,
                    HCCL_TP_MAX_RANKS);
  char err[1536];
  int64_t connect_ms = hccl_tp_connect_timeout_ms(err, sizeof err);
  if (connect_ms < 0) return sim_fail(HCCL_E_PARA, "%s: init external input error: %s", fn, err);
  int64_t exec_ms = -1;
  char exec_desc[160];
  rc = exec_timeout(fn, exec_set, exec_cfg, &exec_ms, exec_desc, sizeof exec_desc);
  if (rc) return rc;
  HcclSimRootInfo ri;
  memcpy(&ri, rootInfo->internal, sizeof ri);
  if (memcmp(ri.magic, "ACLSHCCL", 8) != 0 || ri.version != 1)
    return sim_fail(HCCL_E_PARA, "%s: [aclsim] rootInfo was not filled by HcclGetRootInfo (it must be the 4108 "
                    "bytes HcclGetRootInfo wrote on the root, passed unchanged to every rank)", fn);
  ri.server[sizeof ri.server - 1] = '\0';
  ri.identifier[sizeof ri.identifier - 1] = '\0';
  Comm *c = calloc(1, sizeof *c);
  if (!c) return sim_fail(HCCL_E_MEMORY, "%s: out of memory", fn);
  rc = hccl_tp_join(&ri, nRanks, rank, dev, connect_ms, &c->mesh, err, sizeof err);
  if (rc) {
    free(c);
    return sim_fail(rc, "%s", err);
  }
  snprintf(c->name, sizeof c->name, "%s", name[0] ? name : ri.identifier);
  c->device = dev;
  c->exec_ms = exec_ms;
  snprintf(c->exec_desc, sizeof c->exec_desc, "%s", exec_desc);
  pthread_mutex_init(&c->mu, NULL);
  pthread_mutex_lock(&g_mu);
  if (g_ncomms >= g_capcomms) {
    uint64_t cap = g_capcomms ? g_capcomms * 2 : 64;
    Comm **p = realloc(g_comms, cap * sizeof *p);
    if (!p) {
      pthread_mutex_unlock(&g_mu);
      hccl_tp_close(&c->mesh);
      free(c);
      return sim_fail(HCCL_E_MEMORY, "%s: out of memory", fn);
    }
    g_comms = p;
    g_capcomms = cap;
  }
  c->id = g_ncomms++;
  g_comms[c->id] = c;
  g_live_comms++;
  pthread_mutex_unlock(&g_mu);
  *comm = (HcclComm)(uintptr_t)(COMM_BASE + c->id * 16);
  return 0;
}

/* hcomm op_base.cc:3273-3330: HcclDeviceRefresh first (:3290), then a NULL comm is SUCCESS with the
 * warning "An empty comm given, skip destroy." (:3292); a comm in use -> HCCL_E_AGAIN with the
 * warning "comm is in use, please try again later" (:3315-3319; no error message). [aclsim] "in
 * use" = a collective of it is queued on a stream and not yet run. Destroying closes its
 * connections: peers still in a collective with it see them close. */
int sim_hccl_comm_destroy(HcclComm comm) {
  static const char *const fn = "HcclCommDestroy";
  int rc = hccl_need_device(fn, NULL);
  if (rc) return rc;
  if (!comm) return quiet(HCCL_SUCCESS, "%s: [Destroy][HcclComm]An empty comm given, skip destroy.", fn);
  const char *why = NULL;
  pthread_mutex_lock(&g_mu);
  Comm *c = comm_get(comm, &why);
  if (c && c->pending > 0) {
    int64_t n = c->pending;
    pthread_mutex_unlock(&g_mu);
    return quiet(HCCL_E_AGAIN,
                 "%s: [HcclCommDestroy] comm is in use, please try again later (%" PRId64 " collective(s) still queued "
                 "on a stream: synchronise it first)",
                 fn, n);
  }
  if (c) {
    g_comms[c->id] = NULL;
    g_live_comms--;
  }
  pthread_mutex_unlock(&g_mu);
  if (!c)
    return sim_fail(HCCL_E_PARA, "%s: [HcclCommDestroy] comm is not exist, comm=%p (it %s)", fn, comm, why);
  hccl_tp_close(&c->mesh);
  pthread_mutex_destroy(&c->mu);
  free(c);
  return 0;
}

/* hcomm hccl_independent_rank_graph.cc:335,356 (CHK_PTR_NULL -> HCCL_E_PTR). */
static int rank_query(const char *fn, HcclComm comm, uint32_t *out, bool size) {
  if (!comm) return sim_fail(HCCL_E_PTR, "%s: ptr [comm] is nullptr, return HCCL_E_PTR", fn);
  if (!out) return sim_fail(HCCL_E_PTR, "%s: ptr [%s] is nullptr, return HCCL_E_PTR", fn, size ? "rankSize" : "rank");
  const char *why = NULL;
  pthread_mutex_lock(&g_mu);
  Comm *c = comm_get(comm, &why);
  if (c) *out = size ? c->mesh.nranks : c->mesh.rank;
  pthread_mutex_unlock(&g_mu);
  if (!c) return sim_fail(HCCL_E_PARA, "%s: comm %p %s", fn, comm, why);
  return 0;
}

int sim_hccl_get_rank_size(HcclComm comm, uint32_t *rankSize) {
  return rank_query("HcclGetRankSize", comm, rankSize, true);
}
int sim_hccl_get_rank_id(HcclComm comm, uint32_t *rank) { return rank_query("HcclGetRankId", comm, rank, false); }

/* hcomm op_base.cc:4356-4371: NULL comm (EI0003) or asyncError -> HCCL_E_PTR; *asyncError is an
 * RDMA error CQE (HCCL_E_REMOTE, which the simulator never has: docs HcclGetCommAsyncError.md:30-40)
 * or, when the heartbeat saw ranks issue inconsistent collectives, HCCL_E_PARA with EI0005
 * (heartbeat.cc:1967-1990 CheckOpInconsistentError). [aclsim] The latter after a collective whose
 * ranks disagreed (see task_run); a peer that died is not reported here (as on CANN). */
int sim_hccl_get_async_error(HcclComm comm, HcclResult *asyncError) {
  static const char *const fn = "HcclGetCommAsyncError";
  if (!comm)
    return sim_fail(HCCL_E_PTR, "%s: EI0003: HcclCommGetAsyncError: comm is nullptr, expected a non-null pointer", fn);
  if (!asyncError) return sim_fail(HCCL_E_PTR, "%s: ptr [asyncError] is nullptr, return HCCL_E_PTR", fn);
  const char *why = NULL;
  char text[600] = "";
  pthread_mutex_lock(&g_mu);
  Comm *c = comm_get(comm, &why);
  bool bad = c && c->inconsistent;
  if (bad) snprintf(text, sizeof text, "%.400s in comm [%.150s]", c->inconsistent_why, c->name);
  pthread_mutex_unlock(&g_mu);
  if (!c) return sim_fail(HCCL_E_PARA, "%s: comm %p %s", fn, comm, why);
  *asyncError = bad ? HCCL_E_PARA : HCCL_SUCCESS;
  if (bad) sim_fail(HCCL_E_PARA, "%s: EI0005: find inconsistent op: %s", fn, text);
  return 0;
}

/* hcomm op_base.cc:4378-4403 and its unit test ut_HcclGetErrorString_API_test.cc:19-170. */
const char *sim_hccl_error_string(int code) {
  static const char *const s[] = {"no error",
                                  "parameter error",
                                  "empty pointer",
                                  "memory error",
                                  "internal error",
                                  "not support feature",
                                  "not found specific resource",
                                  "resource unavailable",
                                  "call system interface error",
                                  "timeout",
                                  "open file fail",
                                  "tcp connect fail",
                                  "roce connect fail",
                                  "tcp transfer fail",
                                  "roce transfer fail",
                                  "call runtime api fail",
                                  "call driver api fail",
                                  "call profiling api fail",
                                  "call cce api fail",
                                  "call network api fail",
                                  "try again",
                                  "error cqe",
                                  "error communicator suspending",
                                  "retry constraint",
                                  "out of memory"};
  if (code < HCCL_SUCCESS || code >= HCCL_E_RESERVED) return "unknown error";
  if (code < (int)(sizeof s / sizeof s[0])) return s[code];
  return "unknown err"; /* :4401, below HCCL_E_RESERVED but not in the map (HCCL_E_IN_STATUS too) */
}

/* aclsimHcclGetStats (test hook; tests/sim/README_hccl.md):
 *  0 live communicators            1 collective tasks queued (not yet run or discarded)
 *  2 root-info servers running     3 collectives completed (cumulative)
 *  4 collectives failed or discarded (cumulative) */
#define HCCL_NSTATS 5
int32_t sim_hccl_get_stats(int64_t *out, uint64_t n) {
  pthread_mutex_lock(&g_mu);
  int64_t v[HCCL_NSTATS] = {g_live_comms, g_pending_tasks, hccl_tp_servers_running(), g_done, g_failed};
  pthread_mutex_unlock(&g_mu);
  if (out)
    for (uint64_t i = 0; i < n && i < HCCL_NSTATS; i++) out[i] = v[i];
  return HCCL_NSTATS;
}
