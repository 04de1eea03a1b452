/*
 * Software CANN ("aclsim") -- shared state: errors, handles, device memory, streams,
 * executors, counters, and the runtime (acl / aclrt) and nnopbase behaviour.
 * Built into libaclsim_core.so; see tests/sim/README.md for every documented choice.
 *
 * Citations name the CANN source a behaviour is modelled on: "runtime:" is hicann/runtime,
 * "opbase:" is hicann/opbase.
 */
#define _GNU_SOURCE
#include "sim.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================================
 * Lock (one recursive mutex guards every registry)
 * ====================================================================================== */
static pthread_mutex_t g_mutex;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_mutex(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&g_mutex, &a);
  pthread_mutexattr_destroy(&a);
}

void sim_lock(void) {
  pthread_once(&g_once, init_mutex);
  pthread_mutex_lock(&g_mutex);
}

void sim_unlock(void) { pthread_mutex_unlock(&g_mutex); }

/* The calling thread's current device and context (runtime: InnerThreadLocalContainer). */
static _Thread_local int t_device = -1;
static _Thread_local void *t_ctx = NULL;

/* ======================================================================================
 * Error messages: aclGetRecentErrMsg
 *
 * runtime src/acl/aclrt_impl/acl.cpp aclGetRecentErrMsgImpl, with the host messages of
 * runtime src/dfx/error_manager/error_manager.cc (ErrorManager):
 * - every failing call reports one item into the calling thread's queue (INTERNAL_MODE keeps
 *   one queue per work stream = per thread, error_manager.cc GenWorkStreamIdDefault);
 * - an item identical to a queued one (same code and text, ErrorItem::operator==) is not
 *   queued again (ReportErrMessage / ReportInterErrMessage, `find(...) == end()`);
 * - at most SIM_ERR_MAX_ITEMS items are kept (ReportInterErrMessage kMaxWorkSize = 1000);
 * - a read formats the queue as ErrorManager::GetErrorMessage does (the first item, then
 *   "TraceBack (most recent call last):" and every later item indented by 8 spaces, each
 *   line ending in '\n'; the "[PID: n] <time> <title>(<code>): " prefix is not modelled)
 *   and clears it (GetRawErrorMessages);
 * - the result is kept in a thread-local string (acl.cpp `thread_local aclRecentErrMsg`) that
 *   only the device-message callback clears: aclGetRecentErrMsgImpl first calls
 *   rtGetDevMsg(RT_GET_DEV_ERROR_MSG, aclGetMsgCallback), which on a thread with a current
 *   context calls callback("", 0) (runtime api_impl_standard_soc.cc ApiImpl::GetDevErrMsg,
 *   STARS platforms) and fails without calling it on a thread without one. So on a thread with
 *   no device a second read returns the previous text again, and a new message is returned as
 *   `new + "\n" + previous`; with a device set a second read returns NULL.
 * - nothing pending at all -> NULL, never "".
 * ====================================================================================== */
#define SIM_ERR_CAP 2048
#define SIM_ERR_MAX_ITEMS 1000
#define SIM_ERR_LAST_CAP (256 * 1024) /* [aclsim] bound on the thread-local copy */

typedef struct {
  int code;
  char *text;
} ErrItem;

typedef struct {
  ErrItem *items; /* the host queue (ErrorManager, this thread's work stream) */
  size_t n, cap;
  char *last; /* aclRecentErrMsg (thread_local std::string); NULL = empty */
} ErrState;

/* One per thread that ever reported or read a message. Deliberately never freed: a pthread key
 * destructor would run at thread exit, possibly after the process dlclose()d this library (Deno
 * closes FFI libraries), and jump into unmapped code. */
static _Thread_local ErrState *t_err;

static void err_clear_queue(ErrState *s) {
  for (size_t i = 0; i < s->n; i++) free(s->items[i].text);
  s->n = 0;
}

static ErrState *err_state(void) {
  if (!t_err) t_err = calloc(1, sizeof *t_err);
  return t_err;
}

static void err_report(int code, const char *text) {
  ErrState *s = err_state();
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) /* ErrorItem::operator==: same id, same message */
    if (s->items[i].code == code && strcmp(s->items[i].text, text) == 0) return;
  if (s->n >= SIM_ERR_MAX_ITEMS) return; /* kMaxWorkSize: further items are skipped */
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 8;
    ErrItem *p = realloc(s->items, cap * sizeof *p);
    if (!p) return;
    s->items = p;
    s->cap = cap;
  }
  char *copy = strdup(text);
  if (!copy) return;
  s->items[s->n].code = code;
  s->items[s->n].text = copy;
  s->n++;
}

int sim_fail(int code, const char *fmt, ...) {
  char buf[SIM_ERR_CAP];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  err_report(code, buf);
  if (getenv("ACLSIM_VERBOSE") != NULL) fprintf(stderr, "[aclsim] %d: %s\n", code, buf);
  return code;
}

/* A failure CANN only logs (a warning: no error message is reported, opbase op_log.h OP_LOGW,
 * runtime ACL_LOG_INFO): returns `code` and queues nothing (printed with ACLSIM_VERBOSE). */
static int sim_quiet_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sim_quiet_fail(int code, const char *fmt, ...) {
  if (getenv("ACLSIM_VERBOSE") == NULL) return code;
  char buf[SIM_ERR_CAP];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[aclsim] %d (warning only, no error message): %s\n", code, buf);
  return code;
}

/* ErrorManager::GetErrorMessage: the first item, then the traceback. malloc'd, or NULL. */
static char *err_format(const ErrState *s) {
  if (s->n == 0) return NULL;
  static const char tb[] = "TraceBack (most recent call last):\n";
  size_t len = strlen(s->items[0].text) + 1 + (s->n > 1 ? sizeof tb - 1 : 0);
  for (size_t i = 1; i < s->n; i++) len += 8 + strlen(s->items[i].text) + 1;
  char *out = malloc(len + 1), *w = out;
  if (!out) return NULL;
  w += sprintf(w, "%s\n", s->items[0].text);
  if (s->n > 1) w += sprintf(w, "%s", tb);
  for (size_t i = 1; i < s->n; i++) w += sprintf(w, "        %s\n", s->items[i].text);
  return out;
}

const char *sim_take_error(void) {
  ErrState *s = err_state();
  if (!s) return NULL;
  /* rtGetDevMsg: with a current context the callback empties aclRecentErrMsg. */
  if (t_ctx != NULL && s->last) {
    free(s->last);
    s->last = NULL;
  }
  char *host = err_format(s); /* GetErrMgrErrorMessage: read and clear */
  err_clear_queue(s);
  if (!host) return s->last; /* NULL when both are empty */
  if (!s->last) {
    s->last = host;
    return s->last;
  }
  /* aclRecentErrMsg = aclHostErrMsg + "\n" + aclRecentErrMsg */
  size_t hl = strlen(host), ll = strlen(s->last);
  if (hl + 1 + ll > SIM_ERR_LAST_CAP) ll = hl + 1 >= SIM_ERR_LAST_CAP ? 0 : SIM_ERR_LAST_CAP - hl - 1;
  char *joined = malloc(hl + 1 + ll + 1);
  if (!joined) {
    free(s->last);
    s->last = host;
    return s->last;
  }
  memcpy(joined, host, hl);
  joined[hl] = '\n';
  memcpy(joined + hl + 1, s->last, ll);
  joined[hl + 1 + ll] = '\0';
  free(host);
  free(s->last);
  s->last = joined;
  return s->last;
}

