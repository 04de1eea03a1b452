/*
 * Software CANN ("aclsim") -- streams and their tasks: the queues that aclnn launches,
 * aclrtMemcpyAsync and the software HCCL's host tasks go to, run in order at synchronisation
 * (aclrtSynchronizeStream / aclrtSynchronizeDevice / aclrtDestroyStream), and the device teardown
 * of the last aclrtResetDevice.
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
 * Streams and tasks
 * ====================================================================================== */
int64_t g_pending, g_tasks_done, g_tasks_failed;
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
Stream *resolve_stream(const char *fn, void *h, int *rc, int badcode) {
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

void enqueue(Stream *s, Task *t) {
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
int stream_refuses(const char *fn, Stream *s, int64_t fv) {
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
    /* A host task (the software HCCL's collectives, hccl_collectives.c) may block for a long time: it
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
void device_teardown(int dev) {
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

/* A generic host task (used by the software HCCL, hccl_collectives.c): queued on `stream` (NULL = the
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
