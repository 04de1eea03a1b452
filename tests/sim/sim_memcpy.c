/*
 * Software CANN ("aclsim") -- copies and fills: aclrtMemcpy, aclrtMemcpyAsync (a task on a
 * stream) and aclrtMemset, with the address checks against the device-memory registry.
 * Built into libaclsim_core.so; see tests/sim/README_runtime.md for every documented choice.
 *
 * Citations name the CANN source a behaviour is modelled on: "runtime:" is hicann/runtime,
 * "opbase:" is hicann/opbase.
 */
#define _GNU_SOURCE
#include "sim_core_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kind_str(uint32_t k) {
  switch (k) {
    case SIM_H2H: return "ACL_MEMCPY_HOST_TO_HOST";
    case SIM_H2D: return "ACL_MEMCPY_HOST_TO_DEVICE";
    case SIM_D2H: return "ACL_MEMCPY_DEVICE_TO_HOST";
    case SIM_D2D: return "ACL_MEMCPY_DEVICE_TO_DEVICE";
    case SIM_H2B2D: return "ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE";
    default: return "ACL_MEMCPY_DEFAULT";
  }
}

/* Checks one side of a copy; sets *alloc to the device allocation id (0 for host). */
static int check_side(const char *fn, const char *side, const void *p, uint64_t count, bool want_dev,
                      uint32_t kind, uint64_t *alloc) {
  *alloc = 0;
  char why[256];
  if (want_dev) {
    uint64_t id = sim_dev_range_alloc(p, count);
    if (id == 0) {
      sim_describe_ptr(p, why, sizeof why);
      return sim_fail(SIM_RT_PARAM_INVALID,
                      "%s: %s range [%p, +%" PRIu64 " bytes) must lie inside one live device allocation for %s: %s",
                      fn, side, p, count, kind_str(kind), why);
    }
    *alloc = id;
  } else if (sim_is_device_ptr(p)) {
    sim_describe_ptr(p, why, sizeof why);
    return sim_fail(SIM_RT_PARAM_INVALID, "%s: %s must be host memory for %s but %s", fn, side, kind_str(kind), why);
  }
  return 0;
}

/* runtime src/acl/aclrt_impl/memory.cpp aclrtMemcpyImpl, then api_error.cc
 * ApiErrorDecorator::MemCopySync, then the context (ApiImpl): count 0 -> 0 before any pointer
 * check; NULL dst or src -> 100000; a kind outside 0..5 -> 100000 (MemcpyKindTranslate);
 * destMax 0 or count > destMax -> 107000 (RT_ERROR_INVALID_VALUE); dst == src -> 0 without
 * copying; no current context -> 107002. The address checks after that are the simulator's
 * registry (107000). *skip: nothing to copy. */
static int check_copy(const char *fn, void *dst, uint64_t destMax, const void *src, uint64_t count,
                      uint32_t *kind, uint64_t *da, uint64_t *sa, bool *skip) {
  *da = *sa = 0;
  *skip = true;
  if (count == 0) return 0;
  if (!dst || !src) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: %s is NULL", fn, dst ? "src" : "dst");
  if (*kind > SIM_H2B2D) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: invalid aclrtMemcpyKind %u", fn, *kind);
  if (destMax == 0) return sim_fail(SIM_RT_PARAM_INVALID, "%s: destMax is 0", fn);
  if (count > destMax)
    return sim_fail(SIM_RT_PARAM_INVALID, "%s: count %" PRIu64 " exceeds destMax %" PRIu64, fn, count, destMax);
  if (dst == src) return 0; /* MemCopySync: a warning, success without copying */
  int rc = need_device(fn);
  if (rc) return rc;
  if (*kind == SIM_H2B2D) *kind = SIM_H2D; /* through a host buffer: still host to device */
  if (*kind == SIM_MEMCPY_DEFAULT) /* infer from the pointers */
    *kind = (uint32_t)((sim_is_device_ptr(src) ? 2 : 0) + (sim_is_device_ptr(dst) ? 1 : 0));
  bool dst_dev = *kind == SIM_H2D || *kind == SIM_D2D;
  bool src_dev = *kind == SIM_D2H || *kind == SIM_D2D;
  rc = check_side(fn, "dst", dst, count, dst_dev, *kind, da);
  if (!rc) rc = check_side(fn, "src", src, count, src_dev, *kind, sa);
  if (!rc) *skip = false;
  return rc;
}

