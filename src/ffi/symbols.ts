/**
 * The whole C symbol table of this package, split by the library that exports each function.
 * Every entry carries its C prototype (from CANN's acl/acl_base.h, acl/acl_rt.h,
 * aclnn/acl_meta.h and the aclnn_*.h operator headers) in the comment beside it; the ABI class
 * of every parameter and result agrees with `cann_abi.json` (tests/ffi_symbols.test.ts checks it).
 *
 * Conventions: handles (aclTensor*, aclOpExecutor*, aclrtStream, ...) are `"pointer"`; memory
 * the caller owns for the duration of the call (out-params such as `uint64_t*` and
 * `aclOpExecutor**`, arrays such as `const int64_t*`, C strings) is `"buffer"`; `size_t` is
 * `"usize"` and `uint64_t` is `"u64"` (both take a bigint); C enums are 4-byte ints.
 *
 * Symbols marked `optional: true` are missing from some CANN releases this package supports;
 * they resolve to `null` there instead of failing `Deno.dlopen`.
 *
 * @module
 */

/**
 * ACL runtime: `libacl_rt.so` (CANN >= 8.5) or `libascendcl.so` (older releases, and kept as
 * a compatibility library in newer ones).
 */
export const runtimeSymbols = {
  // aclError aclInit(const char *configPath);
  aclInit: { parameters: ["buffer"], result: "i32" },
  // aclError aclFinalize(void);
  aclFinalize: { parameters: [], result: "i32" },
  // const char *aclGetRecentErrMsg(void);
  aclGetRecentErrMsg: { parameters: [], result: "pointer" },
  // aclError aclrtSetDevice(int32_t deviceId);
  aclrtSetDevice: { parameters: ["i32"], result: "i32" },
  // aclError aclrtResetDevice(int32_t deviceId);
  aclrtResetDevice: { parameters: ["i32"], result: "i32" },
  // aclError aclrtGetDevice(int32_t *deviceId);
  aclrtGetDevice: { parameters: ["buffer"], result: "i32" },
  // aclError aclrtGetDeviceCount(uint32_t *count);
  aclrtGetDeviceCount: { parameters: ["buffer"], result: "i32" },
  // aclError aclrtSynchronizeDevice(void);
  aclrtSynchronizeDevice: { parameters: [], result: "i32" },
  // aclError aclrtCreateStream(aclrtStream *stream);
  aclrtCreateStream: { parameters: ["buffer"], result: "i32" },
  // aclError aclrtDestroyStream(aclrtStream stream);
  aclrtDestroyStream: { parameters: ["pointer"], result: "i32" },
  // aclError aclrtSynchronizeStream(aclrtStream stream);
  aclrtSynchronizeStream: { parameters: ["pointer"], result: "i32" },
  // aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
  aclrtMalloc: { parameters: ["buffer", "usize", "u32"], result: "i32" },
  // aclError aclrtFree(void *devPtr);
  aclrtFree: { parameters: ["pointer"], result: "i32" },
  // aclError aclrtMallocHost(void **hostPtr, size_t size);
  aclrtMallocHost: { parameters: ["buffer", "usize"], result: "i32" },
  // aclError aclrtFreeHost(void *hostPtr);
  aclrtFreeHost: { parameters: ["pointer"], result: "i32" },
  // aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
  //                      aclrtMemcpyKind kind);
  // dst/src are device pointers or host buffers depending on `kind`, hence "pointer".
  aclrtMemcpy: { parameters: ["pointer", "usize", "pointer", "usize", "u32"], result: "i32" },
  // aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count,
  //                           aclrtMemcpyKind kind, aclrtStream stream);
  aclrtMemcpyAsync: {
    parameters: ["pointer", "usize", "pointer", "usize", "u32", "pointer"],
    result: "i32",
  },
  // aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count);
  aclrtMemset: { parameters: ["pointer", "usize", "i32", "usize"], result: "i32" },
  // aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId);
  aclrtCreateContext: { parameters: ["buffer", "i32"], result: "i32" },
  // aclError aclrtSetCurrentContext(aclrtContext context);
  aclrtSetCurrentContext: { parameters: ["pointer"], result: "i32" },
  // aclError aclrtGetCurrentContext(aclrtContext *context);
  aclrtGetCurrentContext: { parameters: ["buffer"], result: "i32" },
  // aclError aclrtDestroyContext(aclrtContext context);
  aclrtDestroyContext: { parameters: ["pointer"], result: "i32" },
  // aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total);
  aclrtGetMemInfo: { parameters: ["u32", "buffer", "buffer"], result: "i32" },
  // const char *aclrtGetSocName(void);
  // Optional: added in CANN 6.x; the doctor reports "unknown" where it is missing.
  aclrtGetSocName: { parameters: [], result: "pointer", optional: true },
} as const satisfies Deno.ForeignLibraryInterface;

