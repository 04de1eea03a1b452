/*
 * Software HCCL ("aclsim") smoke test -- one process: the argument checks on a one-rank
 * communicator (per SoC), a process without a device, and two threads as two ranks.
 */
#define _GNU_SOURCE
#include "hccl_smoke.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================================
 * One process: argument checks on a one-rank communicator, no device, threads as ranks
 * ====================================================================================== */
static void set_soc(const char *s) {
  if (s) setenv("ACLSIM_SOC_NAME", s, 1);
  else unsetenv("ACLSIM_SOC_NAME");
}

void single_process_checks(void) {
  snprintf(g_tag, sizeof g_tag, "single process");
  CHECK(aclInit(NULL) == 0, "aclInit");
  CHECK(aclrtSetDevice(0) == 0, "set device");
  aclrtStream s = NULL;
  CHECK(aclrtCreateStream(&s) == 0, "stream");
  HcclRootInfo ri;
  expect(HcclGetRootInfo(NULL), HCCL_E_PTR, "rootInfo", "GetRootInfo(NULL)");
  setenv("HCCL_CONNECT_TIMEOUT", "60", 1);
  expect(HcclGetRootInfo(&ri), HCCL_E_PARA, "HCCL_CONNECT_TIMEOUT", "HCCL_CONNECT_TIMEOUT below 120");
  setenv("HCCL_CONNECT_TIMEOUT", "12a", 1);
  expect(HcclGetRootInfo(&ri), HCCL_E_PARA, "timeRange[120s,7200s]", "HCCL_CONNECT_TIMEOUT not a number");
  setenv("HCCL_CONNECT_TIMEOUT", "7200", 1);
  CHECK(HcclGetRootInfo(&ri) == 0, "GetRootInfo");
  CHECK(hstat(2) == 1, "a root-info server runs (%lld)", (long long)hstat(2));
  unsetenv("HCCL_CONNECT_TIMEOUT");
  HcclComm comm = NULL;
  expect(HcclCommInitRootInfo(0, &ri, 0, &comm), HCCL_E_PARA, "nRanks[0] should be greater than 0", "nRanks 0");
  expect(HcclCommInitRootInfo(2, &ri, 2, &comm), HCCL_E_PARA, "rank[2] should be less than nRanks[2]", "rank >= nRanks");
  expect(HcclCommInitRootInfo(1, &ri, 0, NULL), HCCL_E_PTR, "comm", "NULL comm");
  expect(HcclCommInitRootInfo(1, NULL, 0, &comm), HCCL_E_PTR, "rootInfo", "NULL rootInfo");
  HcclRootInfo junk;
  memset(&junk, 7, sizeof junk);
  expect(HcclCommInitRootInfo(1, &junk, 0, &comm), HCCL_E_PARA, "HcclGetRootInfo", "root info not from GetRootInfo");
  HcclCommConfig cfg;
  init_config(&cfg, -1);
  expect(HcclCommInitRootInfoConfig(1, &ri, 0, NULL, &comm), HCCL_E_PTR, "config", "NULL config");
  cfg.reserved[8] = 0;
  expect(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &comm), HCCL_E_PARA, "HcclCommConfigInit()", "bad magic");
  init_config(&cfg, -1);
  cfg.hcclDeterministic = 3;
  expect(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &comm), HCCL_E_PARA, "hcclDeterministic", "deterministic 3");
  init_config(&cfg, -1);
  setenv("HCCL_EXEC_TIMEOUT", "1.234", 1);
  expect(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &comm), HCCL_E_PARA, "HCCL_EXEC_TIMEOUT", "3 decimals");
  setenv("HCCL_EXEC_TIMEOUT", "0", 1);
  expect(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &comm), HCCL_E_PARA, "greater than or equal to 1s",
         "0 s is invalid on the 950");
  set_soc("Ascend910B2");
  snprintf(cfg.hcclCommName, sizeof cfg.hcclCommName, "smoke-comm");
  CHECK(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &comm) == 0, "one-rank comm (HCCL_EXEC_TIMEOUT=0 valid on 910B): %s",
        aclGetRecentErrMsg());
  unsetenv("HCCL_EXEC_TIMEOUT");
  set_soc(NULL);
  CHECK(hstat(2) == 0 && hstat(0) == 1, "server done, one comm");

  float f[8] = {1, 2, 3, 4, 5, 6, 7, 8}, g[8];
  void *a = dev_alloc(sizeof f), *b = dev_alloc(sizeof f), *small = dev_alloc(8);
  put(a, f, sizeof f);
  /* count 0: SUCCESS before any pointer check, nothing queued, no text */
  CHECK(HcclAllReduce(NULL, NULL, 0, 99, 99, NULL, NULL) == 0, "count 0");
  CHECK(HcclAllGather(NULL, NULL, 0, 99, NULL, NULL) == 0 && HcclBroadcast(NULL, 0, 99, 99, NULL, NULL) == 0, "count 0");
  CHECK(aclGetRecentErrMsg() == NULL && hstat(1) == 0, "count 0 queues nothing");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, NULL, s), HCCL_E_PTR, "comm", "NULL comm");
  expect(HcclAllReduce(NULL, b, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_E_PTR, "sendBuf", "NULL send");
  expect(HcclAllReduce(a, NULL, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_E_PTR, "recvBuf", "NULL recv");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, NULL), HCCL_E_PTR, "stream", "NULL stream");
  expect(HcclAllReduce(a, b, 0x800000000ULL, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_E_PARA, "SYS_MAX_COUNT",
         "count too large");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_FP32, 4, comm, s), HCCL_E_NOT_SUPPORT, "op[4]", "bad op");
  /* data types per SoC */
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_UINT8, HCCL_REDUCE_SUM, comm, s), HCCL_E_NOT_SUPPORT, "uint8", "uint8");
  CHECK(HcclAllReduce(a, b, 2, HCCL_DATA_TYPE_FP64, HCCL_REDUCE_SUM, comm, s) == 0, "fp64 on the 950");
  CHECK(HcclAllReduce(a, b, 4, HCCL_DATA_TYPE_UINT64, HCCL_REDUCE_MAX, comm, s) == 0, "uint64 on the 950");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_BFP16, HCCL_REDUCE_PROD, comm, s), HCCL_E_NOT_SUPPORT, "prod",
         "bf16 prod on the 950");
  set_soc("Ascend910B4");
  expect(HcclAllReduce(a, b, 2, HCCL_DATA_TYPE_FP64, HCCL_REDUCE_SUM, comm, s), HCCL_E_NOT_SUPPORT, "Ascend910B",
         "fp64 on A2");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_INT16, HCCL_REDUCE_PROD, comm, s), HCCL_E_NOT_SUPPORT, "prod",
         "int16 prod on A2");
  CHECK(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_BFP16, HCCL_REDUCE_MAX, comm, s) == 0, "bf16 max on A2");
  set_soc("Ascend910A");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_BFP16, HCCL_REDUCE_SUM, comm, s), HCCL_E_NOT_SUPPORT, "Ascend910",
         "bf16 on 910");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_INT16, HCCL_REDUCE_SUM, comm, s), HCCL_E_NOT_SUPPORT, "int16",
         "int16 on 910");
  set_soc("Ascend310P3");
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_INT16, HCCL_REDUCE_MAX, comm, s), HCCL_E_NOT_SUPPORT, "only op sum",
         "int16 max on 310P");
  CHECK(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_INT16, HCCL_REDUCE_SUM, comm, s) == 0, "int16 sum on 310P");
  expect(HcclAllGather(a, b, 4, HCCL_DATA_TYPE_BFP16, comm, s), HCCL_E_NOT_SUPPORT, "bfp16", "allgather bf16 on 310P");
  set_soc(NULL);
  CHECK(HcclAllGather(a, b, 8, HCCL_DATA_TYPE_FP8E4M3, comm, s) == 0, "allgather fp8 on the 950");
  expect(HcclAllGather(a, b, 8, 13, comm, s), HCCL_E_NOT_SUPPORT, "dataType[13]", "allgather dtype 13");
  CHECK(aclrtSynchronizeStream(s) == 0, "sync the one-rank collectives: %s", aclGetRecentErrMsg());
  /* buffers, root */
  expect(HcclBroadcast(a, 8, HCCL_DATA_TYPE_FP32, 1, comm, s), HCCL_E_PARA, "root[1] should be less than rankSize[1]",
         "root out of range");
  expect(HcclAllReduce(f, b, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_E_PARA, "not inside one live device",
         "host sendBuf");
  void *big = dev_alloc(1024);
  expect(HcclAllReduce(big, small, 64, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_E_PARA, "recvBuf",
         "recvBuf too small");
  CHECK(aclrtFree(big) == 0, "free big");
  expect(HcclAllGather(a, b, 8, HCCL_DATA_TYPE_FP32, comm, s), 0, NULL, "allgather of one rank fits");
  CHECK(aclrtSynchronizeStream(s) == 0, "sync");
  /* one rank: allreduce is a copy (rounded to the type) */
  CHECK(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s) == 0, "allreduce one rank");
  CHECK(aclrtSynchronizeStream(s) == 0, "sync");
  get(g, b, sizeof g);
  CHECK(memcmp(f, g, sizeof f) == 0, "one-rank allreduce copies");
  /* a buffer freed before the sync: 507000, and the communicator is broken afterwards */
  void *tmp = dev_alloc(sizeof f);
  CHECK(HcclAllReduce(tmp, b, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s) == 0, "allreduce");
  CHECK(aclrtFree(tmp) == 0, "free before sync");
  expect(aclrtSynchronizeStream(s), 507000, "sendBuf was freed", "freed buffer");
  /* stale handles */
  HcclComm bogus = (HcclComm)(uintptr_t)0x1234;
  expect(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, bogus, s), HCCL_E_PARA, "not a communicator",
         "not a comm");
  uint32_t v;
  expect(HcclGetRankSize(comm, NULL), HCCL_E_PTR, "rankSize", "NULL rankSize");
  expect(HcclGetRankId(NULL, &v), HCCL_E_PTR, "comm", "NULL comm rank id");
  HcclResult async;
  expect(HcclGetCommAsyncError(NULL, &async), HCCL_E_PTR, "EI0003", "async error of NULL");
  CHECK(HcclCommDestroy(NULL) == 0 && aclGetRecentErrMsg() == NULL, "destroy NULL: success, warning only");
  destroy_comm(comm);
  expect(HcclCommDestroy(comm), HCCL_E_PARA, "comm is not exist", "double destroy");
  expect(HcclGetRankSize(comm, &v), HCCL_E_PARA, "already destroyed", "rank size of a destroyed comm");
  expect(HcclBarrier(comm, s), HCCL_E_PARA, "already destroyed", "barrier on a destroyed comm");

  /* HcclGetErrorString (hcomm op_base.cc:4378-4403) */
  CHECK(!strcmp(HcclGetErrorString(HCCL_SUCCESS), "no error"), "0");
  CHECK(!strcmp(HcclGetErrorString(HCCL_E_RUNTIME), "call runtime api fail"), "15");
  CHECK(!strcmp(HcclGetErrorString(HCCL_E_OOM), "out of memory"), "24");
  CHECK(!strcmp(HcclGetErrorString((HcclResult)25), "unknown err"), "25");
  CHECK(!strcmp(HcclGetErrorString(HCCL_E_IN_STATUS), "unknown err"), "1041");
  CHECK(!strcmp(HcclGetErrorString(HCCL_E_RESERVED), "unknown error"), "1042");
  CHECK(!strcmp(HcclGetErrorString((HcclResult)-1), "unknown error"), "-1");

  CHECK(aclrtFree(a) == 0 && aclrtFree(b) == 0 && aclrtFree(small) == 0, "free");
  CHECK(aclrtDestroyStream(s) == 0, "destroy stream");
  expect_released("single process");
  CHECK(aclrtResetDevice(0) == 0, "reset");
}

