/**
 * The Ascend FFI layer: errors, library discovery, runtime, marshalling, execution.
 *
 * @module
 */

export { ACL_STATUS_NAMES, AclError, ACLNN_STATUS_NAMES, AclnnError } from "./errors.ts";
export type { AclnnErrorDetails, InfiniStatus } from "./errors.ts";
export { unwrapAcl, unwrapAclnn } from "./errors.ts";
export type { RecentErrorSource } from "./errors.ts";
export { AclDataType, AclFormat, AclrtMemcpyKind, AclrtMemMallocPolicy } from "./constants.ts";
export { DEFAULT_LIB_DIRS, describeLibraries, LIB_DIR_ENV } from "./library.ts";
export type {
  DiscoveryReport,
  LibraryAttempt,
  LibraryOptions,
  LibraryRole,
  OpenedLibrary,
  SkippedLocation,
} from "./library.ts";
export { AscendDevice, DeviceBuffer, finalizeAscend, openAscend } from "./runtime.ts";
export type { OpenAscendOptions } from "./runtime.ts";
export { BACKEND_ENV, selectDefaultDevice } from "./default_device.ts";
export type {
  BackendChoice,
  DefaultDeviceOptions,
  DefaultDeviceSelection,
} from "./default_device.ts";
