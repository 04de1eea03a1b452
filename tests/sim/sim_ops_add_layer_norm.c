/*
 * Software CANN ("aclsim") -- aclnnAddLayerNorm: phase-1 validation as CANN performs it,
 * planning, and the computation run at stream synchronisation (double arithmetic after the
 * kernel's float32 sum, every output rounded once to its dtype).
 *
 * A generated aclnn operator (ACLNNTYPE aclnn, no op_api/): phase 1 is opbase's individual-op
 * framework as sim_ops_rms_norm.c describes it (NULL tensors in prototype order, then executor and
 * workspaceSize: 161001; a (dtype, format) tuple that is no row of the SoC's OpDef: 161002; every
 * output empty: no launch; then the tiling's checks: 561002).
 *
 * Sources (hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921, norm/add_layer_norm/):
 * op_host/add_layer_norm_def.cpp (rows :32-94 ascend910b/910_93, :155-216 ascend950, :96-153
 * ascend310p; attrs epsilon 1e-5, additional_output false :91-92); op_host/add_layer_norm_tiling.cpp
 * (A2/A3/310P: ranks :349-360, :461-469, :478; shapes :393-432, :485-509; empty :515-538; bias by
 * element count :610-622); op_host/add_layer_norm_tiling_arch35.cpp (950: bias :150-220, shapes and
 * the reduce-empty case :225-300); op_kernel/add_layer_norm_kernel.h (A2: x = (x1 + x2) + bias
 * in float :284-331, xOut = that sum cast once :785-805, mean/var/rstd :1010-1124, y :1034-1075);
 * op_kernel/add_layer_norm_base.h:35-41 (310P: OUTPUT_MEAN_RSTD 0); op_kernel/arch35/
 * add_layer_norm_regbase_common.h:79-133 (950: x1 + (x2 + bias)), add_layer_norm_regbase_reduce_empty.h
 * (950: cols 0 -> mean and rstd NaN); docs/aclnnAddLayerNorm.md (products).
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { AL_X1, AL_X2, AL_G, AL_B, AL_BIAS, AL_Y, AL_MEAN, AL_RSTD, AL_XO, AL_N };
enum { F32 = SIM_DT_FLOAT, F16 = SIM_DT_FLOAT16, B16 = SIM_DT_BF16 };
/* norm_dt[0]: how the bias is added (the tiling's element count, :610-622). */
enum { BIAS_NONE = 0, BIAS_COLUMNS = 1, BIAS_ELEMENTS = 2 };

/* docs "产品支持情况": 950, A3, A2, Atlas inference (310P). */
static const unsigned AL_PRODUCTS = NP_950 | NP_A3 | NP_A2 | NP_310P;

/* The def's rows, one column per slot (x1, x2, gamma, beta, bias, y, mean, rstd, x). */
static const int32_t AL_ROWS[9][AL_N] = {
    {F32, F16, F32, F32, F32, F32, F32, F32, F32}, {F32, B16, F32, F32, F32, F32, F32, F32, F32},
    {F16, F32, F32, F32, F32, F32, F32, F32, F32}, {B16, F32, F32, F32, F32, F32, F32, F32, F32},
    {F16, F16, F32, F32, F16, F16, F32, F32, F16}, {B16, B16, F32, F32, B16, B16, F32, F32, B16},
    {F16, F16, F16, F16, F16, F16, F32, F32, F16}, {B16, B16, B16, B16, B16, B16, F32, F32, B16},
    {F32, F32, F32, F32, F32, F32, F32, F32, F32}};
static const int32_t AL_ROWS_310P[2][AL_N] = {{F16, F16, F16, F16, F16, F16, F32, F32, F16},
                                              {F32, F32, F32, F32, F32, F32, F32, F32, F32}};

static int fail_shape(NormCtx *c, const char *what) {
  return nrm_gen_tiling_fail(c, "AddLayerNorm: %s", what);
}