/* ======================================================================================
 * Handles: opaque values HANDLE_BASE + 16*id with a never-reused id, so a stale handle
 * (destroyed tensor, consumed executor, destroyed stream) is always recognised.
 * ====================================================================================== */
typedef enum { K_NONE = 0, K_TENSOR, K_BOOLARR, K_INTARR, K_SCALAR, K_EXEC, K_STREAM, K_CONTEXT } Kind;
static const char *kind_name(Kind k) {
  switch (k) {
    case K_TENSOR: return "aclTensor";
    case K_BOOLARR: return "aclBoolArray";
    case K_INTARR: return "aclIntArray";
    case K_SCALAR: return "aclScalar";
    case K_EXEC: return "aclOpExecutor";
    case K_STREAM: return "aclrtStream";
    case K_CONTEXT: return "aclrtContext";
    default: return "nothing";
  }
}

/* Why a handle died, for diagnostics. */
typedef enum { END_NONE = 0, END_DESTROYED, END_CONSUMED, END_DELETED_BY_ERROR, END_TORN_DOWN } HandleEnd;

#define HANDLE_BASE 0x5A1D00000000ULL
typedef struct {
  Kind kind;
  Kind was; /* kind of a destroyed object, for diagnostics */
  HandleEnd end;
  void *obj;
} Slot;
static Slot *g_slots;
static uint64_t g_nslots = 1, g_capslots;
static int64_t g_live[8]; /* live objects per kind (defaults excluded) */

static void *handle_new(Kind k, void *obj, bool counted) {
  if (g_nslots >= g_capslots) {
    uint64_t cap = g_capslots ? g_capslots * 2 : 1024;
    Slot *s = realloc(g_slots, cap * sizeof *s);
    if (!s) return NULL;
    memset(s + g_capslots, 0, (cap - g_capslots) * sizeof *s);
    g_slots = s;
    g_capslots = cap;
  }
  uint64_t id = g_nslots++;
  g_slots[id].kind = k;
  g_slots[id].obj = obj;
  if (counted) g_live[k]++;
  return (void *)(uintptr_t)(HANDLE_BASE + id * 16);
}

static uint64_t handle_id(const void *h) {
  uintptr_t u = (uintptr_t)h;
  if (u < HANDLE_BASE + 16 || (u - HANDLE_BASE) % 16 != 0) return 0;
  uint64_t id = (u - HANDLE_BASE) / 16;
  return id < g_nslots ? id : 0;
}

/* Returns the object or NULL; *why describes the problem when NULL. */
static void *handle_get(const void *h, Kind k, const char **why) {
  static const char *const msgs[] = {"is NULL", "was never created by the simulator",
                                     "was already destroyed / consumed", "is a different kind of handle"};
  if (h == NULL) { if (why) *why = msgs[0]; return NULL; }
  uint64_t id = handle_id(h);
  if (id == 0) { if (why) *why = msgs[1]; return NULL; }
  if (g_slots[id].kind == K_NONE) { if (why) *why = msgs[2]; return NULL; }
  if (g_slots[id].kind != k) { if (why) *why = msgs[3]; return NULL; }
  return g_slots[id].obj;
}

/* How a dead handle of kind `k` ended (END_NONE: never one, or still live). */
static HandleEnd handle_end(const void *h, Kind k) {
  uint64_t id = handle_id(h);
  if (id == 0 || g_slots[id].kind != K_NONE || g_slots[id].was != k) return END_NONE;
  return g_slots[id].end;
}

static void handle_free(const void *h, bool counted, HandleEnd end) {
  uint64_t id = handle_id(h);
  if (id == 0) return;
  if (counted && g_slots[id].kind != K_NONE) g_live[g_slots[id].kind]--;
  g_slots[id].was = g_slots[id].kind;
  g_slots[id].kind = K_NONE;
  g_slots[id].end = end;
  g_slots[id].obj = NULL;
}

/* ======================================================================================
 * Devices, thread binding, contexts
 *
 * runtime src/runtime/core/src/runtime.cc PrimaryContextRetain / PrimaryContextRelease: one
 * reference count per process and device (shared by every thread) for the device's default
 * ("primary") context; the current context is per thread (api_impl.cc SetDevice,
 * InnerThreadLocalContainer::SetCurRef).
 * ====================================================================================== */
#define SIM_MAX_DEVICES 64
static uint64_t g_acl_init_count; /* runtime acl_rt_impl_base.cpp aclInitRefCount */
static bool g_acl_finalized;      /* runtime acl.cpp aclFinalizeFlag */
static uint64_t g_dev_refs[SIM_MAX_DEVICES];
static void *g_default_stream[SIM_MAX_DEVICES];
static void *g_default_ctx[SIM_MAX_DEVICES];

typedef struct {
  int device;
  bool is_default;
} Context;

static int device_count(void) {
  const char *s = getenv("ACLSIM_DEVICE_COUNT");
  if (!s || !*s) return 1;
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (*end != '\0' || v < 0) return 1;
  return v > SIM_MAX_DEVICES ? SIM_MAX_DEVICES : (int)v;
}

static uint64_t device_memory_total(void) {
  const char *s = getenv("ACLSIM_DEVICE_MEMORY");
  if (s && *s) {
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == '\0' && v > 0) return (uint64_t)v;
  }
  return 32ULL << 30; /* 32 GiB */
}

static int need_device(const char *fn) {
  if (t_device < 0)
    return sim_fail(SIM_RT_CONTEXT_NULL,
                    "%s: no device is set on the calling thread (call aclrtSetDevice or "
                    "aclrtSetCurrentContext on this thread first)",
                    fn);
  return 0;
}

static void *default_context(int dev) {
  if (!g_default_ctx[dev]) {
    Context *c = calloc(1, sizeof *c);
    c->device = dev;
    c->is_default = true;
    g_default_ctx[dev] = handle_new(K_CONTEXT, c, false);
  }
  return g_default_ctx[dev];
}

/* ======================================================================================
 * Device and host memory registries
 *
 * Both are kept sorted by base address, so "which live allocation contains p" is a binary
 * search (O(log n)); the ids of live device allocations are kept sorted too (they are handed
 * out in increasing order), so "is allocation #id still live" is a binary search as well.
 * Freed device ranges are remembered in a ring for double-free / use-after-free messages.
 * ====================================================================================== */
typedef struct {
  char *base;
  uint64_t size;      /* bytes really allocated (aclrtMalloc's padded size) */
  uint64_t requested; /* bytes the caller asked for */
  uint64_t id;
  int device;
} Alloc;

typedef struct {
  Alloc *a; /* sorted by base */
  uint64_t n, cap;
} Registry;

static Registry g_devreg, g_hostreg;
static uint64_t *g_live_ids; /* ids of live device allocations, ascending */
static uint64_t g_nlive_ids, g_cap_live_ids;
static uint64_t g_next_alloc_id = 1;
static uint64_t g_dev_bytes;
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

/* ======================================================================================
 * Tensors, arrays, scalars
 * ====================================================================================== */
typedef struct { SimTensorDesc d; } Tensor;
typedef struct { uint64_t n; bool *v; } BoolArr;
typedef struct { uint64_t n; int64_t *v; } IntArr;
typedef struct { int32_t dtype; unsigned char v[16]; } Scalar;

static bool dtype_known(int32_t dt) { return sim_dtype_size(dt) != 0; }

