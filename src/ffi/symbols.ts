/**
 * The whole C symbol table of this package, one table per library that exports the functions,
 * each in its own file under `symbols/` (runtime, nnopbase, opapi, hccl). Every entry carries
 * its C prototype (from CANN's acl/acl_base.h, acl/acl_rt.h, aclnn/acl_meta.h and the
 * aclnn_*.h operator headers) in the comment beside it; the ABI class of every parameter and
 * result agrees with `cann_abi.json` (tests/ffi/symbols.test.ts checks it).
 *
 * Conventions: handles (aclTensor*, aclOpExecutor*, aclrtStream, ...) are `"pointer"`; memory
 * the caller owns for the duration of the call (out-params such as `uint64_t*` and
 * `aclOpExecutor**`, arrays such as `const int64_t*`, C strings) is `"buffer"`; `size_t` is
 * `"usize"` and `uint64_t` is `"u64"` (both take a bigint); C enums are 4-byte ints.
 *
 * Symbols marked `optional: true` are missing from some CANN releases this package supports;
 * they resolve to `null` there instead of failing `Deno.dlopen`.
 *
 * @module
 */

import { hcclSymbols } from "./symbols/hccl.ts";
import { nnopbaseSymbols } from "./symbols/nnopbase.ts";
import { opapiMathSymbols, opapiNnSymbols, opapiSymbols } from "./symbols/opapi.ts";
import { runtimeSymbols } from "./symbols/runtime.ts";

export {
  hcclSymbols,
  nnopbaseSymbols,
  opapiMathSymbols,
  opapiNnSymbols,
  opapiSymbols,
  runtimeSymbols,
};

/** The HCCL symbol table's type. */
export type HcclSymbols = typeof hcclSymbols;

/** The runtime symbol table's type. */
export type RuntimeSymbols = typeof runtimeSymbols;
/** The nnopbase symbol table's type. */
export type NnopbaseSymbols = typeof nnopbaseSymbols;
/** The operator symbol table's type. */
export type OpapiSymbols = typeof opapiSymbols;

export type { AclnnOperatorName } from "./symbols/aclnn_operators.ts";
