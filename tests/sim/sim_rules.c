/*
 * Software CANN ("aclsim") -- the operator rules that depend on the chip, each written from the
 * CANN code that decides it and branching on what that code branches on: op::SocVersion or
 * NpuArch, both read from the platform file (sim_soc.c).  No table of chips here.
 *
 * Sources: hicann/ops-nn e5c3fa9327ea (paths under norm/ unless marked), hicann/ops-math
 * c41933244c31 ((math)), hicann/opbase aa3cd74 ((opbase)).
 */
#include "sim.h"

/* ops-nn common/inc/op_api/aclnn_util.h 32-43 IsRegbase, (math) common/inc/op_api/aclnn_check.h
 * 203-208 IsRegBase: NpuArch DAV_3510. */
bool sim_rule_regbase(const SimSocInfo *s) { return s->npu_arch == SIM_DAV_3510; }

/* DAV_2201 or regbase: the "910B" lists with DT_BF16 of aclnn_batch_norm_backward.cpp 104-112,
 * sync_batch_norm_backward_reduce/op_api/aclnn_batch_norm_backward_reduce.cpp 56-64,
 * group_norm/op_host/op_api/aclnn_group_norm.cpp 59-67 and, for aclnnGroupNormBackward,
 * GetDtypeSupportListV2 (ops-nn common/inc/op_api/level2_base.h 222-230). */
static bool arch_2201_or_regbase(const SimSocInfo *s) { return s->npu_arch == SIM_DAV_2201 || sim_rule_regbase(s); }

/* SocVersion in [ASCEND910B, ASCEND910E] or ASCEND950 (so ASCEND910_95 too: the same value). */
static bool sv_910b_to_910e_or_950(const SimSocInfo *s) {
  return (s->soc_version >= SIM_SV_ASCEND910B && s->soc_version <= SIM_SV_ASCEND910E) ||
         s->soc_version == SIM_SV_ASCEND950;
}

bool sim_rule_bf16(SimOpId op, const SimSocInfo *s) {
  switch (op) {
    case SIM_OP_BN: /* batch_norm_v3/op_host/op_api/aclnn_batch_norm.cpp 49-67 GetSupportDtypeList */
      return s->npu_arch == SIM_DAV_2201 || s->npu_arch == SIM_DAV_3510;
    case SIM_OP_BN_BACKWARD:
    case SIM_OP_BN_REDUCE_BACKWARD:
    case SIM_OP_GN:
    case SIM_OP_GN_BACKWARD:
      return arch_2201_or_regbase(s);
    case SIM_OP_BN_STATS: /* (math) math/reduce_std_with_mean/op_api/aclnn_batch_norm_stats.cpp 74-81 */
      return sim_rule_regbase(s);
    case SIM_OP_BN_GATHER_STATS: /* sync_batch_norm_gather_stats_with_counts/op_host/op_api/
                                    aclnn_batch_norm_gather_stats_with_counts.cpp 71-77, 94-96 */
    case SIM_OP_BN_ELEMT:        /* batch_norm_elemt/op_host/op_api/aclnn_batch_norm_elemt.cpp 51-56 */
      return sv_910b_to_910e_or_950(s);
    case SIM_OP_BN_ELEMT_BACKWARD: /* sync_batch_norm_backward_elemt/op_api/aclnn_batch_norm_elemt_backward.cpp
                                      213-223 CheckParams */
      return s->soc_version == SIM_SV_ASCEND910B || s->soc_version == SIM_SV_ASCEND910_93 || sim_rule_regbase(s);
    default:
      return false;
  }
}

/* aclnnBatchNorm has a dtype list only for DAV_2002, DAV_1001, DAV_2201 and DAV_3510
 * (aclnn_batch_norm.cpp 49-67); elsewhere CheckDtypeValid fails with "support for npuArch %u is
 * not implemented" (116-124). */
