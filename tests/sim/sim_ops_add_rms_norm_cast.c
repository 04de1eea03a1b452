/*
 * Software CANN ("aclsim") -- aclnnAddRmsNormCast: phase-1 validation as CANN performs it,
 * planning, and the computation run at stream synchronisation (double arithmetic with the
 * kernel's roundings per SoC, dtype and template, every output rounded to its dtype).
 *
 * A generated aclnn operator (ACLNNTYPE aclnn): phase 1 is opbase's individual-op framework as
 * sim_ops_rms_norm.c describes it (NULL tensors in prototype order, then executor and
 * workspaceSize: 161001; a dtype tuple that is no row of the OpDef: 161002; every output empty:
 * no launch; then the tiling's checks: 561002).
 *
 * Sources (hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921, norm/add_rms_norm_cast/):
 * op_host/add_rms_norm_cast_def.cpp (rows :22-64, epsilon 1e-6 :65, ascend910b / 910_93 / 950
 * :73-75); op_host/add_rms_norm_cast_tiling.cpp (CheckDimMaxMin :80-129, CheckShapeInfo
 * :131-184, epsilon :252-258, the template :275-295: numCol > 8704 SPLIT_D, else numRow <= the
 * vector cores SINGLE_N, else NORMAL); op_kernel/add_rms_norm_cast.h (NORMAL :107-111,
 * :133-245), _single_n.h (:83-146 float16, :170-241 bfloat16), _split_d.h (:119-124, :216-290),
 * _multi_n.h (:128, :190-225); op_kernel/arch35/add_rms_norm_cast_regbase_common.h (950
 * :74-116, :135-185); docs/aclnnAddRmsNormCast.md (products). docs/norm_family_kernels.md
 * section 7 summarises them.
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <math.h>
#include <stdlib.h>

enum { RC_X1, RC_X2, RC_G, RC_Y1, RC_Y2, RC_RSTD, RC_XO, RC_N };
enum { F32 = SIM_DT_FLOAT, F16 = SIM_DT_FLOAT16, B16 = SIM_DT_BF16 };

/* docs "产品支持情况": 950, A3, A2. */
static const unsigned RC_PRODUCTS = NP_950 | NP_A3 | NP_A2;

/* The def's rows, one column per slot (x1, x2, gamma, y1, y2, rstd, x). */
static const int32_t RC_ROWS[2][RC_N] = {{F16, F16, F16, F32, F16, F32, F16}, {B16, B16, B16, F32, B16, F32, B16}};

static int fail_shape(NormCtx *c, const char *what) { return nrm_gen_tiling_fail(c, "AddRmsNormCast: %s", what); }

/* The A2/A3 tiling's shape checks (CheckDimMaxMin, CheckShapeInfo), in its order. [aclsim] the
 * 950 tiling (add_rms_norm_cast_tiling_arch35.cpp:82-130) checks the same relations. */
static int tiling(NormCtx *c, float eps) {
  const SimTensorDesc *x1 = NT(c, RC_X1), *g = NT(c, RC_G), *r = NT(c, RC_RSTD);
  if (x1->ndim < 1 || x1->ndim > 8) return fail_shape(c, "x1 dim must be in [1, 8]");
  if (g->ndim < 1 || g->ndim > 8) return fail_shape(c, "gamma dim must be in [1, 8]");
  const int same_rank[] = {RC_Y1, RC_Y2, RC_X2, RC_XO};
  for (size_t i = 0; i < sizeof same_rank / sizeof same_rank[0]; i++)
    if (NT(c, same_rank[i])->ndim != x1->ndim) return fail_shape(c, "x1, x2, y1, y2 and x must have one rank");
  if (x1->ndim < g->ndim) return fail_shape(c, "x1 rank must not be below gamma's");
  int axis = x1->ndim - g->ndim;
  bool rstd_empty = false;
  for (int i = 0; i < axis; i++) {
    if (i >= r->ndim || r->dims[i] != x1->dims[i]) return fail_shape(c, "rstd must have x1's first dims");
    if (r->dims[i] == 0) rstd_empty = true;
  }
  for (int i = 0; i < g->ndim; i++)
    if (g->dims[i] != x1->dims[axis + i]) return fail_shape(c, "gamma must be x1's last dims");
  for (int i = 0; i < x1->ndim; i++) {
    if (x1->dims[i] == 0)
      return fail_shape(c, rstd_empty ? "x1 can not be empty tensor" : "When x1 shape size is 0, rstd shape size should be 0 too");
    if (NT(c, RC_X2)->dims[i] != x1->dims[i]) return fail_shape(c, "The shapes of x1 and x2 should be the same");
    if (NT(c, RC_Y1)->dims[i] != x1->dims[i] || NT(c, RC_Y2)->dims[i] != x1->dims[i] || NT(c, RC_XO)->dims[i] != x1->dims[i])
      return fail_shape(c, "The shapes of y1, y2 and x should be the same as the shape of x1");
  }
  if (eps < 0) return fail_shape(c, "epsilon must be greater than or equal to zero");
  return 0;
}

