/**
 * Checks shared by every operator. Each throws an {@linkcode AclnnError} whose message names
 * the operator, the argument and the rule: 161001 for a missing required tensor, 161002 for
 * every other documented violation. The CPU and NPU backends both run these first, so they
 * reject the same inputs with the same codes.
 *
 * @module
 */

import { z } from "zod";
import {
  ACLNN_ERR_PARAM_INVALID,
  ACLNN_ERR_PARAM_NULLPTR,
  AclnnError,
  type InfiniStatus,
} from "../ffi/errors.ts";
import type { Device } from "../tensor/device.ts";
import { deviceName } from "../tensor/device.ts";
import type { DType } from "../tensor/dtype.ts";
import { formatShape } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";

/** A tensor argument as callers may pass it. */
export type MaybeTensor = Tensor | null | undefined;

/** Throws 161002: `op: argument rule`. */
export function invalid(op: string, argument: string, rule: string): never {
  throw new AclnnError(ACLNN_ERR_PARAM_INVALID, `${op}: ${argument} ${rule}`, { argument });
}

/** Throws 161001: `op: argument is required ...`. */
export function missing(op: string, argument: string, why = "is required"): never {
  throw new AclnnError(ACLNN_ERR_PARAM_NULLPTR, `${op}: ${argument} ${why} but is missing`, {
    argument,
  });
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
  if (!(value instanceof Tensor)) invalid(op, name, `must be a Tensor (got ${typeof value})`);
  return value;
}

/** A required tensor: missing is 161001, anything but a Tensor is 161002. */
export function requireTensor(op: string, name: string, value: unknown): Tensor {
  if (value === undefined || value === null) missing(op, name);
  return checkIsTensor(op, name, value);
}

/** An optional tensor: undefined/null give undefined. */
export function optionalTensor(op: string, name: string, value: unknown): Tensor | undefined {
  if (value === undefined || value === null) return undefined;
  return checkIsTensor(op, name, value);
}

/**
 * An output that a mask asks for: an explicit `null` in `out` is 161001 (aclnn's "output is a
 * null pointer while its mask is true"); undefined means "allocate one".
 */
export function requestedOutput(
  op: string,
  name: string,
  out: Record<string, unknown> | undefined,
  mask: boolean,
): Tensor | undefined {
  if (!mask || out === undefined) return undefined;
  const value = out[name];
  if (value === null) missing(op, name, "is requested by the output mask");
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

/** Shape must equal `shape`. */
export function checkShape(
  op: string,
  name: string,
  t: Tensor,
  shape: readonly number[],
  otherName: string,
): void {
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
    invalid(
      op,
      name,
      `shape ${formatShape(t.shape)} must equal ${otherName} shape ${formatShape(shape)}`,
    );
  }
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
 * Parses scalar arguments with a zod schema; any issue is 161002 naming the argument.
 */
export function parseScalars<S extends z.ZodTypeAny>(
  op: string,
  schema: S,
  value: unknown,
): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    const name = issue.path.join(".") || "arguments";
    invalid(op, name, issue.message);
  }
  return result.data;
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

/** An integer that CANN passes as int64_t. */
export const int64: z.ZodNumber = z.number({ invalid_type_error: "must be an integer" }).int(
  "must be an integer",
).safe("must be a safe integer");

/** Reads a per-channel (or per-group) tensor as float64, or a constant when absent. */
export function valuesOr(t: Tensor | undefined, length: number, fill: number): Float64Array {
  return t ? t.toFloat64Array() : new Float64Array(length).fill(fill);
}
