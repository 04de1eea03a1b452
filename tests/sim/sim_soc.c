/*
 * Software CANN ("aclsim") -- the platform: aclrtGetSocName() and what CANN reads from the SoC's
 * platform file, the way CANN reads it.  Nothing here knows a chip: every fact comes from
 * <SoC_version>.ini (written by scripts/build_sim.ts from tests/sim/platform_config.txt, itself
 * copied from hicann/runtime src/platform/platform_config/), except the runtime's per-chip-type
 * overflow modes (sim_soc_overflow_mode), which the runtime compiles in.
 *
 * Sources: hicann/runtime 681ef76, hicann/opbase aa3cd74.
 *  - Where the files are: the platform library's own real path, two directories up, then
 *    data/platform_config (runtime src/platform/platform_infos_utils.h GetSoFilePath,
 *    GetConfigFilePath, PLATFORM_RELATIVE_PATH); here the library is libaclsim_core.so in
 *    build/sim/, so build/data/platform_config.
 *  - Which file: <SoC_version>.ini (runtime src/platform/platform_info.cpp 172-188
 *    EnsureSocVersionLoaded), parsed by LoadIniFile (110-170): lines starting with '#' and empty
 *    lines skipped, "[name]" opens a section, "key=value" trimmed, empty keys or values dropped,
 *    the first non-empty section of a name and its first value of a key kept (std::map::emplace),
 *    keys before any section dropped; the file describes the
 *    SoC its [version] SoC_version names (ParseVersion).
 *  - op::SocVersion: opbase src/nnopbase/composite_op/utils/platform.cpp 198-229 InitSocVersion
 *    maps [version] Short_SoC_version; an absent or unlisted value is RESERVED_VERSION.
 *  - NpuArch: platform.cpp 267-283 InitNpuArch reads [version] NpuArch with rtGetSocSpec into a
 *    10-byte buffer and std::stoul; a failed read or conversion leaves DAV_RESV.
 *  - No platform file: GetRuntimePlatformInfosByDevice fails, the PlatformInfo stays invalid
 *    (platform.cpp 372-386) and answers RESERVED_VERSION and DAV_RESV (308-312, 347-351); the
 *    operators run their checks with those values (sim_ops_seed_checks.c no_kernel, which then
 *    fails the launch).
 */
#define _GNU_SOURCE
#include "sim.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What aclrtGetSocName() returns on a machine of the default family: an Ascend 950PR
 * (hicann/runtime src/platform/platform_config/cann-dev/Ascend950PR_9599.ini, SoC_version). */
#define SIM_DEFAULT_SOC_NAME "Ascend950PR_9599"

const char *sim_rt_get_soc_name(void) {
  const char *s = getenv("ACLSIM_SOC_NAME");
  return s && *s ? s : SIM_DEFAULT_SOC_NAME;
}

/* ---- where the platform files are ------------------------------------------------------ */
static pthread_once_t dir_once = PTHREAD_ONCE_INIT;
static char config_dir[PATH_MAX];

static void find_config_dir(void) {
  Dl_info info;
  char so[PATH_MAX], dir[PATH_MAX];
  if (dladdr((void *)&sim_soc_lookup, &info) == 0 || info.dli_fname == NULL) return;
  if (realpath(info.dli_fname, so) == NULL) return;
  char *slash = strrchr(so, '/'); /* the library's directory (build/sim) */
  if (slash == NULL) return;
  *slash = '\0';
  slash = strrchr(so, '/'); /* its parent (build), kept with its '/' */
  if (slash == NULL) return;
  slash[1] = '\0';
  if ((size_t)snprintf(dir, sizeof dir, "%sdata/platform_config", so) >= sizeof dir) return;
  if (realpath(dir, config_dir) == NULL) config_dir[0] = '\0'; /* RealSoFilePath: "" if absent */
}

const char *sim_soc_config_dir(void) {
  pthread_once(&dir_once, find_config_dir);
  return config_dir;
}

/* ---- reading one file ------------------------------------------------------------------- */
enum { K_SOC_VERSION, K_SHORT, K_NPU_ARCH, K_INF_NAN, K_PADDING, K_COUNT };
static const char *const KEY_SECTION[K_COUNT] = {"version", "version", "version", "SoCInfo", "AICoreSpec"};
static const char *const KEY_NAME[K_COUNT] = {"SoC_version", "Short_SoC_version", "NpuArch", "support_inf_nan",
                                              "padding_size"};

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) s[--n] = '\0';
  return s;
}

