/**
 * The error types of this package and the names of CANN's and HCCL's status codes.
 * `AclnnError` carries aclnn operator codes (161001, 161002, 361001, 561xxx), raised both by
 * the TypeScript validation and by the native library; `AclError` carries ACL runtime codes;
 * `HcclError` carries HCCL codes.
 *
 * @module
 */

import { ACL_STATUS_NAMES } from "./acl_status_names.ts";

/** ACL runtime status codes and their names (every code CANN's public headers define). */
export { ACL_STATUS_NAMES };

/** aclnn status codes and their names, from CANN's aclnn return-code table. */
export const ACLNN_STATUS_NAMES: Readonly<Record<number, string>> = Object.freeze({
  0: "ACLNN_SUCCESS",
  161001: "ACLNN_ERR_PARAM_NULLPTR",
  161002: "ACLNN_ERR_PARAM_INVALID",
  361001: "ACLNN_ERR_RUNTIME_ERROR",
  561000: "ACLNN_ERR_INNER",
  561001: "ACLNN_ERR_INNER_INFERSHAPE_ERROR",
  561002: "ACLNN_ERR_INNER_TILING_ERROR",
  561003: "ACLNN_ERR_INNER_FIND_KERNEL_ERROR",
  561101: "ACLNN_ERR_INNER_CREATE_EXECUTOR",
  561102: "ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR",
  561103: "ACLNN_ERR_INNER_NULLPTR",
  561107: "ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND",
  561112: "ACLNN_ERR_INNER_OPP_KERNEL_PKG_NOT_FOUND",
});

/** `HcclResult` codes and their names (hcomm include/hccl/hccl_types.h). */
export const HCCL_STATUS_NAMES: Readonly<Record<number, string>> = Object.freeze({
  0: "HCCL_SUCCESS",
  1: "HCCL_E_PARA",
  2: "HCCL_E_PTR",
  3: "HCCL_E_MEMORY",
  4: "HCCL_E_INTERNAL",
  5: "HCCL_E_NOT_SUPPORT",
  6: "HCCL_E_NOT_FOUND",
  7: "HCCL_E_UNAVAIL",
  8: "HCCL_E_SYSCALL",
  9: "HCCL_E_TIMEOUT",
  10: "HCCL_E_OPEN_FILE_FAILURE",
  11: "HCCL_E_TCP_CONNECT",
  12: "HCCL_E_ROCE_CONNECT",
  13: "HCCL_E_TCP_TRANSFER",
  14: "HCCL_E_ROCE_TRANSFER",
  15: "HCCL_E_RUNTIME",
  16: "HCCL_E_DRV",
  17: "HCCL_E_PROFILING",
  18: "HCCL_E_CCE",
  19: "HCCL_E_NETWORK",
  20: "HCCL_E_AGAIN",
  21: "HCCL_E_REMOTE",
  22: "HCCL_E_SUSPENDING",
  23: "HCCL_E_OPRETRY_FAIL",
  24: "HCCL_E_OOM",
  1041: "HCCL_E_IN_STATUS",
});

/** HCCL_E_PARA: an argument is wrong (rank, world size, ...). */
export const HCCL_E_PARA = 1;
/** HCCL_E_INTERNAL: a failure of HCCL's own (here: of the rendezvous) that no other code names. */
export const HCCL_E_INTERNAL = 4;
/** HCCL_E_NOT_SUPPORT: the operation or reduction is not supported. */
export const HCCL_E_NOT_SUPPORT = 5;
/** HCCL_E_UNAVAIL: a resource is taken (the rendezvous port, as HcclGetRootInfo reports it). */
export const HCCL_E_UNAVAIL = 7;
/** HCCL_E_TIMEOUT: a peer did not come in time. */
export const HCCL_E_TIMEOUT = 9;
/** HCCL_E_TCP_CONNECT: the connection to the root could not be made. */
export const HCCL_E_TCP_CONNECT = 11;
/** HCCL_E_TCP_TRANSFER: a connection broke while exchanging data. */
export const HCCL_E_TCP_TRANSFER = 13;

/** ACLNN_ERR_PARAM_NULLPTR: a required tensor is missing. */
export const ACLNN_ERR_PARAM_NULLPTR = 161001;
/** ACLNN_ERR_PARAM_INVALID: an argument breaks a documented rule. */
export const ACLNN_ERR_PARAM_INVALID = 161002;
/** ACLNN_ERR_RUNTIME_ERROR: the runtime failed (device, memory, stream). */
export const ACLNN_ERR_RUNTIME_ERROR = 361001;

/** Status names of the InfiniOp API (`infiniStatus_t`), carried as `AclnnError.status`. */
export type InfiniStatus =
  | "BAD_PARAM"
  | "NULL_POINTER"
  | "BAD_TENSOR_SHAPE"
  | "BAD_TENSOR_DTYPE"
  | "BAD_TENSOR_STRIDES"
  | "INSUFFICIENT_WORKSPACE"
  | "DEVICE_TYPE_NOT_SUPPORTED"
  | "INTERNAL_ERROR";

