/**
 * The HCCL symbols (prototypes from hccl include/hccl.h and hcomm include/hccl/hccl_comm.h).
 *
 * The C-to-Deno type conventions and the meaning of `optional: true` are stated once, in
 * `../symbols.ts`, which gathers every library's table.
 *
 * @module
 */

/**
 * HCCL, the collective communication library: `libhccl.so`. The collectives are defined there
 * (hccl include/hccl.h); since the split of HCCL into two libraries the communicator calls are
 * defined in `libhcomm.so` (hcomm include/hccl/hccl_comm.h), which libhccl.so lists in its
 * DT_NEEDED, so every symbol below resolves through a handle of libhccl.so (as torch_npu's
 * HcclCompile.h looks them up). `HcclResult`, `HcclDataType` and `HcclReduceOp` are 4-byte C
 * enums; `HcclComm` and `aclrtStream` are `void *`; `HcclRootInfo` is 4108 bytes and
 * `HcclCommConfig` 2240 (hcomm include/hccl/hccl_types.h).
 */
export const hcclSymbols = {
  // HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo);
  HcclGetRootInfo: { parameters: ["buffer"], result: "i32" },
  // HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo,
  //   uint32_t rank, HcclComm *comm);
  HcclCommInitRootInfo: { parameters: ["u32", "buffer", "u32", "buffer"], result: "i32" },
  // HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo *rootInfo,
  //   uint32_t rank, const HcclCommConfig *config, HcclComm *comm);
  // Optional: releases before HcclCommConfig lack it (the exec timeout then comes from
  // HCCL_EXEC_TIMEOUT alone).
  HcclCommInitRootInfoConfig: {
    parameters: ["u32", "buffer", "u32", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  // HcclResult HcclCommDestroy(HcclComm comm);
  HcclCommDestroy: { parameters: ["pointer"], result: "i32" },
  // HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize);
  HcclGetRankSize: { parameters: ["pointer", "buffer"], result: "i32" },
  // HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank);
  HcclGetRankId: { parameters: ["pointer", "buffer"], result: "i32" },
  // const char *HcclGetErrorString(HcclResult code);
  HcclGetErrorString: { parameters: ["i32"], result: "pointer" },
  // HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count,
  //   HcclDataType dataType, HcclReduceOp op, HcclComm comm, aclrtStream stream);
  HcclAllReduce: {
    parameters: ["pointer", "pointer", "u64", "i32", "i32", "pointer", "pointer"],
    result: "i32",
  },
  // HcclResult HcclAllGather(void *sendBuf, void *recvBuf, uint64_t sendCount,
  //   HcclDataType dataType, HcclComm comm, aclrtStream stream);
  HcclAllGather: {
    parameters: ["pointer", "pointer", "u64", "i32", "pointer", "pointer"],
    result: "i32",
  },
} as const satisfies Deno.ForeignLibraryInterface;
