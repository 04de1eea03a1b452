/*
 * Software HCCL ("aclsim") -- what a communicator is configured with, compiled into
 * libaclsim_core.so: the public layouts of HcclRootInfo and HcclCommConfig, HcclCommConfig's
 * loading and checks (HcclCommInitRootInfoConfig), and the exec timeout (HCCL_EXEC_TIMEOUT, the
 * config's hcclExecTimeOut): how long a collective waits for its peers.
 *
 * Citations name the CANN source a behaviour is modelled on:
 * "hcomm" is the CANN hcomm mirror xiaobingling93-pixel/cann-hcomm b5f3e5be (line numbers of that
 * snapshot), "hccl" is hicann/hccl 09300b70, "runtime" is hicann/runtime, "torch_npu" is
 * Ascend/pytorch 9e73e708. "[aclsim]" marks the simulator's own choices.
 *
 * Errors: every failing call reports a text with sim_fail, so aclGetRecentErrMsg() returns it on
 * the calling thread (CANN reports HCCL's input errors as EIxxxx messages through the same error
 * manager); a failure CANN only logs as a warning (count 0, destroying NULL, HCCL_E_AGAIN) queues
 * nothing.
 */
#define _GNU_SOURCE
#include "hccl_sim_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The public layouts (hcomm include/hccl/hccl_types.h:113-162; sizes and offsets measured with
 * g++ on x86_64). */
_Static_assert(sizeof(HcclRootInfo) == 4108, "HcclRootInfo is 4108 bytes");
_Static_assert(sizeof(HcclSimRootInfo) <= sizeof(HcclRootInfo), "the simulator's root info fits");
_Static_assert(sizeof(HcclCommConfigHeader) == HCCL_COMM_CONFIG_INFO_BYTES, "config header is 24 bytes");
_Static_assert(sizeof(HcclCommConfig) == 2240, "HcclCommConfig is 2240 bytes");
_Static_assert(offsetof(HcclCommConfig, hcclBufferSize) == 24, "hcclBufferSize");
_Static_assert(offsetof(HcclCommConfig, hcclDeterministic) == 28, "hcclDeterministic");
_Static_assert(offsetof(HcclCommConfig, hcclCommName) == 32, "hcclCommName");
_Static_assert(offsetof(HcclCommConfig, hcclUdi) == 160, "hcclUdi");
_Static_assert(offsetof(HcclCommConfig, hcclOpExpansionMode) == 288, "hcclOpExpansionMode");
_Static_assert(offsetof(HcclCommConfig, hcclRdmaTrafficClass) == 292, "hcclRdmaTrafficClass");
_Static_assert(offsetof(HcclCommConfig, hcclRdmaServiceLevel) == 296, "hcclRdmaServiceLevel");
_Static_assert(offsetof(HcclCommConfig, hcclWorldRankID) == 300, "hcclWorldRankID");
_Static_assert(offsetof(HcclCommConfig, hcclJobID) == 304, "hcclJobID");
_Static_assert(offsetof(HcclCommConfig, aclGraphZeroCopyEnable) == 312, "aclGraphZeroCopyEnable");
_Static_assert(offsetof(HcclCommConfig, hcclExecTimeOut) == 316, "hcclExecTimeOut");
_Static_assert(offsetof(HcclCommConfig, hcclAlgo) == 320, "hcclAlgo");
_Static_assert(offsetof(HcclCommConfig, hcclRetryEnable) == 1920, "hcclRetryEnable");
_Static_assert(offsetof(HcclCommConfig, hcclRetryParams) == 1970, "hcclRetryParams");
_Static_assert(offsetof(HcclCommConfig, hcclBufferName) == 2098, "hcclBufferName");
_Static_assert(offsetof(HcclCommConfig, hcclQos) == 2228, "hcclQos");
_Static_assert(offsetof(HcclCommConfig, hcclSymWinMaxMemSizePerRank) == 2232, "hcclSymWinMaxMemSizePerRank");