/* plan.norm_dt: [0] the dtype x is held in for rstd and y (F16 on A2/A3 float16: added in half;
 * BF16 for y in SPLIT_D; else F32, the float sum), [1] y1's source (the data dtype: y1 =
 * float(y2); F32: the float y), [2] F16 when x * rstd and the gamma product are rounded to half
 * (A2/A3 float16, every template). 950 keeps every step in float. */
static int plan_roundings(NormCtx *c, int64_t rows, int64_t cols) {
  int32_t dt = NT(c, RC_X1)->dtype, *k = c->plan.norm_dt;
  k[0] = k[1] = k[2] = F32;
  if (nrm_regbase(c)) return 0;
  if (dt == F16) {
    k[0] = k[1] = k[2] = F16;
    return 0;
  }
  if (cols > 8704) { /* SPLIT_D: y from the stored x re-read, y1 = float(y2) */
    k[0] = B16;
    k[1] = B16;
    return 0;
  }
  int cores = 0;
  NTRY(nrm_aiv_cores(c, "bfloat16 AddRmsNormCast", &cores));
  if (rows > cores) k[1] = B16; /* NORMAL: y1 = float(y2); SINGLE_N keeps the float y */
  return 0;
}

int sim_add_rms_norm_cast_ws(const void *x1, const void *x2, const void *gamma, double epsilon, const void *y1Out,
                             const void *y2Out, const void *rstdOut, const void *xOut, uint64_t *ws, void **exec) {
  static const char *const names[] = {"x1", "x2", "gamma", "y1Out", "y2Out", "rstdOut", "xOut"};
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_ADD_RMS_NORM_CAST, "aclnnAddRmsNormCast", 3, 4, names);
  NTRY(nrm_opp_path(c));
  const void *hs[] = {x1, x2, gamma, y1Out, y2Out, rstdOut, xOut};
  for (int s = 0; s < RC_N; s++) NTRY(nrm_gen_null(c, hs[s], names[s]));
  NTRY(nrm_gen_null(c, exec, "executor"));
  NTRY(nrm_gen_null(c, ws, "workspaceLen"));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, RC_PRODUCTS, "ops-nn norm/add_rms_norm_cast/docs/aclnnAddRmsNormCast.md"));
  for (int s = 0; s < RC_N; s++) NTRY(nrm_get(c, hs[s], s));
  NTRY(nrm_gen_rows(c, &RC_ROWS[0][0], 2, RC_N));
  if (nrm_all_empty(c, RC_Y1, RC_XO)) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  float eps = (float)epsilon; /* a float attribute of the def */
  NTRY(tiling(c, eps));
  c->plan.eps = eps;
  c->plan.norm_axis = NT(c, RC_X1)->ndim - NT(c, RC_G)->ndim;
  int64_t rows, cols;
  nrm_rows_cols(NT(c, RC_X1), c->plan.norm_axis, &rows, &cols);
  /* [aclsim] the kernel writes one rstd per row. */
  NTRY(nrm_numel_is(c, RC_RSTD, rows, "writes"));
  NTRY(plan_roundings(c, rows, cols));
  return nrm_finish(c, rows, ws, exec);
}

/* x = x1 + x2 rounded (the half add of A2/A3 float16 rounds the same: one rounding of the exact
 * sum); rstd = 1/sqrt(mean(x^2) + eps) over x held as norm_dt[0] (SPLIT_D bfloat16 squares the
 * float sum, :216-228); y as the plan says; y2 = y rounded, y1 = y or float(y2). */
int sim_run_add_rms_norm_cast(const SimPlan *p) {
  int64_t rows, cols;
  nrm_rows_cols(&p->t[RC_X1], p->norm_axis, &rows, &cols);
  int32_t dt = p->t[RC_X1].dtype;
  const int32_t *k = p->norm_dt;
  double *x1 = sim_load(&p->t[RC_X1]), *x2 = sim_load(&p->t[RC_X2]), *g = sim_load(&p->t[RC_G]);
  double *x = nrm_zalloc(rows * cols), *y1 = nrm_zalloc(rows * cols), *y2 = nrm_zalloc(rows * cols);
  double *rs = nrm_zalloc(rows);
  for (int64_t r = 0; r < rows; r++) {
    double q = 0;
    for (int64_t i = 0; i < cols; i++) {
      int64_t j = r * cols + i;
      x[j] = nrm_round(x1[j] + x2[j], dt);
      double v = k[0] == F16 ? x[j] : x1[j] + x2[j];
      q += v * v;
    }
    rs[r] = 1.0 / sqrt(q / (double)cols + p->eps);
    for (int64_t i = 0; i < cols; i++) {
      int64_t j = r * cols + i;
      double xv = k[0] == F32 ? x1[j] + x2[j] : x[j];
      double y = k[2] == F16 ? nrm_round(nrm_round(xv * rs[r], F16) * g[i], F16) : xv * rs[r] * g[i];
      y2[j] = nrm_round(y, dt);
      y1[j] = k[1] == F32 ? y : y2[j];
    }
  }
  sim_store(&p->t[RC_Y1], y1);
  sim_store(&p->t[RC_Y2], y2);
  sim_store(&p->t[RC_RSTD], rs);
  sim_store(&p->t[RC_XO], x);
  return 0;
}
