/**
 * Checks shared by every operator. Each throws an {@linkcode AclnnError} whose message names
 * the operator, the argument and the rule: 161001 for a missing required tensor, 161002 for
 * every other documented violation. The CPU and NPU backends both run these first, so they
 * reject the same inputs with the same codes.
 *
 * @module
 */

import { z } from "./zod.ts";
import { ScalarMemo } from "./scalar_memo.ts";
import {
  ACLNN_ERR_PARAM_INVALID,
  ACLNN_ERR_PARAM_NULLPTR,
  AclnnError,
  type InfiniStatus,
} from "../errors.ts";
import { type Backend, backendFor } from "../backends/mod.ts";
import type { Device } from "../tensor/device.ts";
import { deviceName } from "../tensor/device.ts";
import { type DType, FLOAT_DTYPES } from "../tensor/dtype.ts";
import { formatShape, sameDims } from "../tensor/layout.ts";

/** Whether two shapes are equal dim by dim, for the checks here (`check.sameShape`). */
export { sameDims as sameShape } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import { heapFreed } from "../tensor/host_heap.ts";
import { storageDisposed } from "../tensor/storage.ts";
import { unknownName } from "./known_names.ts";
import { hasInternalOverlap, overlaps, sameView } from "./overlap.ts";

/** A tensor argument as callers may pass it. */
export type MaybeTensor = Tensor | null | undefined;

/** Throws 161002: `op: argument rule`. */
export function invalid(op: string, argument: string, rule: string): never {
  throw new AclnnError(ACLNN_ERR_PARAM_INVALID, `${op}: ${argument} ${rule}`, { argument });
}

/**
 * Throws for a null pointer: `op: argument is required ... but is missing`. The code is
 * 161001 unless the operator returns another one for it (aclnnBatchNormElemt and
 * aclnnGroupNormBackward's outputs return 161002 in CANN's code, whatever their docs say).
 */
export function missing(
  op: string,
  argument: string,
  why = "is required",
  code: number = ACLNN_ERR_PARAM_NULLPTR,
): never {
  throw new AclnnError(code, `${op}: ${argument} ${why} but is missing`, { argument });
}

/**
 * Throws an error of the InfiniOp descriptor API: 161001 for status `NULL_POINTER`, 161002
 * otherwise, with `status` set.
 */
export function invalidStatus(
  op: string,
  argument: string,
  rule: string,
  status: InfiniStatus,
): never {
  const code = status === "NULL_POINTER" ? ACLNN_ERR_PARAM_NULLPTR : ACLNN_ERR_PARAM_INVALID;
  throw new AclnnError(code, `${op}: ${argument} ${rule} (${status})`, { argument, status });
}

function checkIsTensor(op: string, name: string, value: unknown): Tensor {
  if (!Tensor.isTensor(value)) {
    const what = typeof value === "object" && value !== null
      ? `an object that is not a Tensor made by this package`
      : typeof value;
    invalid(op, name, `must be a Tensor (got ${what})`);
  }
  const problem = value.storageProblem();
  if (problem !== undefined) invalid(op, name, `is not usable: its ${problem}`);
  return value;
}

/**
 * Tensors a call writes must not share memory with each other, with themselves (a stride 0 on
 * an expanded view), or with the tensors it reads: PyTorch refuses such calls ("unsupported
 * operation: more than one element of the written-to tensor refers to a single memory
 * location"), and so do both backends here, with 161002 naming the written tensor. `inPlace`
 * lists the [written, read] pairs an operator documents as in-place: those may be the very
 * same view (not a partial overlap).
 */
