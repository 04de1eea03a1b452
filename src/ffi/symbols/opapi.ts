/**
 * The aclnn operator symbols, as `Deno.dlopen` takes them, derived from the operators'
 * declarations (aclnn_operators.ts: each operator's parameters in its C prototype's order),
 * split as CANN >= 8.5 splits them between libopapi_nn.so and libopapi_math.so.
 *
 * The C-to-Deno type conventions and the meaning of `optional: true` are stated once, in
 * `../symbols.ts`, which gathers every library's table.
 *
 * @module
 */

import {
  ACLNN_OPERATORS,
  type AclnnOperatorDeclaration,
  type AclnnOperatorName,
  type AclnnParamKind,
} from "./aclnn_operators.ts";

/** The Deno FFI type of each parameter kind (aclnn_operators.ts). */
const FFI_TYPE: Readonly<Record<AclnnParamKind, Deno.NativeType>> = {
  tensor: "pointer",
  output: "pointer",
  bool: "bool",
  i32: "i32",
  i64: "i64",
  f32: "f32",
  f64: "f64",
  boolArray: "pointer",
  intArray: "pointer",
  string: "pointer",
};

/** One operator symbol: its parameters' FFI types, an `i32` aclnnStatus, maybe optional. */
export interface AclnnSymbol {
  /** The FFI types of the C parameters. */
  readonly parameters: readonly Deno.NativeType[];
  /** aclnnStatus. */
  readonly result: "i32";
  /** Resolves to null where the library lacks it. */
  readonly optional?: boolean;
}

/** The two symbols of each operator of `library` (phase 1 and phase 2). */
export type AclnnSymbols<L extends AclnnOperatorDeclaration["library"]> = {
  readonly [
    K in AclnnOperatorName as (typeof ACLNN_OPERATORS)[K]["library"] extends L
      ? K | `${K}GetWorkspaceSize`
      : never
  ]: AclnnSymbol;
};

/**
 * Phase 2 of every operator: `aclnnStatus aclnnX(void *workspace, uint64_t workspaceSize,
 * aclOpExecutor *executor, aclrtStream stream);`.
 */
const EXECUTE: readonly Deno.NativeType[] = ["pointer", "u64", "pointer", "pointer"];

/**
 * The symbols of `library`'s operators: phase 1 (`aclnnXGetWorkspaceSize`) with the declared
 * parameters then `uint64_t *workspaceSize, aclOpExecutor **executor` (two 8-byte `buffer`
 * out-params), and phase 2.
 */
function symbolsOf<L extends AclnnOperatorDeclaration["library"]>(library: L): AclnnSymbols<L> {
  const table: Record<string, AclnnSymbol> = {};
  for (const [name, declared] of Object.entries(ACLNN_OPERATORS)) {
    const op: AclnnOperatorDeclaration = declared;
    if (op.library !== library) continue;
    const optional = op.optional ? { optional: true } : {};
    table[`${name}GetWorkspaceSize`] = {
      parameters: [...op.params.map(([, kind]) => FFI_TYPE[kind]), "buffer", "buffer"],
      result: "i32",
      ...optional,
    };
    table[name] = { parameters: EXECUTE, result: "i32", ...optional };
  }
  return table as AclnnSymbols<L>;
}

/**
 * The BatchNorm/GroupNorm/LayerNorm/RMSNorm operators: `libopapi_nn.so` (CANN >= 8.5) or
 * `libopapi.so` (older).
 */
export const opapiNnSymbols: AclnnSymbols<"nn"> = symbolsOf("nn");

/** Operators of `libopapi_math.so` (CANN >= 8.5) or `libopapi.so` (older). */
export const opapiMathSymbols: AclnnSymbols<"math"> = symbolsOf("math");

/** Every operator symbol: what the single `libopapi.so` of releases before 8.5 exports. */
export const opapiSymbols: AclnnSymbols<"nn" | "math"> = { ...opapiNnSymbols, ...opapiMathSymbols };
