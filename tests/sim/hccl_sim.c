/*
 * Software HCCL ("aclsim") -- communicators and collectives, compiled into libaclsim_core.so.
 * libhcomm.so (export_hcomm.c) and libhccl.so (export_hccl.c) export the HCCL symbols and forward
 * here; hccl_transport.c moves the bytes between the ranks (processes or threads of this machine).
 * tests/sim/README.md ("Software HCCL") documents every choice.
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
#include "hccl_sim.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
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

/* SYS_MAX_COUNT (hccl src/common/hccl_common.h:42, op_common.cc:2902-2911; hcomm
 * param_check.cc:155-163, src/pub_inc/hccl_common.h:64). */
#define SYS_MAX_COUNT 0x7FFFFFFFFULL
/* NOTIFY_DEFAULT_WAIT_TIME = 27 * 68 (hcomm src/pub_inc/hccl_common.h:84). */
#define EXEC_DEFAULT_S 1836.0

/* A failure CANN only logs as a warning: returns `code`, queues no text (ACLSIM_VERBOSE prints). */
static int quiet(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int quiet(int code, const char *fmt, ...) {
  if (getenv("ACLSIM_VERBOSE") == NULL) return code;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[aclsim] %d (HCCL warning only, no error message): %s\n", code, buf);
  return code;
}

/* ======================================================================================
 * Data types and the SoC the simulator plays
 * ====================================================================================== */
static const char *dtype_name(int32_t dt) {
  static const char *const n[] = {"int8",   "int16",  "int32", "fp16",   "fp32",    "int64",   "uint64",
                                  "uint8",  "uint16", "uint32", "fp64", "bfp16",   "int128",  "(13)",
                                  "hif8", "fp8e4m3", "fp8e5m2", "fp8e8m0"};
  return dt >= 0 && dt < 18 ? n[dt] : "(unknown)";
}

/* Element sizes (hcomm hccl_types.h:82-102 names; the alignment rules of hccl
 * docs/zh/api_ref/comm_op_interface/HcclAllReduce.md:89-93 agree). 0 = not a data type. */
static uint64_t dtype_size(int32_t dt) {
  static const uint8_t s[] = {1, 2, 4, 2, 4, 8, 8, 1, 2, 4, 8, 2, 16, 0, 1, 1, 1, 1};
  return dt >= 0 && dt < 18 ? s[dt] : 0;
}

/* The families whose HCCL rules differ, by the op::SocVersion of the SoC's platform file
 * (sim_soc.c): ASCEND950 (ASCEND910_95 is the same value) and ASCEND350, NpuArch DAV_3510, take the
 * new hccl path (hccl all_reduce_op.cc:28-36, hccl_common.h:272-283; [aclsim] Ascend350 is assumed
 * to follow the 950); ASCEND910B / ASCEND910_93 (A2 / A3); ASCEND910 (Atlas training); ASCEND310P
 * (300I Duo); anything else (Ascend310B, a SoC without a platform file) gets hcomm's generic
 * checks. */
typedef enum { FAM_GENERIC = 0, FAM_950, FAM_A2A3, FAM_910, FAM_310P } Fam;

static Fam soc_family(const char **soc, const char **family) {
  SimSocInfo info;
  const char *name = sim_rt_get_soc_name();
  sim_soc_lookup(name, &info);
  *soc = name;
  *family = info.known && info.family[0] ? info.family : "no known family";
  switch (info.soc_version) {
    case SIM_SV_ASCEND950: case SIM_SV_ASCEND350: return FAM_950;
    case SIM_SV_ASCEND910B: case SIM_SV_ASCEND910_93: return FAM_A2A3;
    case SIM_SV_ASCEND910: return FAM_910;
    case SIM_SV_ASCEND310P: return FAM_310P;
    default: return FAM_GENERIC;
  }
}

#define B(x) (1ULL << (x))
/* AllReduce data types per SoC: hccl docs/zh/api_ref/comm_op_interface/HcclAllReduce.md:48-78, with
 * hcomm HcclCommunicator::CheckDataType(needReduce=true) (hccl_communicator_host.cc:891-929: UINT8,
 * UINT16, UINT32, UINT64, FP64 rejected; INT64 and BFP16 also on 310P) and the 950 path (hccl
 * op_common.cc:2913-2998: int8, int16, int32, int64, uint64, fp16, fp32, fp64, bf16). */
static uint64_t reduce_types(Fam f) {
  const uint64_t a2a3 = B(HCCL_DATA_TYPE_INT8) | B(HCCL_DATA_TYPE_INT16) | B(HCCL_DATA_TYPE_INT32) |
                        B(HCCL_DATA_TYPE_INT64) | B(HCCL_DATA_TYPE_FP16) | B(HCCL_DATA_TYPE_FP32) |
                        B(HCCL_DATA_TYPE_BFP16);
  switch (f) {
    case FAM_950: return a2a3 | B(HCCL_DATA_TYPE_UINT64) | B(HCCL_DATA_TYPE_FP64);
    case FAM_910: /* no int16 (param_check.cc:326-382), no bf16 (HcclAllReduce.md) */
      return B(HCCL_DATA_TYPE_INT8) | B(HCCL_DATA_TYPE_INT32) | B(HCCL_DATA_TYPE_INT64) | B(HCCL_DATA_TYPE_FP16) |
             B(HCCL_DATA_TYPE_FP32);
    case FAM_310P:
      return B(HCCL_DATA_TYPE_INT8) | B(HCCL_DATA_TYPE_INT16) | B(HCCL_DATA_TYPE_INT32) | B(HCCL_DATA_TYPE_FP16) |
             B(HCCL_DATA_TYPE_FP32);
    default: return a2a3;
  }
}

/* AllGather / Broadcast data types: hccl docs/zh/api_ref/comm_op_interface/HcclAllGather.md:49-63
 * (A2/A3: the twelve types 0-11; 950 adds hif8 and the FP8 types); hcomm CheckDataType(needReduce =
 * false) (hccl_communicator_host.cc:930-947) rejects only values out of range, and bf16 on 310P. */
static uint64_t move_types(Fam f) {
  const uint64_t base = 0xFFFull; /* int8 .. bfp16 */
  if (f == FAM_950)
    return base | B(HCCL_DATA_TYPE_HIF8) | B(HCCL_DATA_TYPE_FP8E4M3) | B(HCCL_DATA_TYPE_FP8E5M2) |
           B(HCCL_DATA_TYPE_FP8E8M0);
  if (f == FAM_310P) return base & ~B(HCCL_DATA_TYPE_BFP16);
  return base;
}

static void type_list(char *buf, size_t n, uint64_t set) {
  size_t k = 0;
  buf[0] = '\0';
  for (int dt = 0; dt < 18 && k < n; dt++)
    if (set & B(dt)) k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "", dtype_name(dt));
}

