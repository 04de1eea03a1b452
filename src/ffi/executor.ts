/**
 * The two-phase aclnn call: GetWorkspaceSize -> workspace -> execute on the device's stream.
 *
 * 1. Checks: the device is an open AscendDevice and every tensor's storage is a live
 *    DeviceBuffer of that device (else AclnnError 161002 naming the argument).
 * 2. Builds the descriptors, calls `${op}GetWorkspaceSize(...args, &workspaceSize, &executor)`;
 *    on failure destroys what it created and throws AclnnError with the native message.
 * 3. Takes the device's reusable workspace (grown when too small; NULL for 0 bytes), calls
 *    `${op}(workspace, workspaceSize, executor, stream)`, destroys the descriptors and records
 *    every buffer the queued work uses, so none is freed before the stream is synchronised.
 *
 * @module
 */

import type { AcceleratorDevice } from "../tensor/device.ts";
import type { Tensor } from "../tensor/tensor.ts";
import {
  type AclBoolArrayDescriptor,
  type AclTensorDescriptor,
  createAclBoolArray,
  createAclTensor,
} from "./acl_tensor.ts";
import { ACLNN_ERR_PARAM_INVALID, AclnnError, recentErrorMessage } from "./errors.ts";
import { AscendDevice, ascendState, DeviceBuffer, type DeviceState } from "./runtime.ts";
import { opapiSymbols } from "./symbols.ts";

/** One argument of an aclnn call, in the order of the C prototype (before workspaceSize). */
export type AclnnArg =
  | { readonly kind: "tensor"; readonly tensor: Tensor | undefined }
  | { readonly kind: "bool"; readonly value: boolean }
  | { readonly kind: "i64"; readonly value: number }
  | { readonly kind: "f64"; readonly value: number }
  | { readonly kind: "boolArray"; readonly values: readonly boolean[] };

/** Builders for {@linkcode AclnnArg}s, so operator files read like the C prototype. */
export const arg = {
  /** An aclTensor* (NULL when undefined). */
  tensor: (tensor: Tensor | undefined): AclnnArg => ({ kind: "tensor", tensor }),
  /** A C bool. */
  bool: (value: boolean): AclnnArg => ({ kind: "bool", value }),
  /** An int64_t. */
  i64: (value: number): AclnnArg => ({ kind: "i64", value }),
  /** A double. */
  f64: (value: number): AclnnArg => ({ kind: "f64", value }),
  /** An aclBoolArray*. */
  boolArray: (values: readonly boolean[]): AclnnArg => ({ kind: "boolArray", values }),
};

type NativeArg = Deno.PointerValue | boolean | bigint | number;
type Descriptor = AclTensorDescriptor | AclBoolArrayDescriptor;
type OpFunction = (...args: NativeArg[]) => number;

const ARG_KIND_FOR: Readonly<Record<string, AclnnArg["kind"][]>> = {
  pointer: ["tensor", "boolArray"],
  bool: ["bool"],
  i64: ["i64"],
  f64: ["f64"],
};

function invalidArg(op: string, index: number, kind: string, rule: string): never {
  throw new AclnnError(
    ACLNN_ERR_PARAM_INVALID,
    `${op}: argument ${index} (${kind}) ${rule}`,
    { argument: `#${index}` },
  );
}

/** The declared parameter types of `${op}GetWorkspaceSize` without the two out-params. */
function phaseOneParameters(op: string): readonly string[] | undefined {
  const table = opapiSymbols as Record<string, { parameters: readonly string[] }>;
  return table[`${op}GetWorkspaceSize`]?.parameters.slice(0, -2);
}

function checkStorage(
  op: string,
  index: number,
  tensor: Tensor,
  device: AscendDevice,
): DeviceBuffer {
  const storage = tensor.storage;
  if (!(storage instanceof DeviceBuffer)) {
    invalidArg(op, index, "tensor", `is on cpu, not on ${device.name}`);
  }
  if (storage.device !== device) {
    invalidArg(
      op,
      index,
      "tensor",
      `is on ${storage.device.name} (another device), not ${device.name}`,
    );
  }
  if (storage.released) invalidArg(op, index, "tensor", "uses device memory that was released");
  return storage;
}

function destroyAll(descriptors: Descriptor[]): void {
  for (const d of descriptors) d.destroy();
}

/**
 * Runs aclnn operator `op` (e.g. `aclnnBatchNormReduceBackward`) on `device` with `args`, in
 * the order of the C prototype before `workspaceSize`. The work is queued on the device's
 * stream; reading a result (download) synchronises.
 */
