/*
 * Software HCCL ("aclsim") -- the data types and reduce ops each SoC's HCCL accepts, compiled
 * into libaclsim_core.so: element sizes and names, the SoC family the simulator plays (from its
 * platform file), and the checks every collective makes on its data type and op.
 *
 * Citations name the CANN source a behaviour is modelled on:
 * "hcomm" is the CANN hcomm mirror xiaobingling93-pixel/cann-hcomm b5f3e5be (line numbers of that
 * snapshot), "hccl" is hicann/hccl 09300b70, "runtime" is hicann/runtime, "torch_npu" is
 * Ascend/pytorch 9e73e708. "[aclsim]" marks the simulator's own choices.
 */
#define _GNU_SOURCE
#include "hccl_sim_internal.h"

#include <stdio.h>

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
uint64_t dtype_size(int32_t dt) {
  static const uint8_t s[] = {1, 2, 4, 2, 4, 8, 8, 1, 2, 4, 8, 2, 16, 0, 1, 1, 1, 1};
  return dt >= 0 && dt < 18 ? s[dt] : 0;
}


Fam soc_family(const char **soc, const char **family) {
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
int check_types(const char *fn, int32_t dt, int32_t op, bool reduce) {
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