static bool format_known(int32_t f) {
  switch (f) {
    case -1: case SIM_FMT_NCHW: case SIM_FMT_NHWC: case SIM_FMT_ND: case SIM_FMT_NC1HWC0:
    case SIM_FMT_FRACTAL_Z: case SIM_FMT_HWCN: case SIM_FMT_NDHWC: case SIM_FMT_FRACTAL_NZ:
    case SIM_FMT_NCDHW: case SIM_FMT_NDC1HWC0: case SIM_FMT_FRACTAL_Z_3D: case SIM_FMT_NC:
    case SIM_FMT_NCL:
      return true;
    default:
      return false;
  }
}

void *sim_create_tensor(const int64_t *viewDims, uint64_t viewDimsNum, int32_t dataType,
                        const int64_t *stride, int64_t offset, int32_t format,
                        const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData) {
  const char *fn = "aclCreateTensor";
  if (viewDimsNum > SIM_MAX_DIMS) {
    sim_fail(SIM_NN_INVALID, "%s: viewDimsNum %" PRIu64 " exceeds the maximum of 8 dims", fn, viewDimsNum);
    return NULL;
  }
  if (storageDimsNum > SIM_MAX_DIMS) {
    sim_fail(SIM_NN_INVALID, "%s: storageDimsNum %" PRIu64 " exceeds the maximum of 8 dims", fn, storageDimsNum);
    return NULL;
  }
  if (viewDimsNum > 0 && viewDims == NULL) {
    sim_fail(SIM_NN_NULLPTR, "%s: viewDims is NULL but viewDimsNum is %" PRIu64, fn, viewDimsNum);
    return NULL;
  }
  if (viewDimsNum > 0 && stride == NULL) {
    sim_fail(SIM_NN_NULLPTR, "%s: stride is NULL but viewDimsNum is %" PRIu64, fn, viewDimsNum);
    return NULL;
  }
  if (storageDimsNum > 0 && storageDims == NULL) {
    sim_fail(SIM_NN_NULLPTR, "%s: storageDims is NULL but storageDimsNum is %" PRIu64, fn, storageDimsNum);
    return NULL;
  }
  if (!dtype_known(dataType)) {
    sim_fail(SIM_NN_INVALID, "%s: unknown dataType %d", fn, dataType);
    return NULL;
  }
  if (!format_known(format)) {
    sim_fail(SIM_NN_INVALID, "%s: unknown format %d", fn, format);
    return NULL;
  }
  for (uint64_t i = 0; i < viewDimsNum; i++)
    if (viewDims[i] < 0) {
      sim_fail(SIM_NN_INVALID, "%s: viewDims[%" PRIu64 "] = %" PRId64 " is negative", fn, i, viewDims[i]);
      return NULL;
    }
  for (uint64_t i = 0; i < storageDimsNum; i++)
    if (storageDims[i] < 0) {
      sim_fail(SIM_NN_INVALID, "%s: storageDims[%" PRIu64 "] = %" PRId64 " is negative", fn, i, storageDims[i]);
      return NULL;
    }
  Tensor *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->d.ndim = (int32_t)viewDimsNum;
  for (uint64_t i = 0; i < viewDimsNum; i++) {
    t->d.dims[i] = viewDims[i];
    t->d.strides[i] = stride[i];
  }
  t->d.offset = offset;
  t->d.dtype = dataType;
  t->d.format = format;
  t->d.sndim = (int32_t)storageDimsNum;
  for (uint64_t i = 0; i < storageDimsNum; i++) t->d.sdims[i] = storageDims[i];
  t->d.data = tensorData;
  sim_lock();
  void *h = handle_new(K_TENSOR, t, true);
  t->d.origin = h;
  sim_unlock();
  if (!h) free(t);
  return h;
}

static int destroy_obj(const char *fn, const void *h, Kind k) {
  if (h == NULL) return 0;
  sim_lock();
  const char *why = NULL;
  void *o = handle_get(h, k, &why);
  if (!o) {
    sim_unlock();
    return sim_fail(SIM_NN_INVALID, "%s: %p %s (not a live %s)", fn, h, why, kind_name(k));
  }
  if (k == K_BOOLARR) free(((BoolArr *)o)->v);
  if (k == K_INTARR) free(((IntArr *)o)->v);
  free(o);
  handle_free(h, true, END_DESTROYED);
  sim_unlock();
  return 0;
}

int sim_destroy_tensor(const void *t) { return destroy_obj("aclDestroyTensor", t, K_TENSOR); }
int sim_destroy_bool_array(const void *a) { return destroy_obj("aclDestroyBoolArray", a, K_BOOLARR); }
int sim_destroy_int_array(const void *a) { return destroy_obj("aclDestroyIntArray", a, K_INTARR); }
int sim_destroy_scalar(const void *s) { return destroy_obj("aclDestroyScalar", s, K_SCALAR); }

void *sim_create_bool_array(const bool *v, uint64_t n) {
  if (n > 0 && v == NULL) {
    sim_fail(SIM_NN_NULLPTR, "aclCreateBoolArray: value is NULL but size is %" PRIu64, n);
    return NULL;
  }
  BoolArr *a = calloc(1, sizeof *a);
  a->n = n;
  a->v = calloc(n ? n : 1, sizeof(bool));
  for (uint64_t i = 0; i < n; i++) a->v[i] = v[i];
  sim_lock();
  void *h = handle_new(K_BOOLARR, a, true);
  sim_unlock();
  return h;
}

void *sim_create_int_array(const int64_t *v, uint64_t n) {
  if (n > 0 && v == NULL) {
    sim_fail(SIM_NN_NULLPTR, "aclCreateIntArray: value is NULL but size is %" PRIu64, n);
    return NULL;
  }
  IntArr *a = calloc(1, sizeof *a);
  a->n = n;
  a->v = calloc(n ? n : 1, sizeof(int64_t));
  if (n) memcpy(a->v, v, n * sizeof(int64_t));
  sim_lock();
  void *h = handle_new(K_INTARR, a, true);
  sim_unlock();
  return h;
}

void *sim_create_scalar(const void *v, int32_t dtype) {
  if (v == NULL) {
    sim_fail(SIM_NN_NULLPTR, "aclCreateScalar: value is NULL");
    return NULL;
  }
  size_t sz = sim_dtype_size(dtype);
  if (sz == 0) {
    sim_fail(SIM_NN_INVALID, "aclCreateScalar: unknown dataType %d", dtype);
    return NULL;
  }
  Scalar *s = calloc(1, sizeof *s);
  s->dtype = dtype;
  memcpy(s->v, v, sz);
  sim_lock();
  void *h = handle_new(K_SCALAR, s, true);
  sim_unlock();
  return h;
}

int sim_lookup_tensor(const void *h, SimTensorDesc *out) {
  sim_lock();
  Tensor *t = handle_get(h, K_TENSOR, NULL);
  if (t) *out = t->d;
  sim_unlock();
  return t ? 0 : -1;
}

int sim_lookup_int_array(const void *h, int64_t *vals, uint64_t cap, uint64_t *n) {
  sim_lock();
  IntArr *a = handle_get(h, K_INTARR, NULL);
  if (a) {
    *n = a->n;
    for (uint64_t i = 0; i < a->n && i < cap; i++) vals[i] = a->v[i];
  }
  sim_unlock();
  return a ? 0 : -1;
}

int sim_lookup_bool_array(const void *h, bool *vals, uint64_t cap, uint64_t *n) {
  sim_lock();
  BoolArr *a = handle_get(h, K_BOOLARR, NULL);
  if (a) {
    *n = a->n;
    for (uint64_t i = 0; i < a->n && i < cap; i++) vals[i] = a->v[i];
  }
  sim_unlock();
  return a ? 0 : -1;
}