export function runAclnn(device: AcceleratorDevice, op: string, args: readonly AclnnArg[]): void {
  if (!(device instanceof AscendDevice)) {
    throw new AclnnError(
      ACLNN_ERR_PARAM_INVALID,
      `${op}: device ${String(device?.name)} is not an AscendDevice opened with openAscend()`,
    );
  }
  const state: DeviceState = ascendState(device);
  state.check(op);
  const libs = state.libs;
  const ops = libs.ops as unknown as Record<string, OpFunction | null | undefined>;
  const params = phaseOneParameters(op);
  const phase1 = ops[`${op}GetWorkspaceSize`];
  const phase2 = ops[op];
  if (!params || !phase1 || !phase2) {
    throw new AclnnError(561003, `${op}: the loaded CANN libraries do not export this operator`);
  }
  if (params.length !== args.length) {
    throw new TypeError(`${op}: expected ${params.length} arguments, got ${args.length}`);
  }

  // Check everything before creating any native object.
  const buffers: DeviceBuffer[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (!ARG_KIND_FOR[params[i]]?.includes(a.kind)) {
      throw new TypeError(`${op}: argument ${i} is a ${a.kind}, the C parameter is ${params[i]}`);
    }
    if (a.kind === "tensor" && a.tensor !== undefined) {
      buffers.push(checkStorage(op, i, a.tensor, device));
    } else if (a.kind === "i64" && !Number.isSafeInteger(a.value)) {
      invalidArg(op, i, "i64", `${a.value} is not an integer`);
    }
  }

  const descriptors: Descriptor[] = [];
  const native: NativeArg[] = new Array(args.length + 2);
  try {
    state.activate();
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      switch (a.kind) {
        case "tensor": {
          if (a.tensor === undefined) {
            native[i] = null;
            break;
          }
          const d = createAclTensor(libs, a.tensor, a.tensor.storage as DeviceBuffer, `#${i}`);
          descriptors.push(d);
          native[i] = d.handle;
          break;
        }
        case "boolArray": {
          const d = createAclBoolArray(libs, a.values, `#${i}`);
          descriptors.push(d);
          native[i] = d.handle;
          break;
        }
        case "bool":
          native[i] = a.value;
          break;
        case "i64":
          native[i] = BigInt(a.value);
          break;
        case "f64":
          native[i] = a.value;
          break;
      }
    }
  } catch (e) {
    destroyAll(descriptors);
    throw e;
  }

  const sizeOut = state.workspaceSizeOut;
  const executorOut = state.executorOut;
  sizeOut[0] = 0n;
  executorOut[0] = 0n;
  native[args.length] = sizeOut as unknown as NativeArg;
  native[args.length + 1] = executorOut as unknown as NativeArg;
  const status1 = phase1(...native);
  if (status1 !== 0) {
    const nativeMessage = recentErrorMessage(libs.runtime);
    destroyAll(descriptors);
    throw new AclnnError(
      status1,
      `${op}GetWorkspaceSize failed${nativeMessage ? `: ${nativeMessage}` : ""}`,
      { nativeMessage },
    );
  }
  const workspaceSize = sizeOut[0];
  const executor = Deno.UnsafePointer.create(executorOut[0]);

  let workspace: DeviceBuffer | null = null;
  try {
    if (workspaceSize > 0n) workspace = state.workspaceFor(workspaceSize);
  } catch (e) {
    // Phase 2 never runs: free the executor it would have consumed.
    if (executor !== null && libs.nnopbase.aclDestroyAclOpExecutor(executor) !== 0) {
      recentErrorMessage(libs.runtime);
    }
    destroyAll(descriptors);
    throw e;
  }

  const status2 = phase2(
    workspace === null ? null : workspace.pointer,
    workspaceSize,
    executor,
    state.stream,
  );
  const nativeMessage2 = status2 === 0 ? undefined : recentErrorMessage(libs.runtime);
  destroyAll(descriptors);
  if (status2 !== 0) {
    throw new AclnnError(
      status2,
      `${op} failed${nativeMessage2 ? `: ${nativeMessage2}` : ""}`,
      { nativeMessage: nativeMessage2 },
    );
  }
  // Queued: every buffer it touches stays alive (and is not freed) until synchronisation.
  if (workspace !== null) buffers.push(workspace);
  state.noteLaunch(buffers);
}
