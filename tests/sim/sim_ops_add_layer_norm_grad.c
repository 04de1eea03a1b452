/*
 * Software CANN ("aclsim") -- aclnnAddLayerNormGrad: phase-1 validation as CANN performs it,
 * planning, and the computation run at stream synchronisation (double arithmetic after the
 * kernel's float32 x1 + x2, every output rounded once to its dtype).
 *
 * A generated aclnn operator (ACLNNTYPE aclnn, no op_api/): opbase's individual-op framework as
 * sim_ops_rms_norm.c describes it (NULL tensors in prototype order, then executor and
 * workspaceSize: 161001; a (dtype, format) tuple that is no row of the SoC's OpDef: 161002; every
 * output empty: no launch; then the tiling's checks: 561002).
 *
 * Sources (hicann/ops-nn, norm/add_layer_norm_grad/): op_host/add_layer_norm_grad_def.cpp (rows
 * :23-72 ascend910b/910_93/950: dy = x1 = x2 = gamma = dsum = dx in FLOAT/FLOAT16/BF16, rstd,
 * mean, dgamma, dbeta FLOAT; :74-139 ascend310p without BF16; no attributes);
 * op_host/add_layer_norm_grad_tiling.cpp (BasicCheck: numLastDim = numel(gamma) 0 fails;
 * CheckInputOutputShape: x1 and gamma ranks 1-8, dy/rstd/mean one rank, gamma/dgamma/dbeta one
 * rank, dy rank >= gamma's, no zero dim in x1 or mean, dy = x1 = x2 = dx and mean = rstd shapes,
 * gamma = dy's last dims, mean = dy's leading dims then 1s, dgamma = dbeta = gamma = dy's last
 * dims; dsumOptional only tested for presence); op_kernel/add_layer_norm_grad_cut_n.h:354-470
 * (A2: inputs cast to float, x = x1 + x2 in float not rounded, xm = x - mean, g = dy * gamma,
 * pv = sum(g * xm * rstd^3) * (-1/D), dx = (xm * pv + g * rstd) + sum(-g * rstd) * (1/D)
 * (+ dsum), one rounding; dgamma += xm * rstd * dy, dbeta += dy, atomically added per core);
 * docs/aclnnAddLayerNormGrad.md (products: 950, A3, A2, 310P). The simulator uses the A2
 * tiling on every SoC ([aclsim]: the arch35 tiling's checks were not itemised) and refuses a
 * dsum of another shape than dy's ([aclsim]: the kernel would read dx's elements from it).
 */
#define _GNU_SOURCE
#include "sim_ops_norm.h"

#include <stdlib.h>

enum { AG_DY, AG_X1, AG_X2, AG_RSTD, AG_MEAN, AG_G, AG_DSUM, AG_DX, AG_DG, AG_DB, AG_N };
enum { F32 = SIM_DT_FLOAT, F16 = SIM_DT_FLOAT16, B16 = SIM_DT_BF16 };

static const unsigned AG_PRODUCTS = NP_950 | NP_A3 | NP_A2 | NP_310P;

/* The def's rows, one column per slot; ascend310p has the first two only. */
static const int32_t AG_ROWS[3][AG_N] = {{F32, F32, F32, F32, F32, F32, F32, F32, F32, F32},
                                         {F16, F16, F16, F32, F32, F16, F16, F16, F32, F32},
                                         {B16, B16, B16, F32, F32, B16, B16, B16, F32, F32}};

static int fail(NormCtx *c, const char *what) { return nrm_gen_tiling_fail(c, "AddLayerNormGrad: %s", what); }

static bool no_zero_dim(const SimTensorDesc *d) {
  for (int i = 0; i < d->ndim; i++)
    if (d->dims[i] == 0) return false;
  return true;
}

