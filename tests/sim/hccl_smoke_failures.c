/*
 * Software HCCL ("aclsim") smoke test -- what fails across processes: init errors (a duplicate
 * rank, ranks disagreeing on nRanks, a rank that never joins) and failures while a collective runs
 * (a rank that exits, the exec timeout, ranks issuing different collectives).
 */
#define _GNU_SOURCE
#include "hccl_smoke.h"

#include <string.h>
#include <unistd.h>

/* ======================================================================================
 * Init errors across processes
 * ====================================================================================== */
void rank_init_case(Rank *r) {
  const InitCase *c = r->ctx;
  HcclComm comm = NULL;
  int rc = HcclCommInitRootInfo(c->nranks[r->rank], &r->ri, c->claim[r->rank], &comm);
  expect(rc, c->want[r->rank], rc ? c->needle : NULL, g_tag);
  if (rc == 0) destroy_comm(comm);
  CHECK(comm == NULL || rc == 0, "no comm on failure");
  expect_released("init case");
}

/* rank 0 only: the other rank never comes (a 600 ms connect timeout) */
void rank_alone(Rank *r) {
  HcclComm comm = NULL;
  double t0 = now_s();
  expect(HcclCommInitRootInfo(2, &r->ri, 0, &comm), HCCL_E_TIMEOUT, "missing rank(s): 1", "a rank never joins");
  double dt = now_s() - t0;
  CHECK(dt > 0.4 && dt < 5, "timed out after %.2f s", dt);
  CHECK(hstat(2) == 0, "the server ended at its deadline");
  expect_released("alone");
}

/* ======================================================================================
 * Failures while a collective runs
 * ====================================================================================== */

/* Rank n-1 exits right after joining; the others' collective fails at once with 507048. */
void rank_dies(Rank *r) {
  HcclComm comm = init_comm(r);
  if (!comm) return;
  if (r->rank == r->nranks - 1) _exit(0); /* no goodbye: the kernel closes its sockets */
  float f[64] = {0};
  void *a = dev_alloc(sizeof f);
  put(a, f, sizeof f);
  CHECK(HcclAllReduce(a, a, 64, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, r->stream) == 0, "allreduce");
  double t0 = now_s();
  char want[64];
  snprintf(want, sizeof want, "rank %d (process", r->nranks - 1);
  int rc = aclrtSynchronizeStream(r->stream);
  const char *msg = aclGetRecentErrMsg();
  CHECK(rc == 507048, "sync after a peer died: %d (%s)", rc, msg ? msg : "(none)");
  CHECK(msg && strstr(msg, "EI0002") && strstr(msg, "HcclAllReduce") && strstr(msg, "closed its connection"),
        "message: %s", msg ? msg : "(none)");
  /* The rank that detected it names the dead rank; a rank that saw another survivor bail out
   * first names that one instead. */
  if (msg && !strstr(msg, want)) fprintf(stderr, "[%s] note: %s\n", g_tag, msg);
  CHECK(now_s() - t0 < 10, "reported quickly (%.2f s)", now_s() - t0);
  CHECK(HcclAllReduce(a, a, 64, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, r->stream) == 0, "allreduce again");
  expect(aclrtSynchronizeStream(r->stream), 507048, "failed in collective #1", "a broken communicator");
  CHECK(hstat(4) == 2, "two collectives failed (%lld)", (long long)hstat(4));
  CHECK(aclrtFree(a) == 0, "free");
  destroy_comm(comm);
}

/* Rank 1 joins but never issues the collective: rank 0 waits for the exec timeout (1 s from
 * HcclCommConfig.hcclExecTimeOut on an Atlas A2, where 1 s is valid). */
void rank_exec_timeout(Rank *r) {
  HcclCommConfig cfg;
  init_config(&cfg, 1);
  HcclComm comm = NULL;
  int rc = HcclCommInitRootInfoConfig(2, &r->ri, (uint32_t)r->rank, &cfg, &comm);
  CHECK(rc == 0, "init with config: %d %s", rc, rc ? aclGetRecentErrMsg() : "");
  if (rc) return;
  if (r->rank == 1) {
    sleep(3);
    destroy_comm(comm);
    return;
  }
  int32_t x[4] = {1, 2, 3, 4};
  void *a = dev_alloc(sizeof x);
  put(a, x, sizeof x);
  CHECK(HcclAllGather(a, dev_alloc(sizeof x * 2), 4, HCCL_DATA_TYPE_INT32, comm, r->stream) == 0, "allgather");
  double t0 = now_s();
  rc = aclrtSynchronizeStream(r->stream);
  double dt = now_s() - t0;
  const char *msg = aclGetRecentErrMsg();
  CHECK(rc == 507048, "exec timeout: %d (%s)", rc, msg ? msg : "(none)");
  CHECK(msg && strstr(msg, "HcclAllGather") && strstr(msg, "EI0002") && strstr(msg, "rank(s) [1]") &&
            strstr(msg, "1.00 s (HcclCommConfig.hcclExecTimeOut)"),
        "message: %s", msg ? msg : "(none)");
  CHECK(dt > 0.8 && dt < 2.5, "waited %.2f s for a 1 s exec timeout", dt);
  destroy_comm(comm);
}

/* Ranks that issue different collectives: both fail, and HcclGetCommAsyncError reports it. */
void rank_mismatch(Rank *r) {
  HcclComm comm = init_comm(r);
  if (!comm) return;
  int32_t x[8] = {0};
  void *a = dev_alloc(sizeof x), *b = dev_alloc(sizeof x * 2);
  put(a, x, sizeof x);
  if (r->rank == 0) CHECK(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comm, r->stream) == 0, "ar");
  else CHECK(HcclAllGather(a, b, 8, HCCL_DATA_TYPE_INT32, comm, r->stream) == 0, "ag");
  expect(aclrtSynchronizeStream(r->stream), 507048, r->rank == 0 ? "issued HcclAllGather" : "issued HcclAllReduce",
         "mismatched collectives");
  HcclResult async = HCCL_SUCCESS;
  CHECK(HcclGetCommAsyncError(comm, &async) == 0 && async == HCCL_E_PARA, "async error %d", async);
  expect(0, 0, "EI0005", "async error text");
  destroy_comm(comm);
}

