/**
 * Checks of the generated fused LayerNorm backward operators (aclnnAddLayerNormGrad,
 * aclnnDeepNormGrad): the OpDef's dtype rows (161002: the data tensors one dtype, the statistics
 * and column gradients float32) and their A2 tiling functions' shape rules (561002,
 * ACLNN_ERR_INNER_TILING_ERROR), in the tilings' order, each naming the operator, the argument
 * and the rule. Sources (hicann/ops-nn): `norm/add_layer_norm_grad/op_host/
 * add_layer_norm_grad_def.cpp:23-139`, `add_layer_norm_grad_tiling.cpp` (BasicCheck,
 * CheckInputOutputShape); `norm/deep_norm_grad/op_host/deep_norm_grad_def.cpp`,
 * `arch22/deep_norm_grad_tiling.cpp` (CheckInputOutputShapeDim, CheckXYShapeValue,
 * CheckMeanRstdShapeValue, CheckBetaGammaShapeValue); docs/norm_family_kernels.md sections 2, 4.
 *
 * @module
 */

import { formatShape } from "../tensor/layout.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { fusedDTypeError } from "./fused_norm_checks.ts";
import { isTrailing, MAX_RANK, TILING_ERROR, tilingFailure } from "./row_norm_checks.ts";
import { sameShape } from "./validate.ts";

/**
 * The OpDef rows of both operators: every tensor of `data` has the first one's dtype, every
 * tensor of `float32` is float32 (161002, in the order given: the prototype's).
 */
export function checkGradDTypes(
  op: string,
  data: readonly (readonly [string, Tensor | undefined])[],
  float32: readonly (readonly [string, Tensor | undefined])[],
  order: readonly string[],
): void {
  const [firstName, first] = data[0];
  const all = new Map([...data, ...float32]);
  const wide = new Set(float32.map(([name]) => name));
  for (const name of order) {
    const t = all.get(name);
    if (!t) continue;
    if (wide.has(name)) {
      if (t.dtype !== "float32") fusedDTypeError(op, name, t.dtype, "float32");
    } else if (t.dtype !== first!.dtype) {
      fusedDTypeError(op, name, t.dtype, `${firstName}'s ${first!.dtype}`);
    }
  }
}

/** The tensors the backward tilings compare (outputs given in `out` or allocated). */
export interface GradShapes {
  /** dL/dy. */
  readonly dy: Tensor;
  /** The forward's data inputs (x1, x2 / x, gx), by name. */
  readonly inputs: Readonly<Record<string, Tensor>>;
  /** The outputs of dy's shape (dx / dx, dgx), by name. */
  readonly outputs: Readonly<Record<string, Tensor>>;
  /** Per-row mean. */
  readonly mean: Tensor;
  /** Per-row rstd. */
  readonly rstd: Tensor;
  /** Scale. */
  readonly gamma: Tensor;
  /** Column gradient dgamma. */
  readonly dgamma: Tensor;
  /** Column gradient dbeta. */
  readonly dbeta: Tensor;
}

function failer(op: string) {
  return (name: string, rule: string): never => tilingFailure(op, TILING_ERROR, name, rule);
}

function shapeRule(t: Tensor, other: string, want: readonly number[]): string {
  return `shape ${formatShape(t.shape)} must equal ${other}'s ${formatShape(want)}`;
}

/**
 * aclnnAddLayerNormGrad's tiling (add_layer_norm_grad_tiling.cpp, A2/A3/310P; taken for Ascend
 * 950 too): gamma empty (BasicCheck: numLastDim 0); x1 or gamma rank not 1-8; dy, rstd, mean of
 * different ranks; gamma, dgamma, dbeta of different ranks; gamma of more dims than dy; a dim of
 * x1 or mean 0; dy, x1, x2, dx of different shapes or mean, rstd; gamma not dy's trailing dims;
 * mean not dy's leading dims then 1s; dgamma or dbeta not gamma's shape. Then the package's
 * own rule: dsum of dy's shape (CANN only asks whether it is present and reads dx's elements
 * from it). All 561002.
 */
