/**
 * The chip traits of the fused LayerNorm operators (aclnnAddLayerNorm, aclnnDeepNorm) beyond
 * products and bfloat16 (soc.ts): what the Atlas inference series' OpDef and kernel lack, and
 * what only Ascend 950's tiling accepts. Sources: hicann/ops-nn e5c3fa9, docs/norm_family_kernels.md
 * section 1.
 *
 * @module
 */

import { isRegbase, type SocFamily } from "./soc.ts";

/**
 * Whether aclnnAddLayerNorm takes tensors of more than one dtype (float32 gamma with 16-bit data,
 * a 16-bit x2 with float32 x1): the OpDef rows of ascend910b, ascend910_93 and ascend950 do
 * (`add_layer_norm_def.cpp:32-94, 155-216`); ascend310p's are all FLOAT16 or all FLOAT (`:96-153`).
 *
 * @example
 * ```ts
 * import { addLayerNormMixedDtypes, socFamily } from "@aclnn/norm/ascend";
 * console.log(addLayerNormMixedDtypes(socFamily("Ascend310P3")!)); // false
 * ```
 */
export function addLayerNormMixedDtypes(family: SocFamily): boolean {
  return family.name !== "Ascend310P";
}

/**
 * Whether aclnnAddLayerNorm writes meanOut and rstdOut: not on the Atlas inference series,
 * whose kernel is built with OUTPUT_MEAN_RSTD 0 (`op_kernel/add_layer_norm_base.h:35-41`); the
 * backend then fills them with NaN.
 *
 * @example
 * ```ts
 * import { addLayerNormStoresStatistics, socFamily } from "@aclnn/norm/ascend";
 * console.log(addLayerNormStoresStatistics(socFamily("Ascend910B4")!)); // true
 * ```
 */
export function addLayerNormStoresStatistics(family: SocFamily): boolean {
  return family.name !== "Ascend310P";
}

/**
 * Whether aclnnAddLayerNorm runs rows of no element (gamma empty, rows > 0): only the DAV_3510
 * tiling does, filling mean and rstd with NaN (`add_layer_norm_tiling_arch35.cpp:225-300`,
 * `op_kernel/arch35/add_layer_norm_regbase_reduce_empty.h`); the A2/310P tiling refuses any zero
 * dim of x1, gamma or mean (`add_layer_norm_tiling.cpp:515-538`, 561002).
 *
 * @example
 * ```ts
 * import { addLayerNormEmptyRows, socFamily } from "@aclnn/norm/ascend";
 * console.log(addLayerNormEmptyRows(socFamily("Ascend910B4")!)); // false
 * ```
 */
export function addLayerNormEmptyRows(family: SocFamily): boolean {
  return isRegbase(family);
}
