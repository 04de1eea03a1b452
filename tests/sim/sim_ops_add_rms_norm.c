/*
 * Software CANN ("aclsim") -- aclnnAddRmsNorm: phase-1 validation as CANN performs it, planning,
 * and the computation run at stream synchronisation (double arithmetic with the kernel's
 * roundings to the data dtype, every output rounded to its dtype).
 *
 * Source: hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921 (2026-08-22),
 *   norm/add_rms_norm/op_host/op_api/aclnn_add_rms_norm.cpp ("aclnn_add_rms_norm.cpp:<line>"),
 *   op_api/add_rms_norm.cpp (the l0 operator), add_rms_norm_tiling.cpp (its tiling, run in
 *   phase 1 by ADD_TO_LAUNCHER_LIST_AICORE: opbase op_executor.cpp CreatAiCoreKernelLauncher ->
 *   GetWorkspace), op_kernel/add_rms_norm*.h, docs/aclnnAddRmsNorm.md.
 * Modes (aclnn_add_rms_norm.cpp:158-164): rstdOut and xOut given -> ADD (y, rstd, x); only xOut
 * -> PRE (y, x); neither -> POST (y); rstdOut without xOut stays ADD and fails the NULL check.
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { AR_X1, AR_X2, AR_G, AR_Y, AR_RSTD, AR_XO };
enum { MODE_ADD = 0, MODE_PRE = 1, MODE_POST = 2 };

/* Products (docs "产品支持情况"): 950, A3, A2, Atlas inference (310P); not Atlas training (910),
 * not the Atlas 200I/500 A2 (310B). */
static const unsigned AR_PRODUCTS = NP_950 | NP_A3 | NP_A2 | NP_310P;

static const char *const SHOWN[] = {"inputTensor.x1",    "inputTensor.x2",       "inputTensor.gamma",
                                    "outputTensor.yOut", "outputTensor.rstdOut", "outputTensor.xOut"};

/* CheckDtypeValid (:91-124): NORMAL_DTYPE_SUPPORT_LIST, or ASCEND310P_DTYPE_SUPPORT_LIST when
 * the SocVersion is ASCEND310P; PRE/POST modes: FLOAT16, BF16 (FLOAT16 only on 310P). */
static int check_dtypes(NormCtx *c, int mode) {
  bool p310 = c->soc.soc_version == 6; /* op::SocVersion::ASCEND310P */
  NrmDtList l = {3, {SIM_DT_FLOAT, SIM_DT_FLOAT16, SIM_DT_BF16, 0}};
  if (p310) l.n = 2;
  if (mode != MODE_ADD) {
    l = (NrmDtList){2, {SIM_DT_FLOAT16, SIM_DT_BF16, 0, 0}};
    if (p310) l.n = 1;
  }
  for (int s = AR_X1; s <= AR_G; s++) NTRY(nrm_dt_support(c, s, &l, SHOWN[s]));
  NTRY(nrm_dt_same(c, AR_X1, SHOWN[AR_X1], AR_X2, SHOWN[AR_X2]));
  NTRY(nrm_dt_same(c, AR_X1, SHOWN[AR_X1], AR_G, SHOWN[AR_G]));
  NTRY(nrm_dt_support(c, AR_Y, &l, SHOWN[AR_Y]));
  NTRY(nrm_dt_same(c, AR_Y, SHOWN[AR_Y], AR_X1, SHOWN[AR_X1]));
  if (mode == MODE_POST) return 0;
  NTRY(nrm_dt_support(c, AR_XO, &l, SHOWN[AR_XO]));
  NTRY(nrm_dt_same(c, AR_XO, SHOWN[AR_XO], AR_Y, SHOWN[AR_Y]));
  if (mode == MODE_ADD) NTRY(nrm_dt_match(c, AR_RSTD, SIM_DT_FLOAT, SHOWN[AR_RSTD]));
  return 0;
}

/* CheckShapeDim (:126-156), MAX_SUPPORT_DIMS_NUMS = 8 (ops-nn common/inc/op_api/op_api_def_nn.h). */
static int check_shapes(NormCtx *c, int mode) {
  for (int s = AR_X1; s <= AR_G; s++) NTRY(nrm_max_dim(c, s, 8, SHOWN[s]));
  for (int s = AR_X1; s <= AR_G; s++) NTRY(nrm_min_dim(c, s, 1, SHOWN[s]));
  NTRY(nrm_shape_same(c, AR_X1, SHOWN[AR_X1], AR_X2, SHOWN[AR_X2]));
  NTRY(nrm_max_dim(c, AR_Y, 8, SHOWN[AR_Y]));
  NTRY(nrm_shape_same(c, AR_X1, SHOWN[AR_X1], AR_Y, SHOWN[AR_Y]));
  if (mode == MODE_ADD) NTRY(nrm_max_dim(c, AR_RSTD, 8, SHOWN[AR_RSTD]));
  if (mode == MODE_PRE) NTRY(nrm_max_dim(c, AR_G, 2, SHOWN[AR_G]));
  if (mode != MODE_POST) {
    NTRY(nrm_max_dim(c, AR_XO, 8, SHOWN[AR_XO]));
    NTRY(nrm_shape_same(c, AR_X1, SHOWN[AR_X1], AR_XO, SHOWN[AR_XO]));
  }
  if (mode == MODE_POST) NTRY(nrm_max_dim(c, AR_G, 2, SHOWN[AR_G]));
  return 0;
}

