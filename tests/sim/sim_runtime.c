/*
 * Software CANN ("aclsim") -- the runtime (acl / aclrt) outside memory and streams: aclInit /
 * aclFinalize, devices and the calling thread's binding, contexts, and the aclsimGetStats counters.
 * Built into libaclsim_core.so; see tests/sim/README_runtime.md for every documented choice.
 *
 * Citations name the CANN source a behaviour is modelled on: "runtime:" is hicann/runtime,
 * "opbase:" is hicann/opbase.
 */
#define _GNU_SOURCE
#include "sim_core_internal.h"
#include "sim_scratch.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The calling thread's current device and context (runtime: InnerThreadLocalContainer). */
_Thread_local int t_device = -1;
_Thread_local void *t_ctx = NULL;

/* ======================================================================================
 * Devices, thread binding, contexts
 *
 * runtime src/runtime/core/src/runtime.cc PrimaryContextRetain / PrimaryContextRelease: one
 * reference count per process and device (shared by every thread) for the device's default
 * ("primary") context; the current context is per thread (api_impl.cc SetDevice,
 * InnerThreadLocalContainer::SetCurRef).
 * ====================================================================================== */
static uint64_t g_acl_init_count; /* runtime acl_rt_impl_base.cpp aclInitRefCount */
static bool g_acl_finalized;      /* runtime acl.cpp aclFinalizeFlag */
uint64_t g_dev_refs[SIM_MAX_DEVICES];
void *g_default_stream[SIM_MAX_DEVICES];
void *g_default_ctx[SIM_MAX_DEVICES];

int device_count(void) {
  const char *s = getenv("ACLSIM_DEVICE_COUNT");
  if (!s || !*s) return 1;
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (*end != '\0' || v < 0) return 1;
  return v > SIM_MAX_DEVICES ? SIM_MAX_DEVICES : (int)v;
}

uint64_t device_memory_total(void) {
  const char *s = getenv("ACLSIM_DEVICE_MEMORY");
  if (s && *s) {
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == '\0' && v > 0) return (uint64_t)v;
  }
  return 32ULL << 30; /* 32 GiB */
}

int need_device(const char *fn) {
  if (t_device < 0)
    return sim_fail(SIM_RT_CONTEXT_NULL,
                    "%s: no device is set on the calling thread (call aclrtSetDevice or "
                    "aclrtSetCurrentContext on this thread first)",
                    fn);
  return 0;
}

void *default_context(int dev) {
  if (!g_default_ctx[dev]) {
    Context *c = calloc(1, sizeof *c);
    c->device = dev;
    c->is_default = true;
    g_default_ctx[dev] = handle_new(K_CONTEXT, c, false);
  }
  return g_default_ctx[dev];
}

/* ======================================================================================
 * Runtime API
 * ====================================================================================== */

/* runtime src/acl/aclrt_impl/acl.cpp aclInitImpl: a process-wide reference count
 * (acl_rt_impl_base.cpp aclInitRefCount). Already > 0: count + 1 and ACL_ERROR_REPEAT_INITIALIZE
 * (100002), before any config is read, logged at INFO only (no error message). Otherwise the
 * count becomes 1, aclFinalizeFlag false, 0. (The config path is not read here.) */
int sim_acl_init(const char *config) {
  (void)config;
  sim_lock();
  if (g_acl_init_count > 0) {
    uint64_t n = ++g_acl_init_count;
    sim_unlock();
    return sim_quiet_fail(SIM_ACL_REPEAT_INIT, "aclInit: repeatedly initialized, new aclInitRefCount: %" PRIu64, n);
  }
  g_acl_init_count = 1;
  g_acl_finalized = false;
  sim_unlock();
  return 0;
}

/* runtime acl.cpp aclFinalizeImpl: aclFinalizeFlag already set -> ACL_ERROR_REPEAT_FINALIZE (100037,
 * "[Finalize][Acl]repeatedly finalized"); otherwise aclFinalizeInternal sets the flag and zeroes
 * aclInitRefCount whatever it was, and returns 0 -- also in a process that never called aclInit
 * (the flag starts false). Resources are not released here, so leaks stay visible. */
int sim_acl_finalize(void) {
  sim_lock();
  if (g_acl_finalized) {
    sim_unlock();
    return sim_fail(SIM_ACL_REPEAT_FINALIZE, "aclFinalize: [Finalize][Acl]repeatedly finalized");
  }
  g_acl_finalized = true;
  g_acl_init_count = 0;
  sim_scratch_release(); /* the operators' scratch arena goes with the process's ACL */
  sim_unlock();
  return 0;
}

/* runtime api_error.cc ApiErrorDecorator::SetDevice: a bad id is RT_ERROR_DEVICE_ID -> 107001
 * before PrimaryContextRetain, so the count is unchanged. Otherwise runtime.cc
 * PrimaryContextRetain adds one reference (per process and device) and api_impl.cc SetDevice
 * makes the device's default context current on the calling thread. */
int sim_rt_set_device(int32_t id) {
  int n = device_count();
  if (id < 0 || id >= n)
    return sim_fail(SIM_RT_INVALID_DEVICEID, "aclrtSetDevice: device id %d is invalid (the simulator has %d device(s); set ACLSIM_DEVICE_COUNT)", id, n);
  sim_lock();
  g_dev_refs[id]++;
  t_device = id;
  t_ctx = default_context(id);
  sim_unlock();
  return 0;
}

