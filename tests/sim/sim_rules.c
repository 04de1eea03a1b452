/*
 * Software CANN ("aclsim") -- the SoC families.  aclrtGetSocName() returns ACLSIM_SOC_NAME (read
 * on every call) or the default "Ascend950PR_9599"; the family of that name decides the per-SoC
 * behaviour of the operators (sim_ops.c).
 *
 * The table itself is NOT written here: scripts/build_sim.ts imports the library's
 * src/backends/ascend/soc.ts (the one table of SoC families and per-operator traits) and
 * generates build/sim/include/aclsim_soc_table.h from it, so the library and the simulator
 * cannot disagree about a chip.  The lookup rule is socFamily()'s: exact names of every family
 * first, then prefixes (the name must be longer than the prefix).
 */
#define _GNU_SOURCE
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aclsim_soc_table.h"

/* What aclrtGetSocName() returns on a machine of the default family: an Ascend 950PR
 * (hicann/runtime src/platform/platform_config/cann-dev/Ascend950PR_9599.ini, SoC_version). */
#define SIM_DEFAULT_SOC_NAME "Ascend950PR_9599"

const char *sim_rt_get_soc_name(void) {
  const char *s = getenv("ACLSIM_SOC_NAME");
  return s && *s ? s : SIM_DEFAULT_SOC_NAME;
}

static void fill(const AclsimSocFamily *f, SimSocInfo *out) {
  out->known = true;
  out->family = f->name;
  out->product = f->product;
  out->npu_arch = f->npuArch;
  out->soc_version = f->socVersion;
  out->bf16_ops = f->bf16Ops;
  out->supported_ops = f->supportedOps;
  out->regbase = f->regbase;
  out->bn_saves_variance = f->bnSavesVariance;
  out->gnb_mixed_precision = f->gnBackwardMixedPrecision;
  out->gnb_max_channels_per_group = f->gnBackwardMaxChannelsPerGroup;
  out->gnb_max_channels = f->gnBackwardMaxChannels;
}

void sim_soc_lookup(const char *name, SimSocInfo *out) {
  memset(out, 0, sizeof *out);
  out->soc_name = name;
  if (name == NULL) return;
  for (int i = 0; i < ACLSIM_SOC_NFAMILIES; i++)
    for (int k = 0; k < ACLSIM_SOC_FAMILIES[i].nNames; k++)
      if (strcmp(name, ACLSIM_SOC_FAMILIES[i].names[k]) == 0) {
        fill(&ACLSIM_SOC_FAMILIES[i], out);
        return;
      }
  size_t len = strlen(name);
  for (int i = 0; i < ACLSIM_SOC_NFAMILIES; i++)
    for (int k = 0; k < ACLSIM_SOC_FAMILIES[i].nPrefixes; k++) {
      const char *p = ACLSIM_SOC_FAMILIES[i].prefixes[k];
      size_t pl = strlen(p);
      if (len > pl && strncmp(name, p, pl) == 0) {
        fill(&ACLSIM_SOC_FAMILIES[i], out);
        return;
      }
    }
}

int sim_soc_op_index(const char *op) {
  for (int i = 0; i < ACLSIM_SOC_NOPS; i++)
    if (strcmp(op, ACLSIM_SOC_OPS[i]) == 0) return i;
  return -1;
}

/* "Ascend910 (Atlas training series), Ascend910B (...), ..." for the unknown-SoC message. */
void sim_soc_known_families(char *buf, size_t n) {
  size_t k = 0;
  if (n) buf[0] = '\0';
  for (int i = 0; i < ACLSIM_SOC_NFAMILIES && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%s (%s)", i ? ", " : "", ACLSIM_SOC_FAMILIES[i].name,
                          ACLSIM_SOC_FAMILIES[i].product);
}