export function checkWrites(
  op: string,
  written: Readonly<Record<string, Tensor | undefined>>,
  read: Readonly<Record<string, Tensor | undefined>>,
  inPlace: readonly (readonly [string, string])[] = [],
): void {
  const writes = Object.entries(written).filter(([, t]) => t !== undefined) as [string, Tensor][];
  const reads = Object.entries(read).filter(([, t]) => t !== undefined) as [string, Tensor][];
  for (let i = 0; i < writes.length; i++) {
    const [name, t] = writes[i];
    if (hasInternalOverlap(t)) {
      invalid(
        op,
        name,
        `has elements that share memory (strides ${formatShape(t.strides)} for shape ` +
          `${formatShape(t.shape)}): more than one element of the written-to tensor would ` +
          `refer to a single memory location`,
      );
    }
    for (let j = 0; j < i; j++) {
      const [other, o] = writes[j];
      if (overlaps(t, o)) invalid(op, name, `shares memory with ${other}, which is also written`);
    }
    for (const [other, o] of reads) {
      if (!overlaps(t, o)) continue;
      const allowed = inPlace.some(([w, r]) => w === name && r === other) && sameView(t, o);
      if (!allowed) {
        invalid(
          op,
          name,
          `shares memory with the input ${other} (outputs must not overlap inputs)`,
        );
      }
    }
  }
}

/**
 * The argument object of an operator: calling one without it (or with `null`) is 161001
 * naming `args`, not a TypeError from reading a property of undefined.
 */
export function argumentsOf<T extends object>(op: string, args: T | null | undefined): T {
  if (args === undefined || args === null) missing(op, "args", "(the argument object) is required");
  if (typeof args !== "object") invalid(op, "args", `must be an object (got ${typeof args})`);
  return args;
}

/** A required tensor: missing is `nullCode` (161001), anything but a Tensor is 161002. */
export function requireTensor(
  op: string,
  name: string,
  value: unknown,
  nullCode: number = ACLNN_ERR_PARAM_NULLPTR,
): Tensor {
  if (value === undefined || value === null) missing(op, name, "is required", nullCode);
  return checkIsTensor(op, name, value);
}

/** An optional tensor: undefined/null give undefined. */
export function optionalTensor(op: string, name: string, value: unknown): Tensor | undefined {
  if (value === undefined || value === null) return undefined;
  return checkIsTensor(op, name, value);
}

/**
 * An output that a mask asks for, from the call's `out` argument (undefined or null: none
 * given): an explicit `null` entry is 161001 (aclnn's "output is a null pointer while its mask
 * is true"); undefined means "allocate one".
 */
export function requestedOutput(
  op: string,
  name: string,
  out: object | null | undefined,
  mask: boolean,
  nullCode: number = ACLNN_ERR_PARAM_NULLPTR,
): Tensor | undefined {
  if (!mask || out === undefined || out === null) return undefined;
  const value = (out as Record<string, unknown>)[name];
  if (value === null) missing(op, name, "is requested by the output mask", nullCode);
  if (value === undefined) return undefined;
  return checkIsTensor(op, name, value);
}

/** dtype must be one of `allowed`. */
export function checkDType(op: string, name: string, t: Tensor, allowed: readonly DType[]): void {
  if (!allowed.includes(t.dtype)) {
    invalid(op, name, `dtype ${t.dtype} is not supported (supported: ${allowed.join(", ")})`);
  }
}

/** `t.dtype` must equal `other.dtype`. */
export function checkSameDType(
  op: string,
  name: string,
  t: Tensor,
  otherName: string,
  other: Tensor,
): void {
  if (t.dtype !== other.dtype) {
    invalid(op, name, `dtype ${t.dtype} must equal ${otherName} dtype ${other.dtype}`);
  }
}

/** Rank must lie in [min, max]. */
export function checkRank(op: string, name: string, t: Tensor, min: number, max: number): void {
  if (t.rank < min || t.rank > max) {
    invalid(op, name, `rank ${t.rank} (shape ${formatShape(t.shape)}) must be in ${min}..${max}`);
  }
}

/** numel must equal `expected`; `what` says where the number comes from. */
export function checkNumel(
  op: string,
  name: string,
  t: Tensor,
  expected: number,
  what: string,
): void {
  if (t.numel !== expected) {
    invalid(
      op,
      name,
      `must have ${what} = ${expected} elements (shape ${formatShape(t.shape)} has ${t.numel})`,
    );
  }
}