static bool in_set(uint64_t set, int32_t dt) { return dt >= 0 && dt < 64 && (set & B(dt)); }

/* HCCL_E_NOT_SUPPORT (5) for a data type or op the SoC's HCCL refuses. */
static int check_types(const char *fn, int32_t dt, int32_t op, bool reduce) {
  const char *soc, *family;
  Fam f = soc_family(&soc, &family);
  if (reduce && (op < HCCL_REDUCE_SUM || op > HCCL_REDUCE_MIN))
    /* hcomm param_check.cc:46-51, 304-324 */
    return sim_fail(HCCL_E_NOT_SUPPORT,
                    "%s: op[%d] is not supported: HcclReduceOp must be sum 0, prod 1, max 2 or min 3 "
                    "(hcomm param_check.cc HcomCheckReductionOp)",
                    fn, op);
  uint64_t set = reduce ? reduce_types(f) : move_types(f);
  if (!in_set(set, dt)) {
    char list[256];
    type_list(list, sizeof list, set);
    return sim_fail(HCCL_E_NOT_SUPPORT,
                    "%s: dataType[%d] (%s) is not supported on %s (%s): supported are %s (hccl "
                    "docs/zh/api_ref/comm_op_interface/%s.md; hcomm hccl_communicator_host.cc CheckDataType)",
                    fn, dt, dtype_name(dt), soc, family, list, reduce ? "HcclAllReduce" : "HcclAllGather");
  }
  if (!reduce) return 0;
  /* hcomm param_check.cc:326-382 HcomCheckReduceDataType: 910B/910_93 PROD with INT16 or BFP16
   * (documented for the 950 too, HcclAllReduce.md:48-78); 310P3 INT16 with anything but SUM. */
  if ((f == FAM_A2A3 || f == FAM_950) && op == HCCL_REDUCE_PROD &&
      (dt == HCCL_DATA_TYPE_INT16 || dt == HCCL_DATA_TYPE_BFP16))
    return sim_fail(HCCL_E_NOT_SUPPORT, "%s: op prod is not supported with dataType %s on %s (%s) (hcomm param_check.cc "
                    "HcomCheckReduceDataType)", fn, dtype_name(dt), soc, family);
  if (f == FAM_310P && dt == HCCL_DATA_TYPE_INT16 && op != HCCL_REDUCE_SUM)
    return sim_fail(HCCL_E_NOT_SUPPORT, "%s: dataType int16 supports only op sum on %s (%s) (hcomm param_check.cc "
                    "HcomCheckReduceDataType)", fn, soc, family);
  return 0;
}

/* ======================================================================================
 * Communicators: opaque handles with never-reused ids (a destroyed comm is always recognised)
 * ====================================================================================== */
typedef struct {
  uint64_t id;
  HcclTpMesh mesh;
  char name[160];  /* hcclCommName, or the root info's identifier */
  int device;
  int64_t exec_ms; /* -1 = never */
  char exec_desc[160];
  pthread_mutex_t mu; /* serialises this communicator's collectives */
  uint64_t seq;       /* collectives run */
  int64_t pending;    /* tasks queued on a stream and not yet dropped: HcclCommDestroy refuses */
  bool broken;
  uint64_t broken_seq;
  char broken_why[768];
  bool inconsistent; /* ranks issued different collectives (HcclGetCommAsyncError) */
  char inconsistent_why[512];
} Comm;

#define COMM_BASE 0x4CC100000000ULL
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* registry and counters */
static Comm **g_comms;                                   /* by id; NULL once destroyed */
static uint64_t g_ncomms = 1, g_capcomms;
static int64_t g_live_comms, g_pending_tasks, g_done, g_failed;

/* Under g_mu. */
static Comm *comm_get(HcclComm h, const char **why) {
  uintptr_t u = (uintptr_t)h;
  if (u < COMM_BASE + 16 || (u - COMM_BASE) % 16 != 0 || (u - COMM_BASE) / 16 >= g_ncomms) {
    *why = "is not a communicator made by HcclCommInitRootInfo";
    return NULL;
  }
  Comm *c = g_comms[(u - COMM_BASE) / 16];
  if (!c) *why = "was already destroyed";
  return c;
}

/* Resolves `h` and marks it in use by one more task (released by task_drop / unreserve).
 * A handle that is not a live communicator is HCCL_E_PARA, as HcclCommDestroy's "comm is not exist"
 * (hcomm op_base.cc:3297-3307); CANN would use freed memory on most other calls. */
static int comm_reserve(const char *fn, HcclComm h, Comm **out) {
  const char *why = NULL;
  pthread_mutex_lock(&g_mu);
  Comm *c = comm_get(h, &why);
  if (c) {
    c->pending++;
    g_pending_tasks++;
  }
  pthread_mutex_unlock(&g_mu);
  if (!c) return sim_fail(HCCL_E_PARA, "%s: comm %p %s ([aclsim]: CANN would use freed memory)", fn, h, why);
  *out = c;
  return 0;
}