/** Tensor/array descriptors and executors: `libnnopbase.so` in every release. */
export const nnopbaseSymbols = {
  // aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
  //                            aclDataType dataType, const int64_t *stride, int64_t offset,
  //                            aclFormat format, const int64_t *storageDims,
  //                            uint64_t storageDimsNum, void *tensorData);
  aclCreateTensor: {
    parameters: ["buffer", "u64", "i32", "buffer", "i64", "i32", "buffer", "u64", "pointer"],
    result: "pointer",
  },
  // aclnnStatus aclDestroyTensor(const aclTensor *tensor);
  aclDestroyTensor: { parameters: ["pointer"], result: "i32" },
  // aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size);
  aclCreateBoolArray: { parameters: ["buffer", "u64"], result: "pointer" },
  // aclnnStatus aclDestroyBoolArray(const aclBoolArray *array);
  aclDestroyBoolArray: { parameters: ["pointer"], result: "i32" },
  // aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size);
  aclCreateIntArray: { parameters: ["buffer", "u64"], result: "pointer" },
  // aclnnStatus aclDestroyIntArray(const aclIntArray *array);
  aclDestroyIntArray: { parameters: ["pointer"], result: "i32" },
  // aclScalar *aclCreateScalar(void *value, aclDataType dataType);
  aclCreateScalar: { parameters: ["buffer", "i32"], result: "pointer" },
  // aclnnStatus aclDestroyScalar(const aclScalar *scalar);
  aclDestroyScalar: { parameters: ["pointer"], result: "i32" },
  // aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor);
  aclSetAclOpExecutorRepeatable: { parameters: ["pointer"], result: "i32" },
  // aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor);
  aclDestroyAclOpExecutor: { parameters: ["pointer"], result: "i32" },
  // aclnnStatus aclSetInputTensorAddr(aclOpExecutor *executor, const size_t index,
  //                                   aclTensor *tensor, void *addr);
  aclSetInputTensorAddr: { parameters: ["pointer", "usize", "pointer", "pointer"], result: "i32" },
  // aclnnStatus aclSetOutputTensorAddr(aclOpExecutor *executor, const size_t index,
  //                                    aclTensor *tensor, void *addr);
  aclSetOutputTensorAddr: {
    parameters: ["pointer", "usize", "pointer", "pointer"],
    result: "i32",
  },
  // aclnnStatus aclSetTensorAddr(aclOpExecutor *executor, const size_t index,
  //                              aclTensor *tensor, void *addr);
  aclSetTensorAddr: { parameters: ["pointer", "usize", "pointer", "pointer"], result: "i32" },
  // aclnnStatus aclSetRawTensorAddr(aclTensor *tensor, void *addr);
  // Optional: added with the repeatable-executor API in CANN 8.0; older nnopbase lacks it.
  aclSetRawTensorAddr: { parameters: ["pointer", "pointer"], result: "i32", optional: true },
  // aclnnStatus aclGetRawTensorAddr(const aclTensor *tensor, void **addr);
  // Optional: same release as aclSetRawTensorAddr.
  aclGetRawTensorAddr: { parameters: ["pointer", "buffer"], result: "i32", optional: true },
  // aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset);
  aclGetViewOffset: { parameters: ["pointer", "buffer"], result: "i32" },
  // aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format);
  aclGetFormat: { parameters: ["pointer", "buffer"], result: "i32" },
  // aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType);
  aclGetDataType: { parameters: ["pointer", "buffer"], result: "i32" },
  // aclnnStatus aclnnInit(const char *configPath);
  // Optional: 7.x releases initialise aclnn lazily and do not export it.
  aclnnInit: { parameters: ["buffer"], result: "i32", optional: true },
  // aclnnStatus aclnnFinalize(void);
  // Optional: exported together with aclnnInit.
  aclnnFinalize: { parameters: [], result: "i32", optional: true },
} as const satisfies Deno.ForeignLibraryInterface;

