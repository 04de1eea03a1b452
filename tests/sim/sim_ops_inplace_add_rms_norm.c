/*
 * Software CANN ("aclsim") -- aclnnInplaceAddRmsNorm(x1Ref, x2Ref, gamma, epsilon, rstdOut):
 * phase-1 validation as CANN performs it, planning, and the computation run at stream
 * synchronisation: x1Ref <- y, x2Ref <- x = x1 + x2, rstdOut <- rstd, AddRmsNorm's kernels.
 *
 * A generated aclnn operator (ACLNNTYPE aclnn in ops-nn norm/inplace_add_rms_norm/op_host/
 * CMakeLists.txt): phase 1 is opbase's individual-op framework as for aclnnRmsNorm
 * (sim_ops_rms_norm.c's header cites each step): NULL tensors, executor, workspaceLen (161001);
 * the (dtype, format) rows of the SoC's OpDef configuration (161002); every output empty ->
 * SUCCESS, nothing written; then the tiling function (561002), which is AddRmsNorm's.
 *
 * Sources (hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921):
 *   norm/inplace_add_rms_norm/op_host/inplace_add_rms_norm_def.cpp ("def.cpp:<line>"): inputs
 *     x1, x2, gamma; outputs x1 (y), rstd, x2 (x); attr epsilon 1e-6;
 *   norm/inplace_add_rms_norm/docs/aclnnInplaceAddRmsNorm.md;
 *   norm/add_rms_norm/op_host/add_rms_norm_tiling.cpp ("tiling.cpp:<line>": Tiling4AddRmsNorm
 *     registered for InplaceAddRmsNorm at :537-539; CheckNullptr :105-131 picks the norm key,
 *     CheckInputOutputDim :134-204, CheckInputOutputShape :206-296, GetEpsilonParameter :332-342),
 *     add_rms_norm_tiling_arch35.cpp (950: its epsilon check :113-120);
 *   norm/inplace_add_rms_norm/op_kernel/inplace_add_rms_norm.cpp (AddRmsNorm's kernels with
 *     y -> x1 and x -> x2; sim_ops_add_rms_norm.c cites their arithmetic).
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <stdio.h>

/* Products (docs "产品支持情况"): 950, A3, A2, Atlas inference (310P); not Atlas training (910),
 * not the Atlas 200I/500 A2 (310B). */
static const unsigned IA_PRODUCTS = NP_950 | NP_A3 | NP_A2 | NP_310P;

enum { F32 = SIM_DT_FLOAT, F16 = SIM_DT_FLOAT16, B16 = SIM_DT_BF16 };
/* Slots: the three inputs, then rstdOut; y is stored to x1Ref, x to x2Ref. */
enum { IA_X1, IA_X2, IA_G, IA_RSTD };
/* The tiling's norm keys (tiling.cpp:20-22). */
enum { KEY_RMS = 0, KEY_PRE = 100 };

/* (x1, x2, gamma, rstd) rows: ascend910b / ascend910_93 and config_950 (def.cpp:22-62, 106-147)
 * F16, F32, BF16; config310P (ascend310p, kirin; :64-104) F16, F32. x1 and x2 as outputs are the
 * same tensors as the inputs, so their rows hold too. */
static const int32_t IA_ROWS[3][6] = {{F16, F16, F16, F32}, {F32, F32, F32, F32}, {B16, B16, B16, F32}};

static int dims_fail(NormCtx *c, const char *names, const char *dims, const char *reason) {
  return nrm_gen_tiling_fail(c, "Parameters %s of InplaceAddRmsNorm have incorrect shape dims %s. Reason: %s", names, dims,
                             reason);
}

static int shapes_fail(NormCtx *c, const char *names, int a, int b, const char *reason) {
  char x[200], y[200];
  nrm_shape_str_compact(NT(c, a), x, sizeof x);
  nrm_shape_str_compact(NT(c, b), y, sizeof y);
  return nrm_gen_tiling_fail(c, "Parameters %s of InplaceAddRmsNorm have incorrect shapes %s and %s. Reason: %s", names, x,
                             y, reason);
}

