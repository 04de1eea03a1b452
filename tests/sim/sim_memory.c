/*
 * Software CANN ("aclsim") -- device and host memory: the registries of aclrtMalloc and
 * aclrtMallocHost allocations, aclrtMalloc / aclrtFree / aclrtMallocHost / aclrtFreeHost and
 * aclrtGetMemInfo.
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

/* ======================================================================================
 * Device and host memory registries
 *
 * Both are kept sorted by base address, so "which live allocation contains p" is a binary
 * search (O(log n)); the ids of live device allocations are kept sorted too (they are handed
 * out in increasing order), so "is allocation #id still live" is a binary search as well.
 * Freed device ranges are remembered in a ring for double-free / use-after-free messages.
 * ====================================================================================== */
Registry g_devreg, g_hostreg;
static uint64_t *g_live_ids; /* ids of live device allocations, ascending */
static uint64_t g_nlive_ids, g_cap_live_ids;
static uint64_t g_next_alloc_id = 1;
uint64_t g_dev_bytes;
static uint64_t g_dev_used[SIM_MAX_DEVICES];
#define FREED_RING 4096
static Alloc g_freed[FREED_RING];
static uint64_t g_nfreed;

/* Entries compared by every registry search so far (tests check the O(log n) bound on it). */
static uint64_t g_reg_probes;

uint64_t sim_registry_probes(void) { return g_reg_probes; }

