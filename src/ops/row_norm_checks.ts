/**
 * Checks shared by the LayerNorm / RMSNorm operators, whose normalized dims are the trailing
 * ones: rank limits, the normalized shape, the shape of per-row statistics, the errors of
 * CANN's tiling functions (RmsNorm's 561002, AddRmsNorm's 561103) and of l0op::ViewCopy
 * (561103), each naming the operator, the argument and the rule.
 *
 * @module
 */

import { z } from "./zod.ts";
import { AclnnError } from "../errors.ts";
import { formatShape } from "../tensor/layout.ts";
import type { Device } from "../tensor/device.ts";
import { Tensor } from "../tensor/tensor.ts";
import type { Backend } from "../backends/mod.ts";
import { checkWrites, invalid, placeCall } from "./validate.ts";

/** ACLNN_ERR_INNER_TILING_ERROR: a generated operator's tiling function refused the call. */
export const TILING_ERROR = 561002;
/**
 * ACLNN_ERR_INNER_NULLPTR: an l0 operator returned no result (its tiling failed, or
 * l0op::ViewCopy refused the output).
 */
export const INNER_NULLPTR = 561103;
/** The rank limit of every tensor of these operators (MAX_DIM_LEN / MAX_SUPPORT_DIMS_NUMS). */
export const MAX_RANK = 8;

/** Throws AclnnError `code` (a tiling failure): `op: argument rule`. */
export function tilingFailure(op: string, code: number, argument: string, rule: string): never {
  throw new AclnnError(code, `${op}: ${argument} ${rule}`, { argument });
}

/** LayerNorm's normalizedShape: an array of integers (its length is checked in CANN's order). */
export const normalizedShapeSchema: z.ZodArray<z.ZodNumber> = z.array(
  z.number({ invalid_type_error: "entries must be integers" }).int("entries must be integers")
    .safe("entries must be safe integers"),
  { required_error: "is required", invalid_type_error: "must be an array of integers" },
);

/** A finite epsilon (its sign is checked where CANN checks it) with a default. */
export function epsilonSchema(fallback: number): z.ZodDefault<z.ZodNumber> {
  return z.number({ invalid_type_error: "must be a number" }).finite("must be finite")
    .default(fallback);
}

/** OP_CHECK_MAX_DIM: rank at most {@linkcode MAX_RANK} (161002). */
export function checkMaxRank(op: string, name: string, t: Tensor | undefined): void {
  if (t && t.rank > MAX_RANK) {
    invalid(op, name, `rank ${t.rank} (shape ${formatShape(t.shape)}) must be at most ${MAX_RANK}`);
  }
}

/** `input` must have at least `len` (len(normalizedShape)) dims: 161002 naming `input`. */
export function checkNormalizedRank(op: string, input: Tensor, len: number): void {
  if (input.rank < len) {
    invalid(
      op,
      "input",
      `rank ${input.rank} (shape ${formatShape(input.shape)}) must be at least ` +
        `len(normalizedShape) = ${len}`,
    );
  }
}

/**
 * The first normalized axis of `input`, once `normalizedShape` equals its last dims (161002
 * naming `normalizedShape` otherwise); `input` has at least as many dims (checked before).
 */
export function normalizedAxis(
  op: string,
  input: Tensor,
  normalizedShape: readonly number[],
): number {
  const len = normalizedShape.length;
  const axis = input.rank - len;
  const trailing = input.shape.slice(axis);
  if (normalizedShape.some((d, i) => d !== trailing[i])) {
    invalid(
      op,
      "normalizedShape",
      `${formatShape(normalizedShape)} must equal input's last ${len} dims ` +
        `${formatShape(trailing)} (input shape ${formatShape(input.shape)})`,
    );
  }
  return axis;
}

/**
 * The shape of per-row statistics as torch_npu allocates them (Ascend/op-plugin
 * LayerNormKernelNpuOpApi.cpp): the dims before `axis`, then 1 for each normalized dim; `[0]`
 * when there are no rows.
 */
export function statisticsShape(shape: readonly number[], axis: number, rows: number): number[] {
  if (rows === 0) return [0];
  return shape.map((d, i) => (i < axis ? d : 1));
}

/**
 * A per-row statistics output allocated as torch_npu allocates it: float32, of
 * {@linkcode statisticsShape} for `input` normalized from `geometry.axis` on.
 */