/* BasicCheck, then CheckInputOutputShape, in their order. */
static int tiling(NormCtx *c) {
  const SimTensorDesc *dy = NT(c, AG_DY), *g = NT(c, AG_G), *m = NT(c, AG_MEAN);
  if (sim_desc_numel(g) == 0) return fail(c, "numLastDim is 0");
  if (NT(c, AG_X1)->ndim < 1 || NT(c, AG_X1)->ndim > 8 || g->ndim < 1 || g->ndim > 8)
    return fail(c, "Bad x1/gamma dim");
  if (NT(c, AG_RSTD)->ndim != dy->ndim || m->ndim != dy->ndim) return fail(c, "Dim num of dy/mean/rstd not same.");
  if (NT(c, AG_DG)->ndim != g->ndim || NT(c, AG_DB)->ndim != g->ndim)
    return fail(c, "Dim num of gamma/dgamma/dbeta not same.");
  if (dy->ndim < g->ndim) return fail(c, "Input gamma shape invaild, dim num bigger than dy dim num.");
  if (!no_zero_dim(NT(c, AG_X1)) || !no_zero_dim(m)) return fail(c, "Bad x1/mean which have 0 dim.");
  if (!nrm_same_shape(dy, NT(c, AG_X1)) || !nrm_same_shape(dy, NT(c, AG_X2)) || !nrm_same_shape(dy, NT(c, AG_DX)) ||
      !nrm_same_shape(m, NT(c, AG_RSTD)))
    return fail(c, "Tensor x1/x2/dy/dx OR mean/rstd should have same shape.");
  int axis = dy->ndim - g->ndim;
  for (int i = 0; i < g->ndim; i++)
    if (g->dims[i] != dy->dims[axis + i]) return fail(c, "Tensor dy/gamma/mean have bad rels.");
  for (int i = 0; i < dy->ndim; i++)
    if (m->dims[i] != (i < axis ? dy->dims[i] : 1)) return fail(c, "Tensor dy/gamma/mean have bad rels.");
  for (int i = 0; i < g->ndim; i++)
    if (NT(c, AG_DG)->dims[i] != g->dims[i] || NT(c, AG_DB)->dims[i] != g->dims[i])
      return fail(c, "Shape of gamma/dgamma/dbeta should equal to dy last few dim.");
  if (NP(c, AG_DSUM) && !nrm_same_shape(NT(c, AG_DSUM), dy)) return fail(c, "[aclsim] dsum must have dy's shape");
  return 0;
}

int sim_add_layer_norm_grad_ws(const void *dy, const void *x1, const void *x2, const void *rstd, const void *mean,
                               const void *gamma, const void *dsum, const void *dxOut, const void *dgammaOut,
                               const void *dbetaOut, uint64_t *ws, void **exec) {
  static const char *const names[] = {"dy",    "x1",           "x2",    "rstd",      "mean",
                                      "gamma", "dsumOptional", "dxOut", "dgammaOut", "dbetaOut"};
  NormCtx cc, *c = &cc;
  nrm_init(c, SIM_OP_ADD_LAYER_NORM_GRAD, "aclnnAddLayerNormGrad", 7, 3, names);
  NTRY(nrm_opp_path(c));
  const void *hs[] = {dy, x1, x2, rstd, mean, gamma, dsum, dxOut, dgammaOut, dbetaOut};
  for (int s = 0; s < AG_N; s++)
    if (s != AG_DSUM) NTRY(nrm_gen_null(c, hs[s], names[s]));
  NTRY(nrm_gen_null(c, exec, "executor"));
  NTRY(nrm_gen_null(c, ws, "workspaceLen"));
  NTRY(nrm_soc(c));
  NTRY(nrm_product(c, AG_PRODUCTS, "ops-nn norm/add_layer_norm_grad/docs/aclnnAddLayerNormGrad.md"));
  for (int s = 0; s < AG_N; s++) NTRY(nrm_get(c, hs[s], s));
  NTRY(nrm_gen_rows(c, &AG_ROWS[0][0], c->product == NP_310P ? 2 : 3, AG_N));
  if (nrm_all_empty(c, AG_DX, AG_DB)) return nrm_finish_early(c, SIM_RUN_NOTHING, ws, exec);
  NTRY(tiling(c));
  c->plan.norm_axis = NT(c, AG_DY)->ndim - NT(c, AG_G)->ndim;
  int64_t rows, cols;
  nrm_rows_cols(NT(c, AG_DY), c->plan.norm_axis, &rows, &cols);
  return nrm_finish(c, rows, ws, exec);
}

/* x = float(x1 + x2), then LayerNorm's input gradient at x in double with the given mean and
 * rstd (+ dsum), dgamma = sum over rows of dy * (x - mean) * rstd, dbeta = sum of dy; every
 * output rounded once by sim_store. */
int sim_run_add_layer_norm_grad(const SimPlan *p) {
  int64_t rows, cols;
  nrm_rows_cols(&p->t[AG_DY], p->norm_axis, &rows, &cols);
  double *dy = sim_load(&p->t[AG_DY]), *x1 = sim_load(&p->t[AG_X1]), *x2 = sim_load(&p->t[AG_X2]);
  double *rstd = sim_load(&p->t[AG_RSTD]), *mean = sim_load(&p->t[AG_MEAN]), *g = sim_load(&p->t[AG_G]);
  double *dsum = p->present[AG_DSUM] ? sim_load(&p->t[AG_DSUM]) : NULL;
  double *x = nrm_zalloc(rows * cols), *dx = nrm_zalloc(rows * cols);
  double *dg = nrm_zalloc(cols), *db = nrm_zalloc(cols);
  for (int64_t i = 0; i < rows * cols; i++) x[i] = nrm_round(x1[i] + x2[i], SIM_DT_FLOAT);
  nrm_ln_grad_rows(dy, x, mean, rstd, g, rows, cols, dx, dg, db);
  if (dsum)
    for (int64_t i = 0; i < rows * cols; i++) dx[i] += dsum[i];
  sim_store(&p->t[AG_DX], dx);
  sim_store(&p->t[AG_DG], dg);
  sim_store(&p->t[AG_DB], db);
  return 0;
}
