/*
 * Software CANN ("aclsim") -- declarations shared by the core's own sources (sim_handles.c,
 * sim_errors.c, sim_runtime.c, sim_memory.c, sim_memcpy.c, sim_tensors.c, sim_streams.c,
 * sim_executors.c) and by nothing else: the state they share and their helpers. Nothing here is
 * exported (the core is built with -fvisibility=hidden; only sim.h's SIM_CORE_API functions are).
 */
#ifndef ACLSIM_SIM_CORE_INTERNAL_H
#define ACLSIM_SIM_CORE_INTERNAL_H

#include "sim.h"

/* ---- errors (sim_errors.c) ------------------------------------------------------------- */
/* A failure CANN only logs (a warning): returns `code` and queues no message. */
int sim_quiet_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- handles (sim_handles.c) ---------------------------------------------------------- */
typedef enum { K_NONE = 0, K_TENSOR, K_BOOLARR, K_INTARR, K_SCALAR, K_EXEC, K_STREAM, K_CONTEXT } Kind;
const char *kind_name(Kind k);

/* Why a handle died, for diagnostics. */
typedef enum { END_NONE = 0, END_DESTROYED, END_CONSUMED, END_DELETED_BY_ERROR, END_TORN_DOWN } HandleEnd;

extern int64_t g_live[8]; /* live objects per kind (defaults excluded) */
void *handle_new(Kind k, void *obj, bool counted);
/* Returns the object or NULL; *why describes the problem when NULL. */
void *handle_get(const void *h, Kind k, const char **why);
/* How a dead handle of kind `k` ended (END_NONE: never one, or still live). */
HandleEnd handle_end(const void *h, Kind k);
void handle_free(const void *h, bool counted, HandleEnd end);

/* ---- devices, thread binding, contexts (sim_runtime.c) --------------------------------- */
#define SIM_MAX_DEVICES 64
/* The calling thread's current device and context (runtime: InnerThreadLocalContainer). */
extern _Thread_local int t_device;
extern _Thread_local void *t_ctx;
extern uint64_t g_dev_refs[SIM_MAX_DEVICES];
extern void *g_default_stream[SIM_MAX_DEVICES];
extern void *g_default_ctx[SIM_MAX_DEVICES];

typedef struct {
  int device;
  bool is_default;
} Context;

int device_count(void);
uint64_t device_memory_total(void);
int need_device(const char *fn);
void *default_context(int dev);

/* ---- device and host memory (sim_memory.c) --------------------------------------------- */
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

extern Registry g_devreg, g_hostreg;
extern uint64_t g_dev_bytes;

/* ---- tensors (sim_tensors.c) ----------------------------------------------------------- */
typedef struct { SimTensorDesc d; } Tensor;

/* ---- streams and tasks (sim_streams.c) ------------------------------------------------- */
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

extern int64_t g_pending, g_tasks_done, g_tasks_failed;
/* Resolves a stream argument (NULL = default stream of the current device). */
Stream *resolve_stream(const char *fn, void *h, int *rc, int badcode);
void enqueue(Stream *s, Task *t);
/* A stream that refuses a task (fault injection); returns the code. */
int stream_refuses(const char *fn, Stream *s, int64_t fv);
/* The last reference of a device went: its default context and streams go. */
void device_teardown(int dev);

#endif