/* runtime api_impl.cc ApiImpl::DeviceReset -> runtime.cc PrimaryContextRelease /
 * DecideOrdinaryPrimaryReleaseAction: one reference released (TryDecRef); none left to release ->
 * RT_ERROR_CONTEXT_DEL, reported by api_error.cc ApiErrorDecorator::DeviceReset as EE1018 and
 * mapped to ACL_ERROR_RT_CONTEXT_RELEASE_ERROR 507007 (errcode_manage.cc). The last reference
 * tears the default context down (device_teardown). */
int sim_rt_reset_device(int32_t id) {
  int n = device_count();
  if (id < 0 || id >= n)
    return sim_fail(SIM_RT_INVALID_DEVICEID, "aclrtResetDevice: device id %d is invalid (the simulator has %d device(s))", id, n);
  sim_lock();
  if (g_dev_refs[id] == 0) {
    sim_unlock();
    return sim_fail(SIM_RT_CONTEXT_RELEASE,
                    "aclrtResetDevice: Resetting the device failed. Reason: The device has not been set or has "
                    "already been reset (device %d: every aclrtSetDevice reference is already released)",
                    id);
  }
  if (--g_dev_refs[id] == 0) device_teardown(id);
  sim_unlock();
  return 0;
}

int sim_rt_get_device(int32_t *id) {
  if (!id) return sim_fail(SIM_ACL_INVALID_PARAM, "aclrtGetDevice: deviceId is NULL");
  int rc = need_device("aclrtGetDevice");
  if (rc) return rc;
  *id = t_device;
  return 0;
}

int sim_rt_get_device_count(uint32_t *count) {
  if (!count) return sim_fail(SIM_ACL_INVALID_PARAM, "aclrtGetDeviceCount: count is NULL");
  int n = device_count();
  *count = (uint32_t)n;
  if (n == 0) return sim_fail(SIM_RT_NO_DEVICE, "aclrtGetDeviceCount: no device (ACLSIM_DEVICE_COUNT=0)");
  return 0;
}

int sim_rt_create_context(void **ctx, int32_t device) {
  const char *fn = "aclrtCreateContext";
  if (!ctx) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: context is NULL", fn);
  int n = device_count();
  if (device < 0 || device >= n)
    return sim_fail(SIM_RT_INVALID_DEVICEID, "%s: device id %d is invalid (the simulator has %d device(s))", fn, device, n);
  Context *c = calloc(1, sizeof *c);
  c->device = device;
  sim_lock();
  *ctx = handle_new(K_CONTEXT, c, true);
  t_device = device; /* a new context becomes the thread's current context */
  t_ctx = *ctx;
  sim_unlock();
  return 0;
}

int sim_rt_set_current_context(void *ctx) {
  const char *fn = "aclrtSetCurrentContext";
  sim_lock();
  const char *why = NULL;
  Context *c = handle_get(ctx, K_CONTEXT, &why);
  if (!c) {
    if (handle_end(ctx, K_CONTEXT) == END_TORN_DOWN)
      why = "is the default context of a device whose last aclrtSetDevice reference was released by "
            "aclrtResetDevice (the context was torn down)";
    sim_unlock();
    return sim_fail(SIM_RT_PARAM_INVALID, "%s: context %p %s (not a live aclrtContext)", fn, ctx, why);
  }
  t_device = c->device;
  t_ctx = ctx;
  sim_unlock();
  return 0;
}

int sim_rt_get_current_context(void **ctx) {
  const char *fn = "aclrtGetCurrentContext";
  if (!ctx) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: context is NULL", fn);
  int rc = need_device(fn);
  if (rc) return rc;
  *ctx = t_ctx;
  return 0;
}

int sim_rt_destroy_context(void *ctx) {
  const char *fn = "aclrtDestroyContext";
  sim_lock();
  const char *why = NULL;
  Context *c = handle_get(ctx, K_CONTEXT, &why);
  if (!c || c->is_default) {
    sim_unlock();
    return sim_fail(SIM_RT_PARAM_INVALID, "%s: context %p %s", fn, ctx,
                    c ? "is the default context of a device (released by aclrtResetDevice)" : why);
  }
  if (t_ctx == ctx) {
    t_ctx = NULL;
    t_device = -1;
  }
  handle_free(ctx, true, END_DESTROYED);
  free(c);
  sim_unlock();
  return 0;
}


/* Counter order (stable; documented in README_test_hooks.md):
 *  0 live device allocations      1 live device bytes        2 live aclrtMallocHost allocations
 *  3 live aclTensor               4 live aclBoolArray        5 live aclIntArray
 *  6 live aclScalar               7 live aclOpExecutor       8 live user streams
 *  9 pending stream tasks        10 live user contexts      11 tasks executed (cumulative)
 * 12 tasks failed or discarded (cumulative)                 13 device references (aclrtSetDevice
 *    calls not yet released by aclrtResetDevice, summed over devices)
 * 14 injected faults (cumulative; sim_fault.c) */
#define SIM_NSTATS 15
int32_t sim_get_stats(int64_t *out, uint64_t n) {
  sim_lock();
  int64_t refs = 0;
  for (int d = 0; d < SIM_MAX_DEVICES; d++) refs += (int64_t)g_dev_refs[d];
  int64_t v[SIM_NSTATS] = {
      (int64_t)g_devreg.n, (int64_t)g_dev_bytes, (int64_t)g_hostreg.n, g_live[K_TENSOR], g_live[K_BOOLARR],
      g_live[K_INTARR],    g_live[K_SCALAR],     g_live[K_EXEC],       g_live[K_STREAM], g_pending,
      g_live[K_CONTEXT],   g_tasks_done,         g_tasks_failed,       refs,
      sim_fault_fired()};
  sim_unlock();
  if (out)
    for (uint64_t i = 0; i < n && i < SIM_NSTATS; i++) out[i] = v[i];
  return SIM_NSTATS;
}
