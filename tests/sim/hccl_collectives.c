/*
 * Software HCCL ("aclsim") -- libhccl.so's collectives (HcclAllReduce, HcclBroadcast,
 * HcclAllGather) and HcclBarrier, compiled into libaclsim_core.so: the checks made at the call, the
 * stream task that runs the collective at synchronisation, and how a failed collective breaks its
 * communicator. libhccl.so (export_hccl.c) exports the HCCL symbols and forwards here;
 * hccl_transport_exchange.c moves the bytes between the ranks.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SYS_MAX_COUNT (hccl src/common/hccl_common.h:42, op_common.cc:2902-2911; hcomm
 * param_check.cc:155-163, src/pub_inc/hccl_common.h:64). */
#define SYS_MAX_COUNT 0x7FFFFFFFFULL

/* ======================================================================================
 * Collectives (libhccl.so) and HcclBarrier: validated at the call, run as a stream task
 *
 * "同步下发，异步执行" -- issued synchronously, executed asynchronously (hccl
 * docs/zh/user_guide/fault_diagnosis/debug_thinking.md:192); errors found while executing are
 * reported at stream synchronisation (:195): a peer that does not take part within the exec
 * timeout makes aclrtSynchronizeStream return 507048 with EI0002 (torch_npu HCCL_timeout.md:5-16).
 * ====================================================================================== */
typedef struct {
  Comm *c;
  HcclTpKind kind;
  void *send, *recv; /* Broadcast: send == recv == buf */
  uint64_t count, block; /* elements, and bytes per rank block */
  int32_t dtype, arg;
  uint64_t send_alloc, recv_alloc;
  bool ran;
} Task;

static const char *task_name(HcclTpKind k) {
  switch (k) {
    case HCCL_TP_ALLREDUCE: return "HcclAllReduce";
    case HCCL_TP_ALLGATHER: return "HcclAllGather";
    case HCCL_TP_BROADCAST: return "HcclBroadcast";
    default: return "HcclBarrier";
  }
}


/* The communicator cannot be used any more after a failed collective ([aclsim]: its ranks are out
 * of step; CANN's would need a new communicator too). Under c->mu. */
static int collective_failed(Task *t, uint64_t seq, int code, const char *reason, const char *tail) {
  Comm *c = t->c;
  if (!c->broken) {
    c->broken = true;
    c->broken_seq = seq;
    snprintf(c->broken_why, sizeof c->broken_why, "%s", reason);
  }
  if (code == SIM_RT_FFTS_PLUS_TIMEOUT)
    return sim_fail(code,
                    "%s task (communicator \"%s\", rank %u of %u, collective #%" PRIu64 "): The execution of the "
                    "internal task times out. EI0002: The wait execution of the Notify register times out. Reason: "
                    "%s.%s",
                    task_name(t->kind), c->name, c->mesh.rank, c->mesh.nranks, seq, reason, tail);
  return sim_fail(code, "%s task (communicator \"%s\", rank %u of %u, collective #%" PRIu64 "): %s.%s",
                  task_name(t->kind), c->name, c->mesh.rank, c->mesh.nranks, seq, reason, tail);
}