/**
 * A per-channel tensor must have shape exactly `[C]`: CANN rejects `[1, C]` (or any other
 * shape with C elements) with 161002 (ops-nn aclnn_batch_norm.cpp CheckOtherShape and its
 * siblings), so both backends do. `allowEmpty` also accepts `[0]` (e.g. BatchNorm backward's
 * saved statistics in evaluation mode).
 */
export function checkPerChannelShape(
  op: string,
  name: string,
  t: Tensor,
  channels: number,
  allowEmpty = false,
): void {
  if (t.rank === 1 && (t.shape[0] === channels || (allowEmpty && t.shape[0] === 0))) return;
  const want = allowEmpty ? `[${channels}] (or [0] when training is false)` : `[${channels}]`;
  invalid(
    op,
    name,
    `shape ${formatShape(t.shape)} must be ${want}: one value per channel, C = input dim 1`,
  );
}

/** Shape must equal `shape`. */
export function checkShape(
  op: string,
  name: string,
  t: Tensor,
  shape: readonly number[],
  otherName: string,
): void {
  if (!sameDims(t.shape, shape)) {
    invalid(
      op,
      name,
      `shape ${formatShape(t.shape)} must equal ${otherName} shape ${formatShape(shape)}`,
    );
  }
}

/** The channel count C (input dim 1) must not be 0. */
export function checkChannelsNonZero(op: string, channels: number): void {
  if (channels === 0) invalid(op, "input", "channel dim (dim 1) must not be 0");
}

/**
 * GroupNorm geometry: N, C and HxW must not be negative, group must be > 0 and divide C
 * (checked in that order).
 */
export function checkGroupGeometry(
  op: string,
  dims: { N: number; C: number; HxW: number },
  group: number,
): void {
  for (const [name, v] of Object.entries(dims)) {
    if (v < 0) invalid(op, name, `(${v}) must not be negative`);
  }
  if (group <= 0) invalid(op, "group", `(${group}) must be greater than 0`);
  if (dims.C % group !== 0) invalid(op, "group", `(${group}) must divide C (${dims.C})`);
}

/**
 * The first checks of a BatchNorm forward operator, in CANN's order: every tensor of `all` has
 * a float dtype, `output` (when given) has input's dtype, input has rank 2-8, and output has
 * input's shape.
 */
export function checkChannelData(
  op: string,
  all: Readonly<Record<string, Tensor | undefined>>,
  input: Tensor,
  output: Tensor | undefined,
): void {
  for (const [name, t] of Object.entries(all)) if (t) checkDType(op, name, t, FLOAT_DTYPES);
  if (output) checkSameDType(op, "output", output, "input", input);
  checkRank(op, "input", input, 2, 8);
  if (output) checkShape(op, "output", output, input.shape, "input");
}

/**
 * The one device all given tensors live on. Tensors on different devices are 161002;
 * undefined entries are skipped.
 */
export function commonDevice(op: string, tensors: Record<string, Tensor | undefined>): Device {
  let device: Device | undefined;
  let first = "";
  for (const [name, t] of Object.entries(tensors)) {
    if (!t) continue;
    if (t.device === "cpu" && heapFreed(t.storage)) {
      invalid(op, name, "was disposed: its host memory went back to the host heap");
    }
    if (t.device !== "cpu" && storageDisposed(t.storage)) {
      invalid(op, name, "was disposed: its device memory was released");
    }
    if (device === undefined) {
      device = t.device;
      first = name;
    } else if (t.device !== device) {
      invalid(op, name, `is on ${deviceName(t.device)} but ${first} is on ${deviceName(device)}`);
    }
  }
  return device ?? "cpu";
}

/**
 * The backend that runs `device`, after its device-specific rules (e.g. the dtypes a SoC
 * supports) have accepted the call's tensors. Call it once validation is done and before
 * any output is allocated, so a rejected call leaves nothing behind.
 */
export function backendChecked(
  op: string,
  device: Device,
  tensors: Readonly<Record<string, Tensor | undefined>>,
  scalars?: Readonly<Record<string, number>>,
): Backend {
  const backend = backendFor(op, device);
  backend.rules?.check(op, device, tensors, scalars);
  return backend;
}