/* NOTIFY_DEFAULT_WAIT_TIME = 27 * 68 (hcomm src/pub_inc/hccl_common.h:84). */
#define EXEC_DEFAULT_S 1836.0

/* ======================================================================================
 * Timeouts
 * ====================================================================================== */

/* "^\d+(\.\d{1,2})?$" (hcomm externalinput.cc:527-536 IsValidExecTimeOutMs). */
static bool exec_format_ok(const char *s) {
  const char *p = s;
  if (*p < '0' || *p > '9') return false;
  while (*p >= '0' && *p <= '9') p++;
  if (*p == '\0') return true;
  if (*p++ != '.') return false;
  int k = 0;
  while (*p >= '0' && *p <= '9') p++, k++;
  return *p == '\0' && k >= 1 && k <= 2;
}

/* The communicator's exec timeout (how long a collective waits for its peers), in ms (-1 never):
 * - HCCL_EXEC_TIMEOUT (hcomm externalinput.cc:538-555 ParseExecTimeOut, :947-1005 SetHccLExecTimeOut):
 *   seconds with at most two decimals; on 910B / 910_93 [0, 2147483647] with 0 = never, elsewhere
 *   (0, 17340] rounded down to a multiple of 68 s (at least 68); anything else is EI0001 and
 *   HCCL_E_PARA. Unset: NOTIFY_DEFAULT_WAIT_TIME 1836 s (hcomm src/pub_inc/hccl_common.h:84).
 * - HcclCommConfig.hcclExecTimeOut (config version >= 8, not -1) overrides it with the same ranges;
 *   an invalid value is only a warning and is ignored (hcomm comm_config.cc:209-211, 379-415).
 *   Priority: config > environment > default (hcomm docs HcclCommConfig.md).
 * - [aclsim] ACLSIM_HCCL_EXEC_TIMEOUT_MS (a non-negative integer, 0 = never), for tests only,
 *   replaces all of them. */
int exec_timeout(const char *fn, bool cfg_set, int32_t cfg, int64_t *ms, char *desc, size_t descn) {
  const char *soc, *family;
  Fam f = soc_family(&soc, &family);
  bool wide = f == FAM_A2A3;
  double secs = EXEC_DEFAULT_S;
  const char *src = "the default NOTIFY_DEFAULT_WAIT_TIME";
  const char *env = getenv("HCCL_EXEC_TIMEOUT");
  if (env && *env) {
    double v = exec_format_ok(env) ? strtod(env, NULL) : -1;
    bool ok = wide ? v >= 0 && v <= 2147483647.0 : v > 0 && v <= 17340.0;
    if (!ok)
      return sim_fail(HCCL_E_PARA,
                      "%s: EI0001: Environment variable HCCL_EXEC_TIMEOUT is invalid: value %s; expected %s on %s (%s) "
                      "(hcomm externalinput.cc SetHccLExecTimeOut)",
                      fn, env,
                      wide ? "a number greater than or equal to 0s and less than or equal to 2147483647s"
                           : "a number greater than or equal to 1s and less than or equal to 17340s",
                      soc, family);
    if (!wide) {
      int64_t k = (int64_t)(v / 68);
      v = (double)((k == 0 ? 1 : k) * 68);
    }
    secs = v;
    src = "HCCL_EXEC_TIMEOUT";
  }
  if (cfg_set && cfg != HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET) {
    if (wide && cfg >= 0) {
      secs = cfg;
      src = "HcclCommConfig.hcclExecTimeOut";
    } else if (!wide && cfg > 0 && cfg <= 17340) {
      secs = (double)((cfg / 68 == 0 ? 1 : cfg / 68) * 68);
      src = "HcclCommConfig.hcclExecTimeOut";
    } else {
      quiet(0, "%s: HcclCommConfig.hcclExecTimeOut %d is out of range on %s and ignored (comm_config.cc)", fn, cfg,
            soc);
    }
  }
  *ms = secs == 0 ? -1 : (int64_t)ceil(secs * 1000.0);
  snprintf(desc, descn, "%s%.2f s (%s)", secs == 0 ? "never: " : "", secs, src);
  const char *o = getenv("ACLSIM_HCCL_EXEC_TIMEOUT_MS");
  if (o && *o) {
    char *end = NULL;
    long long v = strtoll(o, &end, 10);
    if (*end != '\0' || v < 0 || o[0] < '0' || o[0] > '9')
      return sim_fail(HCCL_E_PARA, "%s: [aclsim] ACLSIM_HCCL_EXEC_TIMEOUT_MS must be a non-negative integer, got '%s'",
                      fn, o);
    *ms = v == 0 ? -1 : v;
    snprintf(desc, descn, "%lld ms (ACLSIM_HCCL_EXEC_TIMEOUT_MS)", v);
  }
  return 0;
}