/* Runs one collective (c->mu held): exchanges the blocks with every peer, then writes the result. */
static int run_exchange(Task *t, uint64_t seq) {
  Comm *c = t->c;
  const uint32_t n = c->mesh.nranks, me = c->mesh.rank;
  const uint64_t B = t->block;
  HcclTpXfer x[HCCL_TP_MAX_RANKS];
  memset(x, 0, sizeof x);
  /* [aclsim] Every buffer is staged in host memory first, so overlapping send / recv buffers
   * (in place) read the caller's data before anything is written. */
  char *stage = NULL;
  void *contrib[HCCL_TP_MAX_RANKS] = {0};
  uint64_t stage_bytes = t->kind == HCCL_TP_ALLREDUCE ? (uint64_t)n * B
                         : t->kind == HCCL_TP_ALLGATHER ? (uint64_t)n * B
                         : t->kind == HCCL_TP_BROADCAST ? B : 0;
  if (stage_bytes) {
    stage = malloc(stage_bytes);
    if (!stage)
      return collective_failed(t, seq, SIM_RT_INTERNAL_ERROR, "[aclsim] out of host memory for the staging buffers",
                               "");
  }
  switch (t->kind) {
    case HCCL_TP_ALLREDUCE:
    case HCCL_TP_ALLGATHER:
      memcpy(stage + (uint64_t)me * B, t->send, B);
      for (uint32_t r = 0; r < n; r++) {
        contrib[r] = stage + (uint64_t)r * B;
        if (r == me) continue;
        x[r] = (HcclTpXfer){stage + (uint64_t)me * B, B, contrib[r], B};
      }
      break;
    case HCCL_TP_BROADCAST:
      if (me == (uint32_t)t->arg) memcpy(stage, t->send, B);
      for (uint32_t r = 0; r < n; r++) {
        if (r == me) continue;
        if (me == (uint32_t)t->arg) x[r] = (HcclTpXfer){stage, B, NULL, 0};
        else if (r == (uint32_t)t->arg) x[r] = (HcclTpXfer){NULL, 0, stage, B};
      }
      break;
    default: break;
  }
  HcclTpHdr hdr = {.magic = HCCL_TP_WIRE_MAGIC, .kind = t->kind, .seq = seq, .count = t->count, .dtype = t->dtype,
                   .arg = t->arg};
  uint64_t bad = 0;
  char why[1024];
  HcclTpStatus st = hccl_tp_exchange(&c->mesh, &hdr, x, c->exec_ms, &bad, why, sizeof why);
  int rc = 0;
  if (st != HCCL_TP_OK) {
    char tail[512];
    switch (st) {
      case HCCL_TP_TIMEOUT: snprintf(tail, sizeof tail, " (exec timeout: %s)", c->exec_desc); break;
      case HCCL_TP_PEER_CLOSED:
        snprintf(tail, sizeof tail,
                 " [aclsim] Reported as soon as the connection closed; a device waits for the notify until the exec "
                 "timeout (%s).",
                 c->exec_desc);
        break;
      case HCCL_TP_MISMATCH:
        snprintf(tail, sizeof tail,
                 " Every rank must issue the same collectives in the same order with the same count, dataType and "
                 "op / root (hccl HcclAllReduce.md, HcclBroadcast.md:65). [aclsim] Reported at once; a device would "
                 "wait until the exec timeout (%s).",
                 c->exec_desc);
        c->inconsistent = true;
        snprintf(c->inconsistent_why, sizeof c->inconsistent_why, "%.500s", why);
        break;
      default: tail[0] = '\0'; break;
    }
    rc = collective_failed(t, seq, SIM_RT_FFTS_PLUS_TIMEOUT, why, tail);
  } else if (t->recv_alloc && !sim_dev_alloc_live(t->recv_alloc)) {
    /* The output was freed while the collective ran (the task validated it just before). */
    rc = collective_failed(t, seq, SIM_RT_INTERNAL_ERROR,
                           "the device memory of recvBuf was freed before the stream was synchronised", "");
  } else {
    switch (t->kind) {
      case HCCL_TP_ALLREDUCE: reduce(t->dtype, t->arg, t->recv, contrib, n, t->count); break;
      case HCCL_TP_ALLGATHER: memcpy(t->recv, stage, (uint64_t)n * B); break;
      case HCCL_TP_BROADCAST:
        if (me != (uint32_t)t->arg) memcpy(t->recv, stage, B);
        break;
      default: break;
    }
  }
  free(stage);
  return rc;
}

static int task_run(void *arg) {
  Task *t = arg;
  Comm *c = t->c;
  t->ran = true;
  pthread_mutex_lock(&c->mu);
  uint64_t seq = ++c->seq;
  int rc;
  if (c->broken) {
    char reason[1024];
    snprintf(reason, sizeof reason,
             "the communicator failed in collective #%" PRIu64 " (%s); every later collective on it fails: "
             "destroy it (HcclCommDestroy) and create a new one",
             c->broken_seq, c->broken_why);
    rc = collective_failed(t, seq, SIM_RT_FFTS_PLUS_TIMEOUT, reason, "");
  } else if (t->send_alloc && !sim_dev_alloc_live(t->send_alloc)) {
    rc = collective_failed(t, seq, SIM_RT_INTERNAL_ERROR,
                           "the device memory of sendBuf was freed before the stream was synchronised; buffers must stay "
                           "allocated until aclrtSynchronizeStream returns (this rank did not take part: its peers "
                           "will wait for it)",
                           "");
  } else if (t->recv_alloc && !sim_dev_alloc_live(t->recv_alloc)) {
    rc = collective_failed(t, seq, SIM_RT_INTERNAL_ERROR,
                           "the device memory of recvBuf was freed before the stream was synchronised (this rank did "
                           "not take part: its peers will wait for it)",
                           "");
  } else {
    rc = run_exchange(t, seq);
  }
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_lock(&g_mu);
  if (rc) g_failed++;
  else g_done++;
  pthread_mutex_unlock(&g_mu);
  return rc;
}

