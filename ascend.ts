/**
 * `@aclnn/norm/ascend`: the FFI layer for advanced users. Library discovery and its report,
 * the raw CANN symbol tables of an opened install, ACL/aclnn status names and enum values,
 * `finalizeAscend`, device buffers, and the table of Ascend SoC families with the rules this
 * package applies per chip. Applications normally need only the root module.
 *
 * @example
 * ```ts
 * import { describeLibraries } from "@aclnn/norm/ascend";
 * const report = describeLibraries();
 * console.log(report.found ? `CANN in ${report.dir}` : report.error?.split("\n")[0]);
 * ```
 *
 * @module
 */

export {
  DEFAULT_LIB_DIRS,
  describeLibraries,
  LIB_DIR_ENV,
  LOADER_PATH_ENV,
  openCannLibraries,
} from "./src/ffi/library.ts";
export type {
  CannLibraries,
  DiscoveryReport,
  LibraryAttempt,
  LibraryOptions,
  LibraryRole,
  OpenedLibrary,
  SkippedLocation,
} from "./src/ffi/library.ts";
export { DeviceBuffer, finalizeAscend } from "./src/ffi/runtime.ts";
export { openHccl } from "./src/ffi/library.ts";
export type { HcclLibrary } from "./src/ffi/library.ts";
export {
  HCCL_COMM_CONFIG_BYTES,
  HCCL_ROOT_INFO_BYTES,
  hcclCommConfig,
  HcclCommunicator,
  HcclDataType,
  HcclReduceOp,
  hcclRootInfo,
} from "./src/ffi/hccl.ts";
export type { HcclCommunicatorOptions, HcclReduction } from "./src/ffi/hccl.ts";
export type { AllocatorStats } from "./src/ffi/allocator.ts";
export { ACL_STATUS_NAMES, ACLNN_STATUS_NAMES, HCCL_STATUS_NAMES } from "./src/errors.ts";
export {
  AclDataType,
  AclFormat,
  AclrtMemcpyKind,
  AclrtMemMallocPolicy,
} from "./src/ffi/constants.ts";
export {
  hcclSymbols,
  nnopbaseSymbols,
  opapiMathSymbols,
  opapiNnSymbols,
  opapiSymbols,
  runtimeSymbols,
} from "./src/ffi/symbols.ts";
export type {
  HcclSymbols,
  NnopbaseSymbols,
  OpapiSymbols,
  RuntimeSymbols,
} from "./src/ffi/symbols.ts";
export type { AclnnSymbol, AclnnSymbols } from "./src/ffi/symbols/opapi.ts";
export {
  ACLNN_OPERATORS,
  type AclnnOperatorDeclaration,
  type AclnnOperatorName,
  type AclnnParamKind,
} from "./src/ffi/symbols/aclnn_operators.ts";
export {
  addRmsNormStoresRstd,
  batchNormSavesVariance,
  bf16Allowed,
  familyFromPlatform,
  gemmaRmsNormMixedGamma,
  operatorSupported,
  rmsNormGradEmptyRows,
  rmsNormMixedGamma,
  ROW_NORM_OPERATORS,
  SOC_FAMILIES,
  SOC_OPERATORS,
  SOC_SUPPORT,
  socFamily,
} from "./src/backends/ascend/soc.ts";
export type {
  Bf16Rule,
  BoundOnlyOperator,
  RowNormOperator,
  SocFamily,
  SocFamilyName,
  SocOperator,
  SocOperatorGroup,
  SocSupportDeclaration,
} from "./src/backends/ascend/soc.ts";
export { groupNormTakesFloat16 } from "./src/backends/ascend/rules.ts";
export {
  addLayerNormEmptyRows,
  addLayerNormMixedDtypes,
  addLayerNormStoresStatistics,
} from "./src/backends/ascend/soc_fused.ts";
export {
  resolveSocFamily,
  SOC_FAMILY_ENV,
  type SocResolution,
} from "./src/backends/ascend/device_soc.ts";
export {
  findPlatformVersion,
  type PlatformSearch,
  type PlatformVersion,
} from "./src/backends/ascend/platform_ini.ts";
