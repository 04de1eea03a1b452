/*
 * Software CANN ("aclsim") -- shared state: errors, handles, device memory, streams,
 * executors, counters, and the runtime (acl / aclrt) and nnopbase behaviour.
 * Built into libaclsim_core.so; see tests/sim/README.md for every documented choice.
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

/* ======================================================================================
 * Thread-local error text (aclGetRecentErrMsg returns and clears it)
 * ====================================================================================== */
#define SIM_ERR_CAP 2048
static _Thread_local char t_err[SIM_ERR_CAP];
static _Thread_local bool t_has_err;
static _Thread_local char t_err_ret[SIM_ERR_CAP];

int sim_fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t_err, sizeof t_err, fmt, ap);
  va_end(ap);
  t_has_err = true;
  if (getenv("ACLSIM_VERBOSE") != NULL) fprintf(stderr, "[aclsim] %d: %s\n", code, t_err);
  return code;
}

const char *sim_take_error(void) {
  if (!t_has_err) return NULL;
  memcpy(t_err_ret, t_err, sizeof t_err_ret);
  t_has_err = false;
  t_err[0] = '\0';
  return t_err_ret;
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

#define HANDLE_BASE 0x5A1D00000000ULL
typedef struct {
  Kind kind;
  Kind was; /* kind of a destroyed object, for diagnostics */
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

static void handle_free(const void *h, bool counted) {
  uint64_t id = handle_id(h);
  if (id == 0) return;
  if (counted && g_slots[id].kind != K_NONE) g_live[g_slots[id].kind]--;
  g_slots[id].was = g_slots[id].kind;
  g_slots[id].kind = K_NONE;
  g_slots[id].obj = NULL;
}

/* ======================================================================================
 * Devices, thread binding, contexts
 * ====================================================================================== */
#define SIM_MAX_DEVICES 64
static _Thread_local int t_device = -1;
static _Thread_local void *t_ctx = NULL;
static bool g_acl_inited;
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
 * ====================================================================================== */
typedef struct {
  char *base;
  uint64_t size;
  uint64_t id;
  int device;
} Alloc;
static Alloc *g_dev;
static uint64_t g_ndev, g_capdev, g_next_alloc_id = 1;
static uint64_t g_dev_bytes;
static Alloc *g_host;
static uint64_t g_nhost, g_caphost;
#define FREED_RING 4096
static Alloc g_freed[FREED_RING];
static uint64_t g_nfreed;

static bool push_alloc(Alloc **arr, uint64_t *n, uint64_t *cap, Alloc a) {
  if (*n >= *cap) {
    uint64_t c = *cap ? *cap * 2 : 256;
    Alloc *p = realloc(*arr, c * sizeof *p);
    if (!p) return false;
    *arr = p;
    *cap = c;
  }
  (*arr)[(*n)++] = a;
  return true;
}

static Alloc *find_containing(Alloc *arr, uint64_t n, const void *p) {
  const char *c = p;
  for (uint64_t i = 0; i < n; i++)
    if (c >= arr[i].base && c < arr[i].base + arr[i].size) return &arr[i];
  return NULL;
}

uint64_t sim_dev_range_alloc(const void *p, uint64_t bytes) {
  sim_lock();
  uint64_t id = 0;
  Alloc *a = p ? find_containing(g_dev, g_ndev, p) : NULL;
  if (a && (uint64_t)((const char *)p - a->base) + bytes <= a->size) id = a->id;
  sim_unlock();
  return id;
}

bool sim_dev_alloc_live(uint64_t alloc_id) {
  sim_lock();
  bool live = false;
  for (uint64_t i = 0; i < g_ndev; i++)
    if (g_dev[i].id == alloc_id) { live = true; break; }
  sim_unlock();
  return live;
}

bool sim_is_device_ptr(const void *p) {
  sim_lock();
  bool r = p && find_containing(g_dev, g_ndev, p) != NULL;
  sim_unlock();
  return r;
}

void sim_describe_ptr(const void *p, char *buf, size_t n) {
  sim_lock();
  const char *c = p;
  Alloc *a;
  if (p == NULL) {
    snprintf(buf, n, "NULL");
  } else if ((a = find_containing(g_dev, g_ndev, p)) != NULL) {
    snprintf(buf, n, "%p lies %" PRIu64 " bytes into the live device allocation %p of %" PRIu64 " bytes",
             p, (uint64_t)(c - a->base), (void *)a->base, a->size);
  } else if ((a = find_containing(g_host, g_nhost, p)) != NULL) {
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
  handle_free(h, true);
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
  if (h == NULL) return sim_fail(SIM_NN_NULLPTR, "%s: tensor is NULL", fn);
  if (out == NULL) return sim_fail(SIM_NN_NULLPTR, "%s: output pointer is NULL", fn);
  const char *why = NULL;
  *t = handle_get(h, K_TENSOR, &why);
  if (!*t) return sim_fail(SIM_NN_INVALID, "%s: tensor %p %s (not a live aclTensor)", fn, h, why);
  return 0;
}

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

int sim_nn_init(const char *config) {
  (void)config;
  return 0;
}
int sim_nn_finalize(void) { return 0; }

/* ======================================================================================
 * Streams and tasks
 * ====================================================================================== */
typedef enum { T_OP = 1, T_MEMCPY } TaskKind;
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
  struct Task *next;
} Task;

typedef struct {
  int device;
  bool is_default;
  Task *head, *tail;
} Stream;

static int64_t g_pending, g_tasks_done, g_tasks_failed;
static uint64_t g_task_seq;

static void *default_stream(int dev) {
  if (!g_default_stream[dev]) {
    Stream *s = calloc(1, sizeof *s);
    s->device = dev;
    s->is_default = true;
    g_default_stream[dev] = handle_new(K_STREAM, s, false);
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

static const char *alloc_state(uint64_t id) { return sim_dev_alloc_live(id) ? "live" : "freed"; }

static int run_task(const char *fn, Task *t) {
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
  /* The device scribbles over its workspace: a workspace overlapping a tensor corrupts it. */
  if (p->ws_size > 0) memset(t->ws, 0xCD, p->ws_size);
  int rc = sim_op_run(p, t->ws);
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
    free(t);
  }
  return rc;
}

/* ======================================================================================
 * Runtime API
 * ====================================================================================== */
int sim_acl_init(const char *config) {
  (void)config;
  sim_lock();
  bool was = g_acl_inited;
  g_acl_inited = true;
  sim_unlock();
  if (was) return sim_fail(SIM_ACL_REPEAT_INIT, "aclInit: ACL is already initialized (repeated aclInit)");
  return 0;
}

int sim_acl_finalize(void) {
  sim_lock();
  bool was = g_acl_inited;
  g_acl_inited = false;
  sim_unlock();
  if (!was) return sim_fail(SIM_ACL_REPEAT_FINALIZE, "aclFinalize: ACL is not initialized (aclFinalize without aclInit, or repeated)");
  return 0;
}

int sim_rt_set_device(int32_t id) {
  int n = device_count();
  if (id < 0 || id >= n)
    return sim_fail(SIM_RT_INVALID_DEVICEID, "aclrtSetDevice: device id %d is invalid (the simulator has %d device(s); set ACLSIM_DEVICE_COUNT)", id, n);
  sim_lock();
  t_device = id;
  t_ctx = default_context(id);
  sim_unlock();
  return 0;
}

int sim_rt_reset_device(int32_t id) {
  int n = device_count();
  if (id < 0 || id >= n)
    return sim_fail(SIM_RT_INVALID_DEVICEID, "aclrtResetDevice: device id %d is invalid (the simulator has %d device(s))", id, n);
  if (t_device == id) {
    t_device = -1;
    t_ctx = NULL;
  }
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
  for (uint64_t id = 1; id < g_nslots; id++) {
    if (g_slots[id].kind != K_STREAM) continue;
    Stream *s = g_slots[id].obj;
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
  Stream *s = calloc(1, sizeof *s);
  s->device = t_device;
  sim_lock();
  *stream = handle_new(K_STREAM, s, true);
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
  handle_free(stream, true);
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

int sim_rt_malloc(void **p, uint64_t size, uint32_t policy) {
  const char *fn = "aclrtMalloc";
  (void)policy; /* every policy value is accepted (HUGE_FIRST / HUGE_ONLY / NORMAL_ONLY / ...) */
  if (!p) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: devPtr is NULL", fn);
  if (size == 0) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: size is 0", fn);
  int rc = need_device(fn);
  if (rc) return rc;
  sim_lock();
  uint64_t used = 0;
  for (uint64_t i = 0; i < g_ndev; i++)
    if (g_dev[i].device == t_device) used += g_dev[i].size;
  uint64_t total = device_memory_total();
  if (size > total || used + size > total) {
    sim_unlock();
    return sim_fail(SIM_RT_MEMORY_ALLOCATION, "%s: out of device memory: %" PRIu64 " bytes requested, %" PRIu64 " of %" PRIu64 " in use",
                    fn, size, used, total);
  }
  void *mem = NULL;
  if (posix_memalign(&mem, 512, (size_t)size) != 0 || !mem) {
    sim_unlock();
    return sim_fail(SIM_RT_MEMORY_ALLOCATION, "%s: host allocation of %" PRIu64 " bytes failed", fn, size);
  }
  memset(mem, 0xFF, (size_t)size); /* uninitialised device memory reads as NaN */
  Alloc a = {mem, size, g_next_alloc_id++, t_device};
  if (!push_alloc(&g_dev, &g_ndev, &g_capdev, a)) {
    free(mem);
    sim_unlock();
    return sim_fail(SIM_RT_MEMORY_ALLOCATION, "%s: registry allocation failed", fn);
  }
  g_dev_bytes += size;
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
  for (uint64_t i = 0; i < g_ndev; i++) {
    if (g_dev[i].base == (char *)p) {
      Alloc a = g_dev[i];
      g_dev[i] = g_dev[--g_ndev];
      g_dev_bytes -= a.size;
      g_freed[g_nfreed++ % FREED_RING] = a; /* remembered for double-free diagnostics */
      memset(a.base, 0xDD, (size_t)a.size); /* poison */
      free(a.base);
      sim_unlock();
      return 0;
    }
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
  Alloc a = {mem, size, 0, t_device};
  push_alloc(&g_host, &g_nhost, &g_caphost, a);
  *p = mem;
  sim_unlock();
  return 0;
}

int sim_rt_free_host(void *p) {
  const char *fn = "aclrtFreeHost";
  if (!p) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: hostPtr is NULL", fn);
  sim_lock();
  for (uint64_t i = 0; i < g_nhost; i++) {
    if (g_host[i].base == (char *)p) {
      free(g_host[i].base);
      g_host[i] = g_host[--g_nhost];
      sim_unlock();
      return 0;
    }
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

static int check_copy(const char *fn, void *dst, uint64_t destMax, const void *src, uint64_t count,
                      uint32_t *kind, uint64_t *da, uint64_t *sa) {
  *da = *sa = 0;
  if (*kind > SIM_MEMCPY_DEFAULT) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: invalid aclrtMemcpyKind %u", fn, *kind);
  if (count > destMax)
    return sim_fail(SIM_ACL_INVALID_PARAM, "%s: count %" PRIu64 " exceeds destMax %" PRIu64, fn, count, destMax);
  if (count == 0) return 0;
  if (!dst || !src) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: %s is NULL", fn, dst ? "src" : "dst");
  if (*kind == SIM_MEMCPY_DEFAULT) /* infer from the pointers */
    *kind = (uint32_t)((sim_is_device_ptr(src) ? 2 : 0) + (sim_is_device_ptr(dst) ? 1 : 0));
  bool dst_dev = *kind == SIM_H2D || *kind == SIM_D2D;
  bool src_dev = *kind == SIM_D2H || *kind == SIM_D2D;
  int rc = check_side(fn, "dst", dst, count, dst_dev, *kind, da);
  if (!rc) rc = check_side(fn, "src", src, count, src_dev, *kind, sa);
  return rc;
}

int sim_rt_memcpy(void *dst, uint64_t destMax, const void *src, uint64_t count, uint32_t kind) {
  const char *fn = "aclrtMemcpy";
  int rc = need_device(fn);
  if (rc) return rc;
  uint64_t da, sa;
  sim_lock();
  rc = check_copy(fn, dst, destMax, src, count, &kind, &da, &sa);
  if (!rc && count) memmove(dst, src, (size_t)count);
  sim_unlock();
  return rc;
}

int sim_rt_memcpy_async(void *dst, uint64_t destMax, const void *src, uint64_t count, uint32_t kind, void *stream) {
  const char *fn = "aclrtMemcpyAsync";
  int rc = need_device(fn);
  if (rc) return rc;
  uint64_t da, sa;
  sim_lock();
  rc = check_copy(fn, dst, destMax, src, count, &kind, &da, &sa);
  Stream *s = rc ? NULL : resolve_stream(fn, stream, &rc, SIM_RT_PARAM_INVALID);
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

int sim_rt_memset(void *p, uint64_t maxCount, int32_t value, uint64_t count) {
  const char *fn = "aclrtMemset";
  int rc = need_device(fn);
  if (rc) return rc;
  if (!p) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: devPtr is NULL", fn);
  if (count > maxCount)
    return sim_fail(SIM_ACL_INVALID_PARAM, "%s: count %" PRIu64 " exceeds maxCount %" PRIu64, fn, count, maxCount);
  if (count == 0) return 0;
  sim_lock();
  uint64_t a;
  rc = check_side(fn, "devPtr", p, count, true, SIM_H2D, &a);
  if (!rc) memset(p, value, (size_t)count);
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
  handle_free(ctx, true);
  free(c);
  sim_unlock();
  return 0;
}

int sim_rt_get_mem_info(uint32_t attr, uint64_t *freeBytes, uint64_t *totalBytes) {
  const char *fn = "aclrtGetMemInfo";
  if (!freeBytes || !totalBytes) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: free or total is NULL", fn);
  if (attr > 7) return sim_fail(SIM_ACL_INVALID_PARAM, "%s: invalid aclrtMemAttr %u", fn, attr);
  int rc = need_device(fn);
  if (rc) return rc;
  sim_lock();
  uint64_t used = 0;
  for (uint64_t i = 0; i < g_ndev; i++)
    if (g_dev[i].device == t_device) used += g_dev[i].size;
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
 * 12 tasks failed or discarded (cumulative) */
#define SIM_NSTATS 13
int32_t sim_get_stats(int64_t *out, uint64_t n) {
  sim_lock();
  int64_t v[SIM_NSTATS] = {
      (int64_t)g_ndev, (int64_t)g_dev_bytes, (int64_t)g_nhost,  g_live[K_TENSOR], g_live[K_BOOLARR],
      g_live[K_INTARR], g_live[K_SCALAR],    g_live[K_EXEC],    g_live[K_STREAM], g_pending,
      g_live[K_CONTEXT], g_tasks_done,       g_tasks_failed};
  sim_unlock();
  if (out)
    for (uint64_t i = 0; i < n && i < SIM_NSTATS; i++) out[i] = v[i];
  return SIM_NSTATS;
}

/* ======================================================================================
 * Executors
 * ====================================================================================== */
typedef struct {
  SimPlan plan;
  bool repeatable;
  int runs;
} Exec;

int sim_executor_create(const SimPlan *plan, uint64_t *workspaceSize, void **executor) {
  Exec *e = calloc(1, sizeof *e);
  if (!e) return sim_fail(561101, "%s: cannot create the executor", plan->name);
  e->plan = *plan;
  sim_lock();
  void *h = handle_new(K_EXEC, e, true);
  sim_unlock();
  *workspaceSize = plan->ws_size;
  *executor = h;
  return 0;
}

static void exec_free(void *h, Exec *e) {
  handle_free(h, true);
  free(e);
}

int sim_executor_set_repeatable(void *h) {
  const char *fn = "aclSetAclOpExecutorRepeatable";
  if (!h) return sim_fail(SIM_NN_NULLPTR, "%s: executor is NULL", fn);
  sim_lock();
  const char *why = NULL;
  Exec *e = handle_get(h, K_EXEC, &why);
  if (!e) {
    sim_unlock();
    return sim_fail(SIM_NN_INVALID, "%s: executor %p %s (not a live aclOpExecutor)", fn, h, why);
  }
  if (e->runs > 0) {
    sim_unlock();
    return sim_fail(SIM_NN_INVALID, "%s: executor %p has already run; call it right after phase 1", fn, h);
  }
  e->repeatable = true;
  sim_unlock();
  return 0;
}

int sim_executor_destroy(void *h) {
  const char *fn = "aclDestroyAclOpExecutor";
  if (!h) return 0;
  sim_lock();
  const char *why = NULL;
  Exec *e = handle_get(h, K_EXEC, &why);
  if (!e) {
    sim_unlock();
    return sim_fail(SIM_NN_INVALID, "%s: executor %p %s (not a live aclOpExecutor; a non-repeatable executor is "
                    "freed by its phase-2 call)", fn, h, why);
  }
  exec_free(h, e);
  sim_unlock();
  return 0;
}

/* Validates that a tensor's storage fits in one live device allocation; returns the id. */
static uint64_t storage_alloc(const SimTensorDesc *d, void *addr) {
  uint64_t bytes = (uint64_t)sim_desc_storage_numel(d) * sim_dtype_size(d->dtype);
  return sim_dev_range_alloc(addr, bytes ? bytes : 1);
}

int sim_executor_set_addr(void *h, uint64_t index, void *tensor, void *addr, int which) {
  static const char *const fns[] = {"aclSetInputTensorAddr", "aclSetOutputTensorAddr", "aclSetTensorAddr"};
  const char *fn = fns[which];
  if (!h) return sim_fail(SIM_NN_NULLPTR, "%s: executor is NULL", fn);
  sim_lock();
  const char *why = NULL;
  Exec *e = handle_get(h, K_EXEC, &why);
  if (!e) {
    sim_unlock();
    return sim_fail(SIM_NN_INVALID, "%s: executor %p %s (not a live aclOpExecutor)", fn, h, why);
  }
  SimPlan *p = &e->plan;
  uint64_t limit = which == 0 ? (uint64_t)p->n_in : which == 1 ? (uint64_t)p->n_out : (uint64_t)(p->n_in + p->n_out);
  if (index >= limit) {
    sim_unlock();
    return sim_fail(SIM_NN_INVALID, "%s: index %" PRIu64 " out of range (%s has %" PRIu64 " %s tensor slots)", fn, index,
                    p->name, limit, which == 0 ? "input" : which == 1 ? "output" : "");
  }
  int slot = (int)index + (which == 1 ? p->n_in : 0);
  if (!p->present[slot]) {
    sim_unlock();
    return sim_fail(SIM_NN_INVALID, "%s: slot %" PRIu64 " ('%s') of %s was NULL at phase 1", fn, index, p->tname[slot], p->name);
  }
  SimTensorDesc *d = &p->t[slot];
  uint64_t id = 0;
  if (sim_desc_numel(d) > 0) {
    id = storage_alloc(d, addr);
    if (id == 0) {
      char w[256];
      sim_describe_ptr(addr, w, sizeof w);
      sim_unlock();
      return sim_fail(SIM_NN_INVALID, "%s: new address for '%s' must hold its storage (%" PRId64 " elements) inside one live "
                      "device allocation: %s", fn, p->tname[slot], sim_desc_storage_numel(d), w);
    }
  }
  d->data = addr;
  /* a task on CANN's early path touches only its filled slots: no liveness check on the rest */
  d->alloc_id = p->run == SIM_RUN_NOTHING || (p->run == SIM_RUN_FILL && !p->fill_on[slot]) ? 0 : id;
  Tensor *t = tensor ? handle_get(tensor, K_TENSOR, NULL) : NULL;
  if (t) t->d.data = addr;
  sim_unlock();
  return 0;
}

int sim_op_launch(SimOpId op, const char *fname, void *workspace, uint64_t wsSize, void *executor, void *stream) {
  if (!executor) return sim_fail(SIM_NN_INNER_NULLPTR, "%s: executor is NULL", fname);
  sim_lock();
  const char *why = NULL;
  Exec *e = handle_get(executor, K_EXEC, &why);
  if (!e) {
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
    } else if (!workspace) {
      rc = sim_fail(SIM_NN_INVALID, "%s: workspace is NULL but phase 1 planned %" PRIu64 " bytes", fname, e->plan.ws_size);
    } else if ((ws_alloc = sim_dev_range_alloc(workspace, wsSize)) == 0) {
      char w[256];
      sim_describe_ptr(workspace, w, sizeof w);
      rc = sim_fail(SIM_NN_INVALID, "%s: workspace [%p, +%" PRIu64 " bytes) is not inside one live device allocation: %s",
                    fname, workspace, wsSize, w);
    }
  }
  if (rc == 0) {
    Task *t = calloc(1, sizeof *t);
    t->kind = T_OP;
    t->plan = e->plan;
    t->ws = workspace;
    t->ws_alloc = ws_alloc;
    enqueue(s, t);
  }
  e->runs++;
  if (!e->repeatable) exec_free(executor, e); /* consumed, whatever the outcome */
  sim_unlock();
  return rc;
}
