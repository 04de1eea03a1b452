/*
 * Software CANN ("aclsim") -- the lock that guards every registry, and the handles (aclTensor,
 * aclOpExecutor, aclrtStream, ... as opaque never-reused values) that name the simulator's objects.
 * Built into libaclsim_core.so; see tests/sim/README_runtime.md for every documented choice.
 *
 * Citations name the CANN source a behaviour is modelled on: "runtime:" is hicann/runtime,
 * "opbase:" is hicann/opbase.
 */
#define _GNU_SOURCE
#include "sim_core_internal.h"

#include <pthread.h>
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
 * Handles: opaque values HANDLE_BASE + 16*id with a never-reused id, so a stale handle
 * (destroyed tensor, consumed executor, destroyed stream) is always recognised.
 * ====================================================================================== */
const char *kind_name(Kind k) {
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
  HandleEnd end;
  void *obj;
} Slot;
static Slot *g_slots;
static uint64_t g_nslots = 1, g_capslots;
int64_t g_live[8]; /* live objects per kind (defaults excluded) */

void *handle_new(Kind k, void *obj, bool counted) {
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
void *handle_get(const void *h, Kind k, const char **why) {
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
HandleEnd handle_end(const void *h, Kind k) {
  uint64_t id = handle_id(h);
  if (id == 0 || g_slots[id].kind != K_NONE || g_slots[id].was != k) return END_NONE;
  return g_slots[id].end;
}

void handle_free(const void *h, bool counted, HandleEnd end) {
  uint64_t id = handle_id(h);
  if (id == 0) return;
  if (counted && g_slots[id].kind != K_NONE) g_live[g_slots[id].kind]--;
  g_slots[id].was = g_slots[id].kind;
  g_slots[id].kind = K_NONE;
  g_slots[id].end = end;
  g_slots[id].obj = NULL;
}