/* Index of the first entry whose base is > p (0..n). */
static uint64_t reg_upper(const Registry *r, const void *p) {
  const char *c = p;
  uint64_t lo = 0, hi = r->n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    g_reg_probes++;
    if (r->a[mid].base <= c) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static Alloc *reg_find_containing(const Registry *r, const void *p) {
  uint64_t i = reg_upper(r, p);
  if (i == 0) return NULL;
  Alloc *a = &r->a[i - 1];
  const char *c = p;
  return c < a->base + a->size ? a : NULL;
}

/* Index of the entry whose base is exactly p, or -1. */
static int64_t reg_find_base(const Registry *r, const void *p) {
  uint64_t i = reg_upper(r, p);
  return i > 0 && r->a[i - 1].base == (const char *)p ? (int64_t)(i - 1) : -1;
}

static bool reg_insert(Registry *r, Alloc a) {
  if (r->n >= r->cap) {
    uint64_t c = r->cap ? r->cap * 2 : 256;
    Alloc *p = realloc(r->a, c * sizeof *p);
    if (!p) return false;
    r->a = p;
    r->cap = c;
  }
  uint64_t i = reg_upper(r, a.base);
  memmove(&r->a[i + 1], &r->a[i], (r->n - i) * sizeof *r->a);
  r->a[i] = a;
  r->n++;
  return true;
}

static void reg_remove_at(Registry *r, uint64_t i) {
  memmove(&r->a[i], &r->a[i + 1], (r->n - i - 1) * sizeof *r->a);
  r->n--;
}

static int64_t live_id_index(uint64_t id) {
  uint64_t lo = 0, hi = g_nlive_ids;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (g_live_ids[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < g_nlive_ids && g_live_ids[lo] == id ? (int64_t)lo : -1;
}

static bool live_id_add(uint64_t id) { /* ids only grow: append */
  if (g_nlive_ids >= g_cap_live_ids) {
    uint64_t c = g_cap_live_ids ? g_cap_live_ids * 2 : 256;
    uint64_t *p = realloc(g_live_ids, c * sizeof *p);
    if (!p) return false;
    g_live_ids = p;
    g_cap_live_ids = c;
  }
  g_live_ids[g_nlive_ids++] = id;
  return true;
}

static void live_id_remove(uint64_t id) {
  int64_t i = live_id_index(id);
  if (i < 0) return;
  memmove(&g_live_ids[i], &g_live_ids[i + 1], (g_nlive_ids - (uint64_t)i - 1) * sizeof *g_live_ids);
  g_nlive_ids--;
}

uint64_t sim_dev_range_alloc(const void *p, uint64_t bytes) {
  sim_lock();
  uint64_t id = 0;
  Alloc *a = p ? reg_find_containing(&g_devreg, p) : NULL;
  if (a && (uint64_t)((const char *)p - a->base) + bytes <= a->size) id = a->id;
  sim_unlock();
  return id;
}

bool sim_dev_alloc_live(uint64_t alloc_id) {
  sim_lock();
  bool live = live_id_index(alloc_id) >= 0;
  sim_unlock();
  return live;
}

bool sim_is_device_ptr(const void *p) {
  sim_lock();
  bool r = p && reg_find_containing(&g_devreg, p) != NULL;
  sim_unlock();
  return r;
}

void sim_describe_ptr(const void *p, char *buf, size_t n) {
  sim_lock();
  const char *c = p;
  Alloc *a;
  if (p == NULL) {
    snprintf(buf, n, "NULL");
  } else if ((a = reg_find_containing(&g_devreg, p)) != NULL) {
    snprintf(buf, n, "%p lies %" PRIu64 " bytes into the live device allocation %p of %" PRIu64 " bytes",
             p, (uint64_t)(c - a->base), (void *)a->base, a->size);
  } else if ((a = reg_find_containing(&g_hostreg, p)) != NULL) {
    snprintf(buf, n, "%p is host memory from aclrtMallocHost (allocation %p of %" PRIu64 " bytes), not device memory",
             p, (void *)a->base, a->size);
  } else {
    uint64_t lim = g_nfreed < FREED_RING ? g_nfreed : FREED_RING;
    for (uint64_t i = 0; i < lim; i++) {
      Alloc *f = &g_freed[(g_nfreed - 1 - i) % FREED_RING];
      if (c >= f->base && c < f->base + f->size) {
        snprintf(buf, n, "%p lies in device memory that was already freed (allocation %p of %" PRIu64 " bytes)",
                 p, (void *)f->base, f->size);
        sim_unlock();
        return;
      }
    }
    snprintf(buf, n, "%p is not device memory (a host pointer or an unknown address)", p);
  }
  sim_unlock();
}

/* runtime src/acl/aclrt_impl/memory.cpp aclMallocMemInner / GetAlignedAndPaddingSize: aclrtMalloc
 * allocates (size + 32 + padding_size - 1) / 32 * 32 bytes, padding_size being the platform file's
 * [AICoreSpec] padding_size (GetPaddingSize 272-289: 32 when absent or malformed; 0 in the current
 * Ascend 950 and 350 files, absent in the pre-2026 Ascend910_9599.ini).  [aclsim] The SoC is the one
 * aclrtGetSocName() names now (CANN reads the size once per process, std::call_once). */
static bool malloc_padded_size(uint64_t size, uint64_t *out) {
  SimSocInfo soc;
  sim_soc_lookup(sim_rt_get_soc_name(), &soc);
  uint64_t padding = (uint64_t)soc.padding_size;
  uint64_t append = 32 + padding;
  if (size > UINT64_MAX - append) return false;
  *out = (size + append - 1) / 32 * 32;
  return true;
}

int sim_rt_malloc(void **p, uint64_t size, uint32_t policy) {
  const char *fn = "aclrtMalloc";
  (void)policy; /* every policy value is accepted (HUGE_FIRST / HUGE_ONLY / NORMAL_ONLY / ...) */
  if (!p) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: devPtr is NULL", fn);
  if (size == 0) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: size is 0", fn);
  int rc = need_device(fn);
  if (rc) return rc;
  int64_t fv = 0;
  if (sim_fault_fire(SIM_FAULT_MALLOC, &fv)) {
    /* The driver's out-of-memory: halMemAlloc fails, DRV_MALLOC_ERROR_PROCESS reports EL0004 with the
     * module name (aclrtMalloc passes APP), RT_ERROR_DRV_OUT_MEMORY -> 207001 (runtime
     * npu_driver_mem.cc, npu_driver_base.hpp, errcode_manage.cc, error_code.json). */
    return sim_fail(fv ? (int)fv : SIM_RT_MEMORY_ALLOCATION,
                    "%s: Failed to allocate memory requested by APP module. (EL0004: %" PRIu64
                    " bytes requested; injected fault: ACLSIM_FAULT malloc)",
                    fn, size);
  }
  uint64_t total = device_memory_total(), bytes = 0;
  sim_lock();
  uint64_t used = g_dev_used[t_device];
  if (!malloc_padded_size(size, &bytes) || bytes > total || used + bytes > total) {
    sim_unlock();
    return sim_fail(SIM_RT_MEMORY_ALLOCATION,
                    "%s: out of device memory: %" PRIu64 " bytes requested (%" PRIu64 " with aclrtMalloc's padding), %" PRIu64
                    " of %" PRIu64 " in use",
                    fn, size, bytes, used, total);
  }
  void *mem = NULL;
  if (posix_memalign(&mem, 512, (size_t)bytes) != 0 || !mem) {
    sim_unlock();
    return sim_fail(SIM_RT_MEMORY_ALLOCATION, "%s: host allocation of %" PRIu64 " bytes failed", fn, bytes);
  }
  memset(mem, 0xFF, (size_t)bytes); /* uninitialised device memory reads as NaN */
  Alloc a = {mem, bytes, size, g_next_alloc_id++, t_device};
  if (!reg_insert(&g_devreg, a) || !live_id_add(a.id)) {
    int64_t i = reg_find_base(&g_devreg, mem);
    if (i >= 0) reg_remove_at(&g_devreg, (uint64_t)i);
    free(mem);
    sim_unlock();
    return sim_fail(SIM_RT_MEMORY_ALLOCATION, "%s: registry allocation failed", fn);
  }
  g_dev_bytes += bytes;
  g_dev_used[t_device] += bytes;
  *p = mem;
  sim_unlock();
  return 0;
}

int sim_rt_free(void *p) {
  const char *fn = "aclrtFree";
  if (!p) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: devPtr is NULL", fn);
  int rc = need_device(fn);
  if (rc) return rc;
  sim_lock();
  int64_t i = reg_find_base(&g_devreg, p);
  if (i >= 0) {
    Alloc a = g_devreg.a[i];
    reg_remove_at(&g_devreg, (uint64_t)i);
    live_id_remove(a.id);
    g_dev_bytes -= a.size;
    g_dev_used[a.device] -= a.size;
    g_freed[g_nfreed++ % FREED_RING] = a; /* remembered for double-free diagnostics */
    memset(a.base, 0xDD, (size_t)a.size); /* poison */
    free(a.base);
    sim_unlock();
    return 0;
  }
  char why[256];
  sim_describe_ptr(p, why, sizeof why);
  sim_unlock();
  return sim_fail(SIM_RT_PARAM_INVALID, "%s: %p is not the base address of a live device allocation: %s%s", fn, p, why,
                  strstr(why, "already freed") ? " (double free?)" : "");
}

int sim_rt_malloc_host(void **p, uint64_t size) {
  const char *fn = "aclrtMallocHost";
  if (!p) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: hostPtr is NULL", fn);
  if (size == 0) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: size is 0", fn);
  int rc = need_device(fn);
  if (rc) return rc;
  void *mem = NULL;
  if (posix_memalign(&mem, 64, (size_t)size) != 0 || !mem)
    return sim_fail(SIM_RT_MEMORY_ALLOCATION, "%s: allocation of %" PRIu64 " bytes failed", fn, size);
  sim_lock();
  Alloc a = {mem, size, size, 0, t_device};
  if (!reg_insert(&g_hostreg, a)) {
    free(mem);
    sim_unlock();
    return sim_fail(SIM_RT_MEMORY_ALLOCATION, "%s: registry allocation failed", fn);
  }
  *p = mem;
  sim_unlock();
  return 0;
}

int sim_rt_free_host(void *p) {
  const char *fn = "aclrtFreeHost";
  if (!p) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: hostPtr is NULL", fn);
  sim_lock();
  int64_t i = reg_find_base(&g_hostreg, p);
  if (i >= 0) {
    free(g_hostreg.a[i].base);
    reg_remove_at(&g_hostreg, (uint64_t)i);
    sim_unlock();
    return 0;
  }
  char why[256];
  sim_describe_ptr(p, why, sizeof why);
  sim_unlock();
  return sim_fail(SIM_RT_PARAM_INVALID, "%s: %p is not the base address of a live aclrtMallocHost allocation (%s)", fn, p, why);
}

/* aclrtGetMemInfo counts the padded sizes aclrtMalloc really allocated. */
int sim_rt_get_mem_info(uint32_t attr, uint64_t *freeBytes, uint64_t *totalBytes) {
  const char *fn = "aclrtGetMemInfo";
  if (!freeBytes || !totalBytes) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: free or total is NULL", fn);
  if (attr > 7) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: invalid aclrtMemAttr %u", fn, attr);
  int rc = need_device(fn);
  if (rc) return rc;
  sim_lock();
  uint64_t used = g_dev_used[t_device];
  uint64_t total = device_memory_total();
  *totalBytes = total;
  *freeBytes = used >= total ? 0 : total - used;
  sim_unlock();
  return 0;
}