/* The A2/A3/310P tiling (add_layer_norm_tiling.cpp), in its order. */
static int tiling_a2(NormCtx *c, int64_t rows, int64_t cols) {
  const SimTensorDesc *x1 = NT(c, AL_X1), *g = NT(c, AL_G);
  if (x1->ndim < 1 || x1->ndim > 8) return fail_shape(c, "x1 dim must be in [1, 8]");
  if (g->ndim < 1 || g->ndim > 8) return fail_shape(c, "gamma dim must be in [1, 8]");
  const int same_rank[] = {AL_X2, AL_Y, AL_MEAN, AL_RSTD, AL_XO};
  for (size_t i = 0; i < sizeof same_rank / sizeof same_rank[0]; i++)
    if (NT(c, same_rank[i])->ndim != x1->ndim) return fail_shape(c, "x1, x2, y, x, mean and rstd must have one rank");
  if (x1->ndim < g->ndim) return fail_shape(c, "x1 rank must not be below gamma's");
  if (!nrm_same_shape(x1, NT(c, AL_X2)) || !nrm_same_shape(x1, NT(c, AL_Y)) || !nrm_same_shape(x1, NT(c, AL_XO)))
    return fail_shape(c, "x1, x2, y and x must have one shape");
  if (!nrm_same_shape(g, NT(c, AL_B))) return fail_shape(c, "gamma and beta must have one shape");
  if (!nrm_same_shape(NT(c, AL_MEAN), NT(c, AL_RSTD))) return fail_shape(c, "mean and rstd must have one shape");
  int axis = x1->ndim - g->ndim;
  for (int i = 0; i < g->ndim; i++)
    if (g->dims[i] != x1->dims[axis + i]) return fail_shape(c, "gamma must be x1's last dims");
  for (int i = 0; i < x1->ndim; i++)
    if (NT(c, AL_MEAN)->dims[i] != (i < axis ? x1->dims[i] : 1))
      return fail_shape(c, "mean must be x1's leading dims then 1s");
  if (rows * cols == 0 || cols == 0) return fail_shape(c, "x1, gamma and mean must not be empty");
  if (NP(c, AL_BIAS)) c->plan.norm_dt[0] = sim_desc_numel(NT(c, AL_BIAS)) == rows * cols ? BIAS_ELEMENTS : BIAS_COLUMNS;
  return 0;
}

/* The Ascend 950 tiling (add_layer_norm_tiling_arch35.cpp); true in *empty for cols = 0. */
static int tiling_950(NormCtx *c, int64_t rows, int64_t cols, bool *empty) {
  const SimTensorDesc *x1 = NT(c, AL_X1), *g = NT(c, AL_G);
  if (!nrm_same_shape(x1, NT(c, AL_X2))) return fail_shape(c, "x1 and x2 must have one shape");
  if (x1->ndim > 8) return fail_shape(c, "x1 dim must be at most 8");
  if (!nrm_same_shape(g, NT(c, AL_B))) return fail_shape(c, "gamma and beta must have one shape");
  /* [aclsim] the output shapes are the A2 tiling's rules (the kernel writes them as such). */
  if (!nrm_same_shape(x1, NT(c, AL_Y)) || !nrm_same_shape(x1, NT(c, AL_XO)))
    return fail_shape(c, "y and x must have x1's shape");
  int axis = x1->ndim - g->ndim;
  if (axis < 0) return fail_shape(c, "x1 rank must not be below gamma's");
  for (int i = 0; i < g->ndim; i++)
    if (g->dims[i] != x1->dims[axis + i]) return fail_shape(c, "gamma must be x1's last dims");
  for (int s = AL_MEAN; s <= AL_RSTD; s++) {
    const SimTensorDesc *m = NT(c, s);
    bool ok = m->ndim == x1->ndim;
    for (int i = 0; ok && i < x1->ndim; i++) ok = m->dims[i] == (i < axis ? x1->dims[i] : 1);
    if (!ok) return fail_shape(c, "mean and rstd must be x1's leading dims then 1s");
  }
  *empty = rows > 0 && cols == 0;
  if (!*empty && rows * cols == 0) return fail_shape(c, "x1 must not be empty");
  if (!NP(c, AL_BIAS) || *empty) return 0;
  const SimTensorDesc *b = NT(c, AL_BIAS);
  int64_t n = sim_desc_numel(b);
  if (n == 0 || b->ndim < g->ndim || b->ndim > x1->ndim) return fail_shape(c, "bias rank must lie between gamma's and x1's");
  for (int i = 0; i < g->ndim; i++)
    if (b->dims[b->ndim - g->ndim + i] != g->dims[i]) return fail_shape(c, "bias must end with gamma's dims");
  if (n == rows * cols && n != cols) {
    if (!nrm_same_shape(b, x1)) return fail_shape(c, "an element-wise bias must have x1's shape");
    c->plan.norm_dt[0] = BIAS_ELEMENTS;
  } else if (n == cols) {
    c->plan.norm_dt[0] = BIAS_COLUMNS;
  } else {
    return fail_shape(c, "bias must hold gamma's or x1's elements");
  }
  return 0;
}