/* hcomm comm_config.cc:85-120 CommConfig::Load: the size is read first (a mismatch only warns;
 * the copy is clamped to the struct), then the magic word (:126-140, EI0003, HCCL_E_PARA), then
 * the fields by version (:142-230). Validated here: hcclBufferSize (>= 1 MB unless not set,
 * :234-260), hcclDeterministic (0, 1 or 2 unless not set, :262-), aclGraphZeroCopyEnable (0 or 1,
 * :196-207). Used: hcclCommName (version >= 2, :167-169, 307-315) and hcclExecTimeOut
 * (version >= 8, :209-211). */
int load_config(const char *fn, const HcclCommConfig *user, char *name, size_t namen, bool *exec_set,
                       int32_t *exec) {
  HcclCommConfigHeader hdr;
  memcpy(&hdr, user->reserved, sizeof hdr);
  HcclCommConfig c;
  memset(&c, 0, sizeof c);
  size_t size = hdr.size > sizeof c ? sizeof c : hdr.size;
  if (hdr.size != sizeof c)
    quiet(0, "%s: [Load] configSize[%zu] differs from sizeof(CommConfigHandle)[%zu]", fn, hdr.size, sizeof c);
  memcpy(&c, user, size);
  memcpy(&hdr, c.reserved, sizeof hdr);
  if (hdr.magicWord != HCCL_COMM_CONFIG_MAGIC_WORD)
    return sim_fail(HCCL_E_PARA,
                    "%s: EI0003: [CheckMagicWord] Invalid magic word[0x%x]. Please make sure the config has been "
                    "initialized by HcclCommConfigInit(). (The magic word must be initialized with the result of "
                    "HcclCommConfigInit())",
                    fn, hdr.magicWord);
  if (hdr.version != HCCL_COMM_CONFIG_VERSION)
    quiet(0, "%s: [SetConfigByVersion] config version %u is not %u: later configurations are ignored", fn,
          hdr.version, HCCL_COMM_CONFIG_VERSION);
  if (hdr.version >= 1 && c.hcclBufferSize != 0xffffffffu && c.hcclBufferSize < 1)
    return sim_fail(HCCL_E_PARA,
                    "%s: EI0003: The configuration of hcclBufferSize[%u(MB)] is invalid: should be equal to or greater "
                    "than 1(MB).",
                    fn, c.hcclBufferSize);
  if (hdr.version >= 1 && c.hcclDeterministic != 0xffffffffu && c.hcclDeterministic > 2)
    return sim_fail(HCCL_E_PARA,
                    "%s: EI0003: The configuration of hcclDeterministic[%u] is invalid, which should be 0(disable) , "
                    "1(enable) or 2(strict).",
                    fn, c.hcclDeterministic);
  if (hdr.version >= 2 && c.hcclCommName[0]) snprintf(name, namen, "%.128s", c.hcclCommName);
  if (hdr.version >= 7 && c.aclGraphZeroCopyEnable > 1)
    return sim_fail(HCCL_E_PARA, "%s: EI0003: aclGraphZeroCopyEnable value=[%u] invalid. support 0 or 1", fn,
                    c.aclGraphZeroCopyEnable);
  *exec_set = hdr.version >= 8;
  *exec = c.hcclExecTimeOut;
  return 0;
}

