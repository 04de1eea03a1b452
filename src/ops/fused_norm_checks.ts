/**
 * Checks of the generated fused LayerNorm operators (aclnnAddLayerNorm, aclnnDeepNorm): the
 * OpDef's dtype rows (161002) and their tiling functions' shape rules (561002,
 * ACLNN_ERR_INNER_TILING_ERROR), each naming the operator, the argument and the rule. Sources:
 * hicann/ops-nn e5c3fa9 `norm/add_layer_norm/op_host/add_layer_norm_tiling.cpp:349-538`,
 * `add_layer_norm_tiling_arch35.cpp:150-300`, `norm/deep_norm/op_host/deep_norm_shape_check.h
 * :40-180` (docs/norm_family_kernels.md sections 1 and 3).
 *
 * @module
 */

import { formatShape } from "../tensor/layout.ts";
import type { Tensor } from "../tensor/tensor.ts";
import {
  isTrailing,
  MAX_RANK,
  statisticsShape,
  TILING_ERROR,
  tilingFailure,
} from "./row_norm_checks.ts";
import { invalid, sameShape } from "./validate.ts";

/** 161002: `name`'s dtype is in no row of the OpDef with the others'. */
export function fusedDTypeError(op: string, name: string, dtype: string, want: string): never {
  invalid(op, name, `dtype ${dtype} is in no row of the OpDef here: it must be ${want}`);
}

/** The tensors a fused LayerNorm's tiling compares. */
export interface FusedShapes {
  /** The data input, by name (x1, x). */
  readonly data: readonly [string, Tensor];
  /** Tensors of the data's shape (x2/gx, y, x), by name. */
  readonly same: Readonly<Record<string, Tensor | undefined>>;
  /** Scale (x1's trailing dims). */
  readonly gamma: Tensor;
  /** Offset (gamma's shape). */
  readonly beta: Tensor;
  /** Per-row statistics given in `out` (x1's leading dims then 1s). */
  readonly mean: Tensor | undefined;
  /** Per-row rstd given in `out`. */
  readonly rstd: Tensor | undefined;
}

/**
 * The tiling's shape checks, in AddLayerNorm's order (`minRank` 1) or DeepNorm's (`minRank` 2:
 * x rank 2-8, gamma rank 1-7 and below x's, every x dim non-zero): 561002.
 */
export function checkFusedShapes(op: string, s: FusedShapes, minRank: 1 | 2): void {
  const fail = (name: string, rule: string): never => tilingFailure(op, TILING_ERROR, name, rule);
  const [dataName, data] = s.data;
  const gammaMax = minRank === 2 ? MAX_RANK - 1 : MAX_RANK;
  if (data.rank < minRank || data.rank > MAX_RANK) {
    fail(dataName, `rank ${data.rank} must be ${minRank} to ${MAX_RANK}`);
  }
  if (s.gamma.rank < 1 || s.gamma.rank > gammaMax) {
    fail("gamma", `rank ${s.gamma.rank} must be 1 to ${gammaMax}`);
  }
  const ranked = { ...s.same, mean: s.mean, rstd: s.rstd };
  for (const [name, t] of Object.entries(ranked)) {
    if (t && t.rank !== data.rank) {
      fail(name, `rank ${t.rank} must equal ${dataName}'s ${data.rank}`);
    }
  }
  const deeper = minRank === 2 ? data.rank <= s.gamma.rank : data.rank < s.gamma.rank;
  if (deeper) {
    fail("gamma", `rank ${s.gamma.rank} must be below ${dataName}'s ${data.rank}`);
  }
  if (minRank === 2 && data.numel === 0) {
    fail(dataName, `shape ${formatShape(data.shape)} must have no dim of 0`);
  }
  for (const [name, t] of Object.entries(s.same)) {
    if (t && !sameShape(t.shape, data.shape)) {
      fail(
        name,
        `shape ${formatShape(t.shape)} must equal ${dataName}'s ${formatShape(data.shape)}`,
      );
    }
  }
  if (!sameShape(s.beta.shape, s.gamma.shape)) {
    fail(
      "beta",
      `shape ${formatShape(s.beta.shape)} must equal gamma's ${formatShape(s.gamma.shape)}`,
    );
  }
  if (!isTrailing(data.shape, s.gamma.shape)) {
    fail(
      "gamma",
      `shape ${formatShape(s.gamma.shape)} must equal the last ${s.gamma.rank} dims of ` +
        `${dataName} ${formatShape(data.shape)}`,
    );
  }
  const axis = data.rank - s.gamma.rank;
  const want = statisticsShape(data.shape, axis, 1);
  for (const [name, t] of Object.entries({ mean: s.mean, rstd: s.rstd })) {
    if (t && !sameShape(t.shape, want)) {
      fail(
        name,
        `shape ${formatShape(t.shape)} must be ${formatShape(want)} (${dataName}'s dims before ` +
          "gamma's, then 1 for each gamma dim)",
      );
    }
  }
}

/**
 * AddLayerNorm's bias, by Ascend 950's rule (add_layer_norm_tiling_arch35.cpp:150-220; A2/A3
 * only count its elements, :610-622): non-empty, rank between gamma's and x1's, trailing dims
 * gamma's, and either x1's shape (one per element: true) or gamma's elements (one per column,
 * added to every row: false); else 561002.
 */
export function checkAddBias(op: string, bias: Tensor, x1: Tensor, gamma: Tensor): boolean {
  const shown = formatShape(bias.shape);
  const fail = (rule: string): never =>
    tilingFailure(op, TILING_ERROR, "bias", `shape ${shown} ${rule}`);
  if (bias.numel === 0) fail("must not be empty");
  if (bias.rank < gamma.rank || bias.rank > x1.rank) {
    fail(`must have ${gamma.rank} to ${x1.rank} dims (gamma's to x1's)`);
  }
  if (!isTrailing(bias.shape, gamma.shape)) {
    fail(`must end with gamma's ${formatShape(gamma.shape)}`);
  }
  if (bias.numel === x1.numel && x1.numel !== gamma.numel) {
    if (!sameShape(bias.shape, x1.shape)) fail(`must equal x1's ${formatShape(x1.shape)}`);
    return true;
  }
  if (bias.numel !== gamma.numel) {
    fail(`must hold gamma's ${gamma.numel} or x1's ${x1.numel} elements`);
  }
  return false;
}