/* Called exactly once per task, after task_run or instead of it (the task was discarded). */
static void task_drop(void *arg) {
  Task *t = arg;
  pthread_mutex_lock(&g_mu);
  t->c->pending--;
  g_pending_tasks--;
  if (!t->ran) g_failed++;
  pthread_mutex_unlock(&g_mu);
  free(t);
}

/* [aclsim] A buffer must lie inside one live aclrtMalloc allocation (CANN's device would fault or
 * corrupt memory instead): HCCL_E_PARA. */
static int check_buf(const char *fn, const char *what, const void *p, uint64_t bytes, uint64_t *alloc) {
  *alloc = sim_dev_range_alloc(p, bytes);
  if (*alloc) return 0;
  char d[256];
  sim_describe_ptr(p, d, sizeof d);
  return sim_fail(HCCL_E_PARA,
                  "%s: [aclsim] %s %p: %" PRIu64 " bytes are not inside one live device allocation (%s); "
                  "collective buffers must be aclrtMalloc memory of the communicator's device",
                  fn, what, p, bytes, d);
}

/* Queues the task on the stream (the comm is already reserved; released on failure). */
static int launch(const char *fn, Task *t, void *stream) {
  int rc = sim_stream_enqueue(fn, stream, SIM_RT_PARAM_INVALID, task_run, task_drop, t);
  if (rc) {
    comm_unreserve(t->c);
    free(t);
    return sim_fail(HCCL_E_RUNTIME, "%s: call runtime api fail: the task could not be sent to stream %p (runtime "
                    "status %d)", fn, stream, rc);
  }
  return 0;
}

/* The checks every collective makes before it is queued, in CANN's order (hcomm
 * op_base_host.cc:102-112, hccl all_reduce_op.cc:37, 135-157, op_base.cc:2124, 2678):
 * count == 0 -> SUCCESS with a warning, before any pointer check; NULL comm / buffers / stream ->
 * HCCL_E_PTR (param_check.cc:412-414); count > SYS_MAX_COUNT -> HCCL_E_PARA; data type / op ->
 * HCCL_E_NOT_SUPPORT. Then ([aclsim] order): no device -> HCCL_E_RUNTIME; a destroyed comm ->
 * HCCL_E_PARA; Broadcast root >= rankSize -> HCCL_E_PARA (op_base.cc:2166-2169, param_check.cc:384-392);
 * buffers not live device memory of the needed size -> HCCL_E_PARA. */
