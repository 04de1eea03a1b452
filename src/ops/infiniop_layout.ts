/**
 * The tensor layouts of the InfiniOp-style BatchNormBackward descriptor: reading a descriptor
 * argument (a Tensor or `{ dtype, shape, strides? }`), comparing strides, and the aliasing
 * rules of its outputs. Errors carry the InfiniOp status names (see
 * infiniop_batch_norm_backward.ts).
 *
 * @module
 */

import { type DType, isDType } from "../tensor/dtype.ts";
import { contiguousStrides, shapeProblem } from "../tensor/layout.ts";
import { storageDisposed } from "../tensor/storage.ts";
import { Tensor } from "../tensor/tensor.ts";
import { hasInternalOverlap, overlaps, sameView } from "./overlap.ts";
import { invalidStatus as fail } from "./validate.ts";

/** The descriptor's two entry points, as InfiniOp names them (for messages). */
export const CREATE = "infiniopCreateBatchNormBackwardDescriptor";
/** See {@linkcode CREATE}. */
export const COMPUTE = "infiniopBatchNormBackward";
/** See {@linkcode CREATE}. */
export const DESTROY = "infiniopDestroyBatchNormBackwardDescriptor";

/** A tensor descriptor as the descriptor keeps it: dtype, shape and strides. */
export interface Layout {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly strides: readonly number[];
}

/** The tensors of an InfiniOp BatchNormBackward call, in its argument order. */
export const NAMES = [
  "gradInput",
  "gradWeight",
  "gradBias",
  "input",
  "gradOutput",
  "weight",
  "runningMean",
  "runningVar",
] as const;
/** One of {@linkcode NAMES}. */
export type Name = typeof NAMES[number];
/** The (N, C, L) tensors. */
export const DATA: readonly Name[] = ["gradInput", "gradOutput", "input"];

/** The layout of a descriptor argument: a Tensor or `{ dtype, shape, strides? }`. */
export function layoutOf(name: Name, value: unknown): Layout {
  if (value === undefined || value === null) {
    fail(CREATE, name, "descriptor is required but is missing", "NULL_POINTER");
  }
  if (value instanceof Tensor) {
    return { dtype: value.dtype, shape: value.shape, strides: value.strides };
  }
  if (typeof value !== "object") {
    fail(CREATE, name, "must be a Tensor or { dtype, shape, strides? }", "BAD_PARAM");
  }
  const d = value as Partial<{ dtype: DType; shape: number[]; strides: number[] }>;
  if (!isDType(d.dtype)) {
    fail(CREATE, name, `dtype ${String(d.dtype)} is unknown`, "BAD_TENSOR_DTYPE");
  }
  const problem = shapeProblem(d.shape as number[]);
  if (problem) fail(CREATE, name, `shape is invalid: ${problem}`, "BAD_TENSOR_SHAPE");
  const shape = [...d.shape!];
  if (d.strides === undefined) return { dtype: d.dtype, shape, strides: contiguousStrides(shape) };
  const strides = d.strides;
  if (
    !Array.isArray(strides) || strides.length !== shape.length ||
    strides.some((s) => !Number.isSafeInteger(s) || s < 0)
  ) {
    fail(
      CREATE,
      name,
      `strides ${String(strides)} must be ${shape.length} integers >= 0`,
      "BAD_TENSOR_STRIDES",
    );
  }
  return { dtype: d.dtype, shape, strides: [...strides] };
}

/** A tensor given to compute: a Tensor (BAD_PARAM otherwise) whose memory was not freed. */
export function checkComputeTensor(name: Name, value: unknown): asserts value is Tensor {
  if (!(value instanceof Tensor)) fail(COMPUTE, name, "must be a Tensor", "BAD_PARAM");
  if (storageDisposed(value.storage)) {
    fail(COMPUTE, name, "was disposed: its memory was freed (dispose() or tidy)", "BAD_PARAM");
  }
}

/** Strides agree on every dim that has more than one element. */
export function sameStrides(shape: readonly number[], a: readonly number[], b: readonly number[]) {
  return shape.every((d, i) => d <= 1 || a[i] === b[i]);
}

const WRITTEN: readonly Name[] = ["gradInput", "gradWeight", "gradBias"];

/**
 * The outputs must not share memory with each other, themselves or the inputs, except
 * gradInput over gradOutput as the very same view (the in-place use InfiniOp documents).
 */
export function checkAliasing(t: Record<Name, Tensor>): void {
  for (const [i, name] of WRITTEN.entries()) {
    const out = t[name];
    if (hasInternalOverlap(out)) {
      fail(COMPUTE, name, "has elements that share memory (a stride 0?)", "BAD_TENSOR_STRIDES");
    }
    for (const other of NAMES) {
      if (other === name || (WRITTEN.indexOf(other) > i) || !overlaps(out, t[other])) continue;
      if (name === "gradInput" && other === "gradOutput" && sameView(out, t[other])) continue;
      fail(COMPUTE, name, `shares memory with ${other}`, "BAD_PARAM");
    }
  }
}
