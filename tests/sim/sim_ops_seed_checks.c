/*
 * Software CANN ("aclsim") -- the phase-1 checks the nine seed operators share (aclnnBatchNorm,
 * ...Backward, ...Stats, ...GatherStatsWithCounts, ...Elemt, ...ElemtBackward, ...ReduceBackward,
 * aclnnGroupNorm, ...Backward: sim_ops_<operator>.c, declared in sim_ops_seed.h): the SoC checks,
 * the checks only they make, and planning after the SoC's kernel check.  Each operator
 * validates as CANN performs it on the SoC aclrtGetSocName() names, as its platform file describes
 * it (return codes, order of the checks and message texts of the CANN sources cited at each rule),
 * plans, and computes at stream synchronisation.  Accumulation is in double; every output is
 * rounded once to its own dtype, except the narrow-dtype intermediates of sim_decomposed.c.
 *
 * Sources (the behaviour of each rule is cited as repo + path + function):
 *   hicann/ops-nn   e5c3fa9327ea95ba26d06227e746923580d10921 (2026-08-22)
 *   hicann/ops-math c41933244c31e44fd496e3bb3212164f8c48c214 (2026-08-22)
 * The routines every operator shares (the context's plan, CANN's check macros and their texts,
 * the memory rule, planning) are sim_ops_common.c's, wrapped for Ctx in sim_ops_seed.h; rules
 * marked [aclsim] are the simulator's own, not CANN's, and run after every CANN rule.
 * Every error text is "<operator>: <CANN's text>".
 */
#define _GNU_SOURCE
#include "sim_ops_seed.h"

#include <inttypes.h>
#include <stdio.h>

const char *fmt_str(int32_t f) { return sim_format_name(f); }

/* ---- the SoC ------------------------------------------------------------------------- */
/* The SoC name is read on every phase 1 (ACLSIM_SOC_NAME, default Ascend950PR_9599), like the
 * runtime's platform info, and its platform file gives SocVersion and NpuArch (sim_soc.c); the
 * chip-dependent rules are sim_rules.c's.  A SoC without a platform file is not refused here:
 * CANN runs the operator's checks with RESERVED_VERSION and DAV_RESV (opbase platform.cpp
 * 372-386) and fails where it would launch a kernel (no_kernel). */
int soc_check(Ctx *c) {
  sim_soc_lookup(sim_rt_get_soc_name(), &c->soc);
  c->plan.regbase = sim_rule_regbase(&c->soc);
  c->plan.bn_saves_variance = sim_rule_bn_saves_variance(&c->soc);
  c->plan.npu_arch = c->soc.npu_arch;
  c->plan.overflow_mode = sim_soc_overflow_mode(&c->soc);
  return 0;
}

/* The documentation lists the product as unsupported ("产品支持情况" of ops-nn
 * norm/<op>/docs/aclnn<Op>.md, ops-math math/reduce_std_with_mean/docs/aclnnBatchNormStats.md;
 * sim_rules.c sim_rule_documented).  What the unsupported code path does is not in the sources
 * (no kernel for the chip); the simulator fails phase 1 with 161002 right after the out-params. */
int op_supported(Ctx *c) {
  if (sim_rule_documented(c->plan.op, &c->soc)) return 0;
  return fail(c, SIM_NN_INVALID,
              "the operator is not supported on SoC %s (%s; Short_SoC_version %s, NpuArch %d): CANN's documentation "
              "of %s lists the %s as unsupported",
              c->soc.soc_name, c->soc.product, c->soc.family, (int)c->soc.npu_arch, c->op, c->soc.product);
}

/* No platform file for the SoC: once the checks pass, the launcher finds no kernel binary for it
 * (opbase src/nnopbase/composite_op/aclnn_engine/op_kernel.h GetWorkspace/SelectBin: "Op %s does
 * not has any binary.", "Cannot find binary for op %s."), the l0op call returns nullptr and the
 * operator returns ACLNN_ERR_INNER_NULLPTR (561103). */
int no_kernel(Ctx *c) {
  if (c->soc.known) return 0;
  char dir[512];
  snprintf(dir, sizeof dir, "%s", sim_soc_config_dir());
  return fail(c, SIM_NN_INNER_NULLPTR,
              "no kernel binary for SoC \"%s\": there is no platform file %s/%s.ini, so CANN's checks ran with "
              "SocVersion RESERVED_VERSION and NpuArch DAV_RESV and the kernel launcher found no binary (opbase "
              "op_kernel.h: \"Op %%s does not has any binary.\")",
              c->soc.soc_name, dir[0] ? dir : "<no data/platform_config beside the libraries>", c->soc.soc_name);
}

bool bf16_ok(const Ctx *c) { return sim_rule_bf16(c->plan.op, &c->soc); }

/* ops-math conversion/contiguous/op_host/op_api/contiguous.cpp 634-670 CheckViewCopyParams: the
 * operator's result (in `produced`, its kernel's dtype) is copied into the caller's output with
 * l0op::ViewCopy, which refuses another dtype; the operator's CHECK_RET turns the nullptr into
 * ACLNN_ERR_INNER_NULLPTR (561103). */
