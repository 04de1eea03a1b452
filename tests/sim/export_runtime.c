/*
 * Software CANN ("aclsim") -- public runtime symbols of libacl_rt.so and libascendcl.so
 * (the same source is compiled into both).  Each function forwards to libaclsim_core.so.
 */
#include "sim.h"
#include "sim_api.h"

SIM_PUBLIC aclError aclInit(const char *configPath) { return sim_acl_init(configPath); }
SIM_PUBLIC aclError aclFinalize(void) { return sim_acl_finalize(); }
SIM_PUBLIC const char *aclGetRecentErrMsg(void) { return sim_take_error(); }
SIM_PUBLIC aclError aclrtSetDevice(int32_t deviceId) { return sim_rt_set_device(deviceId); }
SIM_PUBLIC aclError aclrtResetDevice(int32_t deviceId) { return sim_rt_reset_device(deviceId); }
SIM_PUBLIC aclError aclrtGetDevice(int32_t *deviceId) { return sim_rt_get_device(deviceId); }
SIM_PUBLIC aclError aclrtGetDeviceCount(uint32_t *count) { return sim_rt_get_device_count(count); }
SIM_PUBLIC aclError aclrtSynchronizeDevice(void) { return sim_rt_sync_device(); }
SIM_PUBLIC aclError aclrtCreateStream(aclrtStream *stream) { return sim_rt_create_stream(stream); }
SIM_PUBLIC aclError aclrtDestroyStream(aclrtStream stream) { return sim_rt_destroy_stream(stream); }
SIM_PUBLIC aclError aclrtSynchronizeStream(aclrtStream stream) { return sim_rt_sync_stream(stream); }
SIM_PUBLIC aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
  return sim_rt_malloc(devPtr, size, policy);
}
SIM_PUBLIC aclError aclrtFree(void *devPtr) { return sim_rt_free(devPtr); }
SIM_PUBLIC aclError aclrtMallocHost(void **hostPtr, size_t size) { return sim_rt_malloc_host(hostPtr, size); }
SIM_PUBLIC aclError aclrtFreeHost(void *hostPtr) { return sim_rt_free_host(hostPtr); }
SIM_PUBLIC aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
  return sim_rt_memcpy(dst, destMax, src, count, kind);
}
SIM_PUBLIC aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                                     aclrtStream stream) {
  return sim_rt_memcpy_async(dst, destMax, src, count, kind, stream);
}
SIM_PUBLIC aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
  return sim_rt_memset(devPtr, maxCount, value, count);
}
SIM_PUBLIC aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
  return sim_rt_create_context(context, deviceId);
}
SIM_PUBLIC aclError aclrtSetCurrentContext(aclrtContext context) { return sim_rt_set_current_context(context); }
SIM_PUBLIC aclError aclrtGetCurrentContext(aclrtContext *context) { return sim_rt_get_current_context(context); }
SIM_PUBLIC aclError aclrtDestroyContext(aclrtContext context) { return sim_rt_destroy_context(context); }
SIM_PUBLIC aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) {
  return sim_rt_get_mem_info(attr, (uint64_t *)free, (uint64_t *)total);
}
SIM_PUBLIC const char *aclrtGetSocName(void) { return sim_rt_get_soc_name(); }
SIM_PUBLIC int32_t aclsimGetStats(int64_t *out, uint64_t n) { return sim_get_stats(out, n); }
SIM_PUBLIC int32_t aclsimInjectFault(int32_t kind, int64_t nth, int64_t times, int64_t value) {
  return sim_fault_inject(kind, nth, times, value);
}