/* CheckInputOutputDim then CheckInputOutputShape on this operator's tensors (y = x1, x = x2). */
static int tiling_shapes(NormCtx *c, int key) {
  const SimTensorDesc *x1 = NT(c, IA_X1), *x2 = NT(c, IA_X2), *g = NT(c, IA_G), *r = NT(c, IA_RSTD);
  char d[120], why[200];
  if (x1->ndim > 8 || x1->ndim < 1)
    return nrm_gen_tiling_fail(c, "Parameter x1 of InplaceAddRmsNorm has incorrect shape dim %d. It should be within the "
                               "range [1, 8].", x1->ndim);
  if (key == KEY_RMS) {
    if (g->ndim > 8 || g->ndim < 1)
      return nrm_gen_tiling_fail(c, "Parameter gamma of InplaceAddRmsNorm has incorrect shape dim %d. It should be within "
                                 "the range [1, 8].", g->ndim);
    snprintf(d, sizeof d, "%d and %d", x1->ndim, g->ndim);
    if (x1->ndim < g->ndim)
      return dims_fail(c, "x1 and gamma", d, "The shape dim of x1 should be greater than or equal to the shape dim of gamma");
  } else if (g->ndim != 2) {
    return nrm_gen_tiling_fail(c, "Parameter gamma of InplaceAddRmsNorm has incorrect shape dim %d. It should be 2.",
                               g->ndim);
  }
  snprintf(d, sizeof d, "%d and %d", x1->ndim, x2->ndim);
  if (x1->ndim != x2->ndim) return dims_fail(c, "x1 and x2", d, "The shape dims of x1 and x2 should be the same");
  snprintf(d, sizeof d, "%d, %d, %d and %d", x1->ndim, x2->ndim, r->ndim, x1->ndim);
  if (key == KEY_RMS && r->ndim != x1->ndim)
    return dims_fail(c, "y, x, rstd and x1", d, "The shape dims of y, x, rstd and x1 should be the same");
  for (int i = 0; i < x1->ndim; i++) {
    if (x1->dims[i] == 0) {
      char s[200];
      nrm_shape_str_compact(x1, s, sizeof s);
      return nrm_gen_tiling_fail(c, "Parameter x1 of InplaceAddRmsNorm has incorrect shape %s. Reason: x1 cannot be an "
                                 "empty tensor", s);
    }
    if (x2->dims[i] != x1->dims[i]) return shapes_fail(c, "x2 and x1", IA_X2, IA_X1, "The shapes of x2 and x1 should be the same");
  }
  if (key != KEY_RMS) {
    if (g->dims[0] != 1 || g->dims[1] != x1->dims[x1->ndim - 1])
      return shapes_fail(c, "gamma and x1", IA_G, IA_X1,
                         "The first dim of gamma should be 1 and the last dim of gamma and x1 must be the same");
    return 0;
  }
  int lead = x1->ndim - g->ndim;
  snprintf(why, sizeof why, "The shape of rstd should be the same as the first %d dim of x1", lead);
  for (int i = 0; i < lead; i++)
    if (r->dims[i] != x2->dims[i]) return shapes_fail(c, "rstd and x1", IA_RSTD, IA_X1, why);
  for (int i = 0; i < g->ndim; i++) {
    snprintf(why, sizeof why, "The shape of gamma should be equal to the last %d dim of x1", g->ndim);
    if (g->dims[i] != x1->dims[lead + i]) return shapes_fail(c, "gamma and x1", IA_G, IA_X1, why);
    if (r->dims[x1->ndim - 1 - i] != 1) {
      char s[200];
      nrm_shape_str_compact(r, s, sizeof s);
      return nrm_gen_tiling_fail(c, "Parameter rstd of InplaceAddRmsNorm has incorrect shape %s. Reason: The %dth "
                                 "dimension of rstd must be 1", s, x1->ndim - 1 - i);
    }
  }
  return 0;
}

