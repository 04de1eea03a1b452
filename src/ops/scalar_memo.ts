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
 * So a schema that parsed equal values gives its last result again. Equal: the same own keys in
 * the same order, each value `Object.is` the last one's, or both arrays of the same length whose
 * elements are. Only values that are primitives or arrays of primitives are remembered (a
 * tensor or another object always parses), and only results of the same kinds; arrays are
 * copied in and out, so that a caller who changes the array it passed, or the one it got
 * back, changes nothing here.
 *
 * A parse is a pure function of the values, so a repeated one cannot give another result; and
 * a parse that failed is never recorded (its error is thrown again on the next call).
 *
 * @module
 */

/** A primitive, or an array of primitives (copied). */
type Plain = unknown;

/** One schema's last successful parse. */
interface LastParse {
  readonly keys: readonly string[];
  readonly values: readonly Plain[];
  readonly data: Readonly<Record<string, Plain>>;
}

/** Whether `v` is a value a later call cannot change in place (no object, no function). */
function primitive(v: unknown): boolean {
  return v === null || (typeof v !== "object" && typeof v !== "function");
}

/** Whether `v` is a primitive or an array of primitives. */
function plain(v: unknown): boolean {
  return primitive(v) || (Array.isArray(v) && v.every(primitive));
}

/** `v`, an array copied (a {@linkcode plain} value). */
function copied(v: Plain): Plain {
  return Array.isArray(v) ? [...v] : v;
}

/** Whether plain `a` equals `b`: `Object.is`, or arrays of `Object.is` elements. */
function same(a: Plain, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

/** A plain object (not an array), as parsers take and give them. */
function record(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The last parses, by schema (a schema is a module-level constant: the map stays small). */
export class ScalarMemo<S extends object> {
  readonly #last = new WeakMap<S, LastParse>();

  /** What `schema` parsed from values equal to `value`'s, as a fresh copy, or undefined. */
  get(schema: S, value: unknown): Record<string, unknown> | undefined {
    const last = this.#last.get(schema);
    if (last === undefined || !record(value)) return undefined;
    const keys = Object.keys(value);
    if (keys.length !== last.keys.length) return undefined;
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] !== last.keys[i] || !same(last.values[i], value[keys[i]])) return undefined;
    }
    const data: Record<string, unknown> = {};
    for (const key in last.data) data[key] = copied(last.data[key]);
    return data;
  }

  /**
   * Records that `schema` parsed `value` into `data`, when both are objects whose values are
   * all primitives or arrays of primitives; otherwise forgets the schema's last parse.
   */
  set(schema: S, value: unknown, data: unknown): void {
    if (!record(value) || !record(data)) {
      this.#last.delete(schema);
      return;
    }
    const keys = Object.keys(value);
    const values = keys.map((k) => value[k]);
    if (!values.every(plain) || !Object.values(data).every(plain)) {
      this.#last.delete(schema);
      return;
    }
    const kept: Record<string, Plain> = {};
    for (const key in data) kept[key] = copied(data[key]);
    this.#last.set(schema, { keys, values: values.map(copied), data: kept });
  }
}
