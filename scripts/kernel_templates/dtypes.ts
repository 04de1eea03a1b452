/**
 * The dtype parameters of the kernel templates (the role `AT_DISPATCH` plays for ATen's
 * templates): everything a kernel does differently per element type. V8 keeps a typed-array
 * access fast only while it sees one array type, so every (family, dtype) pair is emitted as
 * a function of its own, and the drivers pick one through kernel_tables.ts by dtype code.
 *
 * - Reading: float32 loads a `Float32Array` element as is; float16 and bfloat16 load the
 *   bits from a `Uint16Array` and decode them through a 65536-entry table
 *   (`decodeTable` in codecs.ts), which also makes both 16-bit types one code path.
 * - Writing: float32 stores into a `Float32Array` and float16 into a `Float16Array` (both
 *   round once, natively, to nearest even); bfloat16 stores its results into a float32 block
 *   first and rounds the bits in a second loop (`bf16Block`/`bf16Exact` in codecs.ts).
 *
 * @module
 */

/** How a kernel stores its results: natively, or through the bfloat16 block. */
export type StoreKind = "native" | "bf16Block";

/** One element type, as the templates see it. */
export interface KernelDtype {
  /** The kernel name's suffix. */
  readonly suffix: "F32" | "U16" | "F16" | "Bf16";
  /** The type of the inputs' arrays. */
  readonly read: "Float32Array" | "Uint16Array";
  /** The type of the output's array. */
  readonly write: "Float32Array" | "Float16Array" | "Uint16Array";
  /**
   * The argument of `decodeTable(scratch, ...)` (whether the table is bfloat16's), or
   * undefined when elements are read as they are.
   */
  readonly table: string | undefined;
  /** How results are stored. */
  readonly store: StoreKind;
  /** What the kernel's doc says after "for" when it is not the float32 one. */
  readonly docName: string;
}

/** float32: read and written as they are. */
export const F32: KernelDtype = {
  suffix: "F32",
  read: "Float32Array",
  write: "Float32Array",
  table: undefined,
  store: "native",
  docName: "float32",
};

/**
 * float16 and bfloat16 read alike (the reductions, which write no tensor): the table
 * follows the stage's dtype.
 */
export const U16: KernelDtype = {
  suffix: "U16",
  read: "Uint16Array",
  write: "Uint16Array",
  table: "s.dtype === BFLOAT16",
  store: "native",
  docName: "float16/bfloat16 (decoded through a table)",
};

/** float16: decoded through its table, stored through a `Float16Array`. */
export const F16: KernelDtype = {
  suffix: "F16",
  read: "Uint16Array",
  write: "Float16Array",
  table: "false",
  store: "native",
  docName: "float16",
};

/** bfloat16: decoded through its table, stored through the float32 block. */
export const BF16: KernelDtype = {
  suffix: "Bf16",
  read: "Uint16Array",
  write: "Uint16Array",
  table: "true",
  store: "bf16Block",
  docName: "bfloat16 (see {@linkcode bf16Block})",
};

/** The dtypes of the reductions (sums, stats): they only read. */
export const REDUCE_DTYPES: readonly KernelDtype[] = [F32, U16];

/** The dtypes of the writes (normalize, gradient, scale). */
export const WRITE_DTYPES: readonly KernelDtype[] = [F32, F16, BF16];

/** The element of `array` at `index`, decoded: `array[index]` or `table[array[index]]`. */
export function load(d: KernelDtype, array: string, index: string): string {
  const element = `${array}[${index}]`;
  return d.table === undefined ? element : `table[${element}]`;
}

/** The statement that fetches the decode table, or nothing for float32. */
export function tableSetup(d: KernelDtype): string {
  return d.table === undefined ? "" : `const table = decodeTable(scratch, ${d.table});`;
}

/** The kernel's scratch parameter: named `_scratch` where the kernel does not use it. */
export function scratchParam(d: KernelDtype, used = false): string {
  return used || d.table !== undefined ? "scratch" : "_scratch";
}
