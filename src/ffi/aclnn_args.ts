/**
 * The arguments of an aclnn call as the executor ({@linkcode ./executor.ts}) takes them: their
 * kinds, the builders operator files use, which kinds each C parameter class takes, and the
 * buffer of a `const char *` argument.
 *
 * @module
 */

import type { Tensor } from "../tensor/tensor.ts";

/** One argument of an aclnn call, in the order of the C prototype (before workspaceSize). */
export type AclnnArg =
  | {
    readonly kind: "tensor";
    readonly tensor: Tensor | undefined;
    /** Written by the operator (its executor address is set with aclSetOutputTensorAddr). */
    readonly output: boolean;
  }
  | { readonly kind: "bool"; readonly value: boolean }
  | { readonly kind: "i64"; readonly value: number }
  | { readonly kind: "i32"; readonly value: number }
  | { readonly kind: "f64"; readonly value: number }
  | { readonly kind: "f32"; readonly value: number }
  | { readonly kind: "boolArray"; readonly values: readonly boolean[] }
  | { readonly kind: "intArray"; readonly values: readonly number[] }
  | { readonly kind: "string"; readonly value: string };

/** Builders for {@linkcode AclnnArg}s, so operator files read like the C prototype. */
export const arg = {
  /** An input aclTensor* (NULL when undefined); running statistics updated in place too. */
  tensor: (tensor: Tensor | undefined): AclnnArg => ({ kind: "tensor", tensor, output: false }),
  /** An output aclTensor* (NULL when undefined). */
  output: (tensor: Tensor | undefined): AclnnArg => ({ kind: "tensor", tensor, output: true }),
  /** A C bool. */
  bool: (value: boolean): AclnnArg => ({ kind: "bool", value }),
  /** An int64_t. */
  i64: (value: number): AclnnArg => ({ kind: "i64", value }),
  /** An int32_t or a C enum (e.g. aclnnLayerNormWithImplMode's implMode). */
  i32: (value: number): AclnnArg => ({ kind: "i32", value }),
  /** A double. */
  f64: (value: number): AclnnArg => ({ kind: "f64", value }),
  /**
   * A C float (e.g. aclnnSyncBatchNormGatherStats's momentum and eps): Deno's FFI rounds the
   * number to float32 at the call.
   */
  f32: (value: number): AclnnArg => ({ kind: "f32", value }),
  /** An aclBoolArray*. */
  boolArray: (values: readonly boolean[]): AclnnArg => ({ kind: "boolArray", values }),
  /** An aclIntArray* of int64_t values (e.g. LayerNorm's normalizedShape). */
  intArray: (values: readonly number[]): AclnnArg => ({ kind: "intArray", values }),
  /**
   * A `const char *` (e.g. aclnnInstanceNorm's dataFormat): passed as a NUL-terminated UTF-8
   * buffer that the prepared call holds for as long as CANN may read it (the cached call's
   * lifetime: a repeated phase 1 reads it again). A value holding a NUL is refused (161002).
   */
  string: (value: string): AclnnArg => ({ kind: "string", value }),
};

/** The argument kinds each C parameter class (as the symbol tables write it) takes. */
export const ARG_KINDS_FOR: Readonly<Record<string, AclnnArg["kind"][]>> = {
  pointer: ["tensor", "boolArray", "intArray", "string"],
  bool: ["bool"],
  i64: ["i64"],
  i32: ["i32"],
  f64: ["f64"],
  f32: ["f32"],
};

/**
 * A `const char *` argument: the NUL-terminated UTF-8 bytes and their address. Kept with the
 * call's descriptors (a cached call's phase 1 may run again on the same address); nothing
 * native to destroy, the bytes go with the last reference.
 */
export interface CString {
  /** The address passed as the `const char *`. */
  readonly handle: Deno.PointerValue;
  /** The bytes, NUL-terminated (held here so that the address stays valid). */
  readonly bytes: Uint8Array;
  /** Nothing native to free (kept for the call's list of descriptors). */
  destroy(): void;
}

/** The NUL-terminated UTF-8 buffer of `value` (which must hold no NUL: the executor checks). */
export function cString(value: string): CString {
  const text = new TextEncoder().encode(value);
  const bytes = new Uint8Array(text.length + 1);
  bytes.set(text);
  return { handle: Deno.UnsafePointer.of(bytes), bytes, destroy: () => {} };
}