/** Extra details of an {@linkcode AclnnError}. */
export interface AclnnErrorDetails {
  /** The argument that broke the rule, e.g. `gradOut`. */
  argument?: string;
  /** The text of aclGetRecentErrMsg read right after a failing native call. */
  nativeMessage?: string;
  /** The InfiniOp status name, for errors of the descriptor API. */
  status?: InfiniStatus;
  /** The underlying error, if any. */
  cause?: unknown;
}

/**
 * An aclnn operator error: `code` is the aclnn status (161001 missing tensor, 161002 invalid
 * argument, 361001 runtime, 561xxx internal), `codeName` its CANN name.
 *
 * @example
 * ```ts
 * import { AclnnError, batchNormReduceBackward, Tensor } from "@aclnn/norm";
 * try {
 *   batchNormReduceBackward({
 *     gradOut: Tensor.zeros([4]), input: Tensor.zeros([4]),
 *     mean: Tensor.zeros([1]), invstd: Tensor.zeros([1]),
 *   });
 * } catch (e) {
 *   if (e instanceof AclnnError) console.log(e.code, e.message); // 161002 ... rank 1 ...
 * }
 * ```
 */
export class AclnnError extends Error {
  /** The aclnn status code. */
  readonly code: number;
  /** The status code's CANN name, e.g. `ACLNN_ERR_PARAM_INVALID`. */
  readonly codeName: string;
  /** The argument that broke the rule, when one did. */
  readonly argument: string | undefined;
  /** aclGetRecentErrMsg text for native failures. */
  readonly nativeMessage: string | undefined;
  /** The InfiniOp status name for errors of the descriptor API. */
  readonly status: InfiniStatus | undefined;

  /** Creates an error with an aclnn status code. */
  constructor(code: number, message: string, details: AclnnErrorDetails = {}) {
    const codeName = ACLNN_STATUS_NAMES[code] ?? "ACLNN_UNKNOWN_STATUS";
    super(`${message} [${codeName} ${code}]`, { cause: details.cause });
    this.name = "AclnnError";
    this.code = code;
    this.codeName = codeName;
    this.argument = details.argument;
    this.nativeMessage = details.nativeMessage;
    this.status = details.status;
  }
}

/**
 * An ACL runtime error (device, memory, stream, library loading): `code` is the ACL status
 * (e.g. 107002 no device on this thread), `codeName` its CANN name. Errors without a native
 * status (library discovery, a missing permission) have code 0.
 *
 * @example
 * ```ts
 * import { AclError, openAscend } from "@aclnn/norm";
 * try {
 *   openAscend({ libDir: "/nonexistent" }).close();
 * } catch (e) {
 *   if (e instanceof AclError) console.log(e.code, e.codeName); // 0 ACL_LIBRARY_ERROR
 * }
 * ```
 */
export class AclError extends Error {
  /** The ACL runtime status code (0 for errors that have no native code, like discovery). */
  readonly code: number;
  /** The status code's CANN name. */
  readonly codeName: string;
  /** aclGetRecentErrMsg text, when the native library gave one. */
  readonly nativeMessage: string | undefined;

  /** Creates an error with an ACL runtime status code. */
  constructor(
    code: number,
    message: string,
    details: { nativeMessage?: string; cause?: unknown } = {},
  ) {
    // Code 0 marks errors with no native status (discovery, permissions), not ACL_SUCCESS.
    const codeName = code === 0
      ? "ACL_LIBRARY_ERROR"
      : ACL_STATUS_NAMES[code] ?? "ACL_UNKNOWN_STATUS";
    super(`${message} [${codeName} ${code}]`, { cause: details.cause });
    this.name = "AclError";
    this.code = code;
    this.codeName = codeName;
    this.nativeMessage = details.nativeMessage;
  }
}

/** Extra details of an {@linkcode HcclError}. */
export interface HcclErrorDetails {
  /** HcclGetErrorString's text for the code, when the library gave one. */
  text?: string;
  /** aclGetRecentErrMsg text read right after the failing call. */
  nativeMessage?: string;
  /** The underlying error, if any. */
  cause?: unknown;
}

/**
 * An HCCL error (communicator set-up, collectives, the rendezvous that exchanges HCCL's root
 * info): `code` is the `HcclResult` (e.g. 9 HCCL_E_TIMEOUT), `codeName` its name and `text`
 * HCCL's own description of the code (HcclGetErrorString). The rendezvous uses the codes HCCL
 * uses for the same failures: 1 for a wrong rank or world size, 9 for a peer that never came,
 * 11 when the root cannot be reached and 13 when a connection breaks.
 *
 * @example
 * ```ts
 * import { HcclError } from "@aclnn/norm";
 * const e = new HcclError(9, "rendezvous: rank 1 never joined");
 * console.log(e.codeName, e.message); // HCCL_E_TIMEOUT rendezvous: rank 1 never joined [HCCL_E_TIMEOUT 9]
 * ```
 */