bool sim_rule_bn_has_dtype_list(const SimSocInfo *s) {
  int32_t a = s->npu_arch;
  return a == SIM_DAV_2002 || a == SIM_DAV_1001 || a == SIM_DAV_2201 || a == SIM_DAV_3510;
}

/* The "产品支持情况" tables of <op>/docs/aclnn<Op>.md ((math) math/reduce_std_with_mean/docs/
 * aclnnBatchNormStats.md): "Atlas 200I/500 A2 推理产品" (Ascend310B) supports none of the nine
 * operators, "Atlas 推理系列产品" (Ascend310P) only aclnnBatchNorm and aclnnGroupNorm; every other
 * listed product all nine.  The tables list no Ascend 350: its DAV_3510 code paths are taken. */
bool sim_rule_documented(SimOpId op, const SimSocInfo *s) {
  if (s->soc_version == SIM_SV_ASCEND310B) return false;
  if (s->soc_version == SIM_SV_ASCEND310P) return op == SIM_OP_BN || op == SIM_OP_GN;
  return true;
}

/* The product line of a SocVersion, in the words of those tables (<term>...</term>). */
const char *sim_rule_product(int32_t soc_version) {
  switch (soc_version) {
    case SIM_SV_ASCEND910: return "Atlas training series";
    case SIM_SV_ASCEND910B: return "Atlas A2 training series";
    case SIM_SV_ASCEND910_93: return "Atlas A3 training series";
    case SIM_SV_ASCEND310P: return "Atlas inference series";
    case SIM_SV_ASCEND310B: return "Atlas 200I/500 A2 inference";
    case SIM_SV_ASCEND950: return "Ascend 950PR/950DT";
    case SIM_SV_ASCEND350: return "Ascend 350";
    default: return "no product CANN documents";
  }
}

/* What aclnnBatchNorm writes into saveInvstd in training, and what aclnnBatchNormBackward reads
 * from it: off DAV_3510 the batch variance (aclnn_batch_norm.cpp 639-651: BatchNormV3Proc /
 * BatchNormProc, whose BNTrainingUpdate and BatchNormV3 give their variance output to saveInvstd,
 * 384 and 489; aclnn_batch_norm_backward.cpp 864-868 BatchNormBackward, whose
 * BNTrainingUpdateGrad / BNTrainingReduceGrad take it as `batch_variance`; the documentation's
 * "saveInvstd表示input的方差"), on DAV_3510 1/sqrt(var + eps) (BatchNormProcRegbase's arch35
 * BatchNormV3 `batch_rstd`, BatchNormBackwardRegbase's `save_rstd`). */
bool sim_rule_bn_saves_variance(const SimSocInfo *s) { return !sim_rule_regbase(s); }

/* aclnnGroupNormBackward takes statistics of another dtype than gradOut on DAV_3510 only
 * (group_norm_grad/op_host/op_api/aclnn_group_norm_backward.cpp CheckDtypeValid 144-172: on
 * regbase, 151-155, CheckMixPrecisionDtype 113-142; otherwise every dtype must equal gradOut's,
 * 156-170). aclnnGroupNorm has no such rule: group_norm/op_host/op_api/aclnn_group_norm.cpp
 * CheckDtypeValid 69-87 requires self's dtype everywhere, on every SoC (sim_ops_group_norm.c sim_gn_ws). */
bool sim_rule_gnb_mixed_precision(const SimSocInfo *s) { return sim_rule_regbase(s); }

/* aclnn_group_norm_backward.cpp CheckAttr 193-200: on NpuArch DAV_2201 only, C / group <= 8000
 * (UPPER_CARRYING_LIMIT) and C <= 240000 (MAX_C_SIZE). */
bool sim_rule_gnb_limits(const SimSocInfo *s, int64_t *max_per_group, int64_t *max_channels) {
  if (s->npu_arch != SIM_DAV_2201) return false;
  *max_per_group = 8000;
  *max_channels = 240000;
  return true;
}

