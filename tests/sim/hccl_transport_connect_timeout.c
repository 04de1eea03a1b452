/*
 * Software HCCL ("aclsim") -- HCCL_CONNECT_TIMEOUT, compiled into libaclsim_core.so: how long the
 * root-info server and its agents wait for each other (hccl_transport_root_server.c,
 * hccl_transport_join.c).
 *
 * Citations: "hccl" is hicann/hccl, "hcomm" is the hcomm mirror xiaobingling93-pixel/cann-hcomm
 * b5f3e5be; "[aclsim]" marks the simulator's own choices. The negotiation's flow is described in
 * hccl_transport_internal.h.
 */
#define _GNU_SOURCE
#include "hccl_transport_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================================
 * HCCL_CONNECT_TIMEOUT
 *
 * hccl docs/zh/user_guide/hccl_env/HCCL_CONNECT_TIMEOUT.md:7-9: integer seconds in [120, 7200],
 * default 120; the effective wait is value + 20 s. hcomm src/platform/common/externalinput.cc:557-585
 * ParseLinkConnTimeOut: not all digits, or out of [HCCL_MIN_LINK_TIME_OUT_S 120,
 * HCCL_MAX_LINK_TIME_OUT_S 7200] -> an error and HCCL_E_PARA, which init returns as HCCL_E_PARA
 * (op_base.cc:1829-1831). An empty value counts as unset (GET_ENV's "EmptyString"). The server
 * and an agent trying to reach it give up after the value (topoinfo_exchange_server.cc:302-317,
 * topoinfo_exchange_agent.cc:406-423); an agent that reached it waits 20 s more for the verdict
 * (hccl_tp_grace_ms). [aclsim] ACLSIM_HCCL_CONNECT_TIMEOUT_MS (a positive integer), for tests
 * only, replaces the value after HCCL_CONNECT_TIMEOUT has been validated; the extra wait is then a
 * sixth of it (200 ms to 20 s).
 * ====================================================================================== */
static bool all_digits(const char *s) {
  if (!*s) return false;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return false;
  return true;
}

int64_t hccl_tp_connect_timeout_ms(char *err, size_t errn) {
  long secs = 120;
  const char *s = getenv("HCCL_CONNECT_TIMEOUT");
  if (s && *s) {
    if (strlen(s) > 10 || !all_digits(s) || (secs = strtol(s, NULL, 10)) < 120 || secs > 7200) {
      snprintf(err, errn,
               "environmental variable HCCL_CONNECT_TIMEOUT error: timeOutEnv[%ss] timeRange[120s,7200s] "
               "(hcomm externalinput.cc ParseLinkConnTimeOut)",
               s);
      return -1;
    }
  }
  const char *o = getenv("ACLSIM_HCCL_CONNECT_TIMEOUT_MS");
  if (o && *o) {
    if (strlen(o) > 12 || !all_digits(o) || strtoll(o, NULL, 10) <= 0) {
      snprintf(err, errn, "[aclsim] ACLSIM_HCCL_CONNECT_TIMEOUT_MS must be a positive integer (milliseconds), got '%s'",
               o);
      return -1;
    }
    return strtoll(o, NULL, 10);
  }
  return secs * 1000;
}

int64_t hccl_tp_grace_ms(int64_t timeout_ms) {
  int64_t g = timeout_ms / 6; /* 20 s for the default 120 s */
  return g < 200 ? 200 : g > 20000 ? 20000 : g;
}