export class HcclError extends Error {
  /** The HcclResult code. */
  readonly code: number;
  /** The code's name, e.g. `HCCL_E_TIMEOUT`. */
  readonly codeName: string;
  /** HcclGetErrorString's text for the code, when known. */
  readonly text: string | undefined;
  /** aclGetRecentErrMsg text, when the native library gave one. */
  readonly nativeMessage: string | undefined;

  /** Creates an error with an HcclResult code. */
  constructor(code: number, message: string, details: HcclErrorDetails = {}) {
    const codeName = HCCL_STATUS_NAMES[code] ?? "HCCL_UNKNOWN_STATUS";
    super(`${message} [${codeName} ${code}]`, { cause: details.cause });
    this.name = "HcclError";
    this.code = code;
    this.codeName = codeName;
    this.text = details.text;
    this.nativeMessage = details.nativeMessage;
  }
}

/** The one symbol {@linkcode unwrapAcl} needs: aclGetRecentErrMsg. */
export interface RecentErrorSource {
  /** `const char *aclGetRecentErrMsg(void)`: the calling thread's latest error text, or NULL. */
  readonly aclGetRecentErrMsg: () => Deno.PointerValue;
}

/**
 * What aclGetRecentErrMsg keeps returning on this thread (per library set; each Worker is its
 * own thread with its own copy of this module). CANN formats and clears the thread's message
 * queue on every read, but keeps the result in a thread-local string that only the device
 * message callback clears, and that callback runs only on a thread with a current context
 * (runtime src/acl/aclrt_impl/acl.cpp aclGetRecentErrMsgImpl/aclGetMsgCallback; api_impl
 * ApiImpl::GetDevErrMsg). So on a thread without a device a read returns the previous text
 * again, and a new message comes back as `new + "\n" + previous`.
 */
const keptText = new WeakMap<RecentErrorSource, string>();

function readRaw(lib: RecentErrorSource): string | null {
  const p = lib.aclGetRecentErrMsg();
  return p === null ? null : Deno.UnsafePointerView.getCString(p);
}

/**
 * Reads (and so clears) the calling thread's latest native error text; undefined when there is
 * none or it cannot be read. Call it right after the failing call, before any other ACL call.
 * Text an earlier read already returned is never returned again: a second read right after
 * the first shows whether the runtime keeps a copy, and a kept copy is cut from later texts.
 */
export function recentErrorMessage(lib: RecentErrorSource | null | undefined): string | undefined {
  if (!lib) return undefined;
  try {
    const raw = readRaw(lib);
    if (raw === null) {
      keptText.delete(lib);
      return undefined;
    }
    const kept = keptText.get(lib);
    let fresh = raw;
    if (kept !== undefined) {
      if (raw === kept) fresh = "";
      else if (raw.endsWith("\n" + kept)) fresh = raw.slice(0, raw.length - kept.length - 1);
    }
    const again = readRaw(lib);
    if (again === null) keptText.delete(lib);
    else keptText.set(lib, again);
    const text = fresh.trim();
    return text.length > 0 ? text : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The first line of a native error text, for a one-line message: aclGetRecentErrMsg formats
 * its queue as the oldest item, then `TraceBack (most recent call last):` and every later item
 * indented (runtime src/dfx/error_manager/error_manager.cc ErrorManager::GetErrorMessage).
 * The whole text stays in the error's `nativeMessage`. Undefined when there is no text.
 */
export function nativeSummary(nativeMessage: string | undefined): string | undefined {
  if (nativeMessage === undefined) return undefined;
  for (const line of nativeMessage.split("\n")) {
    const text = line.trim();
    if (text.length > 0) return text;
  }
  return undefined;
}

/** `<what> failed`, then the first line of the native text when there is one. */
export function failedWith(what: string, nativeMessage: string | undefined): string {
  const summary = nativeSummary(nativeMessage);
  return summary === undefined ? `${what} failed` : `${what} failed: ${summary}`;
}

/**
 * Throws an {@linkcode AclError} unless `status` is ACL_SUCCESS (0). The message names the call
 * (`what`, e.g. `aclrtMalloc(4096 bytes)`) and carries aclGetRecentErrMsg's text, read right
 * away from `lib`.
 */
export function unwrapAcl(status: number, what: string, lib: RecentErrorSource | null): void {
  if (status === 0) return;
  const nativeMessage = recentErrorMessage(lib);
  throw new AclError(status, failedWith(what, nativeMessage), { nativeMessage });
}
/** Turns a missing-permission error into an {@linkcode AclError} that names the flag. */
export function permissionError(error: unknown, flag: string, what: string): unknown {
  if (error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied) {
    const detail = error instanceof Error ? error.message : String(error);
    return new AclError(
      0,
      `${what} needs the ${flag} permission: run deno with ${flag} (${detail})`,
      { cause: error },
    );
  }
  return error;
}
