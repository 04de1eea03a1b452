/*
 * Software HCCL ("aclsim") -- declarations shared by the software HCCL's API sources
 * (hccl_comms.c, hccl_config.c, hccl_dtypes.c, hccl_reduce.c, hccl_collectives.c) and by nothing
 * else: the communicator type, the registry's lock and counters, and the helpers the files share.
 * Nothing here is exported (the core is built with -fvisibility=hidden; only hccl_sim.h's
 * SIM_CORE_API functions are).
 *
 * Citations name the CANN source a behaviour is modelled on:
 * "hcomm" is the CANN hcomm mirror xiaobingling93-pixel/cann-hcomm b5f3e5be (line numbers of that
 * snapshot), "hccl" is hicann/hccl 09300b70, "runtime" is hicann/runtime, "torch_npu" is
 * Ascend/pytorch 9e73e708. "[aclsim]" marks the simulator's own choices.
 */
#ifndef ACLSIM_HCCL_SIM_INTERNAL_H
#define ACLSIM_HCCL_SIM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hccl_sim.h"

/* ---- warnings (hccl_comms.c) ----------------------------------------------------------- */
/* A failure CANN only logs as a warning: returns `code`, queues no text (ACLSIM_VERBOSE prints). */
int quiet(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- data types and the SoC the simulator plays (hccl_dtypes.c) ------------------------ */
/* Element sizes; 0 = not a data type. */
uint64_t dtype_size(int32_t dt);
/* The families whose HCCL rules differ, by the op::SocVersion of the SoC's platform file
 * (sim_soc.c): ASCEND950 (ASCEND910_95 is the same value) and ASCEND350, NpuArch DAV_3510, take the
 * new hccl path (hccl all_reduce_op.cc:28-36, hccl_common.h:272-283; [aclsim] Ascend350 is assumed
 * to follow the 950); ASCEND910B / ASCEND910_93 (A2 / A3); ASCEND910 (Atlas training); ASCEND310P
 * (300I Duo); anything else (Ascend310B, a SoC without a platform file) gets hcomm's generic
 * checks. */
typedef enum { FAM_GENERIC = 0, FAM_950, FAM_A2A3, FAM_910, FAM_310P } Fam;

Fam soc_family(const char **soc, const char **family);
/* HCCL_E_NOT_SUPPORT (5) for a data type or op the SoC's HCCL refuses. */
int check_types(const char *fn, int32_t dt, int32_t op, bool reduce);

/* ---- communicators (hccl_comms.c) ------------------------------------------------------ */
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

extern pthread_mutex_t g_mu; /* registry and counters */
extern int64_t g_pending_tasks, g_done, g_failed;

/* Resolves `h` and marks it in use by one more task (released by task_drop / unreserve). */
int comm_reserve(const char *fn, HcclComm h, Comm **out);
void comm_unreserve(Comm *c);
/* HCCL_E_RUNTIME when no device is set on the calling thread; *dev (if not NULL) gets it. */
int hccl_need_device(const char *fn, int32_t *dev);

/* ---- HcclCommConfig and the exec timeout (hccl_config.c) ------------------------------- */
int load_config(const char *fn, const HcclCommConfig *user, char *name, size_t namen, bool *exec_set,
                int32_t *exec);
int exec_timeout(const char *fn, bool cfg_set, int32_t cfg, int64_t *ms, char *desc, size_t descn);

/* ---- reductions (hccl_reduce.c) -------------------------------------------------------- */
/* out[i] = in[0][i] op in[1][i] op ... op in[n-1][i], in rank order. */
void reduce(int32_t dt, int32_t op, void *out, void *const *in, uint32_t n, uint64_t count);

#endif
