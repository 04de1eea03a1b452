/**
 * The fused LayerNorm operators of issue 39 (aclnnAddLayerNorm, aclnnDeepNorm), part of
 * `libopapi_nn.so` (opapi.ts spreads them into its table). Their headers are generated from the
 * ops-nn op definitions (`norm/add_layer_norm/op_host/add_layer_norm_def.cpp`,
 * `norm/deep_norm/op_host/deep_norm_def.cpp`): inputs, then attributes, then outputs; both are
 * optional, as every operator newer than a release is.
 *
 * @module
 */

/** Phase 2's prototype (opapi.ts states it). */
const execute = { parameters: ["pointer", "u64", "pointer", "pointer"], result: "i32" } as const;

/** aclnnAddLayerNorm and aclnnDeepNorm, both phases. */
export const fusedLayerNormSymbols = {
  // aclnnStatus aclnnAddLayerNormGetWorkspaceSize(const aclTensor *x1, const aclTensor *x2,
  //   const aclTensor *gamma, const aclTensor *beta, const aclTensor *biasOptional,
  //   double epsilon, bool additionalOutput, const aclTensor *yOut, const aclTensor *meanOut,
  //   const aclTensor *rstdOut, const aclTensor *xOut, uint64_t *workspaceSize,
  //   aclOpExecutor **executor);
  // Optional: a generated operator (header from ops-nn add_layer_norm_def.cpp), not in every
  // release.
  aclnnAddLayerNormGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "f64",
      "bool",
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
    optional: true,
  },
  // aclnnStatus aclnnAddLayerNorm(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  // Optional: exported together with its phase 1.
  aclnnAddLayerNorm: { ...execute, optional: true },
  // aclnnStatus aclnnDeepNormGetWorkspaceSize(const aclTensor *x, const aclTensor *gx,
  //   const aclTensor *beta, const aclTensor *gamma, double alpha, double epsilon,
  //   const aclTensor *meanOut, const aclTensor *rstdOut, const aclTensor *yOut,
  //   uint64_t *workspaceSize, aclOpExecutor **executor);
  // Optional: a generated operator (header from ops-nn deep_norm_def.cpp).
  aclnnDeepNormGetWorkspaceSize: {
    parameters: [
      "pointer",
      "pointer",
      "pointer",
      "pointer",
      "f64",
      "f64",
      "pointer",
      "pointer",
      "pointer",
      "buffer",
      "buffer",
    ],
    result: "i32",
    optional: true,
  },
  // aclnnStatus aclnnDeepNorm(void *workspace, uint64_t workspaceSize,
  //   aclOpExecutor *executor, aclrtStream stream);
  // Optional: exported together with its phase 1.
  aclnnDeepNorm: { ...execute, optional: true },
} as const satisfies Deno.ForeignLibraryInterface;