/**
 * Phase 2 of every operator has the same prototype:
 * `aclnnStatus aclnnX(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
 * aclrtStream stream);`
 */
const execute = { parameters: ["pointer", "u64", "pointer", "pointer"], result: "i32" } as const;

/**
 * The BatchNorm/GroupNorm/LayerNorm/RMSNorm operators: `libopapi_nn.so` (CANN >= 8.5) or
 * `libopapi.so` (older).
 * Phase 1 (`...GetWorkspaceSize`) ends with `uint64_t *workspaceSize, aclOpExecutor **executor`
 * (two 8-byte `buffer` out-params).
 */
export const opapiNnSymbols = {
  // aclnnStatus aclnnBatchNormReduceBackwardGetWorkspaceSize(const aclTensor *gradOut,
  //   const aclTensor *input, const aclTensor *mean, const aclTensor *invstd,
  //   const aclTensor *weight, const bool inputG, const bool weightG, const bool biasG,
  //   aclTensor *sumDy, aclTensor *sumDyXmu, aclTensor *gradWeight, aclTensor *gradBias,
  //   uint64_t *workspaceSize, aclOpExecutor **executor);
  aclnnBatchNormReduceBackwardGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "bool",
      "bool",
      "bool",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnBatchNormReduceBackward(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnBatchNormReduceBackward: execute,
  // aclnnStatus aclnnBatchNormElemtBackwardGetWorkspaceSize(const aclTensor *gradOut,
  //   const aclTensor *input, const aclTensor *mean, const aclTensor *invstd,
  //   const aclTensor *weight, const aclTensor *sumDy, const aclTensor *sumDyXmu,
  //   aclTensor *counter, aclTensor *gradInput, uint64_t *workspaceSize,
  //   aclOpExecutor **executor);
  aclnnBatchNormElemtBackwardGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnBatchNormElemtBackward(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnBatchNormElemtBackward: execute,
  // aclnnStatus aclnnBatchNormBackwardGetWorkspaceSize(const aclTensor *gradOut,
  //   const aclTensor *input, const aclTensor *weight, const aclTensor *runningMean,
  //   const aclTensor *runningVar, const aclTensor *saveMean, const aclTensor *saveInvstd,
  //   bool training, double eps, const aclBoolArray *outputMask, aclTensor *gradInput,
  //   aclTensor *gradWeight, aclTensor *gradBias, uint64_t *workspaceSize,
  //   aclOpExecutor **executor);
  aclnnBatchNormBackwardGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "bool",
      "f64",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnBatchNormBackward(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnBatchNormBackward: execute,
  // aclnnStatus aclnnBatchNormGetWorkspaceSize(const aclTensor *input, const aclTensor *weight,
  //   const aclTensor *bias, aclTensor *runningMean, aclTensor *runningVar, bool training,
  //   double momentum, double eps, aclTensor *output, aclTensor *saveMean,
  //   aclTensor *saveInvstd, uint64_t *workspaceSize, aclOpExecutor **executor);
  aclnnBatchNormGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "bool",
      "f64",
      "f64",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnBatchNorm(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnBatchNorm: execute,
  // aclnnStatus aclnnBatchNormElemtGetWorkspaceSize(const aclTensor *input,
  //   const aclTensor *weight, const aclTensor *bias, aclTensor *mean, aclTensor *invstd,
  //   double eps, aclTensor *output, uint64_t *workspaceSize, aclOpExecutor **executor);
  aclnnBatchNormElemtGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "f64",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnBatchNormElemt(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnBatchNormElemt: execute,
  // aclnnStatus aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(const aclTensor *input,
  //   const aclTensor *mean, const aclTensor *invstd, aclTensor *runningMean,
  //   aclTensor *runningVar, double momentum, double eps, const aclTensor *counts,
  //   aclTensor *meanAll, aclTensor *invstdAll, uint64_t *workspaceSize,
  //   aclOpExecutor **executor);
  aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "f64",
      "f64",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnBatchNormGatherStatsWithCounts(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnBatchNormGatherStatsWithCounts: execute,
  // aclnnStatus aclnnGroupNormGetWorkspaceSize(const aclTensor *self, const aclTensor *gamma,
  //   const aclTensor *beta, int64_t N, int64_t C, int64_t HxW, int64_t group, double eps,
  //   aclTensor *out, aclTensor *meanOut, aclTensor *rstdOut, uint64_t *workspaceSize,
  //   aclOpExecutor **executor);
  aclnnGroupNormGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "i64",
      "i64",
      "i64",
      "i64",
      "f64",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnGroupNorm(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnGroupNorm: execute,
  // aclnnStatus aclnnGroupNormBackwardGetWorkspaceSize(const aclTensor *gradOut,
  //   const aclTensor *input, const aclTensor *mean, const aclTensor *rstd,
  //   const aclTensor *gamma, int64_t N, int64_t C, int64_t HxW, int64_t group,
  //   const aclBoolArray *outputMask, aclTensor *gradInput, aclTensor *gradGammaOut,
  //   aclTensor *gradBetaOut, uint64_t *workspaceSize, aclOpExecutor **executor);
  aclnnGroupNormBackwardGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "i64",
      "i64",
      "i64",
      "i64",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnGroupNormBackward(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnGroupNormBackward: execute,
  // aclnnStatus aclnnLayerNormGetWorkspaceSize(const aclTensor *input,
  //   const aclIntArray *normalizedShape, const aclTensor *weightOptional,
  //   const aclTensor *biasOptional, double eps, aclTensor *out, aclTensor *meanOutOptional,
  //   aclTensor *rstdOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor);
  aclnnLayerNormGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "f64",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnLayerNorm(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnLayerNorm: execute,
  // aclnnStatus aclnnLayerNormWithImplModeGetWorkspaceSize(const aclTensor *input,
  //   const aclIntArray *normalizedShape, const aclTensor *weightOptional,
  //   const aclTensor *biasOptional, double eps, aclTensor *out, aclTensor *meanOutOptional,
  //   aclTensor *rstdOutOptional, int32_t implMode, uint64_t *workspaceSize,
  //   aclOpExecutor **executor);
  // Optional: torch_npu never calls it, and the aclnn reference documents it with
  // aclnnLayerNorm only from CANN 8.0.RC1 on; a release without it must still load the
  // operators above (a missing required symbol fails the whole library).
  aclnnLayerNormWithImplModeGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "f64",
      "pointer",
      "pointer",
      "pointer",
      "i32",
      "buffer",
      "buffer",
    ],
    result: "i32",
    optional: true,
  },
  // aclnnStatus aclnnLayerNormWithImplMode(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  // Optional: exported together with its phase 1.
  aclnnLayerNormWithImplMode: { ...execute, optional: true },
  // aclnnStatus aclnnLayerNormBackwardGetWorkspaceSize(const aclTensor *gradOut,
  //   const aclTensor *input, const aclIntArray *normalizedShape, const aclTensor *mean,
  //   const aclTensor *rstd, const aclTensor *weightOptional, const aclTensor *biasOptional,
  //   const aclBoolArray *outputMask, aclTensor *gradInputOut, aclTensor *gradWeightOut,
  //   aclTensor *gradBiasOut, uint64_t *workspaceSize, aclOpExecutor **executor);
  aclnnLayerNormBackwardGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
  },
  // aclnnStatus aclnnLayerNormBackward(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnLayerNormBackward: execute,
  // aclnnStatus aclnnRmsNormGetWorkspaceSize(const aclTensor *x, const aclTensor *gamma,
  //   double epsilon, const aclTensor *yOut, const aclTensor *rstdOut, uint64_t *workspaceSize,
  //   aclOpExecutor **executor);
  // (generated header aclnnop/aclnn_rms_norm.h; ops-nn norm/rms_norm/docs/aclnnRmsNorm.md)
  // Optional: newer than the BatchNorm/LayerNorm family, which torch_npu has called since
  // 2023-08; torch_npu calls this one since 2023-11 (Ascend/op-plugin ff23cea1) and the aclnn
  // reference documents it from CANN 8.0.RC1 on. A release without it must still load the
  // operators above (a missing required symbol fails the whole library).
  aclnnRmsNormGetWorkspaceSize: {
    parameters: ["pointer", "pointer", "f64", "pointer", "pointer", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  // aclnnStatus aclnnRmsNorm(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  // Optional: exported together with its phase 1.
  aclnnRmsNorm: { ...execute, optional: true },
  // aclnnStatus aclnnRmsNormGradGetWorkspaceSize(const aclTensor *dy, const aclTensor *x,
  //   const aclTensor *rstd, const aclTensor *gamma, const aclTensor *dxOut,
  //   const aclTensor *dgammaOut, uint64_t *workspaceSize, aclOpExecutor **executor);
  // (generated header aclnnop/aclnn_rms_norm_grad.h; norm/rms_norm_grad/docs/aclnnRmsNormGrad.md)
  // Optional: same release history as aclnnRmsNorm.
  aclnnRmsNormGradGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
    optional: true,
  },
  // aclnnStatus aclnnRmsNormGrad(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  // Optional: exported together with its phase 1.
  aclnnRmsNormGrad: { ...execute, optional: true },
  // aclnnStatus aclnnAddRmsNormGetWorkspaceSize(const aclTensor *x1, const aclTensor *x2,
  //   const aclTensor *gamma, double epsilon, aclTensor *yOut, aclTensor *rstdOut,
  //   aclTensor *xOut, uint64_t *workspaceSize, aclOpExecutor **executor);
  // Optional: newer than aclnnRmsNorm (torch_npu calls it since 2024-01, Ascend/op-plugin
  // 63c08675).
  aclnnAddRmsNormGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "f64",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
    optional: true,
  },
  // aclnnStatus aclnnAddRmsNorm(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  // Optional: exported together with its phase 1.
  aclnnAddRmsNorm: { ...execute, optional: true },
} as const satisfies Deno.ForeignLibraryInterface;

/** Operators of `libopapi_math.so` (CANN >= 8.5) or `libopapi.so` (older). */
export const opapiMathSymbols = {
  // aclnnStatus aclnnBatchNormStatsGetWorkspaceSize(const aclTensor *input, double eps,
  //   aclTensor *mean, aclTensor *invstd, uint64_t *workspaceSize, aclOpExecutor **executor);
  aclnnBatchNormStatsGetWorkspaceSize: {
    parameters: ["pointer", "f64", "pointer", "pointer", "buffer", "buffer"],
    result: "i32",
  },
  // aclnnStatus aclnnBatchNormStats(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  aclnnBatchNormStats: execute,
} as const satisfies Deno.ForeignLibraryInterface;

/** Every operator symbol: what the single `libopapi.so` of releases before 8.5 exports. */
export const opapiSymbols: typeof opapiNnSymbols & typeof opapiMathSymbols = {
  ...opapiNnSymbols,
  ...opapiMathSymbols,
} as const satisfies Deno.ForeignLibraryInterface;

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

/** The HCCL symbol table's type. */
export type HcclSymbols = typeof hcclSymbols;

/** The runtime symbol table's type. */
export type RuntimeSymbols = typeof runtimeSymbols;
/** The nnopbase symbol table's type. */
export type NnopbaseSymbols = typeof nnopbaseSymbols;
/** The operator symbol table's type. */
export type OpapiSymbols = typeof opapiSymbols;

/** The name of an aclnn operator this package can call (phase 2 symbol name). */
export type AclnnOperatorName = {
  [K in keyof OpapiSymbols]: K extends `${string}GetWorkspaceSize` ? never : K;
}[keyof OpapiSymbols];