export function checkAddLayerNormGradShapes(op: string, s: GradShapes, dsum?: Tensor): void {
  const fail = failer(op);
  const { dy, mean, rstd, gamma, dgamma, dbeta } = s;
  const x1 = s.inputs.x1;
  if (gamma.numel === 0) fail("gamma", `shape ${formatShape(gamma.shape)} must not be empty`);
  if (x1.rank < 1 || x1.rank > MAX_RANK) fail("x1", `rank ${x1.rank} must be 1 to ${MAX_RANK}`);
  if (gamma.rank < 1 || gamma.rank > MAX_RANK) {
    fail("gamma", `rank ${gamma.rank} must be 1 to ${MAX_RANK}`);
  }
  for (const [name, t] of Object.entries({ rstd, mean })) {
    if (t.rank !== dy.rank) fail(name, `rank ${t.rank} must equal dy's ${dy.rank}`);
  }
  for (const [name, t] of Object.entries({ dgamma, dbeta })) {
    if (t.rank !== gamma.rank) fail(name, `rank ${t.rank} must equal gamma's ${gamma.rank}`);
  }
  if (dy.rank < gamma.rank) fail("gamma", `rank ${gamma.rank} must not exceed dy's ${dy.rank}`);
  for (const [name, t] of Object.entries({ x1, mean })) {
    if (t.numel === 0) fail(name, `shape ${formatShape(t.shape)} must have no dim of 0`);
  }
  for (const [name, t] of Object.entries({ ...s.inputs, ...s.outputs })) {
    if (!sameShape(t.shape, dy.shape)) fail(name, shapeRule(t, "dy", dy.shape));
  }
  if (!sameShape(rstd.shape, mean.shape)) fail("rstd", shapeRule(rstd, "mean", mean.shape));
  checkTrailing(op, dy, gamma);
  const axis = dy.rank - gamma.rank;
  if (!mean.shape.every((d, i) => d === (i < axis ? dy.shape[i] : 1))) {
    fail(
      "mean",
      `shape ${
        formatShape(mean.shape)
      } must be dy's dims before gamma's, then 1 for each gamma dim`,
    );
  }
  checkColumnGradients(op, s);
  if (dsum && !sameShape(dsum.shape, dy.shape)) {
    fail("dsum", shapeRule(dsum, "dy", dy.shape));
  }
}

/**
 * aclnnDeepNormGrad's tiling (arch22/deep_norm_grad_tiling.cpp; taken for Ascend 950 too): dy
 * rank not 2-8; gamma rank not 1-7; x, gx, dx, dgx of another rank than dy; mean, rstd of
 * another rank; dgamma, dbeta of another rank than gamma; gamma of dy's rank or more; a dim of
 * dy 0, x or gx not dy's shape, dx or dgx not x's / gx's; mean or rstd not dy's leading dims
 * (their trailing dims are not checked); gamma not dy's trailing dims, dgamma or dbeta not
 * gamma's shape. Then the package's own rule: mean and rstd hold one value per row (the kernel
 * reads that many). All 561002.
 */
export function checkDeepNormGradShapes(op: string, s: GradShapes, rows: number): void {
  const fail = failer(op);
  const { dy, mean, rstd, gamma, dgamma, dbeta } = s;
  if (dy.rank < 2 || dy.rank > MAX_RANK) fail("dy", `rank ${dy.rank} must be 2 to ${MAX_RANK}`);
  if (gamma.rank < 1 || gamma.rank > MAX_RANK - 1) {
    fail("gamma", `rank ${gamma.rank} must be 1 to ${MAX_RANK - 1}`);
  }
  for (const [name, t] of Object.entries({ ...s.inputs, ...s.outputs, mean, rstd })) {
    if (t.rank !== dy.rank) fail(name, `rank ${t.rank} must equal dy's ${dy.rank}`);
  }
  for (const [name, t] of Object.entries({ dgamma, dbeta })) {
    if (t.rank !== gamma.rank) fail(name, `rank ${t.rank} must equal gamma's ${gamma.rank}`);
  }
  if (dy.rank <= gamma.rank) fail("gamma", `rank ${gamma.rank} must be below dy's ${dy.rank}`);
  // CheckXYShapeValue walks the dims: dy's dim 0, then the data tensors' dim against dy's.
  const data = Object.entries({ ...s.inputs, ...s.outputs });
  for (let i = 0; i < dy.rank; i++) {
    if (dy.shape[i] === 0) fail("dy", `shape ${formatShape(dy.shape)} must have no dim of 0`);
    for (const [name, t] of data) {
      if (t.shape[i] !== dy.shape[i]) fail(name, shapeRule(t, "dy", dy.shape));
    }
  }
  const axis = dy.rank - gamma.rank;
  for (const [name, t] of Object.entries({ rstd, mean })) {
    if (t.shape.slice(0, axis).some((d, i) => d !== dy.shape[i])) {
      fail(name, `shape ${formatShape(t.shape)} must start with dy's dims before gamma's`);
    }
  }
  checkTrailing(op, dy, gamma);
  checkColumnGradients(op, s);
  for (const [name, t] of Object.entries({ mean, rstd })) {
    if (t.numel !== rows) {
      fail(name, `shape ${formatShape(t.shape)} must hold one value per row (${rows})`);
    }
  }
}

function checkTrailing(op: string, dy: Tensor, gamma: Tensor): void {
  if (!isTrailing(dy.shape, gamma.shape)) {
    failer(op)(
      "gamma",
      `shape ${formatShape(gamma.shape)} must equal the last ${gamma.rank} dims of dy ` +
        formatShape(dy.shape),
    );
  }
}

function checkColumnGradients(op: string, s: GradShapes): void {
  for (const [name, t] of Object.entries({ dgamma: s.dgamma, dbeta: s.dbeta })) {
    if (!sameShape(t.shape, s.gamma.shape)) {
      failer(op)(name, shapeRule(t, "gamma", s.gamma.shape));
    }
  }
}
