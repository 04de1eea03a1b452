/**
 * The ACL runtime symbols (prototypes from CANN's acl/acl_base.h and acl/acl_rt.h).
 *
 * The C-to-Deno type conventions and the meaning of `optional: true` are stated once, in
 * `../symbols.ts`, which gathers every library's table.
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