/* A fresh process without aclrtSetDevice: HCCL_E_RUNTIME (15) from everything that refreshes it. */
void child_no_device(void) {
  HcclRootInfo ri;
  HcclComm comm = NULL;
  CHECK(aclInit(NULL) == 0, "aclInit");
  expect(HcclGetRootInfo(&ri), HCCL_E_RUNTIME, "please make sure that device is set", "GetRootInfo without a device");
  memset(&ri, 0, sizeof ri);
  expect(HcclCommInitRootInfo(1, &ri, 0, &comm), HCCL_E_RUNTIME, "please make sure that device is set",
         "init without a device");
  expect(HcclCommDestroy(NULL), HCCL_E_RUNTIME, "device", "destroy(NULL) without a device (the device check is first)");
}

/* The hccl example's layout: one process, one thread per device and rank. */
typedef struct {
  int rank;
  const HcclRootInfo *ri;
  float out[4];
  int rc_init, rc_sync;
} ThreadRank;

static void *thread_rank(void *arg) {
  ThreadRank *t = arg;
  aclrtSetDevice(t->rank);
  aclrtStream s = NULL;
  aclrtCreateStream(&s);
  HcclComm comm = NULL;
  t->rc_init = HcclCommInitRootInfo(2, t->ri, (uint32_t)t->rank, &comm);
  if (t->rc_init) return NULL;
  float x[4] = {1.0f + t->rank, 2, 3, 4};
  void *a = NULL;
  aclrtMalloc(&a, sizeof x, 0);
  aclrtMemcpy(a, sizeof x, x, sizeof x, 1);
  HcclAllReduce(a, a, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s);
  t->rc_sync = aclrtSynchronizeStream(s);
  aclrtMemcpy(t->out, sizeof x, a, sizeof x, 2);
  aclrtFree(a);
  HcclCommDestroy(comm);
  aclrtDestroyStream(s);
  return NULL;
}

void child_threads(void) {
  CHECK(aclInit(NULL) == 0, "aclInit");
  CHECK(aclrtSetDevice(0) == 0, "device 0");
  HcclRootInfo ri;
  CHECK(HcclGetRootInfo(&ri) == 0, "root info");
  ThreadRank t[2] = {{.rank = 0, .ri = &ri}, {.rank = 1, .ri = &ri}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, thread_rank, &t[i]);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++) {
    CHECK(t[i].rc_init == 0 && t[i].rc_sync == 0, "thread rank %d: init %d sync %d", i, t[i].rc_init, t[i].rc_sync);
    CHECK(t[i].out[0] == 3 && t[i].out[3] == 8, "thread rank %d: %g %g", i, t[i].out[0], t[i].out[3]);
  }
  expect_released("threads");
}