static int tensor_get(const char *fn, const void *h, const void *out, Tensor **t) {
  if (h == NULL) return sim_fail(SIM_NN_NULLPTR, "%s failed because tensor cannot be a NULL pointer.", fn);
  if (out == NULL) return sim_fail(SIM_NN_NULLPTR, "%s: output pointer is NULL", fn);
  const char *why = NULL;
  *t = handle_get(h, K_TENSOR, &why);
  if (!*t) return sim_fail(SIM_NN_INVALID, "%s: tensor %p %s (not a live aclTensor)", fn, h, why);
  return 0;
}

/* opbase acl_op_api.cpp aclSetRawTensorAddr: NULL tensor -> 161001 (ACLNN_ERR_PARAM_NULLPTR, not
 * the 561103 of the executor functions), else tensor->SetStorageAddr(addr). A stale handle is the
 * simulator's 161002. */
int sim_tensor_set_raw_addr(void *h, void *addr) {
  sim_lock();
  Tensor *t;
  int rc = tensor_get("aclSetRawTensorAddr", h, "", &t);
  if (!rc) t->d.data = addr;
  sim_unlock();
  return rc;
}
int sim_tensor_get_raw_addr(const void *h, void **addr) {
  sim_lock();
  Tensor *t;
  int rc = tensor_get("aclGetRawTensorAddr", h, addr, &t);
  if (!rc) *addr = t->d.data;
  sim_unlock();
  return rc;
}
int sim_tensor_get_view_offset(const void *h, int64_t *offset) {
  sim_lock();
  Tensor *t;
  int rc = tensor_get("aclGetViewOffset", h, offset, &t);
  if (!rc) *offset = t->d.offset;
  sim_unlock();
  return rc;
}
int sim_tensor_get_format(const void *h, int32_t *format) {
  sim_lock();
  Tensor *t;
  int rc = tensor_get("aclGetFormat", h, format, &t);
  if (!rc) *format = t->d.format;
  sim_unlock();
  return rc;
}
int sim_tensor_get_dtype(const void *h, int32_t *dtype) {
  sim_lock();
  Tensor *t;
  int rc = tensor_get("aclGetDataType", h, dtype, &t);
  if (!rc) *dtype = t->d.dtype;
  sim_unlock();
  return rc;
}

/* opbase src/nnopbase/common/api/aclnn_init.cpp aclnnInit: loads the OPP packages once
 * (std::call_once) and sets the debug-kernel flag; it has no repeat guard and always returns
 * ACLNN_SUCCESS, a second call included. aclnnFinalize (same file) clears the AI-CPU task spaces
 * and always returns ACLNN_SUCCESS. Neither is required before an aclnn call. */
int sim_nn_init(const char *config) {
  (void)config;
  return 0;
}
int sim_nn_finalize(void) { return 0; }

/* ======================================================================================
 * Streams and tasks
 * ====================================================================================== */
typedef enum { T_OP = 1, T_MEMCPY, T_HOST } TaskKind;
typedef struct Task {
  TaskKind kind;
  uint64_t seq;
  SimPlan plan;
  void *ws;
  uint64_t ws_alloc;
  void *dst;
  const void *src;
  uint64_t count;
  uint32_t memkind;
  uint64_t dst_alloc, src_alloc;
  int (*host_run)(void *arg); /* T_HOST (sim_stream_enqueue) */
  void (*host_drop)(void *arg);
  void *host_arg;
  int fault; /* nonzero: the kernel fails with this code at execution (fault injection) */
  struct Task *next;
} Task;

typedef struct {
  int device;
  bool is_default;
  void *handle;
  void *ctx; /* the context current when it was created (default streams: the device's) */
  Task *head, *tail;
} Stream;

static int64_t g_pending, g_tasks_done, g_tasks_failed;
static uint64_t g_task_seq;
static Stream **g_streams; /* every live stream, default streams included */
static uint64_t g_nstreams, g_capstreams;

static bool stream_register(Stream *s) {
  if (g_nstreams >= g_capstreams) {
    uint64_t c = g_capstreams ? g_capstreams * 2 : 16;
    Stream **p = realloc(g_streams, c * sizeof *p);
    if (!p) return false;
    g_streams = p;
    g_capstreams = c;
  }
  g_streams[g_nstreams++] = s;
  return true;
}

static void stream_unregister(Stream *s) {
  for (uint64_t i = 0; i < g_nstreams; i++)
    if (g_streams[i] == s) {
      memmove(&g_streams[i], &g_streams[i + 1], (g_nstreams - i - 1) * sizeof *g_streams);
      g_nstreams--;
      return;
    }
}

static void *default_stream(int dev) {
  if (!g_default_stream[dev]) {
    Stream *s = calloc(1, sizeof *s);
    s->device = dev;
    s->is_default = true;
    s->ctx = default_context(dev);
    s->handle = handle_new(K_STREAM, s, false);
    stream_register(s);
    g_default_stream[dev] = s->handle;
  }
  return g_default_stream[dev];
}

/* Resolves a stream argument (NULL = default stream of the current device). */
static Stream *resolve_stream(const char *fn, void *h, int *rc, int badcode) {
  *rc = 0;
  if (h == NULL) return handle_get(default_stream(t_device), K_STREAM, NULL);
  const char *why = NULL;
  Stream *s = handle_get(h, K_STREAM, &why);
  if (!s) {
    if (handle_end(h, K_STREAM) == END_TORN_DOWN)
      why = "was destroyed when the last aclrtResetDevice of its device tore the device's default context "
            "down (runtime runtime.cc PrimaryContextRelease: the streams created in it go with it)";
    *rc = sim_fail(badcode, "%s: stream %p %s (not a live aclrtStream)", fn, h, why);
    return NULL;
  }
  if (s->device != t_device) {
    *rc = sim_fail(badcode, "%s: stream %p belongs to device %d but the calling thread is bound to device %d",
                   fn, h, s->device, t_device);
    return NULL;
  }
  return s;
}

static void enqueue(Stream *s, Task *t) {
  t->seq = ++g_task_seq;
  t->next = NULL;
  if (s->tail) s->tail->next = t;
  else s->head = t;
  s->tail = t;
  g_pending++;
}

/* A stream that refuses a task (fault injection): sending a task to a stream in abort state is
 * RT_ERROR_STREAM_ABORT_SEND_TASK_FAIL -> ACL_ERROR_RT_STREAM_ABORT 107023 "stream abort" (runtime
 * stars_engine.cc, errcode_manage.cc; stream.cc reports "The stream ... is in abort state"). The
 * tasks already queued are kept. Returns the code. */
static int stream_refuses(const char *fn, Stream *s, int64_t fv) {
  return sim_fail(fv ? (int)fv : SIM_RT_STREAM_ABORT,
                  "%s: The stream %p is in abort state; the task was not sent. (injected fault: ACLSIM_FAULT stream)",
                  fn, s->handle);
}

/* Frees a task; a host task's drop hook runs exactly once, after its run or instead of it. */
static void free_task(Task *t) {
  if (t->kind == T_HOST && t->host_drop) t->host_drop(t->host_arg);
  free(t);
}

/* Drops every queued task of the stream unexecuted (counted as discarded). */
static void discard_tasks(Stream *s) {
  while (s->head) {
    Task *t = s->head;
    s->head = t->next;
    g_pending--;
    g_tasks_failed++;
    free_task(t);
  }
  s->tail = NULL;
}

static const char *alloc_state(uint64_t id) { return sim_dev_alloc_live(id) ? "live" : "freed"; }