int view_copy_dtype(Ctx *c, int s, int32_t produced) {
  if (!P(s) || T(s)->dtype == produced) return 0;
  return fail(c, SIM_NN_INNER_NULLPTR,
              "Input tensor's dtype[%s] should be same with output's dtype[%s]. (l0op::ViewCopy of the result into "
              "%s)",
              sim_dt_str(produced), sim_dt_str(T(s)->dtype), NAME(s));
}

/* ---- dtype lists ------------------------------------------------------------------------ */
/* {DT_FLOAT, DT_FLOAT16[, DT_BF16]}: the order of every ops-nn batch-norm list. */
DtList dl_fhb(const Ctx *c) {
  DtList l = {2, {SIM_DT_FLOAT, SIM_DT_FLOAT16, 0}};
  if (bf16_ok(c)) l.v[l.n++] = SIM_DT_BF16;
  return l;
}

/* ---- CANN's check macros ------------------------------------------------------------------ */
/* OP_CHECK_SHAPE_NOT_EQUAL_WITH_EXPECTED_SIZE: "Expected tensor for %s to have same size as %s,
 * but got %s." */
int shape_expect(Ctx *c, int s, const int64_t *dims, int nd, const char *shown) {
  if (!P(s) || shape_is(T(s), dims, nd)) return 0;
  char want[160], got[160];
  ops_dims_str(dims, nd, ", ", want, sizeof want);
  shape_str(T(s), got, sizeof got);
  return fail(c, SIM_NN_INVALID, "Expected tensor for %s to have same size as %s, but got %s.", shown ? shown : NAME(s),
              want, got);
}

/* op::IsPrivateFormat (opbase): NC1HWC0, FRACTAL_Z, FRACTAL_NZ, NDC1HWC0, FRACTAL_Z_3D, ... */
bool private_format(int32_t f) {
  return f == SIM_FMT_NC1HWC0 || f == SIM_FMT_FRACTAL_Z || f == SIM_FMT_FRACTAL_NZ || f == SIM_FMT_NDC1HWC0 ||
         f == SIM_FMT_FRACTAL_Z_3D || f == -1;
}
bool is_private(const Ctx *c, int s) { return c->plan.present[s] && private_format(c->plan.t[s].format); }

bool is_empty(const SimTensorDesc *d) { return sim_desc_numel(d) == 0 && d->ndim > 0; }

/* [aclsim] A per-channel tensor the kernel reads (or writes) C values of must hold C elements. */
int numel_c(Ctx *c, int s, int64_t C, const char *why) {
  if (!P(s) || sim_desc_numel(T(s)) == C) return 0;
  char sh[160];
  shape_str(T(s), sh, sizeof sh);
  return fail(c, SIM_NN_INVALID,
              "[aclsim] %s has %" PRId64 " elements (shape %s) but the kernel %s C = %" PRId64
              " of them; CANN does not check this (its kernel would access memory out of bounds), the simulator "
              "rejects it",
              NAME(s), sim_desc_numel(T(s)), sh, why, C);
}

/* Looks an aclBoolArray up: plan.mask = its first 3 values, *n = its length. */
int lookup_mask(Ctx *c, const void *h, uint64_t *n) {
  bool v[64] = {false};
  if (sim_lookup_bool_array(h, v, 64, n) != 0)
    return fail(c, SIM_NN_INVALID, "outputMask (%p) is not a live aclBoolArray", h);
  for (int i = 0; i < 3; i++) c->plan.mask[i] = (uint64_t)i < *n ? v[i] : false;
  return 0;
}

/* ops_finish and ops_finish_early, after no_kernel: with no platform file for the SoC, a plan that
 * launches a kernel fails (a fill is a kernel too: ProcessEmptyTensorWithValue). */
int finish(Ctx *c, int64_t rows, uint64_t *ws, void **exec) {
  TRY(no_kernel(c));
  return ops_finish(c->op, &c->plan, rows, ws, exec);
}

int finish_early(Ctx *c, SimRunMode run, uint64_t *ws, void **exec) {
  if (run == SIM_RUN_FILL) TRY(no_kernel(c));
  return ops_finish_early(c->op, &c->plan, run, ws, exec);
}

/* [aclsim] A channels-last storage format on DAV_3510 makes CANN take C from the LAST dim
 * (ops-nn aclnn_batch_norm.cpp GetBatchNormDimC, aclnn_batch_norm_backward.cpp GetDimC); the
 * simulator's kernels always use dim 1, so it rejects that case rather than compute wrongly. */
int regbase_channels_last(Ctx *c, int s) {
  int32_t f = T(s)->format;
  if (c->plan.regbase && (f == SIM_FMT_NHWC || f == SIM_FMT_NDHWC))
    return fail(c, SIM_NN_INVALID,
                "[aclsim] %s has storage format %s: on DAV_3510 CANN then takes C from the last dim, which the "
                "simulator does not model (pass ND/NCL/NCHW/NCDHW; the channel is view dim 1)",
                NAME(s), fmt_str(f));
  return 0;
}
