/**
 * The nnopbase symbols: tensor/array descriptors and executors (prototypes from CANN's
 * aclnn/acl_meta.h).
 *
 * The C-to-Deno type conventions and the meaning of `optional: true` are stated once, in
 * `../symbols.ts`, which gathers every library's table.
 *
 * @module
 */

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