static int run_task(const char *fn, Task *t) {
  if (t->kind == T_HOST) {
    /* A host task (the software HCCL's collectives, hccl_sim.c) may block for a long time: it
     * waits for its peers, which can be other threads of this process synchronising their own
     * streams. So it runs with the lock released (the task is already unlinked from its stream;
     * two threads draining the SAME stream at once may then run its tasks out of order). */
    sim_unlock();
    int rc = t->host_run(t->host_arg);
    sim_lock();
    return rc;
  }
  if (t->kind == T_MEMCPY) {
    if (t->dst_alloc && !sim_dev_alloc_live(t->dst_alloc))
      return sim_fail(SIM_RT_INTERNAL_ERROR,
                      "%s: aclrtMemcpyAsync task #%" PRIu64 ": destination device memory %p was freed before the stream "
                      "was synchronised",
                      fn, t->seq, t->dst);
    if (t->src_alloc && !sim_dev_alloc_live(t->src_alloc))
      return sim_fail(SIM_RT_INTERNAL_ERROR,
                      "%s: aclrtMemcpyAsync task #%" PRIu64 ": source device memory %p was freed before the stream "
                      "was synchronised",
                      fn, t->seq, t->src);
    if (t->count) memmove(t->dst, t->src, t->count);
    return 0;
  }
  const SimPlan *p = &t->plan;
  for (int i = 0; i < p->n_in + p->n_out; i++) {
    if (!p->present[i] || p->t[i].alloc_id == 0) continue;
    if (!sim_dev_alloc_live(p->t[i].alloc_id))
      return sim_fail(SIM_RT_INTERNAL_ERROR,
                      "%s: %s task #%" PRIu64 ": the device memory of %s '%s' (%p) was freed before the stream was "
                      "synchronised; inputs, outputs and the workspace must stay alive until "
                      "aclrtSynchronizeStream returns",
                      fn, p->name, t->seq, i < p->n_in ? "input" : "output", p->tname[i], p->t[i].data);
  }
  if (p->ws_size > 0 && !sim_dev_alloc_live(t->ws_alloc))
    return sim_fail(SIM_RT_INTERNAL_ERROR,
                    "%s: %s task #%" PRIu64 ": the workspace %p (%s) was freed before the stream was synchronised",
                    fn, p->name, t->seq, t->ws, alloc_state(t->ws_alloc));
  if (t->fault == SIM_RT_AICORE_EXCEPTION)
    /* An AI Core exception: the task scheduler reports TS_ERROR_AICORE_EXCEPTION (0x26), mapped to
     * RT_ERROR_TSFW_AICORE_EXCEPTION -> ACL_ERROR_RT_AICORE_EXCEPTION 507015 "aicore exception",
     * returned by the stream synchronisation (runtime task_scheduler_error.h, error_code.cc,
     * errcode_manage.cc; notify_task.cc "Kernel task happen error"; api_error.cc StreamSynchronize
     * "Stream synchronize failed"). Nothing is written. */
    return sim_fail(t->fault,
                    "%s: %s task #%" PRIu64 ": Kernel task happen error, retCode=0x26, [aicore exception]. "
                    "Stream synchronize failed. (injected fault: ACLSIM_FAULT kernel)",
                    fn, p->name, t->seq);
  if (t->fault)
    return sim_fail(t->fault, "%s: %s task #%" PRIu64 ": Kernel task happen error. Stream synchronize failed. "
                    "(injected fault: ACLSIM_FAULT kernel)", fn, p->name, t->seq);
  /* The device scribbles over its workspace: a workspace overlapping a tensor corrupts it. */
  if (p->ws_size > 0) memset(t->ws, 0xCD, p->ws_size);
  /* [aclsim] fault `corrupt`: a silent wrong result, every value the kernel writes scaled. */
  sim_set_store_scale(sim_fault_corrupt_factor());
  int rc = sim_op_run(p, t->ws);
  sim_set_store_scale(1.0);
  if (rc) return sim_fail(SIM_RT_INTERNAL_ERROR, "%s: %s task #%" PRIu64 " failed while executing", fn, p->name, t->seq);
  return 0;
}

/* Runs every pending task of the stream in order; on the first failure the remaining tasks
 * of that stream are discarded (the stream is in error, like a device exception). */
static int drain_stream(const char *fn, Stream *s) {
  int rc = 0;
  while (s->head) {
    Task *t = s->head;
    s->head = t->next;
    if (!s->head) s->tail = NULL;
    g_pending--;
    if (rc == 0) {
      rc = run_task(fn, t);
      if (rc) g_tasks_failed++;
      else g_tasks_done++;
    } else {
      g_tasks_failed++;
    }
    free_task(t);
  }
  return rc;
}

/* The last reference of a device went (runtime runtime.cc ReleasePrimaryContextSlot ->
 * ExecutePrimaryTearDown -> Context::TearDown): the default context goes with its default stream
 * and every stream created in it (their queued tasks are discarded, counter 12); a stale handle
 * of them is then refused like any other (107000). The calling thread is unbound when that
 * context was its current one (the ScopeGuard in ExecutePrimaryTearDown,
 * `(previousCtx == ctx) ? nullptr : previousCtx`). Device memory is NOT released, so leaks
 * stay visible; other threads keep their (now stale) binding, which is not modelled. */