int sim_inplace_add_rms_norm_ws(const void *x1Ref, const void *x2Ref, const void *gamma, double epsilon,
                                const void *rstdOut, uint64_t *ws, void **exec) {
  static const char *const names[] = {"x1Ref", "x2Ref", "gamma", "rstdOut"};
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_INPLACE_ADD_RMS_NORM, "aclnnInplaceAddRmsNorm", 3, 1, names);
  NTRY(nrm_opp_path(c));
  const void *hs[] = {x1Ref, x2Ref, gamma, rstdOut};
  for (int s = IA_X1; s <= IA_RSTD; s++) NTRY(nrm_gen_null(c, hs[s], names[s]));
  NTRY(nrm_gen_null(c, exec, "executor"));
  NTRY(nrm_gen_null(c, ws, "workspaceLen"));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, IA_PRODUCTS, "ops-nn norm/inplace_add_rms_norm/docs/aclnnInplaceAddRmsNorm.md"));
  for (int s = IA_X1; s <= IA_RSTD; s++) NTRY(nrm_get(c, hs[s], s));
  NTRY(nrm_gen_combo(c, IA_ROWS, c->product == NP_310P ? 2 : 3, 4));
  /* The outputs x1, rstd, x2 all empty: no launch. */
  if (sim_desc_numel(NT(c, IA_X1)) == 0 && nrm_all_empty(c, IA_X2, IA_X2) && nrm_all_empty(c, IA_RSTD, IA_RSTD))
    return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  /* CheckNullptr (tiling.cpp:105-131): an empty rstd with a non-empty x is PRE_RMS_NORM (y and x,
   * gamma [1, D], the last dim normalized); else RMS_NORM_KEY. */
  int key = sim_desc_numel(NT(c, IA_RSTD)) > 0 ? KEY_RMS : KEY_PRE;
  NTRY(tiling_shapes(c, key));
  float eps = (float)epsilon; /* the generated float attribute (kNnopbaseFloat) */
  if (eps < 0) {
    if (nrm_regbase(c))
      return nrm_gen_tiling_fail(c, "Parameter epsilon of InplaceAddRmsNorm has incorrect value %f. Reason: epsilon should "
                                 "not be less than zero", (double)eps);
    return nrm_gen_tiling_fail(c, "Parameter epsilon of InplaceAddRmsNorm has incorrect value %f. It should be greater "
                               "than or equal to zero.", (double)eps);
  }
  c->plan.eps = eps;
  c->plan.norm_mode = key;
  c->plan.norm_axis = NT(c, IA_X1)->ndim - (key == KEY_RMS ? NT(c, IA_G)->ndim : 1);
  int64_t rows, cols;
  nrm_rows_cols(NT(c, IA_X1), c->plan.norm_axis, &rows, &cols);
  /* The membase kernel stores no rstd on the Atlas inference series (add_rms_norm.h CopyOutRstd
   * :310-317; the docs: "参数rstdOut在当前产品使用场景下无效"): rstdOut is left untouched. */
  if (c->product == NP_310P || key != KEY_RMS) NP(c, IA_RSTD) = false;
  NTRY(nrm_add_rms_norm_plan(c, rows, cols));
  return nrm_finish(c, rows, ws, exec);
}

/* AddRmsNorm's kernels with y -> x1Ref and x -> x2Ref (op_kernel/inplace_add_rms_norm.cpp). */
int sim_run_inplace_add_rms_norm(const SimPlan *p) {
  static const int slots[6] = {IA_X1, IA_X2, IA_G, IA_X1, IA_RSTD, IA_X2};
  return nrm_add_rms_norm_compute(p, slots, p->present[IA_RSTD], true);
}