/* The l0 operator's tiling failed: AddRmsNorm returns NULL results (add_rms_norm.cpp:61-66) and
 * phase 1 returns ACLNN_ERR_INNER_NULLPTR (aclnn_add_rms_norm.cpp:188). */
static int tiling_fail(NormCtx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int tiling_fail(NormCtx *c, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  nrm_fail(c, SIM_NN_INNER_NULLPTR, "%s", buf);
  return nrm_fail(c, SIM_NN_INNER_NULLPTR, "AddRmsNorm ADD_TO_LAUNCHER_LIST_AICORE failed.");
}

/* The tiling's checks that the l0 operator's own outputs do not satisfy by construction
 * (add_rms_norm_tiling.cpp CheckInputOutputDim :134-204, CheckInputOutputShape :206-296,
 * GetEpsilonParameter :332-342). In ADD mode a gamma of more dims than x1 makes the l0 operator's
 * rstd shape loop (add_rms_norm.cpp:43) run past x1's dims: [aclsim] reported as the dims check. */
static int tiling(NormCtx *c, int mode, float eps) {
  const SimTensorDesc *x = NT(c, AR_X1), *g = NT(c, AR_G);
  char a[200], b[200];
  nrm_shape_str_compact(g, a, sizeof a);
  nrm_shape_str_compact(x, b, sizeof b);
  if (mode == MODE_ADD) {
    if (x->ndim < g->ndim)
      return tiling_fail(c, "Parameters x1 and gamma of AddRmsNorm have incorrect shape dims %d and %d. Reason: The shape "
                         "dim of x1 should be greater than or equal to the shape dim of gamma", x->ndim, g->ndim);
    for (int i = 0; i < g->ndim; i++)
      if (g->dims[i] != x->dims[x->ndim - g->ndim + i])
        return tiling_fail(c, "Parameters gamma and x1 of AddRmsNorm have incorrect shapes %s and %s. Reason: The shape "
                           "of gamma should be equal to the last %d dim of x1", a, b, g->ndim);
  } else {
    if (g->ndim != 2)
      return tiling_fail(c, "Parameter gamma of AddRmsNorm has incorrect shape dim %d. It should be 2.", g->ndim);
    if (g->dims[0] != 1 || g->dims[1] != x->dims[x->ndim - 1])
      return tiling_fail(c, "Parameters gamma and x1 of AddRmsNorm have incorrect shapes %s and %s. Reason: The first dim "
                         "of gamma should be 1 and the last dim of gamma and x1 must be the same", a, b);
  }
  if (eps < 0)
    return tiling_fail(c, "Parameter epsilon of AddRmsNorm has incorrect value %f. It should be greater than or equal to "
                       "zero.", (double)eps);
  return 0;
}

/* GetCoreNumAiv() of the A2/A3 SoCs (the tiling's numCore, add_rms_norm_tiling.cpp:298-312):
 * [SoCInfo] vector_core_cnt of hicann/runtime 681ef76 src/platform/platform_config/cann/<SoC>.ini. */
static const struct {
  const char *soc;
  int cores;
} AIV_CORES[] = {{"Ascend910B1", 48},    {"Ascend910B2", 48},    {"Ascend910B2C", 48},   {"Ascend910B3", 40},
                 {"Ascend910B4", 40},    {"Ascend910B4-1", 40},  {"Ascend910_9362", 40}, {"Ascend910_9363", 40},
                 {"Ascend910_9372", 40}, {"Ascend910_9381", 48}, {"Ascend910_9382", 48}, {"Ascend910_9391", 48},
                 {"Ascend910_9392", 48}};

/* The dtypes the kernel holds x in and rounds x * rstd to, which differ per SoC and template
 * (plan.norm_dt: [0] the x the square sum reads, [1] the x the y product reads, [2] x * rstd
 * before the gamma product; SIM_DT_FLOAT = the float value, computed in double here):
 * - regbase (DAV_3510, Ascend 950; add_rms_norm_tiling.cpp:476-478): every dtype is added in
 *   float and the float sum kept for rstd and y (arch35/add_rms_norm_regbase.h:103-136
 *   Compute, :138-165 CalculateXAdd, :167-226 CalculateY: x * rstd * gamma in float, stored
 *   once; the split-D kernel likewise, arch35/add_rms_norm_regbase_split_d.h:214-244);
 * - elsewhere, DetermineModeParameters (add_rms_norm_tiling.cpp:362-407) picks the template from
 *   numCol = numel(gamma), numRow, numCore = GetCoreNumAiv and the dtype. For FLOAT16 (Add in
 *   half) and FLOAT every template reads the sum in the data dtype and rounds x * rstd to it
 *   (FLOAT: float). For BFLOAT16 the sum is formed in float and RINT-cast for xOut; then
 *   SPLIT_D (numCol > 12288) squares the float sum but forms y from the stored x
 *   (add_rms_norm_split_d.h:150-229, :263-280), SINGLE_N (numRow <= numCore) and MERGE_N
 *   (align16(numCol) <= 2000) read the rounded x for both (add_rms_norm_single_n.h:227-331 ProcessBf16,
 *   add_rms_norm_merge_n.h:162-299), and NORMAL (the rest) keeps the float sum for rstd and y
 *   (add_rms_norm.h:131-140 CopyIn, :203-254 Compute); x * rstd is RINT-cast to bfloat16
 *   before the gamma product in all four. */
int nrm_aiv_cores(NormCtx *c, const char *what, int *cores) {
  for (size_t i = 0; i < sizeof AIV_CORES / sizeof AIV_CORES[0]; i++)
    if (strcmp(AIV_CORES[i].soc, c->soc.soc_name) == 0) return *cores = AIV_CORES[i].cores, 0;
  return nrm_fail(c, SIM_NN_INVALID,
                  "[aclsim] the vector core count of SoC %s is not known to the simulator, so it cannot tell which "
                  "%s kernel CANN's tiling picks",
                  c->soc.soc_name, what);
}

int nrm_add_rms_norm_plan(NormCtx *c, int64_t rows, int64_t cols) {
  int32_t dt = NT(c, AR_X1)->dtype;
  int32_t *k = c->plan.norm_dt;
  k[0] = k[1] = k[2] = dt;
  if (nrm_regbase(c)) {
    k[0] = k[1] = k[2] = SIM_DT_FLOAT;
    return 0;
  }
  if (dt != SIM_DT_BF16) return 0;
  if (cols > 12288) { /* numCol > UB_FACTOR_B16 (:27, :367, :502): MODE_SPLIT_D */
    k[0] = SIM_DT_FLOAT;
    return 0;
  }
  int cores = 0;
  NTRY(nrm_aiv_cores(c, "bfloat16 AddRmsNorm", &cores));
  if (rows <= cores || (cols + 15) / 16 * 16 <= 2000) return 0; /* SINGLE_N, MERGE_N (:372-375) */
  k[0] = k[1] = SIM_DT_FLOAT;                                    /* MODE_NORMAL */
  return 0;
}

int sim_add_rms_norm_ws(const void *x1, const void *x2, const void *gamma, double epsilon, void *yOut, void *rstdOut,
                        void *xOut, uint64_t *ws, void **exec) {
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_ADD_RMS_NORM, "aclnnAddRmsNorm", 3, 3, SHOWN);
  NTRY(nrm_opp_path(c));
  NTRY(nrm_outparams(c, ws, exec));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, AR_PRODUCTS, "ops-nn norm/add_rms_norm/docs/aclnnAddRmsNorm.md"));
  int mode = MODE_ADD;
  if (xOut && !rstdOut) mode = MODE_PRE;
  else if (!xOut && !rstdOut) mode = MODE_POST;
  /* CheckNotNull (:76-89) -> 161001 */
  const void *hs[] = {x1, x2, gamma, yOut, rstdOut, xOut};
  for (int s = AR_X1; s <= AR_Y; s++) NTRY(nrm_null(c, hs[s], "aclTensor", SHOWN[s], SIM_NN_NULLPTR));
  if (mode == MODE_ADD) NTRY(nrm_null(c, rstdOut, "aclTensor", SHOWN[AR_RSTD], SIM_NN_NULLPTR));
  if (mode != MODE_POST) NTRY(nrm_null(c, xOut, "aclTensor", SHOWN[AR_XO], SIM_NN_NULLPTR));
  for (int s = AR_X1; s <= AR_XO; s++) NTRY(nrm_get(c, hs[s], s));
  NTRY(check_dtypes(c, mode));
  NTRY(check_shapes(c, mode));
  c->plan.norm_mode = mode;
  /* Empty x1 or gamma (:229-236): SUCCESS, workspace 0, nothing written. */
  if (sim_desc_numel(NT(c, AR_X1)) == 0 || sim_desc_numel(NT(c, AR_G)) == 0)
    return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  float eps = (float)epsilon; /* OP_ATTR(static_cast<float>(epsilon)), add_rms_norm.cpp:62 */
  NTRY(tiling(c, mode, eps));
  c->plan.eps = eps;
  /* ADD: gamma's dims are normalized; PRE/POST: the last dim (gamma [1, D]; tiling
   * CalculateRowAndColParameters :315-330). */
  c->plan.norm_axis = NT(c, AR_X1)->ndim - (mode == MODE_ADD ? NT(c, AR_G)->ndim : 1);
  int64_t rows, cols;
  nrm_rows_cols(NT(c, AR_X1), c->plan.norm_axis, &rows, &cols);
  /* ComputeAddRmsNorm (:177-207) copies each result with l0op::ViewCopy (nullptr -> 561103):
   * yOut and xOut have x1's shape (CheckShapeDim), the l0 operator's rstd is x1's leading dims
   * then one 1 per gamma dim (add_rms_norm.cpp:39-53), so a rstdOut of another shape is refused
   * unless both hold one element. */
  if (mode == MODE_ADD) {
    SimTensorDesc res = nrm_shape_of(NT(c, AR_X1)->dims, NT(c, AR_X1)->ndim);
    for (int i = c->plan.norm_axis; i < res.ndim; i++) res.dims[i] = 1;
    NTRY(nrm_view_copy(c, AR_RSTD, &res));
  }
  /* The membase kernel stores rstd only where __CCE_AICORE__ == 220 or on NPU arch 3003/3113
   * (op_kernel/add_rms_norm.h CopyOutRstd :310-317): on the Atlas inference series rstdOut is
   * left untouched ("参数rstdOut在当前产品使用场景下无效", docs). */
  if (c->product == NP_310P) NP(c, AR_RSTD) = false;
  NTRY(nrm_add_rms_norm_plan(c, rows, cols));
  return nrm_finish(c, rows, ws, exec);
}