static void device_teardown(int dev) {
  void *dctx = g_default_ctx[dev];
  for (uint64_t i = 0; i < g_nstreams;) {
    Stream *s = g_streams[i];
    if (s->device == dev && (s->is_default || (dctx && s->ctx == dctx))) {
      discard_tasks(s);
      memmove(&g_streams[i], &g_streams[i + 1], (g_nstreams - i - 1) * sizeof *g_streams);
      g_nstreams--;
      handle_free(s->handle, !s->is_default, END_TORN_DOWN);
      if (s->is_default) g_default_stream[dev] = NULL;
      free(s);
    } else {
      i++;
    }
  }
  if (dctx) {
    free(handle_get(dctx, K_CONTEXT, NULL));
    handle_free(dctx, false, END_TORN_DOWN);
    g_default_ctx[dev] = NULL;
    if (t_ctx == dctx) {
      t_ctx = NULL;
      t_device = -1;
    }
  }
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

int sim_rt_sync_device(void) {
  int rc = need_device("aclrtSynchronizeDevice");
  if (rc) return rc;
  sim_lock();
  for (uint64_t i = 0; i < g_nstreams; i++) {
    Stream *s = g_streams[i];
    if (s->device != t_device) continue;
    int r = drain_stream("aclrtSynchronizeDevice", s);
    if (r && !rc) rc = r;
  }
  sim_unlock();
  return rc;
}

int sim_rt_create_stream(void **stream) {
  if (!stream) return sim_fail(SIM_ACL_INVALID_PARAM, "aclrtCreateStream: stream is NULL");
  int rc = need_device("aclrtCreateStream");
  if (rc) return rc;
  int64_t fv = 0;
  if (sim_fault_fire(SIM_FAULT_CREATE_STREAM, &fv))
    /* The driver has no stream left: DRV_ERROR_NO_STREAM_RESOURCES -> RT_ERROR_DRV_NO_STREAM_RESOURCES
     * -> ACL_ERROR_RT_NO_STREAM_RESOURCE 207008, "driver error:no stream resource" (runtime
     * errcode_manage.cc InitDrvErrCodeMap / rtErrMap_). Nothing is created. */
    return sim_fail(fv ? (int)fv : SIM_RT_NO_STREAM_RESOURCE,
                    "aclrtCreateStream: driver error:no stream resource (injected fault: ACLSIM_FAULT create_stream)");
  Stream *s = calloc(1, sizeof *s);
  s->device = t_device;
  s->ctx = t_ctx;
  sim_lock();
  s->handle = handle_new(K_STREAM, s, true);
  stream_register(s);
  *stream = s->handle;
  sim_unlock();
  return 0;
}

int sim_rt_destroy_stream(void *stream) {
  const char *fn = "aclrtDestroyStream";
  if (!stream) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: stream is NULL (the default stream cannot be destroyed)", fn);
  int rc = need_device(fn);
  if (rc) return rc;
  sim_lock();
  Stream *s = resolve_stream(fn, stream, &rc, SIM_RT_PARAM_INVALID);
  if (!s) { sim_unlock(); return rc; }
  if (s->is_default) { sim_unlock(); return sim_fail(SIM_ACL_INVALID_PARAM, "%s: the default stream cannot be destroyed", fn); }
  rc = drain_stream(fn, s);
  stream_unregister(s);
  handle_free(stream, true, END_DESTROYED);
  free(s);
  sim_unlock();
  return rc;
}

int sim_rt_sync_stream(void *stream) {
  const char *fn = "aclrtSynchronizeStream";
  int rc = need_device(fn);
  if (rc) return rc;
  sim_lock();
  Stream *s = resolve_stream(fn, stream, &rc, SIM_RT_PARAM_INVALID);
  if (s) rc = drain_stream(fn, s);
  sim_unlock();
  return rc;
}

/* A generic host task (used by the software HCCL, hccl_sim.c): queued on `stream` (NULL = the
 * default stream of the calling thread's device), it runs in order with the stream's other tasks
 * when the stream is drained (aclrtSynchronizeStream / aclrtSynchronizeDevice /
 * aclrtDestroyStream), with the lock released (run_task). `run(arg)` returns 0 or the aclError the
 * synchronisation returns, having reported its own text with sim_fail; a failure discards the
 * stream's later tasks, as for any task. Host tasks count as tasks (counters 9, 11, 12).
 * `drop(arg)` (may be NULL) is called exactly once, after `run` or instead of it when the task is
 * discarded (an earlier task failed, or the last aclrtResetDevice tore the stream down), possibly
 * with the lock held: it must not block. Returns 0, or the status with its text reported: 107002
 * without a device on the calling thread, `badcode` for a stale stream or a stream of another
 * device, 207001 when out of memory; on failure nothing is queued and `drop` is not called. */
int sim_stream_enqueue(const char *fn, void *stream, int badcode, int (*run)(void *arg),
                       void (*drop)(void *arg), void *arg) {
  if (!run) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: no host task function", fn);
  int rc = need_device(fn);
  if (rc) return rc;
  sim_lock();
  Stream *s = resolve_stream(fn, stream, &rc, badcode);
  if (s) {
    Task *t = calloc(1, sizeof *t);
    if (!t) {
      rc = sim_fail(SIM_RT_MEMORY_ALLOCATION, "%s: out of host memory for a stream task", fn);
    } else {
      t->kind = T_HOST;
      t->host_run = run;
      t->host_drop = drop;
      t->host_arg = arg;
      enqueue(s, t);
    }
  }
  sim_unlock();
  return rc;
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

/* Counter order (stable; documented in README.md):
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

/* ======================================================================================
 * Executors: CANN's composite ("hand-written" aclnn) executors, opbase
 * src/nnopbase/common/api/acl_op_api.cpp and composite_op/aclnn_engine/op_executor.cpp.
 *
 * Phase 1 snapshots every descriptor. A non-repeatable executor runs that snapshot once and
 * is freed by its phase 2 (CommonOpExecutorRun `delete executor`). A repeatable one keeps the
 * caller's aclTensor objects and re-reads their storage addresses on every run
 * (RepeatRunWithCache reads cachedStorageList_'s current addresses), until
 * aclDestroyAclOpExecutor.
 *
 * CANN's executor cache (op_cache.cpp GetFromCache, on by default): a phase 1 whose arguments
 * equal those of an executor that already ran non-repeatably is answered with a cache wrap
 * (OpExecCacheWrap), which aclSetAclOpExecutorRepeatable refuses (561000). Modelled by a set of
 * phase-1 signatures (operator, every tensor's presence / dtype / format / shape / strides /
 * offset / storage shape, every scalar and mask, the SoC name) of executors whose
 * non-repeatable phase 2 succeeded.
 * ====================================================================================== */
typedef struct {
  uint64_t h[2];
} Sig;

typedef struct {
  SimPlan plan;
  bool repeatable;
  bool from_cache; /* phase 1 would have been answered from CANN's executor cache */
  bool touched[SIM_MAX_TENSORS]; /* slots whose memory the task uses (validated at phase 1) */
  Sig sig;
  int runs;
} Exec;

static Sig *g_sigs; /* open addressing; {0, 0} = empty */
static uint64_t g_nsigs, g_capsigs;

static void sig_mix(Sig *s, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    s->h[0] = (s->h[0] ^ b[i]) * 0x100000001b3ULL; /* FNV-1a */
    s->h[1] = ((s->h[1] ^ b[i]) * 0x9E3779B97F4A7C15ULL) ^ (s->h[1] >> 29);
  }
}
#define SIG_MIX(s, v) sig_mix((s), &(v), sizeof(v))

static Sig plan_signature(const SimPlan *p, const char *soc) {
  Sig s = {{0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL}};
  int32_t op = (int32_t)p->op;
  SIG_MIX(&s, op);
  SIG_MIX(&s, p->n_in);
  SIG_MIX(&s, p->n_out);
  for (int i = 0; i < p->n_in + p->n_out; i++) {
    unsigned char present = p->present[i];
    SIG_MIX(&s, present);
    if (!present) continue;
    const SimTensorDesc *d = &p->t[i];
    SIG_MIX(&s, d->dtype);
    SIG_MIX(&s, d->format);
    SIG_MIX(&s, d->ndim);
    sig_mix(&s, d->dims, (size_t)d->ndim * sizeof d->dims[0]);
    sig_mix(&s, d->strides, (size_t)d->ndim * sizeof d->strides[0]);
    SIG_MIX(&s, d->offset);
    SIG_MIX(&s, d->sndim);
    sig_mix(&s, d->sdims, (size_t)d->sndim * sizeof d->sdims[0]);
  }
  for (int i = 0; i < 3; i++) {
    unsigned char m = p->mask[i];
    SIG_MIX(&s, m);
  }
  unsigned char training = p->training;
  SIG_MIX(&s, training);
  SIG_MIX(&s, p->eps);
  SIG_MIX(&s, p->momentum);
  SIG_MIX(&s, p->alpha);
  SIG_MIX(&s, p->N);
  SIG_MIX(&s, p->C);
  SIG_MIX(&s, p->HxW);
  SIG_MIX(&s, p->group);
  SIG_MIX(&s, p->norm_axis);
  SIG_MIX(&s, p->norm_mode);
  sig_mix(&s, p->norm_dt, sizeof p->norm_dt);
  if (soc) sig_mix(&s, soc, strlen(soc));
  if (s.h[0] == 0 && s.h[1] == 0) s.h[1] = 1;
  return s;
}

static uint64_t sig_slot(const Sig *s, uint64_t cap) {
  uint64_t i = s->h[0] & (cap - 1);
  while ((g_sigs[i].h[0] || g_sigs[i].h[1]) && (g_sigs[i].h[0] != s->h[0] || g_sigs[i].h[1] != s->h[1]))
    i = (i + 1) & (cap - 1);
  return i;
}

static bool sigset_has(const Sig *s) {
  if (g_capsigs == 0) return false;
  const Sig *e = &g_sigs[sig_slot(s, g_capsigs)];
  return e->h[0] == s->h[0] && e->h[1] == s->h[1];
}

static void sigset_add(const Sig *s) {
  if (sigset_has(s)) return;
  if (2 * (g_nsigs + 1) > g_capsigs) {
    uint64_t cap = g_capsigs ? g_capsigs * 2 : 256;
    Sig *old = g_sigs, *fresh = calloc(cap, sizeof *fresh);
    if (!fresh) return;
    uint64_t oldcap = g_capsigs;
    g_sigs = fresh;
    g_capsigs = cap;
    for (uint64_t i = 0; i < oldcap; i++)
      if (old[i].h[0] || old[i].h[1]) g_sigs[sig_slot(&old[i], cap)] = old[i];
    free(old);
  }
  g_sigs[sig_slot(s, g_capsigs)] = *s;
  g_nsigs++;
}

int sim_executor_create(const SimPlan *plan, uint64_t *workspaceSize, void **executor) {
  Exec *e = calloc(1, sizeof *e);
  if (!e) return sim_fail(561101, "%s: cannot create the executor", plan->name);
  e->plan = *plan;
  for (int i = 0; i < plan->n_in + plan->n_out; i++) e->touched[i] = plan->present[i] && plan->t[i].alloc_id != 0;
  e->sig = plan_signature(plan, sim_rt_get_soc_name());
  int64_t fv = 0;
  if (sim_fault_fire(SIM_FAULT_WORKSPACE, &fv))
    /* [aclsim] A workspace no aclrtMalloc can satisfy (default: the device's memory + 1 byte). CANN
     * reports it only as a size; the caller's aclrtMalloc fails (207001). */
    e->plan.ws_size = fv > 0 ? (uint64_t)fv : device_memory_total() + 1;
  sim_lock();
  e->from_cache = sigset_has(&e->sig);
  void *h = handle_new(K_EXEC, e, true);
  sim_unlock();
  *workspaceSize = e->plan.ws_size;
  *executor = h;
  return 0;
}

static void exec_free(void *h, Exec *e, HandleEnd end) {
  handle_free(h, true, end);
  free(e);
}

/* Why `h` is not a live executor, in words. */
static const char *dead_executor(const void *h, const char *why) {
  switch (handle_end(h, K_EXEC)) {
    case END_CONSUMED:
      return "has already run: phase 2 frees a non-repeatable executor (opbase op_executor.cpp "
             "CommonOpExecutorRun `delete executor`), so CANN would use freed memory here";
    case END_DELETED_BY_ERROR:
      return "was deleted by a phase 2 that got workspaceSize > 0 with a NULL workspace (opbase "
             "CommonOpExecutorRun DeleteExecutorForError), so CANN would use freed memory here";
    case END_DESTROYED:
      return "was already destroyed by aclDestroyAclOpExecutor, so CANN would use freed memory here";
    default:
      return why;
  }
}

/* ACLSIM_UNREPEATABLE_OPS: comma-separated aclnn names, or `*` -- the test hook for operators
 * whose executor CANN marks unrepeatable (ops that copy host data to the device, CopyToNpu /
 * ViewCopy: op_cache "MarkOpCacheInvalid"). */
static bool listed_unrepeatable(const char *name) {
  const char *env = getenv("ACLSIM_UNREPEATABLE_OPS");
  if (!env) return false;
  size_t nl = strlen(name);
  for (const char *p = env; *p;) {
    while (*p == ',' || *p == ' ') p++;
    const char *q = p;
    while (*q && *q != ',') q++;
    const char *end = q;
    while (end > p && end[-1] == ' ') end--;
    size_t len = (size_t)(end - p);
    if ((len == 1 && *p == '*') || (len == nl && strncmp(p, name, nl) == 0)) return true;
    p = q;
  }
  return false;
}

/* opbase acl_op_api.cpp aclSetAclOpExecutorRepeatable: NULL -> 561103 (NNOPBASE_ASSERT_NULLPTR,
 * "... cannot be a NULL pointer."); a composite executor -> OpExecutorImpl::SetRepeatable
 * (op_executor.cpp), which refuses with 561000 an executor marked unrepeatable (logged as a
 * warning only: no error message); anything else -- a cache wrap from a phase 1 answered by the
 * executor cache included -- 561000, without a message. The simulator also refuses (561000, with
 * a message) an executor that already ran: CANN would read freed memory. */
int sim_executor_set_repeatable(void *h) {
  const char *fn = "aclSetAclOpExecutorRepeatable";
  if (!h) return sim_fail(SIM_NN_INNER_NULLPTR, "%s failed because executor cannot be a NULL pointer.", fn);
  sim_lock();
  const char *why = NULL;
  Exec *e = handle_get(h, K_EXEC, &why);
  if (!e) {
    why = dead_executor(h, why);
    sim_unlock();
    return sim_fail(SIM_NN_INNER, "%s: executor %p %s (not a live aclOpExecutor); call %s right after phase 1", fn, h,
                    why, fn);
  }
  if (e->runs > 0) {
    sim_unlock();
    return sim_fail(SIM_NN_INNER, "%s: executor %p of %s has already run; call %s right after phase 1, before the "
                    "first phase 2", fn, h, e->plan.name, fn);
  }
  if (e->from_cache) {
    sim_unlock();
    return sim_quiet_fail(SIM_NN_INNER,
                          "%s: phase 1 of %s was answered from CANN's executor cache (an identical call already ran "
                          "non-repeatably in this process); a cache wrap cannot be made repeatable",
                          fn, e->plan.name);
  }
  if (listed_unrepeatable(e->plan.name)) {
    sim_unlock();
    return sim_quiet_fail(SIM_NN_INNER, "%s: unrepeatable executor of %s (ACLSIM_UNREPEATABLE_OPS), find keyword "
                          "MarkOpCacheInvalid in log", fn, e->plan.name);
  }
  e->repeatable = true;
  sim_unlock();
  return 0;
}

/* opbase acl_op_api.cpp aclDestroyAclOpExecutor: NULL -> 561103; a composite executor (repeatable,
 * or never run) or a cache wrap -> deleted, 0; anything else -> 561000 (here: a consumed,
 * destroyed or unknown handle, with a message saying which). */
int sim_executor_destroy(void *h) {
  const char *fn = "aclDestroyAclOpExecutor";
  if (!h) return sim_fail(SIM_NN_INNER_NULLPTR, "%s failed because executor cannot be a NULL pointer.", fn);
  sim_lock();
  const char *why = NULL;
  Exec *e = handle_get(h, K_EXEC, &why);
  if (!e) {
    why = dead_executor(h, why);
    sim_unlock();
    return sim_fail(SIM_NN_INNER, "%s: executor %p %s (not a live aclOpExecutor; only a repeatable executor, or one "
                    "that phase 2 never ran, is destroyed by the caller)", fn, h, why);
  }
  exec_free(h, e, END_DESTROYED);
  sim_unlock();
  return 0;
}

/* opbase acl_op_api.cpp aclSetInputTensorAddr / aclSetOutputTensorAddr / aclSetTensorAddr on a
 * composite executor: `index` is [[maybe_unused]]; NULL tensor -> 561103 (nothing changed);
 * tensor->SetStorageAddr(addr) FIRST; then NULL executor -> 561103 (the tensor keeps its new
 * address); otherwise 0 -- the executor reads the tensor's address at its next run. (The
 * individual-op executor's indexed path, NnopbaseSetInputTensorAddr, is not modelled: every
 * operator here is a composite one.) A stale tensor handle is the simulator's 161002. */
int sim_executor_set_addr(void *h, uint64_t index, void *tensor, void *addr, int which) {
  static const char *const fns[] = {"aclSetInputTensorAddr", "aclSetOutputTensorAddr", "aclSetTensorAddr"};
  const char *fn = fns[which];
  (void)index;
  if (!tensor) return sim_fail(SIM_NN_INNER_NULLPTR, "%s failed because tensor cannot be a NULL pointer.", fn);
  sim_lock();
  const char *why = NULL;
  Tensor *t = handle_get(tensor, K_TENSOR, &why);
  if (!t) {
    sim_unlock();
    return sim_fail(SIM_NN_INVALID, "%s: tensor %p %s (not a live aclTensor)", fn, tensor, why);
  }
  t->d.data = addr;
  sim_unlock();
  if (!h) return sim_fail(SIM_NN_INNER_NULLPTR, "%s failed because executor cannot be a NULL pointer.", fn);
  return 0;
}

/* Validates that a tensor's storage fits in one live device allocation; returns the id. */
static uint64_t storage_alloc(const SimTensorDesc *d, void *addr) {
  uint64_t bytes = (uint64_t)sim_desc_storage_numel(d) * sim_dtype_size(d->dtype);
  return sim_dev_range_alloc(addr, bytes ? bytes : 1);
}

/* A repeatable executor's run: every tensor's CURRENT storage address, read from the caller's
 * aclTensor (opbase op_executor.cpp RepeatRunWithCache reads cachedStorageList_'s addresses), and
 * checked (the simulator's rule, as at phase 1) to hold the tensor's storage inside one live
 * device allocation, whose id the staleness check at synchronisation uses. */
static int rebind_from_tensors(const char *fname, void *executor, SimPlan *p, const bool *touched) {
  for (int i = 0; i < p->n_in + p->n_out; i++) {
    if (!p->present[i]) continue;
    SimTensorDesc *d = &p->t[i];
    const char *role = i < p->n_in ? "input" : "output";
    Tensor *t = handle_get(d->origin, K_TENSOR, NULL);
    if (!t)
      return sim_fail(SIM_NN_INNER_NULLPTR,
                      "%s: the repeatable executor %p outlived its tensor: the aclTensor %p of %s '%s' was destroyed, "
                      "but a repeatable executor keeps the caller's aclTensor objects and reads their storage address "
                      "on every run (opbase op_executor.cpp RepeatRunWithCache); destroy the executor "
                      "(aclDestroyAclOpExecutor) before its tensors",
                      fname, executor, d->origin, role, p->tname[i]);
    d->data = t->d.data;
    d->alloc_id = 0;
    if (!touched[i]) continue;
    uint64_t id = storage_alloc(d, d->data);
    if (id == 0) {
      char w[256];
      sim_describe_ptr(d->data, w, sizeof w);
      return sim_fail(SIM_NN_INVALID,
                      "%s: repeatable executor %p: the current address of %s '%s' must hold its storage (%" PRId64
                      " x %s) inside one live aclrtMalloc allocation, but %s",
                      fname, executor, role, p->tname[i], sim_desc_storage_numel(d), sim_dtype_name(d->dtype), w);
    }
    d->alloc_id = id;
  }
  return 0;
}

/* Phase 2: opbase op_executor.cpp CommonOpExecutorRun -- NULL executor -> 161001 ("executor is
 * nullptr."); workspaceSize > 0 with a NULL workspace -> 161001 and the executor is deleted even
 * when repeatable (DeleteExecutorForError); a repeatable executor survives its runs
 * (FinalizeCache), a non-repeatable one is deleted by its run whatever the outcome. The rest are
 * the simulator's checks (README "Executors"). */
int sim_op_launch(SimOpId op, const char *fname, void *workspace, uint64_t wsSize, void *executor, void *stream) {
  if (!executor) return sim_fail(SIM_NN_NULLPTR, "%s: executor is nullptr.", fname);
  sim_lock();
  const char *why = NULL;
  Exec *e = handle_get(executor, K_EXEC, &why);
  if (wsSize > 0 && !workspace) {
    if (e) exec_free(executor, e, END_DELETED_BY_ERROR);
    sim_unlock();
    return sim_fail(SIM_NN_NULLPTR,
                    "%s: workspace is nullptr. (workspaceSize %" PRIu64 "; the executor %p was deleted, even a "
                    "repeatable one)",
                    fname, wsSize, executor);
  }
  if (!e) {
    why = dead_executor(executor, why);
    sim_unlock();
    return sim_fail(SIM_NN_INNER_NULLPTR,
                    "%s: executor %p %s; an executor runs once (phase 2 frees it) unless "
                    "aclSetAclOpExecutorRepeatable was called after phase 1",
                    fname, executor, why);
  }
  if (e->plan.op != op) {
    sim_unlock();
    return sim_fail(SIM_NN_INVALID, "%s: executor %p was created by %sGetWorkspaceSize, not by %sGetWorkspaceSize", fname,
                    executor, e->plan.name, fname);
  }
  int rc = 0;
  Stream *s = NULL;
  uint64_t ws_alloc = 0;
  if (t_device < 0) {
    rc = sim_fail(SIM_NN_RUNTIME, "%s: no device is set on the calling thread (call aclrtSetDevice first)", fname);
  } else if ((s = resolve_stream(fname, stream, &rc, SIM_NN_RUNTIME)) == NULL) {
    /* rc set */
  } else if (e->plan.ws_size > 0) {
    if (wsSize < e->plan.ws_size) {
      rc = sim_fail(SIM_NN_INVALID, "%s: workspaceSize %" PRIu64 " is smaller than the %" PRIu64
                    " bytes planned by phase 1", fname, wsSize, e->plan.ws_size);
    } else if ((ws_alloc = sim_dev_range_alloc(workspace, wsSize)) == 0) {
      char w[256];
      sim_describe_ptr(workspace, w, sizeof w);
      rc = sim_fail(SIM_NN_INVALID, "%s: workspace [%p, +%" PRIu64 " bytes) is not inside one live device allocation: %s",
                    fname, workspace, wsSize, w);
    }
  }
  int64_t fv = 0;
  if (rc == 0 && sim_fault_fire(SIM_FAULT_STREAM, &fv)) {
    /* opbase rts_arg.cpp: a failed aclrtLaunchKernelWithHostArgs is ACLNN_ERR_RUNTIME_ERROR 361001,
     * "aclrtLaunchKernelWithHostArgs failed: <runtime code>". */
    int code = stream_refuses("aclrtLaunchKernelWithHostArgs", s, fv);
    rc = sim_fail(SIM_NN_RUNTIME, "%s: aclrtLaunchKernelWithHostArgs failed: %d", fname, code);
  }
  Task *t = NULL;
  if (rc == 0) {
    t = calloc(1, sizeof *t);
    t->kind = T_OP;
    t->plan = e->plan;
    t->ws = workspace;
    t->ws_alloc = ws_alloc;
    if (e->repeatable) rc = rebind_from_tensors(fname, executor, &t->plan, e->touched);
    if (rc == 0 && sim_fault_fire(SIM_FAULT_KERNEL, &fv)) t->fault = fv ? (int)fv : SIM_RT_AICORE_EXCEPTION;
    if (rc == 0) enqueue(s, t);
    else free(t);
  }
  e->runs++;
  if (!e->repeatable) {
    /* A successful run leaves its signature in CANN's executor cache. */
    if (rc == 0) sigset_add(&e->sig);
    exec_free(executor, e, END_CONSUMED); /* consumed, whatever the outcome */
  }
  sim_unlock();
  return rc;
}
