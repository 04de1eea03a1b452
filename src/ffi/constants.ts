/**
 * CANN enum values this package passes across the FFI boundary (from acl_base.h, acl_rt.h and
 * aclnn's format table). C enums are 4-byte ints (`i32`/`u32` in the symbol table).
 *
 * @module
 */

/** `aclDataType`: element type codes of `aclCreateTensor`. */
export const AclDataType = {
  UNDEFINED: -1,
  FLOAT: 0,
  FLOAT16: 1,
  INT8: 2,
  INT32: 3,
  UINT8: 4,
  INT16: 6,
  UINT16: 7,
  UINT32: 8,
  INT64: 9,
  UINT64: 10,
  DOUBLE: 11,
  BOOL: 12,
  BF16: 27,
} as const;

/**
 * `aclFormat`: storage layout labels. The norm operators accept the base formats only;
 * private formats (NC1HWC0, FRACTAL_*) are rejected.
 */
export const AclFormat = {
  NCHW: 0,
  NHWC: 1,
  ND: 2,
  NC1HWC0: 3,
  HWCN: 16,
  NDHWC: 27,
  NCDHW: 30,
  NC: 35,
  NCL: 47,
} as const;

/** `aclrtMemcpyKind`: direction of `aclrtMemcpy`. */
export const AclrtMemcpyKind = {
  HOST_TO_HOST: 0,
  HOST_TO_DEVICE: 1,
  DEVICE_TO_HOST: 2,
  DEVICE_TO_DEVICE: 3,
} as const;

/** `aclrtMemMallocPolicy`: page policy of `aclrtMalloc`. */
export const AclrtMemMallocPolicy = {
  HUGE_FIRST: 0,
  HUGE_ONLY: 1,
  NORMAL_ONLY: 2,
} as const;

/** `aclrtMemAttr` of `aclrtGetMemInfo` (the two general attributes). */
export const AclrtMemAttr = {
  DDR_MEM: 0,
  HBM_MEM: 1,
} as const;

/** ACL_SUCCESS / ACLNN_SUCCESS. */
export const ACL_SUCCESS = 0;
/** ACL_ERROR_REPEAT_INITIALIZE: a second aclInit in one process (harmless). */
export const ACL_ERROR_REPEAT_INITIALIZE = 100002;
/** ACL_ERROR_RT_CONTEXT_NULL: no device has been set on the calling thread. */
export const ACL_ERROR_RT_CONTEXT_NULL = 107002;