int sim_rt_memcpy(void *dst, uint64_t destMax, const void *src, uint64_t count, uint32_t kind) {
  const char *fn = "aclrtMemcpy";
  uint64_t da, sa;
  bool skip;
  sim_lock();
  int rc = check_copy(fn, dst, destMax, src, count, &kind, &da, &sa, &skip);
  int64_t fv = 0;
  if (!rc && !skip && sim_fault_fire(SIM_FAULT_MEMCPY, &fv)) {
    /* The driver's copy fails: NpuDriver::MemCopySync reports "Call driver api drvMemcpy failed"
     * and returns RT_GET_DRV_ERRCODE(drvRet); an internal driver error is RT_ERROR_DRV_ERR ->
     * ACL_ERROR_RT_DRV_INTERNAL_ERROR 507899 (runtime npu_driver_mem.cc, errcode_manage.cc).
     * Nothing is copied. */
    rc = sim_fail(fv ? (int)fv : SIM_RT_DRV_INTERNAL_ERROR,
                  "%s: Call driver api drvMemcpy failed, destMax=%" PRIu64 ", size=%" PRIu64
                  "(bytes), kind=%s. (injected fault: ACLSIM_FAULT memcpy)",
                  fn, destMax, count, kind_str(kind));
  } else if (!rc && !skip) {
    memmove(dst, src, (size_t)count);
  }
  sim_unlock();
  return rc;
}

int sim_rt_memcpy_async(void *dst, uint64_t destMax, const void *src, uint64_t count, uint32_t kind, void *stream) {
  const char *fn = "aclrtMemcpyAsync";
  uint64_t da, sa;
  bool skip;
  sim_lock();
  int rc = check_copy(fn, dst, destMax, src, count, &kind, &da, &sa, &skip);
  Stream *s = rc || skip ? NULL : resolve_stream(fn, stream, &rc, SIM_RT_PARAM_INVALID);
  int64_t fv = 0;
  if (s && sim_fault_fire(SIM_FAULT_STREAM, &fv)) {
    rc = stream_refuses(fn, s, fv);
    s = NULL;
  }
  if (s) {
    Task *t = calloc(1, sizeof *t);
    t->kind = T_MEMCPY;
    t->dst = dst;
    t->src = src;
    t->count = count;
    t->memkind = kind;
    t->dst_alloc = da;
    t->src_alloc = sa;
    enqueue(s, t);
  }
  sim_unlock();
  return rc;
}

/* runtime memory.cpp aclrtMemsetImpl: count 0 -> 0 at once, even with a NULL devPtr; NULL ->
 * 100000; then rtMemset needs a current context (107002) and ends in the driver's
 * drvMemsetD8(dev, destMax, (UINT8)value, count) (npu_driver_mem.cc): the value is truncated to
 * one byte. The synchronous runtime path leaves count > maxCount to the driver; it is 107000
 * here, as the asynchronous path returns (RT_ERROR_INVALID_VALUE). */
int sim_rt_memset(void *p, uint64_t maxCount, int32_t value, uint64_t count) {
  const char *fn = "aclrtMemset";
  if (count == 0) return 0;
  if (!p) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: devPtr is NULL", fn);
  int rc = need_device(fn);
  if (rc) return rc;
  if (count > maxCount)
    return sim_fail(SIM_RT_PARAM_INVALID, "%s: count %" PRIu64 " exceeds maxCount %" PRIu64, fn, count, maxCount);
  sim_lock();
  uint64_t a;
  rc = check_side(fn, "devPtr", p, count, true, SIM_H2D, &a);
  if (!rc) memset(p, (unsigned char)value, (size_t)count);
  sim_unlock();
  return rc;
}
