/*
 * Software CANN ("aclsim") -- error messages: the per-thread queue that sim_fail fills and
 * aclGetRecentErrMsg (sim_take_error) reads.
 * Built into libaclsim_core.so; see tests/sim/README_runtime.md for every documented choice.
 *
 * Citations name the CANN source a behaviour is modelled on: "runtime:" is hicann/runtime,
 * "opbase:" is hicann/opbase.
 */
#define _GNU_SOURCE
#include "sim_core_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
int sim_quiet_fail(int code, const char *fmt, ...) {
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