int sim_add_layer_norm_ws(const void *x1, const void *x2, const void *gamma, const void *beta, const void *bias,
                          double epsilon, bool additionalOutput, const void *yOut, const void *meanOut,
                          const void *rstdOut, const void *xOut, uint64_t *ws, void **exec) {
  static const char *const names[] = {"x1",   "x2",      "gamma",   "beta", "biasOptional",
                                      "yOut", "meanOut", "rstdOut", "xOut"};
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_ADD_LAYER_NORM, "aclnnAddLayerNorm", 5, 4, names);
  NTRY(nrm_opp_path(c));
  const void *hs[] = {x1, x2, gamma, beta, bias, yOut, meanOut, rstdOut, xOut};
  for (int s = 0; s < AL_N; s++)
    if (s != AL_BIAS) NTRY(nrm_gen_null(c, hs[s], names[s]));
  NTRY(nrm_gen_null(c, exec, "executor"));
  NTRY(nrm_gen_null(c, ws, "workspaceLen"));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, AL_PRODUCTS, "ops-nn norm/add_layer_norm/docs/aclnnAddLayerNorm.md"));
  for (int s = 0; s < AL_N; s++) NTRY(nrm_get(c, hs[s], s));
  if (c->product == NP_310P) NTRY(nrm_gen_rows(c, &AL_ROWS_310P[0][0], 2, AL_N));
  else NTRY(nrm_gen_rows(c, &AL_ROWS[0][0], 9, AL_N));
  if (nrm_all_empty(c, AL_Y, AL_XO)) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  const SimTensorDesc *d1 = NT(c, AL_X1), *g = NT(c, AL_G);
  c->plan.norm_axis = d1->ndim >= g->ndim ? d1->ndim - g->ndim : 0;
  int64_t rows, cols;
  nrm_rows_cols(d1, c->plan.norm_axis, &rows, &cols);
  bool empty = false;
  if (nrm_regbase(c)) NTRY(tiling_950(c, rows, cols, &empty));
  else NTRY(tiling_a2(c, rows, cols));
  if (empty) {
    nrm_fill(c, AL_MEAN, NAN);
    nrm_fill(c, AL_RSTD, NAN);
    return nrm_finish_early(c, SIM_RUN_FILL, ws, exec);
  }
  c->plan.eps = (float)epsilon; /* a float attribute of the def */
  c->plan.norm_mode = additionalOutput ? 1 : 0;
  c->plan.regbase = nrm_regbase(c);
  /* [aclsim] the kernel writes one mean and rstd per row. */
  NTRY(nrm_numel_is(c, AL_MEAN, rows, "writes"));
  if (c->product == NP_310P) NP(c, AL_MEAN) = NP(c, AL_RSTD) = false; /* OUTPUT_MEAN_RSTD 0 */
  if (!additionalOutput) NP(c, AL_XO) = false;
  return nrm_finish(c, rows, ws, exec);
}

static double f32(double v) { return nrm_round(v, SIM_DT_FLOAT); }

/* x in float (A2 (x1 + x2) + bias, 950 x1 + (x2 + bias)), never rounded to the data dtype before
 * the statistics; mean, biased variance and rstd = 1/sqrt(var + eps) in double; y = (x - mean) *
 * rstd * gamma + beta; every output rounded once by sim_store. */
int sim_run_add_layer_norm(const SimPlan *p) {
  int64_t rows, cols;
  nrm_rows_cols(&p->t[AL_X1], p->norm_axis, &rows, &cols);
  double *x1 = sim_load(&p->t[AL_X1]), *x2 = sim_load(&p->t[AL_X2]);
  double *g = sim_load(&p->t[AL_G]), *b = sim_load(&p->t[AL_B]);
  double *bias = p->present[AL_BIAS] ? sim_load(&p->t[AL_BIAS]) : NULL;
  double *x = nrm_zalloc(rows * cols), *y = nrm_zalloc(rows * cols);
  double *mean = nrm_zalloc(rows), *rstd = nrm_zalloc(rows);
  for (int64_t r = 0; r < rows; r++) {
    double *xr = x + r * cols;
    for (int64_t i = 0; i < cols; i++) {
      int64_t j = r * cols + i;
      double bv = !bias ? 0 : p->norm_dt[0] == BIAS_ELEMENTS ? bias[j] : bias[i];
      if (!bias) xr[i] = f32(x1[j] + x2[j]);
      else if (p->regbase) xr[i] = f32(x1[j] + f32(x2[j] + bv));
      else xr[i] = f32(f32(x1[j] + x2[j]) + bv);
    }
    nrm_ln_row(xr, cols, p->eps, g, b, y + r * cols, &mean[r], &rstd[r]);
  }
  sim_store(&p->t[AL_Y], y);
  if (p->present[AL_MEAN]) sim_store(&p->t[AL_MEAN], mean);
  if (p->present[AL_RSTD]) sim_store(&p->t[AL_RSTD], rstd);
  if (p->present[AL_XO]) sim_store(&p->t[AL_XO], x);
  return 0;
}