/* values[k] = the value of key k (malloc'd) or NULL.  false: the file cannot be opened. */
static bool read_ini(const char *path, char *values[K_COUNT]) {
  FILE *f = fopen(path, "r");
  if (f == NULL) return false;
  char line[1024], section[256] = "";
  char done[16][64]; /* sections already closed: a later section of the same name is dropped */
  int ndone = 0;
  bool skip = false, content = false;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    if (line[0] == '\0' || line[0] == '#') continue;
    if (line[0] == '[') {
      char *close = strrchr(line, ']');
      if (close == NULL) continue;
      if (section[0] && content && !skip && ndone < 16) snprintf(done[ndone++], sizeof done[0], "%s", section);
      *close = '\0';
      snprintf(section, sizeof section, "%s", trim(line + 1));
      skip = content = false;
      for (int i = 0; i < ndone; i++)
        if (strcmp(done[i], section) == 0) skip = true;
      continue;
    }
    char *eq = strchr(line, '=');
    if (eq == NULL || skip || section[0] == '\0') continue;
    *eq = '\0';
    char *key = trim(line), *value = trim(eq + 1);
    if (*key == '\0' || *value == '\0') continue;
    content = true;
    for (int k = 0; k < K_COUNT; k++)
      if (values[k] == NULL && strcmp(section, KEY_SECTION[k]) == 0 && strcmp(key, KEY_NAME[k]) == 0)
        values[k] = strdup(value);
  }
  fclose(f);
  return true;
}

/* platform.cpp InitSocVersion's map. */
static int32_t soc_version_of(const char *shortv) {
  static const struct {
    const char *name;
    int32_t v;
  } map[] = {{"Ascend910", SIM_SV_ASCEND910},     {"Ascend910B", SIM_SV_ASCEND910B},
             {"Ascend910_93", SIM_SV_ASCEND910_93}, {"Ascend910_95", SIM_SV_ASCEND950},
             {"Ascend950", SIM_SV_ASCEND950},       {"Ascend910E", SIM_SV_ASCEND910E},
             {"Ascend310", SIM_SV_ASCEND310},       {"Ascend310B", SIM_SV_ASCEND310B},
             {"Ascend310C", SIM_SV_ASCEND310C},     {"Ascend310P", SIM_SV_ASCEND310P},
             {"Ascend350", SIM_SV_ASCEND350},       {"Ascend610Lite", SIM_SV_ASCEND610LITE},
             {"KirinX90", SIM_SV_KIRINX90},         {"Kirin9030", SIM_SV_KIRIN9030}};
  if (shortv == NULL) return SIM_SV_RESERVED;
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(shortv, map[i].name) == 0) return map[i].v;
  return SIM_SV_RESERVED;
}

/* InitNpuArch: at most 9 characters reach std::stoul; no digits or out of range: DAV_RESV. */
static int32_t npu_arch_of(const char *v) {
  if (v == NULL) return SIM_DAV_RESV;
  char buf[10];
  snprintf(buf, sizeof buf, "%s", v);
  char *end;
  errno = 0;
  unsigned long a = strtoul(buf, &end, 10);
  if (end == buf || errno == ERANGE) return SIM_DAV_RESV;
  return (int32_t)(uint32_t)a;
}

/* aclrtMalloc's padding: runtime src/acl/aclrt_impl/memory.cpp 272-289 GetPaddingSize reads
 * [AICoreSpec] padding_size with strtoul; absent or malformed: DATA_MEMORY_PADDING_SIZE (32). */
static int32_t padding_of(const char *v) {
  if (v == NULL) return 32;
  char *end;
  errno = 0;
  unsigned long p = strtoul(v, &end, 10);
  if (errno == ERANGE || end == v || *end != '\0' || p > INT32_MAX) return 32;
  return (int32_t)p;
}

/* ---- the cache: one entry per SoC name, kept for the process ---------------------------- */
typedef struct Entry {
  struct Entry *next;
  char *name;
  SimSocInfo info;
} Entry;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static Entry *cache;

static void load(const char *name, SimSocInfo *out) {
  char *values[K_COUNT] = {NULL};
  out->known = false;
  char path[PATH_MAX];
  const char *dir = sim_soc_config_dir();
  /* A SoC_version never holds a '/'; such a name would leave the directory. */
  if (dir[0] && strchr(name, '/') == NULL &&
      (size_t)snprintf(path, sizeof path, "%s/%s.ini", dir, name) < sizeof path && read_ini(path, values))
    out->known = values[K_SOC_VERSION] != NULL && strcmp(values[K_SOC_VERSION], name) == 0;
  if (out->known) {
    out->family = values[K_SHORT] ? values[K_SHORT] : "";
    values[K_SHORT] = NULL;
    out->npu_arch = npu_arch_of(values[K_NPU_ARCH]);
    out->soc_version = soc_version_of(out->family[0] ? out->family : NULL);
    out->support_inf_nan = values[K_INF_NAN] != NULL && strcmp(values[K_INF_NAN], "1") == 0;
    out->padding_size = padding_of(values[K_PADDING]);
  } else {
    out->family = "";
    out->npu_arch = SIM_DAV_RESV;
    out->soc_version = SIM_SV_RESERVED;
    out->support_inf_nan = false;
    out->padding_size = 32;
  }
  for (int k = 0; k < K_COUNT; k++) free(values[k]);
}

