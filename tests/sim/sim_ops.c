/*
 * Software CANN ("aclsim") -- the dispatch of every operator's computation at stream
 * synchronisation (sim_op_run, called by sim_streams.c's run_task): CANN's early paths that write
 * nothing or fill the outputs with a value, then each operator's run (sim_ops_<operator>.c).
 */
#define _GNU_SOURCE
#include "sim_ops_seed.h"
#include "sim_scratch.h"

#include <stdlib.h>

/* ====================================================================================== */
static void run_fill(const SimPlan *p) {
  for (int s = 0; s < p->n_in + p->n_out; s++) {
    if (!p->present[s] || !p->fill_on[s]) continue;
    int64_t n = sim_desc_numel(&p->t[s]);
    double *v = zalloc(n);
    for (int64_t i = 0; i < n; i++) v[i] = p->fill[s];
    sim_store(&p->t[s], v);
  }
}

static int run_op(const SimPlan *p) {
  if (p->run == SIM_RUN_NOTHING) return 0;
  if (p->run == SIM_RUN_FILL) {
    run_fill(p);
    return 0;
  }
  switch (p->op) {
    case SIM_OP_BN_REDUCE_BACKWARD: return sim_run_bn_reduce_backward(p);
    case SIM_OP_BN_BACKWARD: return sim_run_bn_backward(p);
    case SIM_OP_GN_BACKWARD: return sim_run_gn_backward(p);
    case SIM_OP_BN_STATS: return sim_run_bn_stats(p);
    case SIM_OP_BN_GATHER_STATS: return sim_run_bn_gather_stats(p);
    case SIM_OP_BN_ELEMT_BACKWARD: return sim_run_bn_elemt_backward(p);
    case SIM_OP_BN: return sim_run_bn(p);
    case SIM_OP_BN_ELEMT: return sim_run_bn_elemt(p);
    case SIM_OP_GN: return sim_run_gn(p);
    case SIM_OP_LAYER_NORM: return sim_run_layer_norm(p);
    case SIM_OP_LAYER_NORM_BACKWARD: return sim_run_layer_norm_backward(p);
    case SIM_OP_RMS_NORM: return sim_run_rms_norm(p);
    case SIM_OP_RMS_NORM_GRAD: return sim_run_rms_norm_grad(p);
    case SIM_OP_ADD_RMS_NORM: return sim_run_add_rms_norm(p);
    case SIM_OP_GEMMA_RMS_NORM: return sim_run_gemma_rms_norm(p);
    case SIM_OP_INPLACE_ADD_RMS_NORM: return sim_run_inplace_add_rms_norm(p);
    case SIM_OP_BN_REDUCE: return sim_run_bn_reduce(p);
    case SIM_OP_SYNC_BN_GATHER_STATS: return sim_run_sync_bn_gather_stats(p);
    case SIM_OP_ADD_LAYER_NORM: return sim_run_add_layer_norm(p);
    case SIM_OP_DEEP_NORM: return sim_run_deep_norm(p);
    case SIM_OP_INSTANCE_NORM: return sim_run_instance_norm(p);
    /* aclnnFastBatchNormBackward: aclnnBatchNormBackward's computation (the same BatchNormGradV3
     * on A2, its only product; sim_ops_fast_batch_norm_backward.c). */
    case SIM_OP_FAST_BN_BACKWARD: return sim_run_bn_backward(p);
    case SIM_OP_ADD_RMS_NORM_CAST: return sim_run_add_rms_norm_cast(p);
    case SIM_OP_ADA_LAYER_NORM:
    case SIM_OP_ADA_LAYER_NORM_V2: return sim_run_ada_layer_norm(p);
    case SIM_OP_ADD_LAYER_NORM_GRAD: return sim_run_add_layer_norm_grad(p);
    case SIM_OP_DEEP_NORM_GRAD: return sim_run_deep_norm_grad(p);
    case SIM_OP_GN_SILU: return sim_run_gn_silu(p);
    case SIM_OP_GN_SWISH: return sim_run_gn_swish(p);
    /* aclnnFastLayerNorm: aclnnLayerNorm's computation with LayerNormV4's dtypes
     * (sim_ops_fast_layer_norm.c plans it in aclnnLayerNorm's slot order). */
    case SIM_OP_FAST_LAYER_NORM: return sim_run_layer_norm(p);
    case SIM_OP_GN_SWISH_GRAD: return sim_run_gn_swish_grad(p);
    case SIM_OP_ADA_LAYER_NORM_GRAD: return sim_run_ada_layer_norm_grad(p);
    default: return -1;
  }
}

/* Runs the plan inside a scratch scope (sim_scratch.h): the float64 arrays the operator's run
 * takes (sim_load, zalloc) go back to the arena when it returns. */
int sim_op_run(const SimPlan *p, void *workspace) {
  (void)workspace;
  sim_scratch_begin();
  int rc = run_op(p);
  sim_scratch_end();
  return rc;
}