/**
 * Where a validated call runs: the one device of `tensors` ({@linkcode commonDevice}) and its
 * backend once that backend's rules have accepted them ({@linkcode backendChecked}).
 */
export function placeCall(
  op: string,
  tensors: Readonly<Record<string, Tensor | undefined>>,
  scalars?: Readonly<Record<string, number>>,
): { device: Device; backend: Backend } {
  const device = commonDevice(op, tensors);
  return { device, backend: backendChecked(op, device, tensors, scalars) };
}

/** The last parse of each scalar schema (scalar_memo.ts). */
const scalarMemo = new ScalarMemo<z.ZodTypeAny>();

/**
 * Parses scalar arguments with a zod schema; any issue is 161002 naming the argument. A strict
 * object schema's unknown field is refused naming the field and the closest name the schema
 * declares (`unknown option "epsilon" for LayerNorm; did you mean "eps"? ...`).
 */
export function parseScalars<S extends z.ZodTypeAny>(
  op: string,
  schema: S,
  value: unknown,
): z.infer<S> {
  const repeated = scalarMemo.get(schema, value);
  if (repeated !== undefined) return repeated as z.infer<S>;
  const result = schema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    if (issue.code === "unrecognized_keys" && schema instanceof z.ZodObject) {
      unknownName(op, issue.keys[0], Object.keys(schema.shape));
    }
    const name = issue.path.join(".") || "arguments";
    invalid(op, name, issue.message);
  }
  scalarMemo.set(schema, value, result.data);
  return result.data;
}

/**
 * Parses the arguments a zod object schema declares, each read from `args` under its own name
 * (other properties are not read); any issue is 161002 naming the argument.
 */
export function parseArguments<S extends z.AnyZodObject>(
  op: string,
  schema: S,
  args: object,
): z.infer<S> {
  const given = args as Record<string, unknown>;
  const picked: Record<string, unknown> = {};
  for (const key of Object.keys(schema.shape)) picked[key] = given[key];
  return parseScalars(op, schema, picked);
}

/** A boolean flag that defaults to true. */
export const flag: z.ZodDefault<z.ZodBoolean> = z.boolean({
  invalid_type_error: "must be a boolean",
}).default(true);

/** A finite number (eps, momentum). */
export const finiteNumber: z.ZodNumber = z.number({ invalid_type_error: "must be a number" })
  .finite(
    "must be finite",
  );

/**
 * eps of every operator: a finite number > 0 (GroupNorm's CANN check; the BatchNorm operators
 * take the same rule, since eps <= 0 gives an infinite invstd for a constant channel).
 */
export const epsilon: z.ZodDefault<z.ZodNumber> = z.number({
  invalid_type_error: "must be a number",
}).finite("must be finite").gt(0, "must be greater than 0").default(1e-5);

/** The required `training` flag of the BatchNorm operators. */
export const trainingFlag: z.ZodBoolean = z.boolean({
  required_error: "is required (a boolean)",
  invalid_type_error: "must be a boolean",
});

/** GroupNorm's required `group` count (its range is checked by {@linkcode checkGroupGeometry}). */
export const groupCount: z.ZodNumber = z.number({
  required_error: "is required (an integer > 0)",
  invalid_type_error: "must be an integer",
}).int("must be an integer").safe("must be a safe integer");

/**
 * An outputMask of exactly 3 booleans, default all true; `outputs` names the three outputs
 * in order for the length message, e.g. `"gradInput, gradWeight, gradBias"`.
 */
export function outputMask(outputs: string): z.ZodDefault<z.ZodArray<z.ZodBoolean>> {
  return z.array(z.boolean({ invalid_type_error: "entries must be booleans" }), {
    invalid_type_error: "must be an array of 3 booleans",
  }).length(3, `must have exactly 3 entries (${outputs})`).default([true, true, true]);
}

/** An integer that CANN passes as int64_t. */
export const int64: z.ZodNumber = z.number({ invalid_type_error: "must be an integer" }).int(
  "must be an integer",
).safe("must be a safe integer");
