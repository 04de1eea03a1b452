/**
 * The last parse of each scalar schema: an operator's flags, scalars and masks (training, eps,
 * outputMask, normalizedShape) are the same call after call while its tensors change (a
 * training step's activations are new tensors every step, an epoch's last batch or a new
 * sequence length a new shape), and the validation memo (memo.ts), keyed on the tensors too,
 * misses on every such call. The zod parse was then a quarter of the validation in a training
 * step (bench:step's model: 35 us of validation a call), and a parse that runs seldom stays in
 * V8's interpreter: 30-70 us cold against 1.5 us warm, the largest part of a new shape's first
 * call (bench/RESULTS.md, tenth session).
 *
 * So a schema that parsed equal values gives its last result again: a {@linkcode ValidationMemo}
 * per schema, keyed on the own keys in order and each value as the validation memo keys it
 * (memo.ts `pushValueKeys`: arrays by their elements). Only values that are primitives or
 * arrays of primitives are remembered (a tensor or another object always parses), and only
 * results of the same kinds; the result's arrays are copied in and out, so that a caller who
 * changes the array it got back changes nothing here.
 *
 * A parse is a pure function of the values, so a repeated one cannot give another result; and
 * a parse that failed is never recorded (its error is thrown again on the next call).
 *
 * @module
 */

import { pushValueKeys, ValidationMemo } from "./memo.ts";

/** Whether `v` is a value a later call cannot change in place (no object, no function). */
function primitive(v: unknown): boolean {
  return v === null || (typeof v !== "object" && typeof v !== "function");
}

/** Whether `v` is a primitive or an array of primitives. */
function plain(v: unknown): boolean {
  return primitive(v) || (Array.isArray(v) && v.every(primitive));
}

/** A plain object (not an array), as parsers take and give them. */
function record(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `data` with its arrays copied (its values {@linkcode plain}). */
function copied(data: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const key in data) {
    const v = data[key];
    copy[key] = Array.isArray(v) ? [...v] : v;
  }
  return copy;
}

/** The memo keys of `value`'s own entries: each key, then its value's keys. */
function entryKeys(value: Record<string, unknown>): unknown[] {
  const keys: unknown[] = [];
  for (const key of Object.keys(value)) {
    keys.push(key);
    pushValueKeys(keys, value[key]);
  }
  return keys;
}

/** The last parses, by schema (a schema is a module-level constant: the map stays small). */
export class ScalarMemo<S extends object> {
  readonly #last = new WeakMap<S, ValidationMemo<Record<string, unknown>>>();

  /** What `schema` parsed from values equal to `value`'s, as a fresh copy, or undefined. */
  get(schema: S, value: unknown): Record<string, unknown> | undefined {
    const memo = this.#last.get(schema);
    if (memo === undefined || !record(value)) return undefined;
    const data = memo.get(entryKeys(value));
    return data && copied(data);
  }

  /**
   * Records that `schema` parsed `value` into `data`, when both are objects whose values are
   * all primitives or arrays of primitives; otherwise forgets the schema's last parse.
   */
  set(schema: S, value: unknown, data: unknown): void {
    if (
      !record(value) || !record(data) || !Object.values(value).every(plain) ||
      !Object.values(data).every(plain)
    ) {
      this.#last.delete(schema);
      return;
    }
    let memo = this.#last.get(schema);
    if (memo === undefined) this.#last.set(schema, memo = new ValidationMemo());
    memo.set(entryKeys(value), copied(data));
  }
}
