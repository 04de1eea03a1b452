/**
 * The shape of one aclnn operator's declaration (aclnn_operators.ts and
 * aclnn_operators_family.ts hold the declarations; both import this, not each other).
 *
 * A parameter's kind: `tensor` an aclTensor* read by the operator (NULL when absent; running
 * statistics and `*Ref` tensors it updates in place are passed so too), `output` an
 * aclTensor* it writes (its address set again with aclSetOutputTensorAddr when an executor is
 * reused), `bool`, `i32` (int32_t or a C enum), `i64` (int64_t), `f32` (float), `f64` (double),
 * `boolArray` (const aclBoolArray*), `intArray` (const aclIntArray* of int64_t), `string` (a
 * NUL-terminated const char*).
 *
 * @module
 */

/** How one phase-1 parameter is passed (module doc). */
export type AclnnParamKind =
  | "tensor"
  | "output"
  | "bool"
  | "i32"
  | "i64"
  | "f32"
  | "f64"
  | "boolArray"
  | "intArray"
  | "string";

/** One aclnn operator's declaration. */
export interface AclnnOperatorDeclaration {
  /**
   * `nn`: libopapi_nn.so (CANN >= 8.5) or libopapi.so; `math`: libopapi_math.so or
   * libopapi.so.
   */
  readonly library: "nn" | "math";
  /** Phase 1's parameters before workspaceSize and executor: [name in the header, kind]. */
  readonly params: readonly (readonly [string, AclnnParamKind])[];
  /**
   * Missing from some release this package supports: its symbols resolve to null there
   * instead of failing the library's `Deno.dlopen`.
   */
  readonly optional?: true;
  /** The header (or doc) its prototype comes from. */
  readonly header: string;
}