static int collective(const char *fn, HcclTpKind kind, void *send, void *recv, uint64_t count, int32_t dtype,
                      int32_t arg, HcclComm comm, void *stream) {
  if (count == 0) return quiet(HCCL_SUCCESS, "%s: count is 0, nothing to do", fn);
  if (!comm) return sim_fail(HCCL_E_PTR, "%s: ptr [comm] is nullptr, return HCCL_E_PTR", fn);
  if (!send)
    return sim_fail(HCCL_E_PTR, "%s: ptr [%s] is nullptr, return HCCL_E_PTR", fn,
                    kind == HCCL_TP_BROADCAST ? "buf" : "sendBuf");
  if (!recv) return sim_fail(HCCL_E_PTR, "%s: ptr [recvBuf] is nullptr, return HCCL_E_PTR", fn);
  if (!stream) return sim_fail(HCCL_E_PTR, "%s: ptr [stream] is nullptr, return HCCL_E_PTR", fn);
  if (count > SYS_MAX_COUNT)
    return sim_fail(HCCL_E_PARA, "%s: count[%" PRIu64 "] is out of range, the maximum is %llu (SYS_MAX_COUNT)", fn, count,
                    SYS_MAX_COUNT);
  int rc = check_types(fn, dtype, arg, kind == HCCL_TP_ALLREDUCE);
  if (rc) return rc;
  rc = hccl_need_device(fn, NULL);
  if (rc) return rc;
  Comm *c;
  rc = comm_reserve(fn, comm, &c);
  if (rc) return rc;
  uint32_t n = c->mesh.nranks;
  if (kind == HCCL_TP_BROADCAST && (uint32_t)arg >= n) {
    comm_unreserve(c);
    return sim_fail(HCCL_E_PARA, "%s: root[%u] should be less than rankSize[%u]", fn, (uint32_t)arg, n);
  }
  uint64_t block = count * dtype_size(dtype);
  uint64_t sa = 0, ra = 0;
  rc = check_buf(fn, kind == HCCL_TP_BROADCAST ? "buf" : "sendBuf", send, block, &sa);
  if (!rc && kind != HCCL_TP_BROADCAST)
    rc = check_buf(fn, "recvBuf", recv, kind == HCCL_TP_ALLGATHER ? block * n : block, &ra);
  if (kind == HCCL_TP_BROADCAST) ra = sa;
  if (rc) {
    comm_unreserve(c);
    return rc;
  }
  Task *t = calloc(1, sizeof *t);
  if (!t) {
    comm_unreserve(c);
    return sim_fail(HCCL_E_MEMORY, "%s: out of memory", fn);
  }
  *t = (Task){.c = c, .kind = kind, .send = send, .recv = recv, .count = count, .block = block, .dtype = dtype,
              .arg = arg, .send_alloc = sa, .recv_alloc = ra};
  return launch(fn, t, stream);
}

/* hccl include/hccl.h:35-37; in place (sendBuf == recvBuf) is allowed (torch_npu
 * ProcessGroupHCCL.cpp:4754-4784 passes one tensor as both; hccl all_reduce_auto_selector.cc:133-158). */
int sim_hccl_all_reduce(void *sendBuf, void *recvBuf, uint64_t count, int32_t dtype, int32_t op, HcclComm comm,
                        void *stream) {
  return collective("HcclAllReduce", HCCL_TP_ALLREDUCE, sendBuf, recvBuf, count, dtype, op, comm, stream);
}

/* hccl include/hccl.h:51-52; buf is the input on the root and the output elsewhere
 * (HcclBroadcast.md:37). [aclsim] Every rank also exchanges a header with every other rank, so a
 * broadcast completes on no rank before all ranks issued it. */
int sim_hccl_broadcast(void *buf, uint64_t count, int32_t dtype, uint32_t root, HcclComm comm, void *stream) {
  return collective("HcclBroadcast", HCCL_TP_BROADCAST, buf, buf, count, dtype, (int32_t)root, comm, stream);
}

/* hccl include/hccl.h:120-121; recvBuf holds sendCount * rankSize elements, rank r's block at
 * element r * sendCount (HcclAllGather.md:23,28,42,94). */
int sim_hccl_all_gather(void *sendBuf, void *recvBuf, uint64_t sendCount, int32_t dtype, HcclComm comm,
                        void *stream) {
  return collective("HcclAllGather", HCCL_TP_ALLGATHER, sendBuf, recvBuf, sendCount, dtype, 0, comm, stream);
}

/* hcomm op_base_host.cc:184-240 (an fp32 SUM allreduce on internal buffers): blocks the streams of
 * all ranks until every rank issued it (HcclBarrier.md:30). [aclsim] A header exchange. */
int sim_hccl_barrier(HcclComm comm, void *stream) {
  static const char *const fn = "HcclBarrier";
  if (!comm) return sim_fail(HCCL_E_PTR, "%s: ptr [comm] is nullptr, return HCCL_E_PTR", fn);
  if (!stream) return sim_fail(HCCL_E_PTR, "%s: ptr [stream] is nullptr, return HCCL_E_PTR", fn);
  int rc = hccl_need_device(fn, NULL);
  if (rc) return rc;
  Comm *c;
  rc = comm_reserve(fn, comm, &c);
  if (rc) return rc;
  Task *t = calloc(1, sizeof *t);
  if (!t) {
    comm_unreserve(c);
    return sim_fail(HCCL_E_MEMORY, "%s: out of memory", fn);
  }
  *t = (Task){.c = c, .kind = HCCL_TP_BARRIER};
  return launch(fn, t, stream);
}
