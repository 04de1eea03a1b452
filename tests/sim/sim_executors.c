/*
 * Software CANN ("aclsim") -- executors: phase 1's plans (aclOpExecutor), CANN's executor
 * cache, repeatable executors and their tensor addresses, and phase 2's launch onto a stream.
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
 * the simulator's checks (README_runtime.md "Executors"). */
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