export function newStatistic(
  input: Tensor,
  geometry: { readonly axis: number; readonly rows: number },
  device: Device,
): Tensor {
  return Tensor.empty(
    statisticsShape(input.shape, geometry.axis, geometry.rows),
    "float32",
    device,
  );
}

/**
 * l0op::ViewCopy of an operator's result of shape `want` into output `t` (hicann/ops-math
 * `conversion/contiguous/op_host/op_api/contiguous.cpp:634-678`, CheckViewCopyParams): the view
 * shapes must be equal unless both hold one element, else ViewCopy returns nullptr and the
 * operator 561103 naming `name` (the dtype matches: the operators cast the result first).
 */
export function checkViewCopy(op: string, name: string, t: Tensor, want: readonly number[]): void {
  const same = t.rank === want.length && t.shape.every((d, i) => d === want[i]);
  if (same || (t.numel === 1 && want.reduce((p, d) => p * d, 1) === 1)) return;
  tilingFailure(
    op,
    INNER_NULLPTR,
    name,
    `shape ${formatShape(t.shape)} must be the result's ${formatShape(want)} (or, as the ` +
      "result, hold one element): CANN's l0op::ViewCopy refuses another shape",
  );
}

/**
 * The rstd output of aclnnRmsNorm (a generated operator: no ViewCopy): at most 8 dims, each dim
 * non-zero and 1 or x's dim at the same index (rms_norm_tiling.cpp CheckInputShape4RmsNorm,
 * `code`), and one value per row (the kernel writes rows values in row-major order: 161002).
 */
export function checkRowStatistic(
  op: string,
  code: number,
  name: string,
  t: Tensor,
  x: Tensor,
  rows: number,
): void {
  for (let i = 0; i < t.rank; i++) {
    const d = t.shape[i];
    if (d === 0) tilingFailure(op, code, name, `shape ${formatShape(t.shape)} must not be empty`);
    const xd = i < x.rank ? x.shape[i] : 1;
    if (d !== 1 && d !== xd) {
      tilingFailure(
        op,
        code,
        name,
        `shape ${formatShape(t.shape)}: dim ${i} must be 1 or x's dim ${i} (${xd})`,
      );
    }
  }
  if (t.numel !== rows) {
    invalid(
      op,
      name,
      `shape ${formatShape(t.shape)} must hold one value per row (${rows} rows of x ` +
        `${formatShape(x.shape)})`,
    );
  }
}

/** Whether `inner` equals the trailing dims of `shape`. */
export function isTrailing(shape: readonly number[], inner: readonly number[]): boolean {
  const axis = shape.length - inner.length;
  return axis >= 0 && inner.every((d, i) => d === shape[axis + i]);
}

/**
 * gamma's shape must be the last dims of data tensor `name`'s (`t`): the RMSNorm family's
 * tiling check, failing with `code` naming gamma.
 */
export function checkTrailingGamma(
  op: string,
  code: number,
  gamma: Tensor,
  name: string,
  t: Tensor,
): void {
  if (!isTrailing(t.shape, gamma.shape)) {
    tilingFailure(
      op,
      code,
      "gamma",
      `shape ${formatShape(gamma.shape)} must equal the last ${gamma.rank} dims of ${name} ` +
        formatShape(t.shape),
    );
  }
}

/**
 * The device step of a row norm's validation: no output may overlap another or an input
 * (checkWrites), every tensor (inputs first, then outputs) is on one device, and that device's
 * backend accepts them with the row geometry as scalars `rows`, `cols` and `axis` (the first
 * normalized dim).
 */
export function placeRowNorm(
  op: string,
  written: Readonly<Record<string, Tensor | undefined>>,
  read: Readonly<Record<string, Tensor | undefined>>,
  scalars: { readonly rows: number; readonly cols: number; readonly axis: number },
): { device: Device; backend: Backend } {
  checkWrites(op, written, read);
  const all = { ...read, ...written };
  return placeCall(op, all, { rows: scalars.rows, cols: scalars.cols, axis: scalars.axis });
}

/** Writes `value` to every element of `t` (CANN's ProcessEmptyTensorWithValue, a fill). */
export function fillAll(t: Tensor, value: number): void {
  if (t.numel > 0) t.copy_(new Float64Array(t.numel).fill(value));
}