/* The kernels (nrm_add_rms_norm_plan names the templates): x = x1 + x2 rounded to the data dtype
 * and stored to slot xo; rstd = 1/sqrt(mean(x^2) + eps) over the x of norm_dt[0]; y = x * rstd
 * over the x of norm_dt[1], rounded to norm_dt[2] when that is a 16-bit dtype, times gamma, stored
 * to slot yo (one more rounding to the dtype). Every input is loaded before any output is stored
 * (aclnnInplaceAddRmsNorm's outputs are its inputs x1, x2). Float steps are computed in double. */
int nrm_add_rms_norm_compute(const SimPlan *p, const int slots[6], bool store_rstd, bool store_x) {
  const SimTensorDesc *t1 = &p->t[slots[0]];
  int64_t rows, cols;
  nrm_rows_cols(t1, p->norm_axis, &rows, &cols);
  int32_t dt = t1->dtype;
  const int32_t *k = p->norm_dt;
  double *x1 = sim_load(t1), *x2 = sim_load(&p->t[slots[1]]), *g = sim_load(&p->t[slots[2]]);
  double *x = nrm_zalloc(rows * cols), *y = nrm_zalloc(rows * cols), *rs = nrm_zalloc(rows);
  double *xf = nrm_zalloc(rows * cols); /* the float sum (before the cast of a 16-bit x) */
  for (int64_t r = 0; r < rows; r++) {
    double q = 0;
    for (int64_t i = 0; i < cols; i++) {
      int64_t j = r * cols + i;
      x[j] = nrm_round(x1[j] + x2[j], dt);
      xf[j] = dt == SIM_DT_FLOAT ? x[j] : x1[j] + x2[j];
      double v = k[0] == SIM_DT_FLOAT ? xf[j] : x[j];
      q += v * v;
    }
    rs[r] = 1.0 / sqrt(q / (double)cols + p->eps);
    for (int64_t i = 0; i < cols; i++) {
      int64_t j = r * cols + i;
      double t = (k[1] == SIM_DT_FLOAT ? xf[j] : x[j]) * rs[r];
      y[j] = (k[2] == SIM_DT_FLOAT ? t : nrm_round(t, k[2])) * g[i];
    }
  }
  sim_store(&p->t[slots[3]], y);
  if (store_rstd) sim_store(&p->t[slots[4]], rs);
  if (store_x) sim_store(&p->t[slots[5]], x);
  return 0;
}

int sim_run_add_rms_norm(const SimPlan *p) {
  static const int slots[6] = {AR_X1, AR_X2, AR_G, AR_Y, AR_RSTD, AR_XO};
  return nrm_add_rms_norm_compute(p, slots, p->norm_mode == MODE_ADD && p->present[AR_RSTD],
                                  p->norm_mode != MODE_POST);
}