void sim_soc_lookup(const char *name, SimSocInfo *out) {
  memset(out, 0, sizeof *out);
  out->soc_name = name;
  out->family = "";
  out->npu_arch = SIM_DAV_RESV;
  out->soc_version = SIM_SV_RESERVED;
  out->padding_size = 32;
  out->product = sim_rule_product(SIM_SV_RESERVED);
  if (name == NULL) return;
  pthread_mutex_lock(&cache_mu);
  Entry *e = cache;
  while (e && strcmp(e->name, name) != 0) e = e->next;
  if (e == NULL && (e = calloc(1, sizeof *e)) != NULL) {
    if ((e->name = strdup(name)) == NULL) {
      free(e);
      pthread_mutex_unlock(&cache_mu);
      return;
    }
    load(name, &e->info);
    e->info.product = sim_rule_product(e->info.soc_version);
    e->next = cache;
    cache = e;
  }
  pthread_mutex_unlock(&cache_mu);
  if (e == NULL) return;
  *out = e->info;
  out->soc_name = name;
}

/* ---- the overflow mode -------------------------------------------------------------------- */
/* The modes aclrtSetDeviceSatMode accepts, per runtime chip type (bit 1 << SimOverflowMode):
 * runtime src/runtime/config/<chip>/dev_info_reg.cc supportOverflowMode -- cloud (Ascend910) 95,
 * dc (Ascend310P) 106, mini_v3 (Ascend310B) 86: saturation only; 910_B_93 160: both; 950 186 and
 * 350 184: Inf/NaN only.  [aclsim] The chip type is the SocVersion's (the runtime gets it from the
 * driver); a SocVersion with no chip here accepts both. */
static unsigned settable_modes(int32_t soc_version) {
  const unsigned sat = 1u << SIM_OVERFLOW_SATURATION, inf = 1u << SIM_OVERFLOW_INFNAN;
  switch (soc_version) {
    case SIM_SV_ASCEND910: case SIM_SV_ASCEND310P: case SIM_SV_ASCEND310B: return sat;
    case SIM_SV_ASCEND910B: case SIM_SV_ASCEND910_93: return sat | inf;
    case SIM_SV_ASCEND950: case SIM_SV_ASCEND350: return inf;
    default: return sat | inf;
  }
}

static pthread_mutex_t warn_mu = PTHREAD_MUTEX_INITIALIZER;
static char warned[128];

/* The process starts in the chip's default mode: Inf/NaN where the chip has the overflow-mode
 * feature (runtime src/runtime/core/src/runtime.cc 1506-1508, else runtime.hpp 809's
 * RT_OVERFLOW_MODE_SATURATION), which are the chips whose platform file says
 * [SoCInfo] support_inf_nan=1 (what aclGetCannAttribute(ACL_CANN_ATTR_INF_NAN) reports,
 * src/acl/utils/cann_info_utils.cpp 86).  ACLSIM_OVERFLOW_MODE=inf_nan|saturation (read per
 * call) stands for an aclrtSetDeviceSatMode call before the streams were created
 * (docs/zh/api_ref/04_device_management.md aclrtSetDeviceSatMode); a mode the chip cannot be
 * set to is refused there (src/runtime/api/api_c.cc 3141-3165: RT_ERROR_FEATURE_NOT_SUPPORT,
 * "only the saturation mode can be set ...") and the chip keeps its mode. */
SimOverflowMode sim_soc_overflow_mode(const SimSocInfo *soc) {
  SimOverflowMode dflt = soc->support_inf_nan ? SIM_OVERFLOW_INFNAN : SIM_OVERFLOW_SATURATION;
  const char *v = getenv("ACLSIM_OVERFLOW_MODE");
  if (v == NULL || *v == '\0') return dflt;
  SimOverflowMode want;
  if (strcmp(v, "inf_nan") == 0) {
    want = SIM_OVERFLOW_INFNAN;
  } else if (strcmp(v, "saturation") == 0) {
    want = SIM_OVERFLOW_SATURATION;
  } else {
    pthread_mutex_lock(&warn_mu);
    if (strncmp(warned, v, sizeof warned - 1) != 0) {
      snprintf(warned, sizeof warned, "%s", v);
      fprintf(stderr, "aclsim: ACLSIM_OVERFLOW_MODE=\"%s\" is neither inf_nan nor saturation; ignored\n", v);
    }
    pthread_mutex_unlock(&warn_mu);
    return dflt;
  }
  if (settable_modes(soc->soc_version) & (1u << want)) return want;
  if (getenv("ACLSIM_VERBOSE"))
    fprintf(stderr,
            "aclsim: ACLSIM_OVERFLOW_MODE=%s: %s cannot be set to that mode (aclrtSetDeviceSatMode returns "
            "207000); it computes in %s mode\n",
            v, soc->soc_name, dflt == SIM_OVERFLOW_INFNAN ? "Inf/NaN" : "saturation");
  return dflt;
}
