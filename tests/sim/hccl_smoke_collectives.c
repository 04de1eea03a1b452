/*
 * Software HCCL ("aclsim") smoke test -- the collectives on 2 and 4 ranks (each a forked process):
 * HcclAllReduce, HcclAllGather, HcclBroadcast and HcclBarrier, their results and argument checks.
 */
#define _GNU_SOURCE
#include "hccl_smoke.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================================
 * Collectives on 2 and 4 ranks
 * ====================================================================================== */
void rank_collectives(Rank *r) {
  const int n = r->nranks, me = r->rank;
  HcclComm comm = init_comm(r);
  if (!comm) return;
  CHECK(hstat(0) == 1, "one live communicator");
  CHECK(hstat(2) == 0, "the root-info server ended once everyone joined (%lld)", (long long)hstat(2));
  uint32_t v = 99;
  CHECK(HcclGetRankSize(comm, &v) == 0 && v == (uint32_t)n, "rank size %u", v);
  CHECK(HcclGetRankId(comm, &v) == 0 && v == (uint32_t)me, "rank id %u", v);
  enum { N = 37 };

  /* fp32 sum, out of place */
  float f[N], g[N];
  for (int i = 0; i < N; i++) f[i] = (float)((me + 1) * 0.25 + i);
  void *a = dev_alloc(sizeof f), *b = dev_alloc(sizeof f * 4);
  put(a, f, sizeof f);
  CHECK(HcclAllReduce(a, b, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, r->stream) == 0, "allreduce fp32");
  CHECK(hstat(1) == 1, "one collective queued");
  get(g, b, sizeof g);
  CHECK(isnan(g[0]), "asynchronous: nothing written before the sync (%g)", g[0]);
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync fp32: %s", aclGetRecentErrMsg());
  get(g, b, sizeof g);
  double base = 0.25 * n * (n + 1) / 2.0;
  for (int i = 0; i < N; i++) CHECK(g[i] == (float)(base + (double)n * i), "fp32 sum[%d] = %g", i, g[i]);

  /* fp32 in place, max / min / prod */
  put(a, f, sizeof f);
  CHECK(HcclAllReduce(a, a, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MAX, comm, r->stream) == 0, "allreduce max in place");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync max");
  get(g, a, sizeof g);
  for (int i = 0; i < N; i++) CHECK(g[i] == (float)(n * 0.25 + i), "max[%d] = %g", i, g[i]);
  put(a, f, sizeof f);
  CHECK(HcclAllReduce(a, a, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MIN, comm, r->stream) == 0, "allreduce min");
  put(b, f, sizeof f);
  CHECK(HcclAllReduce(b, b, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_PROD, comm, r->stream) == 0, "allreduce prod");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync min + prod");
  get(g, a, sizeof g);
  for (int i = 0; i < N; i++) CHECK(g[i] == (float)(0.25 + i), "min[%d] = %g", i, g[i]);
  get(g, b, sizeof g);
  for (int i = 0; i < N; i++) {
    double p = 1;
    for (int k = 0; k < n; k++) p *= (float)((k + 1) * 0.25 + i);
    CHECK(g[i] == (float)p, "prod[%d] = %g, want %g", i, g[i], (float)p);
  }

  /* fp16 and bf16: every rank's value converted, summed in double, rounded once */
  uint16_t h[N], hg[N];
  for (int dt = 0; dt < 2; dt++) {
    int32_t type = dt ? HCCL_DATA_TYPE_BFP16 : HCCL_DATA_TYPE_FP16;
    uint16_t (*to)(double) = dt ? sim_to_bf16 : sim_to_fp16;
    double (*from)(uint16_t) = dt ? sim_from_bf16 : sim_from_fp16;
    for (int i = 0; i < N; i++) h[i] = to((me + 1) * 0.3 + i * 1.7);
    /* element 0: 2048 on rank 0, 1 elsewhere -- rounded once, 2048 + 3 = 2051 -> 2052 in fp16
     * (summing in fp16 would stay at 2048) */
    h[0] = to(me == 0 ? 2048 : 1);
    put(a, h, sizeof h);
    CHECK(HcclAllReduce(a, a, N, type, HCCL_REDUCE_SUM, comm, r->stream) == 0, "allreduce %s", dt ? "bf16" : "fp16");
    CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync 16-bit");
    get(hg, a, sizeof hg);
    for (int i = 0; i < N; i++) {
      double s = 0;
      for (int k = 0; k < n; k++) s += i == 0 ? (k == 0 ? 2048 : 1) : from(to((k + 1) * 0.3 + i * 1.7));
      CHECK(hg[i] == to(s), "%s sum[%d] = %g, want %g", dt ? "bf16" : "fp16", i, from(hg[i]), from(to(s)));
    }
    if (!dt && n == 4) CHECK(from(hg[0]) == 2052, "fp16 rounded once: %g", from(hg[0]));
  }

  /* int32 sum wraps; int8 max */
  int32_t iv[N], ig[N];
  for (int i = 0; i < N; i++) iv[i] = i == 0 ? 0x7fffffff : me * 1000 - i;
  put(a, iv, sizeof iv);
  CHECK(HcclAllReduce(a, b, N, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comm, r->stream) == 0, "allreduce int32");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync int32");
  get(ig, b, sizeof ig);
  CHECK(ig[0] == (int32_t)(uint32_t)(0x7fffffffu * (uint32_t)n), "int32 wraps: %d", ig[0]);
  for (int i = 1; i < N; i++) CHECK(ig[i] == 1000 * n * (n - 1) / 2 - n * i, "int32 sum[%d] = %d", i, ig[i]);
  int8_t cv[N], cg[N];
  for (int i = 0; i < N; i++) cv[i] = (int8_t)(me == n - 1 ? -100 : (me * 7 - i) % 120);
  put(a, cv, sizeof cv);
  CHECK(HcclAllReduce(a, b, N, HCCL_DATA_TYPE_INT8, HCCL_REDUCE_MAX, comm, r->stream) == 0, "allreduce int8 max");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync int8");
  get(cg, b, sizeof cg);
  for (int i = 0; i < N; i++) {
    int8_t m = -128;
    for (int k = 0; k < n; k++) {
      int8_t x = (int8_t)(k == n - 1 ? -100 : (k * 7 - i) % 120);
      if (x > m) m = x;
    }
    CHECK(cg[i] == m, "int8 max[%d] = %d, want %d", i, cg[i], m);
  }

  /* allGather: rank-major, rank r's block at element r * sendCount */
  for (int i = 0; i < N; i++) iv[i] = me * 100000 + i;
  put(a, iv, sizeof iv);
  int32_t *all = calloc((size_t)n * N, sizeof *all);
  void *ag = dev_alloc((size_t)n * N * sizeof(int32_t));
  CHECK(HcclAllGather(a, ag, N, HCCL_DATA_TYPE_INT32, comm, r->stream) == 0, "allgather");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync allgather");
  get(all, ag, (size_t)n * N * sizeof(int32_t));
  for (int k = 0; k < n; k++)
    for (int i = 0; i < N; i++) CHECK(all[k * N + i] == k * 100000 + i, "allgather[%d][%d] = %d", k, i, all[k * N + i]);
  /* in place: the send block is this rank's block of the output */
  int32_t mine[N];
  for (int i = 0; i < N; i++) mine[i] = -(me * 100 + i);
  put((char *)ag + (size_t)me * N * sizeof(int32_t), mine, sizeof mine);
  CHECK(HcclAllGather((char *)ag + (size_t)me * N * sizeof(int32_t), ag, N, HCCL_DATA_TYPE_INT32, comm, r->stream) == 0,
        "allgather in place");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync allgather in place");
  get(all, ag, (size_t)n * N * sizeof(int32_t));
  for (int k = 0; k < n; k++) CHECK(all[k * N + 5] == -(k * 100 + 5), "allgather in place[%d] = %d", k, all[k * N + 5]);
  free(all);

  /* broadcast from the last rank */
  for (int i = 0; i < N; i++) f[i] = (float)(me * 10 + i);
  put(a, f, sizeof f);
  CHECK(HcclBroadcast(a, N, HCCL_DATA_TYPE_FP32, (uint32_t)(n - 1), comm, r->stream) == 0, "broadcast");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync broadcast");
  get(g, a, sizeof g);
  for (int i = 0; i < N; i++) CHECK(g[i] == (float)((n - 1) * 10 + i), "broadcast[%d] = %g", i, g[i]);

  /* barrier, and two collectives queued back to back before one sync */
  CHECK(HcclBarrier(comm, r->stream) == 0, "barrier");
  CHECK(HcclAllReduce(a, a, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, r->stream) == 0, "allreduce 1");
  CHECK(HcclAllReduce(a, a, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, r->stream) == 0, "allreduce 2");
  CHECK(hstat(1) == 3, "three collectives queued (%lld)", (long long)hstat(1));
  CHECK(HcclCommDestroy(comm) == HCCL_E_AGAIN, "destroy with queued collectives");
  CHECK(aclGetRecentErrMsg() == NULL, "HCCL_E_AGAIN is a warning only (no text)");
  CHECK(aclrtSynchronizeStream(r->stream) == 0, "sync barrier + 2 allreduces: %s", aclGetRecentErrMsg());
  get(g, a, sizeof g);
  for (int i = 0; i < N; i++) CHECK(g[i] == (float)((n - 1) * 10 + i) * n * n, "twice reduced[%d] = %g", i, g[i]);
  HcclResult async = HCCL_E_INTERNAL;
  CHECK(HcclGetCommAsyncError(comm, &async) == 0 && async == HCCL_SUCCESS, "async error %d", async);

  CHECK(aclrtFree(a) == 0 && aclrtFree(b) == 0 && aclrtFree(ag) == 0, "free");
  destroy_comm(comm);
  CHECK(hstat(3) >= 14, "collectives completed (%lld)", (long long)hstat(3));
  CHECK(hstat(4) == 0, "no collective failed (%lld)", (long long)hstat(4));
}