static void comm_unreserve(Comm *c) {
  pthread_mutex_lock(&g_mu);
  c->pending--;
  g_pending_tasks--;
  pthread_mutex_unlock(&g_mu);
}

/* HcclDeviceRefresh -> hrtGetDeviceRefresh: aclrtGetDevice fails -> HCCL_E_RUNTIME, "rtGet device
 * fail, please make sure that device is set." (hcomm src/platform/common/adapter/adapter_rts.cc:221-234).
 * aclrtGetDevice's own 107002 text is queued first, as on CANN. */
static int need_device(const char *fn, int32_t *dev) {
  int32_t d = -1;
  int rc = sim_rt_get_device(&d);
  if (rc)
    return sim_fail(HCCL_E_RUNTIME,
                    "%s: [Get][DeviceRefresh]rtGet device fail, please make sure that device is set. return[%d] "
                    "(HCCL_E_RUNTIME: call aclrtSetDevice on this thread first)",
                    fn, rc);
  if (dev) *dev = d;
  return 0;
}

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
static int exec_timeout(const char *fn, bool cfg_set, int32_t cfg, int64_t *ms, char *desc, size_t descn) {
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

/* ======================================================================================
 * Management (libhcomm.so)
 * ====================================================================================== */

/* hcomm op_base.cc:1312-1349 HcclGetRootInfo: HcclDeviceRefresh (:1316), then the server is set up
 * and left running in the background (TopoInfoDetect::SetupServer); returns at once. */
int sim_hccl_get_root_info(HcclRootInfo *rootInfo) {
  static const char *const fn = "HcclGetRootInfo";
  int32_t dev = -1;
  int rc = need_device(fn, &dev);
  if (rc) return rc;
  if (!rootInfo) return sim_fail(HCCL_E_PTR, "%s: ptr [rootInfo] is nullptr, return HCCL_E_PTR", fn);
  char err[1024];
  int64_t timeout = hccl_tp_connect_timeout_ms(err, sizeof err);
  if (timeout < 0) return sim_fail(HCCL_E_PARA, "%s: %s", fn, err);
  HcclSimRootInfo ri;
  rc = hccl_tp_server_start(&ri, dev, timeout, err, sizeof err);
  if (rc) return sim_fail(rc, "%s", err);
  memset(rootInfo, 0, sizeof *rootInfo);
  memcpy(rootInfo->internal, &ri, sizeof ri);
  return 0;
}

/* hcomm comm_config.cc:85-120 CommConfig::Load: the size is read first (a mismatch only warns;
 * the copy is clamped to the struct), then the magic word (:126-140, EI0003, HCCL_E_PARA), then
 * the fields by version (:142-230). Validated here: hcclBufferSize (>= 1 MB unless not set,
 * :234-260), hcclDeterministic (0, 1 or 2 unless not set, :262-), aclGraphZeroCopyEnable (0 or 1,
 * :196-207). Used: hcclCommName (version >= 2, :167-169, 307-315) and hcclExecTimeOut
 * (version >= 8, :209-211). */
static int load_config(const char *fn, const HcclCommConfig *user, char *name, size_t namen, bool *exec_set,
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

/* hcomm op_base.cc:1795-1835 HcclCommInitRootInfoInner (and :2017 HcclCommInitRootInfoConfig):
 * HcclDeviceRefresh; nRanks == 0 -> HCCL_E_PARA; rank >= nRanks -> HCCL_E_PARA; NULL comm or
 * rootInfo -> HCCL_E_PTR; the environment (HCCL_CONNECT_TIMEOUT, HCCL_EXEC_TIMEOUT) -> HCCL_E_PARA;
 * then the negotiation (hccl_transport.c), which blocks until every rank joined. */
int sim_hccl_comm_init(const char *fn, uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                       const HcclCommConfig *config, bool with_config, HcclComm *comm) {
  int32_t dev = -1;
  int rc = need_device(fn, &dev);
  if (rc) return rc;
  if (nRanks == 0) return sim_fail(HCCL_E_PARA, "%s: [Init][CommRootInfoInner] nRanks[%u] should be greater than 0.", fn, nRanks);
  if (rank >= nRanks)
    return sim_fail(HCCL_E_PARA, "%s: [Init][CommRootInfoInner] rank[%u] should be less than nRanks[%u].", fn, rank,
                    nRanks);
  if (!comm) return sim_fail(HCCL_E_PTR, "%s: ptr [comm] is nullptr, return HCCL_E_PTR", fn);
  if (!rootInfo) return sim_fail(HCCL_E_PTR, "%s: ptr [rootInfo] is nullptr, return HCCL_E_PTR", fn);
  char name[160] = "";
  bool exec_set = false;
  int32_t exec_cfg = HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET;
  if (with_config) {
    if (!config) return sim_fail(HCCL_E_PTR, "%s: ptr [config] is nullptr, return HCCL_E_PTR", fn);
    rc = load_config(fn, config, name, sizeof name, &exec_set, &exec_cfg);
    if (rc) return rc;
  }
  if (nRanks > HCCL_TP_MAX_RANKS)
    return sim_fail(HCCL_E_NOT_SUPPORT, "%s: [aclsim] nRanks[%u]: the simulator supports at most %d ranks", fn, nRanks,
                    HCCL_TP_MAX_RANKS);
  char err[1536];
  int64_t connect_ms = hccl_tp_connect_timeout_ms(err, sizeof err);
  if (connect_ms < 0) return sim_fail(HCCL_E_PARA, "%s: init external input error: %s", fn, err);
  int64_t exec_ms = -1;
  char exec_desc[160];
  rc = exec_timeout(fn, exec_set, exec_cfg, &exec_ms, exec_desc, sizeof exec_desc);
  if (rc) return rc;
  HcclSimRootInfo ri;
  memcpy(&ri, rootInfo->internal, sizeof ri);
  if (memcmp(ri.magic, "ACLSHCCL", 8) != 0 || ri.version != 1)
    return sim_fail(HCCL_E_PARA, "%s: [aclsim] rootInfo was not filled by HcclGetRootInfo (it must be the 4108 "
                    "bytes HcclGetRootInfo wrote on the root, passed unchanged to every rank)", fn);
  ri.server[sizeof ri.server - 1] = '\0';
  ri.identifier[sizeof ri.identifier - 1] = '\0';
  Comm *c = calloc(1, sizeof *c);
  if (!c) return sim_fail(HCCL_E_MEMORY, "%s: out of memory", fn);
  rc = hccl_tp_join(&ri, nRanks, rank, dev, connect_ms, &c->mesh, err, sizeof err);
  if (rc) {
    free(c);
    return sim_fail(rc, "%s", err);
  }
  snprintf(c->name, sizeof c->name, "%s", name[0] ? name : ri.identifier);
  c->device = dev;
  c->exec_ms = exec_ms;
  snprintf(c->exec_desc, sizeof c->exec_desc, "%s", exec_desc);
  pthread_mutex_init(&c->mu, NULL);
  pthread_mutex_lock(&g_mu);
  if (g_ncomms >= g_capcomms) {
    uint64_t cap = g_capcomms ? g_capcomms * 2 : 64;
    Comm **p = realloc(g_comms, cap * sizeof *p);
    if (!p) {
      pthread_mutex_unlock(&g_mu);
      hccl_tp_close(&c->mesh);
      free(c);
      return sim_fail(HCCL_E_MEMORY, "%s: out of memory", fn);
    }
    g_comms = p;
    g_capcomms = cap;
  }
  c->id = g_ncomms++;
  g_comms[c->id] = c;
  g_live_comms++;
  pthread_mutex_unlock(&g_mu);
  *comm = (HcclComm)(uintptr_t)(COMM_BASE + c->id * 16);
  return 0;
}

/* hcomm op_base.cc:3273-3330: HcclDeviceRefresh first (:3290), then a NULL comm is SUCCESS with the
 * warning "An empty comm given, skip destroy." (:3292); a comm in use -> HCCL_E_AGAIN with the
 * warning "comm is in use, please try again later" (:3315-3319; no error message). [aclsim] "in
 * use" = a collective of it is queued on a stream and not yet run. Destroying closes its
 * connections: peers still in a collective with it see them close. */
int sim_hccl_comm_destroy(HcclComm comm) {
  static const char *const fn = "HcclCommDestroy";
  int rc = need_device(fn, NULL);
  if (rc) return rc;
  if (!comm) return quiet(HCCL_SUCCESS, "%s: [Destroy][HcclComm]An empty comm given, skip destroy.", fn);
  const char *why = NULL;
  pthread_mutex_lock(&g_mu);
  Comm *c = comm_get(comm, &why);
  if (c && c->pending > 0) {
    int64_t n = c->pending;
    pthread_mutex_unlock(&g_mu);
    return quiet(HCCL_E_AGAIN,
                 "%s: [HcclCommDestroy] comm is in use, please try again later (%" PRId64 " collective(s) still queued "
                 "on a stream: synchronise it first)",
                 fn, n);
  }
  if (c) {
    g_comms[c->id] = NULL;
    g_live_comms--;
  }
  pthread_mutex_unlock(&g_mu);
  if (!c)
    return sim_fail(HCCL_E_PARA, "%s: [HcclCommDestroy] comm is not exist, comm=%p (it %s)", fn, comm, why);
  hccl_tp_close(&c->mesh);
  pthread_mutex_destroy(&c->mu);
  free(c);
  return 0;
}

/* hcomm hccl_independent_rank_graph.cc:335,356 (CHK_PTR_NULL -> HCCL_E_PTR). */
static int rank_query(const char *fn, HcclComm comm, uint32_t *out, bool size) {
  if (!comm) return sim_fail(HCCL_E_PTR, "%s: ptr [comm] is nullptr, return HCCL_E_PTR", fn);
  if (!out) return sim_fail(HCCL_E_PTR, "%s: ptr [%s] is nullptr, return HCCL_E_PTR", fn, size ? "rankSize" : "rank");
  const char *why = NULL;
  pthread_mutex_lock(&g_mu);
  Comm *c = comm_get(comm, &why);
  if (c) *out = size ? c->mesh.nranks : c->mesh.rank;
  pthread_mutex_unlock(&g_mu);
  if (!c) return sim_fail(HCCL_E_PARA, "%s: comm %p %s", fn, comm, why);
  return 0;
}

int sim_hccl_get_rank_size(HcclComm comm, uint32_t *rankSize) {
  return rank_query("HcclGetRankSize", comm, rankSize, true);
}
int sim_hccl_get_rank_id(HcclComm comm, uint32_t *rank) { return rank_query("HcclGetRankId", comm, rank, false); }

/* hcomm op_base.cc:4356-4371: NULL comm (EI0003) or asyncError -> HCCL_E_PTR; *asyncError is an
 * RDMA error CQE (HCCL_E_REMOTE, which the simulator never has: docs HcclGetCommAsyncError.md:30-40)
 * or, when the heartbeat saw ranks issue inconsistent collectives, HCCL_E_PARA with EI0005
 * (heartbeat.cc:1967-1990 CheckOpInconsistentError). [aclsim] The latter after a collective whose
 * ranks disagreed (see task_run); a peer that died is not reported here (as on CANN). */
int sim_hccl_get_async_error(HcclComm comm, HcclResult *asyncError) {
  static const char *const fn = "HcclGetCommAsyncError";
  if (!comm)
    return sim_fail(HCCL_E_PTR, "%s: EI0003: HcclCommGetAsyncError: comm is nullptr, expected a non-null pointer", fn);
  if (!asyncError) return sim_fail(HCCL_E_PTR, "%s: ptr [asyncError] is nullptr, return HCCL_E_PTR", fn);
  const char *why = NULL;
  char text[600] = "";
  pthread_mutex_lock(&g_mu);
  Comm *c = comm_get(comm, &why);
  bool bad = c && c->inconsistent;
  if (bad) snprintf(text, sizeof text, "%.400s in comm [%.150s]", c->inconsistent_why, c->name);
  pthread_mutex_unlock(&g_mu);
  if (!c) return sim_fail(HCCL_E_PARA, "%s: comm %p %s", fn, comm, why);
  *asyncError = bad ? HCCL_E_PARA : HCCL_SUCCESS;
  if (bad) sim_fail(HCCL_E_PARA, "%s: EI0005: find inconsistent op: %s", fn, text);
  return 0;
}

/* hcomm op_base.cc:4378-4403 and its unit test ut_HcclGetErrorString_API_test.cc:19-170. */
const char *sim_hccl_error_string(int code) {
  static const char *const s[] = {"no error",
                                  "parameter error",
                                  "empty pointer",
                                  "memory error",
                                  "internal error",
                                  "not support feature",
                                  "not found specific resource",
                                  "resource unavailable",
                                  "call system interface error",
                                  "timeout",
                                  "open file fail",
                                  "tcp connect fail",
                                  "roce connect fail",
                                  "tcp transfer fail",
                                  "roce transfer fail",
                                  "call runtime api fail",
                                  "call driver api fail",
                                  "call profiling api fail",
                                  "call cce api fail",
                                  "call network api fail",
                                  "try again",
                                  "error cqe",
                                  "error communicator suspending",
                                  "retry constraint",
                                  "out of memory"};
  if (code < HCCL_SUCCESS || code >= HCCL_E_RESERVED) return "unknown error";
  if (code < (int)(sizeof s / sizeof s[0])) return s[code];
  return "unknown err"; /* :4401, below HCCL_E_RESERVED but not in the map (HCCL_E_IN_STATUS too) */
}

/* ======================================================================================
 * Collectives (libhccl.so) and HcclBarrier: validated at the call, run as a stream task
 *
 * "同步下发，异步执行" -- issued synchronously, executed asynchronously (hccl
 * docs/zh/user_guide/fault_diagnosis/debug_thinking.md:192); errors found while executing are
 * reported at stream synchronisation (:195): a peer that does not take part within the exec
 * timeout makes aclrtSynchronizeStream return 507048 with EI0002 (torch_npu HCCL_timeout.md:5-16).
 * ====================================================================================== */
typedef struct {
  Comm *c;
  HcclTpKind kind;
  void *send, *recv; /* Broadcast: send == recv == buf */
  uint64_t count, block; /* elements, and bytes per rank block */
  int32_t dtype, arg;
  uint64_t send_alloc, recv_alloc;
  bool ran;
} Task;

static const char *task_name(HcclTpKind k) {
  switch (k) {
    case HCCL_TP_ALLREDUCE: return "HcclAllReduce";
    case HCCL_TP_ALLGATHER: return "HcclAllGather";
    case HCCL_TP_BROADCAST: return "HcclBroadcast";
    default: return "HcclBarrier";
  }
}

/* Reductions. [aclsim] In rank order 0, 1, ..., n-1, so every rank gets bit-identical results.
 * Floating types (fp16, bf16, fp32, fp64) accumulate in double and are rounded once to the data
 * type (round to nearest even; sim_to_fp16 / sim_to_bf16); a NaN operand of max/min gives NaN.
 * Integer types are exact in two's complement, wrapping modulo 2^bits (what integer hardware
 * does; doubles would be inexact beyond 2^53 for int64 / uint64). The device's own order and
 * precision (and HCCL_DETERMINISTIC) are not modelled. */
static bool is_float(int32_t dt) {
  return dt == HCCL_DATA_TYPE_FP16 || dt == HCCL_DATA_TYPE_BFP16 || dt == HCCL_DATA_TYPE_FP32 ||
         dt == HCCL_DATA_TYPE_FP64;
}

static double load_f(int32_t dt, const void *p, uint64_t i) {
  switch (dt) {
    case HCCL_DATA_TYPE_FP16: return sim_from_fp16(((const uint16_t *)p)[i]);
    case HCCL_DATA_TYPE_BFP16: return sim_from_bf16(((const uint16_t *)p)[i]);
    case HCCL_DATA_TYPE_FP32: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
  }
}

static void store_f(int32_t dt, void *p, uint64_t i, double v) {
  switch (dt) {
    case HCCL_DATA_TYPE_FP16: ((uint16_t *)p)[i] = sim_to_fp16(v); break;
    case HCCL_DATA_TYPE_BFP16: ((uint16_t *)p)[i] = sim_to_bf16(v); break;
    case HCCL_DATA_TYPE_FP32: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
  }
}

static bool is_signed(int32_t dt) {
  return dt == HCCL_DATA_TYPE_INT8 || dt == HCCL_DATA_TYPE_INT16 || dt == HCCL_DATA_TYPE_INT32 ||
         dt == HCCL_DATA_TYPE_INT64;
}

static uint64_t load_i(int32_t dt, const void *p, uint64_t i) {
  switch (dt) {
    case HCCL_DATA_TYPE_INT8: return (uint64_t)(int64_t)((const int8_t *)p)[i];
    case HCCL_DATA_TYPE_INT16: return (uint64_t)(int64_t)((const int16_t *)p)[i];
    case HCCL_DATA_TYPE_INT32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
    case HCCL_DATA_TYPE_INT64: return (uint64_t)((const int64_t *)p)[i];
    case HCCL_DATA_TYPE_UINT8: return ((const uint8_t *)p)[i];
    case HCCL_DATA_TYPE_UINT16: return ((const uint16_t *)p)[i];
    case HCCL_DATA_TYPE_UINT32: return ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
  }
}

static void store_i(int32_t dt, void *p, uint64_t i, uint64_t v) {
  switch (dtype_size(dt)) {
    case 1: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case 2: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case 4: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: ((uint64_t *)p)[i] = v; break;
  }
}

static void reduce(int32_t dt, int32_t op, void *out, void *const *in, uint32_t n, uint64_t count) {
  if (is_float(dt)) {
    for (uint64_t i = 0; i < count; i++) {
      double acc = load_f(dt, in[0], i);
      for (uint32_t r = 1; r < n; r++) {
        double v = load_f(dt, in[r], i);
        switch (op) {
          case HCCL_REDUCE_SUM: acc += v; break;
          case HCCL_REDUCE_PROD: acc *= v; break;
          case HCCL_REDUCE_MAX: acc = isnan(acc) || isnan(v) ? NAN : (v > acc ? v : acc); break;
          default: acc = isnan(acc) || isnan(v) ? NAN : (v < acc ? v : acc); break;
        }
      }
      store_f(dt, out, i, acc);
    }
    return;
  }
  bool sgn = is_signed(dt);
  for (uint64_t i = 0; i < count; i++) {
    uint64_t acc = load_i(dt, in[0], i);
    for (uint32_t r = 1; r < n; r++) {
      uint64_t v = load_i(dt, in[r], i);
      switch (op) {
        case HCCL_REDUCE_SUM: acc += v; break;
        case HCCL_REDUCE_PROD: acc *= v; break;
        case HCCL_REDUCE_MAX: acc = (sgn ? (int64_t)v > (int64_t)acc : v > acc) ? v : acc; break;
        default: acc = (sgn ? (int64_t)v < (int64_t)acc : v < acc) ? v : acc; break;
      }
    }
    store_i(dt, out, i, acc);
  }
}

/* The communicator cannot be used any more after a failed collective ([aclsim]: its ranks are out
 * of step; CANN's would need a new communicator too). Under c->mu. */
static int collective_failed(Task *t, uint64_t seq, int code, const char *reason, const char *tail) {
  Comm *c = t->c;
  if (!c->broken) {
    c->broken = true;
    c->broken_seq = seq;
    snprintf(c->broken_why, sizeof c->broken_why, "%s", reason);
  }
  if (code == SIM_RT_FFTS_PLUS_TIMEOUT)
    return sim_fail(code,
                    "%s task (communicator \"%s\", rank %u of %u, collective #%" PRIu64 "): The execution of the "
                    "internal task times out. EI0002: The wait execution of the Notify register times out. Reason: "
                    "%s.%s",
                    task_name(t->kind), c->name, c->mesh.rank, c->mesh.nranks, seq, reason, tail);
  return sim_fail(code, "%s task (communicator \"%s\", rank %u of %u, collective #%" PRIu64 "): %s.%s",
                  task_name(t->kind), c->name, c->mesh.rank, c->mesh.nranks, seq, reason, tail);
}

/* Runs one collective (c->mu held): exchanges the blocks with every peer, then writes the result. */
static int run_exchange(Task *t, uint64_t seq) {
  Comm *c = t->c;
  const uint32_t n = c->mesh.nranks, me = c->mesh.rank;
  const uint64_t B = t->block;
  HcclTpXfer x[HCCL_TP_MAX_RANKS];
  memset(x, 0, sizeof x);
  /* [aclsim] Every buffer is staged in host memory first, so overlapping send / recv buffers
   * (in place) read the caller's data before anything is written. */
  char *stage = NULL;
  void *contrib[HCCL_TP_MAX_RANKS] = {0};
  uint64_t stage_bytes = t->kind == HCCL_TP_ALLREDUCE ? (uint64_t)n * B
                         : t->kind == HCCL_TP_ALLGATHER ? (uint64_t)n * B
                         : t->kind == HCCL_TP_BROADCAST ? B : 0;
  if (stage_bytes) {
    stage = malloc(stage_bytes);
    if (!stage)
      return collective_failed(t, seq, SIM_RT_INTERNAL_ERROR, "[aclsim] out of host memory for the staging buffers",
                               "");
  }
  switch (t->kind) {
    case HCCL_TP_ALLREDUCE:
    case HCCL_TP_ALLGATHER:
      memcpy(stage + (uint64_t)me * B, t->send, B);
      for (uint32_t r = 0; r < n; r++) {
        contrib[r] = stage + (uint64_t)r * B;
        if (r == me) continue;
        x[r] = (HcclTpXfer){stage + (uint64_t)me * B, B, contrib[r], B};
      }
      break;
    case HCCL_TP_BROADCAST:
      if (me == (uint32_t)t->arg) memcpy(stage, t->send, B);
      for (uint32_t r = 0; r < n; r++) {
        if (r == me) continue;
        if (me == (uint32_t)t->arg) x[r] = (HcclTpXfer){stage, B, NULL, 0};
        else if (r == (uint32_t)t->arg) x[r] = (HcclTpXfer){NULL, 0, stage, B};
      }
      break;
    default: break;
  }
  HcclTpHdr hdr = {.magic = HCCL_TP_WIRE_MAGIC, .kind = t->kind, .seq = seq, .count = t->count, .dtype = t->dtype,
                   .arg = t->arg};
  uint64_t bad = 0;
  char why[1024];
  HcclTpStatus st = hccl_tp_exchange(&c->mesh, &hdr, x, c->exec_ms, &bad, why, sizeof why);
  int rc = 0;
  if (st != HCCL_TP_OK) {
    char tail[512];
    switch (st) {
      case HCCL_TP_TIMEOUT: snprintf(tail, sizeof tail, " (exec timeout: %s)", c->exec_desc); break;
      case HCCL_TP_PEER_CLOSED:
        snprintf(tail, sizeof tail,
                 " [aclsim] Reported as soon as the connection closed; a device waits for the notify until the exec "
                 "timeout (%s).",
                 c->exec_desc);
        break;
      case HCCL_TP_MISMATCH:
        snprintf(tail, sizeof tail,
                 " Every rank must issue the same collectives in the same order with the same count, dataType and "
                 "op / root (hccl HcclAllReduce.md, HcclBroadcast.md:65). [aclsim] Reported at once; a device would "
                 "wait until the exec timeout (%s).",
                 c->exec_desc);
        c->inconsistent = true;
        snprintf(c->inconsistent_why, sizeof c->inconsistent_why, "%.500s", why);
        break;
      default: tail[0] = '\0'; break;
    }
    rc = collective_failed(t, seq, SIM_RT_FFTS_PLUS_TIMEOUT, why, tail);
  } else if (t->recv_alloc && !sim_dev_alloc_live(t->recv_alloc)) {
    /* The output was freed while the collective ran (the task validated it just before). */
    rc = collective_failed(t, seq, SIM_RT_INTERNAL_ERROR,
                           "the device memory of recvBuf was freed before the stream was synchronised", "");
  } else {
    switch (t->kind) {
      case HCCL_TP_ALLREDUCE: reduce(t->dtype, t->arg, t->recv, contrib, n, t->count); break;
      case HCCL_TP_ALLGATHER: memcpy(t->recv, stage, (uint64_t)n * B); break;
      case HCCL_TP_BROADCAST:
        if (me != (uint32_t)t->arg) memcpy(t->recv, stage, B);
        break;
      default: break;
    }
  }
  free(stage);
  return rc;
}

static int task_run(void *arg) {
  Task *t = arg;
  Comm *c = t->c;
  t->ran = true;
  pthread_mutex_lock(&c->mu);
  uint64_t seq = ++c->seq;
  int rc;
  if (c->broken) {
    char reason[1024];
    snprintf(reason, sizeof reason,
             "the communicator failed in collective #%" PRIu64 " (%s); every later collective on it fails: "
             "destroy it (HcclCommDestroy) and create a new one",
             c->broken_seq, c->broken_why);
    rc = collective_failed(t, seq, SIM_RT_FFTS_PLUS_TIMEOUT, reason, "");
  } else if (t->send_alloc && !sim_dev_alloc_live(t->send_alloc)) {
    rc = collective_failed(t, seq, SIM_RT_INTERNAL_ERROR,
                           "the device memory of sendBuf was freed before the stream was synchronised; buffers must stay "
                           "allocated until aclrtSynchronizeStream returns (this rank did not take part: its peers "
                           "will wait for it)",
                           "");
  } else if (t->recv_alloc && !sim_dev_alloc_live(t->recv_alloc)) {
    rc = collective_failed(t, seq, SIM_RT_INTERNAL_ERROR,
                           "the device memory of recvBuf was freed before the stream was synchronised (this rank did "
                           "not take part: its peers will wait for it)",
                           "");
  } else {
    rc = run_exchange(t, seq);
  }
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_lock(&g_mu);
  if (rc) g_failed++;
  else g_done++;
  pthread_mutex_unlock(&g_mu);
  return rc;
}

/* Called exactly once per task, after task_run or instead of it (the task was discarded). */
static void task_drop(void *arg) {
  Task *t = arg;
  pthread_mutex_lock(&g_mu);
  t->c->pending--;
  g_pending_tasks--;
  if (!t->ran) g_failed++;
  pthread_mutex_unlock(&g_mu);
  free(t);
}

/* [aclsim] A buffer must lie inside one live aclrtMalloc allocation (CANN's device would fault or
 * corrupt memory instead): HCCL_E_PARA. */
static int check_buf(const char *fn, const char *what, const void *p, uint64_t bytes, uint64_t *alloc) {
  *alloc = sim_dev_range_alloc(p, bytes);
  if (*alloc) return 0;
  char d[256];
  sim_describe_ptr(p, d, sizeof d);
  return sim_fail(HCCL_E_PARA,
                  "%s: [aclsim] %s %p: %" PRIu64 " bytes are not inside one live device allocation (%s); "
                  "collective buffers must be aclrtMalloc memory of the communicator's device",
                  fn, what, p, bytes, d);
}

/* Queues the task on the stream (the comm is already reserved; released on failure). */
static int launch(const char *fn, Task *t, void *stream) {
  int rc = sim_stream_enqueue(fn, stream, SIM_RT_PARAM_INVALID, task_run, task_drop, t);
  if (rc) {
    comm_unreserve(t->c);
    free(t);
    return sim_fail(HCCL_E_RUNTIME, "%s: call runtime api fail: the task could not be sent to stream %p (runtime "
                    "status %d)", fn, stream, rc);
  }
  return 0;
}

/* The checks every collective makes before it is queued, in CANN's order (hcomm
 * op_base_host.cc:102-112, hccl all_reduce_op.cc:37, 135-157, op_base.cc:2124, 2678):
 * count == 0 -> SUCCESS with a warning, before any pointer check; NULL comm / buffers / stream ->
 * HCCL_E_PTR (param_check.cc:412-414); count > SYS_MAX_COUNT -> HCCL_E_PARA; data type / op ->
 * HCCL_E_NOT_SUPPORT. Then ([aclsim] order): no device -> HCCL_E_RUNTIME; a destroyed comm ->
 * HCCL_E_PARA; Broadcast root >= rankSize -> HCCL_E_PARA (op_base.cc:2166-2169, param_check.cc:384-392);
 * buffers not live device memory of the needed size -> HCCL_E_PARA. */
static int collective(const char *fn, HcclTpKind kind, void *send, void *recv, uint64_t count, int32_t dtype,
                      int32_t arg, HcclComm comm, void *stream) {
  if (count == 0) return quiet(HCCL_SUCCESS, "%s: count is 0, nothing to do", fn);
  if (!comm) return sim_fail(HCCL_E_PTR, "%s: ptr [comm] is nullptr, return HCCL_E_PTR", fn);
  if (!send)
    return sim_fail(HCCL_E_PTR, "%s: ptr [%s] is nullptr, return HCCL_E_PTR", fn,
                    kind == HCCL_TP_BROADCAST ? "buf" : "sendBuf");
  if (!recv) return sim_fail(HCCL_E_PTR, "%s: ptr [recvBuf] is nullptr, return HCCL_E_PTR", fn);
  if (!stream) return sim_fail(HCCL_E_PTR, "%s: ptr [stream] is nullptr, return HCCL_E_PTR", fn);
  if (count > SYS_MAX_COUNT)
    return sim_fail(HCCL_E_PARA, "%s: count[%" PRIu64 "] is out of range, the maximum is %llu (SYS_MAX_COUNT)", fn, count,
                    SYS_MAX_COUNT);
  int rc = check_types(fn, dtype, arg, kind == HCCL_TP_ALLREDUCE);
  if (rc) return rc;
  rc = need_device(fn, NULL);
  if (rc) return rc;
  Comm *c;
  rc = comm_reserve(fn, comm, &c);
  if (rc) return rc;
  uint32_t n = c->mesh.nranks;
  if (kind == HCCL_TP_BROADCAST && (uint32_t)arg >= n) {
    comm_unreserve(c);
    return sim_fail(HCCL_E_PARA, "%s: root[%u] should be less than rankSize[%u]", fn, (uint32_t)arg, n);
  }
  uint64_t block = count * dtype_size(dtype);
  uint64_t sa = 0, ra = 0;
  rc = check_buf(fn, kind == HCCL_TP_BROADCAST ? "buf" : "sendBuf", send, block, &sa);
  if (!rc && kind != HCCL_TP_BROADCAST)
    rc = check_buf(fn, "recvBuf", recv, kind == HCCL_TP_ALLGATHER ? block * n : block, &ra);
  if (kind == HCCL_TP_BROADCAST) ra = sa;
  if (rc) {
    comm_unreserve(c);
    return rc;
  }
  Task *t = calloc(1, sizeof *t);
  if (!t) {
    comm_unreserve(c);
    return sim_fail(HCCL_E_MEMORY, "%s: out of memory", fn);
  }
  *t = (Task){.c = c, .kind = kind, .send = send, .recv = recv, .count = count, .block = block, .dtype = dtype,
              .arg = arg, .send_alloc = sa, .recv_alloc = ra};
  return launch(fn, t, stream);
}

/* hccl include/hccl.h:35-37; in place (sendBuf == recvBuf) is allowed (torch_npu
 * ProcessGroupHCCL.cpp:4754-4784 passes one tensor as both; hccl all_reduce_auto_selector.cc:133-158). */
int sim_hccl_all_reduce(void *sendBuf, void *recvBuf, uint64_t count, int32_t dtype, int32_t op, HcclComm comm,
                        void *stream) {
  return collective("HcclAllReduce", HCCL_TP_ALLREDUCE, sendBuf, recvBuf, count, dtype, op, comm, stream);
}

/* hccl include/hccl.h:51-52; buf is the input on the root and the output elsewhere
 * (HcclBroadcast.md:37). [aclsim] Every rank also exchanges a header with every other rank, so a
 * broadcast completes on no rank before all ranks issued it. */
int sim_hccl_broadcast(void *buf, uint64_t count, int32_t dtype, uint32_t root, HcclComm comm, void *stream) {
  return collective("HcclBroadcast", HCCL_TP_BROADCAST, buf, buf, count, dtype, (int32_t)root, comm, stream);
}

/* hccl include/hccl.h:120-121; recvBuf holds sendCount * rankSize elements, rank r's block at
 * element r * sendCount (HcclAllGather.md:23,28,42,94). */
int sim_hccl_all_gather(void *sendBuf, void *recvBuf, uint64_t sendCount, int32_t dtype, HcclComm comm,
                        void *stream) {
  return collective("HcclAllGather", HCCL_TP_ALLGATHER, sendBuf, recvBuf, sendCount, dtype, 0, comm, stream);
}

/* hcomm op_base_host.cc:184-240 (an fp32 SUM allreduce on internal buffers): blocks the streams of
 * all ranks until every rank issued it (HcclBarrier.md:30). [aclsim] A header exchange. */
int sim_hccl_barrier(HcclComm comm, void *stream) {
  static const char *const fn = "HcclBarrier";
  if (!comm) return sim_fail(HCCL_E_PTR, "%s: ptr [comm] is nullptr, return HCCL_E_PTR", fn);
  if (!stream) return sim_fail(HCCL_E_PTR, "%s: ptr [stream] is nullptr, return HCCL_E_PTR", fn);
  int rc = need_device(fn, NULL);
  if (rc) return rc;
  Comm *c;
  rc = comm_reserve(fn, comm, &c);
  if (rc) return rc;
  Task *t = calloc(1, sizeof *t);
  if (!t) {
    comm_unreserve(c);
    return sim_fail(HCCL_E_MEMORY, "%s: out of memory", fn);
  }
  *t = (Task){.c = c, .kind = HCCL_TP_BARRIER};
  return launch(fn, t, stream);
}

/* aclsimHcclGetStats (test hook; tests/sim/README.md):
 *  0 live communicators            1 collective tasks queued (not yet run or discarded)
 *  2 root-info servers running     3 collectives completed (cumulative)
 *  4 collectives failed or discarded (cumulative) */
#define HCCL_NSTATS 5
int32_t sim_hccl_get_stats(int64_t *out, uint64_t n) {
  pthread_mutex_lock(&g_mu);
  int64_t v[HCCL_NSTATS] = {g_live_comms, g_pending_tasks, hccl_tp_servers_running(), g_done, g_failed};
  pthread_mutex_unlock(&g_mu);
  if (out)
    for (uint64_t i = 0; i < n && i < HCCL_NSTATS; i++) out[i] = v[i];
  return HCCL_NSTATS;
}
