/**
 * The Ascend FFI layer: errors, library discovery, runtime, marshalling, execution.
 *
 * @module
 */

export { ACL_STATUS_NAMES, AclError, ACLNN_STATUS_NAMES, AclnnError } from "./errors.ts";
export type { AclnnErrorDetails, InfiniStatus } from "./errors.ts";
