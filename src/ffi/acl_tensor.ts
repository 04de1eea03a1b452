/**
 * Tensor -> aclTensor marshalling, the way torch_npu builds its descriptors: view dims,
 * strides and offset in elements; the storage base (the DeviceBuffer's address, not the first
 * element) as `tensorData`; a 1-D storage shape `[storage elements]`; the aclDataType of the
 * dtype; the base format ND, labelled NCL/NCHW/NCDHW for rank 3/4/5.
 *
 * The dims/strides arrays whose addresses native code was given stay referenced by the
 * descriptor until `aclDestroyTensor`.
 *
 * @module
 */

import { aclDataType, dtypeByteSize } from "../tensor/dtype.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { AclFormat } from "./constants.ts";
import { ACLNN_ERR_PARAM_INVALID, AclnnError, failedWith, recentErrorMessage } from "../errors.ts";
import type { CannLibraries } from "./library.ts";

/** The aclFormat torch_npu gives a base-format tensor of this rank (channel = view dim 1). */
export function aclFormatForRank(rank: number): number {
  switch (rank) {
    case 3:
      return AclFormat.NCL;
    case 4:
      return AclFormat.NCHW;
    case 5:
      return AclFormat.NCDHW;
    default:
      return AclFormat.ND;
  }
}

/**
 * An aclTensor handle and the dims/strides arrays whose addresses it was created from.
 * It does not hold the tensor or its device memory: the executor keeps those alive for the
 * duration of a call, and a cached descriptor gets its storage address refreshed before reuse.
 */
export class AclTensorDescriptor {
  /** The aclTensor*. */
  readonly handle: Deno.PointerObject;
  /** dims | strides | storage dims, passed by address to aclCreateTensor. */
  readonly #shapes: BigInt64Array;
  #destroy: ((handle: Deno.PointerObject) => number) | null;

  /** Wraps a handle from aclCreateTensor. */
  constructor(
    handle: Deno.PointerObject,
    shapes: BigInt64Array,
    destroy: (handle: Deno.PointerObject) => number,
  ) {
    this.handle = handle;
    this.#shapes = shapes;
    this.#destroy = destroy;
  }

  /** aclDestroyTensor (idempotent); returns its status. */
  destroy(): number {
    const destroy = this.#destroy;
    if (destroy === null) return 0;
    this.#destroy = null;
    void this.#shapes;
    return destroy(this.handle);
  }
}

/**
 * An aclBoolArray or aclIntArray handle and the values it was made from; destroy it once
 * phase 2 has been called.
 */
export class AclArrayDescriptor<T extends boolean | number> {
  /** The aclBoolArray* or aclIntArray*. */
  readonly handle: Deno.PointerObject;
  /** The values, as passed (the library copies them; kept for diagnostics). */
  readonly values: readonly T[];
  #destroy: ((handle: Deno.PointerObject) => number) | null;

  /** Wraps a handle from aclCreateBoolArray or aclCreateIntArray and its destructor. */
  constructor(
    handle: Deno.PointerObject,
    values: readonly T[],
    destroy: (handle: Deno.PointerObject) => number,
  ) {
    this.handle = handle;
    this.values = values;
    this.#destroy = destroy;
  }

  /** aclDestroyBoolArray or aclDestroyIntArray (idempotent); returns its status. */
  destroy(): number {
    const destroy = this.#destroy;
    if (destroy === null) return 0;
    this.#destroy = null;
    return destroy(this.handle);
  }
}

/** An aclBoolArray handle (e.g. an outputMask). */
export type AclBoolArrayDescriptor = AclArrayDescriptor<boolean>;

/** An aclIntArray handle (e.g. LayerNorm's normalizedShape). */
export type AclIntArrayDescriptor = AclArrayDescriptor<number>;

/**
 * Throws AclnnError 161002 for a descriptor the library refused to create (`call` names the
 * function and the argument), with the native message.
 */
function refused(libs: CannLibraries, call: string): never {
  const nativeMessage = recentErrorMessage(libs.runtime);
  throw new AclnnError(
    ACLNN_ERR_PARAM_INVALID,
    failedWith(call, nativeMessage),
    { nativeMessage },
  );
}

/**
 * aclCreateTensor for `tensor`, whose storage (already checked to belong to the device)
 * starts at device address `data` and holds `storageBytes` bytes. Throws AclnnError 161002
 * with the native message when the library refuses it.
 */
export function createAclTensor(
  libs: CannLibraries,
  tensor: Tensor,
  data: Deno.PointerValue,
  storageBytes: number,
  what = "tensor",
): AclTensorDescriptor {
  const rank = tensor.shape.length;
  const elementBytes = dtypeByteSize(tensor.dtype);
  const shapes = new BigInt64Array(2 * rank + 1);
  for (let i = 0; i < rank; i++) {
    shapes[i] = BigInt(tensor.shape[i]);
    shapes[rank + i] = BigInt(tensor.strides[i]);
  }
  shapes[2 * rank] = BigInt(Math.floor(storageBytes / elementBytes));
  const nn = libs.nnopbase;
  const handle = nn.aclCreateTensor(
    shapes.subarray(0, rank),
    BigInt(rank),
    aclDataType(tensor.dtype),
    shapes.subarray(rank, 2 * rank),
    BigInt(tensor.offset),
    aclFormatForRank(rank),
    shapes.subarray(2 * rank),
    1n,
    data,
  );
  if (handle === null) refused(libs, `aclCreateTensor(${what}: ${tensor})`);
  return new AclTensorDescriptor(handle, shapes, nn.aclDestroyTensor);
}

/** aclCreateBoolArray (the library copies the values). */
export function createAclBoolArray(
  libs: CannLibraries,
  values: readonly boolean[],
  what = "boolArray",
): AclBoolArrayDescriptor {
  const bytes = Uint8Array.from(values, (v) => (v ? 1 : 0));
  const handle = libs.nnopbase.aclCreateBoolArray(bytes, BigInt(bytes.length));
  if (handle === null) refused(libs, `aclCreateBoolArray(${what})`);
  return new AclArrayDescriptor(handle, [...values], libs.nnopbase.aclDestroyBoolArray);
}

/**
 * aclCreateIntArray (`const int64_t *value, uint64_t size`; the library copies the values, as
 * opbase's aclIntArray constructor does). Every value must be a safe integer (checked by the
 * caller).
 */
export function createAclIntArray(
  libs: CannLibraries,
  values: readonly number[],
  what = "intArray",
): AclIntArrayDescriptor {
  const words = BigInt64Array.from(values, (v) => BigInt(v));
  const handle = libs.nnopbase.aclCreateIntArray(words, BigInt(words.length));
  if (handle === null) refused(libs, `aclCreateIntArray(${what})`);
  return new AclArrayDescriptor(handle, [...values], libs.nnopbase.aclDestroyIntArray);
}
