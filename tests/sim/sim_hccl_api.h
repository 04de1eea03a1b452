/*
 * Software HCCL ("aclsim") -- the public C types and prototypes of every exported HCCL symbol.
 *
 * Each prototype must agree with hccl_abi.json (parameter count and ABI class of every parameter
 * and of the result); tests/sim/check_hccl_abi.ts parses this file and compares it with the JSON,
 * and the compiler checks that every exported definition (export_hcomm.c, export_hccl.c include
 * this header) matches its declaration here. One prototype per line keeps the parser trivial.
 *
 * Sources ("hcomm" is the CANN hcomm mirror
 * xiaobingling93-pixel/cann-hcomm b5f3e5be, "hccl" is hicann/hccl 09300b70):
 * - prototypes: hcomm include/hccl/hccl_comm.h:71,83,96-97,136,145,153,162,180,186 (management,
 *   defined in libhcomm.so) and hccl include/hccl.h:35-37,51-52,120-121 (collectives, libhccl.so);
 * - types: hcomm include/hccl/hccl_types.h:23-51 (HcclResult), 56 (HcclComm), 71-77 (HcclReduceOp),
 *   82-102 (HcclDataType), 113,123-125 (HcclRootInfo, 4108 bytes), 127-162 (HcclCommConfig, 2240
 *   bytes on LP64; hccl_config.c asserts every field offset);
 * - aclrtStream: hicann/runtime include/external/acl/acl_base_rt.h:46.
 *
 * Type conventions (ABI classes): pointer / handle = pointer; HcclResult, HcclDataType,
 * HcclReduceOp (C enums, 4 bytes) and int32_t = i32; uint32_t = u32; uint64_t = u64.
 */
#ifndef ACLSIM_SIM_HCCL_API_H
#define ACLSIM_SIM_HCCL_API_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  HCCL_SUCCESS = 0,
  HCCL_E_PARA = 1,
  HCCL_E_PTR = 2,
  HCCL_E_MEMORY = 3,
  HCCL_E_INTERNAL = 4,
  HCCL_E_NOT_SUPPORT = 5,
  HCCL_E_NOT_FOUND = 6,
  HCCL_E_UNAVAIL = 7,
  HCCL_E_SYSCALL = 8,
  HCCL_E_TIMEOUT = 9,
  HCCL_E_OPEN_FILE_FAILURE = 10,
  HCCL_E_TCP_CONNECT = 11,
  HCCL_E_ROCE_CONNECT = 12,
  HCCL_E_TCP_TRANSFER = 13,
  HCCL_E_ROCE_TRANSFER = 14,
  HCCL_E_RUNTIME = 15,
  HCCL_E_DRV = 16,
  HCCL_E_PROFILING = 17,
  HCCL_E_CCE = 18,
  HCCL_E_NETWORK = 19,
  HCCL_E_AGAIN = 20,
  HCCL_E_REMOTE = 21,
  HCCL_E_SUSPENDING = 22,
  HCCL_E_OPRETRY_FAIL = 23,
  HCCL_E_OOM = 24,
  HCCL_E_IN_STATUS = 1041,
  HCCL_E_RESERVED
} HcclResult;

typedef enum {
  HCCL_DATA_TYPE_INT8 = 0,
  HCCL_DATA_TYPE_INT16 = 1,
  HCCL_DATA_TYPE_INT32 = 2,
  HCCL_DATA_TYPE_FP16 = 3,
  HCCL_DATA_TYPE_FP32 = 4,
  HCCL_DATA_TYPE_INT64 = 5,
  HCCL_DATA_TYPE_UINT64 = 6,
  HCCL_DATA_TYPE_UINT8 = 7,
  HCCL_DATA_TYPE_UINT16 = 8,
  HCCL_DATA_TYPE_UINT32 = 9,
  HCCL_DATA_TYPE_FP64 = 10,
  HCCL_DATA_TYPE_BFP16 = 11,
  HCCL_DATA_TYPE_INT128 = 12,
  HCCL_DATA_TYPE_HIF8 = 14,
  HCCL_DATA_TYPE_FP8E4M3 = 15,
  HCCL_DATA_TYPE_FP8E5M2 = 16,
  HCCL_DATA_TYPE_FP8E8M0 = 17,
  HCCL_DATA_TYPE_RESERVED = 255
} HcclDataType;

typedef enum {
  HCCL_REDUCE_SUM = 0,
  HCCL_REDUCE_PROD = 1,
  HCCL_REDUCE_MAX = 2,
  HCCL_REDUCE_MIN = 3,
  HCCL_REDUCE_RESERVED = 255
} HcclReduceOp;

typedef void *HcclComm;
typedef void *aclrtStream;

#define HCCL_ROOT_INFO_BYTES 4108
typedef struct HcclRootInfoDef {
  char internal[HCCL_ROOT_INFO_BYTES];
} HcclRootInfo;

/* The 24-byte header of HcclCommConfig.reserved, as HcclCommConfigInit fills it
 * (hcomm include/hccl/hccl_comm.h:197-234; it is header-only and not exported). */
#define HCCL_COMM_CONFIG_INFO_BYTES 24
#define HCCL_COMM_CONFIG_MAGIC_WORD 0xf0f0f0f0u
#define HCCL_COMM_CONFIG_VERSION 10
#define HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET (-1)
typedef struct {
  size_t size;
  uint32_t magicWord;
  uint32_t version;
  uint64_t reserved;
} HcclCommConfigHeader;

typedef struct HcclCommConfigDef {
  char reserved[HCCL_COMM_CONFIG_INFO_BYTES];
  uint32_t hcclBufferSize;
  uint32_t hcclDeterministic;
  char hcclCommName[128];
  char hcclUdi[128];
  uint32_t hcclOpExpansionMode;
  uint32_t hcclRdmaTrafficClass;
  uint32_t hcclRdmaServiceLevel;
  uint32_t hcclWorldRankID;
  uint64_t hcclJobID;
  uint8_t aclGraphZeroCopyEnable;
  int32_t hcclExecTimeOut;
  char hcclAlgo[1600];
  char hcclRetryEnable[50];
  char hcclRetryParams[128];
  char hcclBufferName[128];
  uint32_t hcclQos;
  uint64_t hcclSymWinMaxMemSizePerRank;
} HcclCommConfig;

/* ---- libhcomm.so (communicator management) ---- */
HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo);
HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank, HcclComm *comm);
HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank, const HcclCommConfig *config, HcclComm *comm);
HcclResult HcclCommDestroy(HcclComm comm);
HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize);
HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank);
HcclResult HcclBarrier(HcclComm comm, aclrtStream stream);
const char *HcclGetErrorString(HcclResult code);
HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult *asyncError);
/* Test hook (simulator only, not CANN): HCCL counters, see tests/sim/README_hccl.md. */
int32_t aclsimHcclGetStats(int64_t *out, uint64_t n);

/* ---- libhccl.so (collectives) ---- */
HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op, HcclComm comm, aclrtStream stream);
HcclResult HcclBroadcast(void *buf, uint64_t count, HcclDataType dataType, uint32_t root, HcclComm comm, aclrtStream stream);
HcclResult HcclAllGather(void *sendBuf, void *recvBuf, uint64_t sendCount, HcclDataType dataType, HcclComm comm, aclrtStream stream);

#endif