/* aclnn_group_norm_backward.cpp 741, 781-799: only DAV_2201 and regbase launch the GroupNormGrad
 * kernel; every other NpuArch decomposes the backward (GradInputProcess through a BatchNorm
 * backward, GetDgamma, GetDbeta) in gradOut's dtype. */
bool sim_rule_gnb_decomposed(const SimSocInfo *s) { return !arch_2201_or_regbase(s); }

/* aclnn_group_norm.cpp 250-253 and 353-360: on NpuArch DAV_1001 a float16 self runs the GroupNorm
 * kernel in float32 and its outputs are cast back to float16 before rstd is formed (268-281). */
bool sim_rule_gn_fp16_stats_cast(const SimSocInfo *s) { return s->npu_arch == SIM_DAV_1001; }

/* The storage-format rule of the BatchNormV3 kernel for an aclnnBatchNorm input of `ndim` dims
 * and C channels labelled `format` (ops-nn norm/batch_norm_v3/op_host/): NULL when it is taken
 * (or the input does not reach BatchNormV3 with its own label), else what the tiling expects,
 * with *known false when it does not know the label at all.
 * - Which inputs keep their label: fewer than 4 dims are reshaped to 4-D and relabelled NCHW
 *   (op_api/aclnn_batch_norm.cpp:630-633 ResizeFromND; experimental/norm/norm_common/op_host/op_api/
 *   norm_tensor_util.cpp:110-126), more than 5 dims reshaped to 5-D and relabelled NCDHW
 *   (aclnn_batch_norm.cpp:311-317); l0op::Contiguous keeps the label of 4-D and 5-D inputs.
 * - DAV_3510 always runs BatchNormV3 (aclnn_batch_norm.cpp:640-643 BatchNormProcRegbase), whose
 *   tiling takes ND with >= 2 dims, NCHW and NHWC with 4, NCDHW and NDHWC with 5, and refuses every
 *   other format (batch_norm_v3_tiling_arch35.cpp:127-183); its binaries list ND among x's formats
 *   (batch_norm_v3_def.cpp config_950), so kernel selection takes any label (opbase
 *   src/nnopbase/composite_op/aclnn_engine/kernel_arg.cpp:107-130) and the tiling decides.
 * - DAV_2201 runs BatchNormV3 in training for an NCHW or NCDHW input with C >= 64
 *   (aclnn_batch_norm.cpp:88-114 isBNV3Supported, :644-647), whose tiling takes NCHW with 4 dims,
 *   NCDHW with 5 (batch_norm_v3_tiling_base.cpp:119-153); other labels take the BNTrainingReduce /
 *   BNTrainingUpdate path (the same results here). */
const char *sim_rule_bn_v3_format(const SimSocInfo *s, bool training, int32_t format, int ndim, int64_t C,
                                  bool *known) {
  *known = true;
  if (ndim != 4 && ndim != 5) return NULL;
  bool regbase = sim_rule_regbase(s);
  bool v3 = regbase || (s->npu_arch == SIM_DAV_2201 && training &&
                        (format == SIM_FMT_NCHW || format == SIM_FMT_NCDHW) && C >= 64);
  if (!v3 || format == SIM_FMT_ND) return NULL;
  if (format == SIM_FMT_NCHW) return ndim == 4 ? NULL : "4D with NCHW format";
  if (format == SIM_FMT_NCDHW) return ndim == 5 ? NULL : "5D with NCDHW format";
  if (regbase && format == SIM_FMT_NHWC) return ndim == 4 ? NULL : "4D with NHWC format";
  if (regbase && format == SIM_FMT_NDHWC) return ndim == 5 ? NULL : "5D with NDHWC format";
  *known = false;
  return regbase ? "ND, NCHW, NCDHW, NHWC or NDHWC" : "ND, NCHW and NCDHW";
}
