/**
 * The two-phase aclnn call: GetWorkspaceSize -> workspace -> execute on the device's stream,
 * through a per-device cache of prepared calls ({@linkcode ./call_cache.ts}).
 *
 * 1. Checks: the device is an open AscendDevice and every tensor's storage is a live
 *    DeviceBuffer of that device (else AclnnError 161002 naming the argument).
 * 2. First call of a signature: builds the descriptors, calls
 *    `${op}GetWorkspaceSize(...args, &workspaceSize, &executor)` (on failure destroys what it
 *    created and throws AclnnError with the native message), and asks CANN to make the
 *    executor repeatable. The prepared call is cached.
 * 3. A repeated signature refreshes only the storage addresses that changed, then runs phase 2
 *    on the repeatable executor (or, where CANN refused that, phase 1 and 2 on the cached
 *    descriptors).
 * 4. Phase 2, `${op}(workspace, workspaceSize, executor, stream)`, uses the device's reusable
 *    workspace (grown when too small; NULL for 0 bytes) and records every buffer the queued
 *    work uses, so none is freed before the stream is synchronised.
 *
 * @module
 */

import type { AcceleratorDevice } from "../tensor/device.ts";
import type { Tensor } from "../tensor/tensor.ts";
import {
  type AclBoolArrayDescriptor,
  type AclIntArrayDescriptor,
  type AclTensorDescriptor,
  createAclBoolArray,
  createAclIntArray,
  createAclTensor,
} from "./acl_tensor.ts";
import type { CachedCall, CachedTensorArg, NativeArg } from "./call_cache.ts";
import {
  AclError,
  ACLNN_ERR_PARAM_INVALID,
  AclnnError,
  failedWith,
  recentErrorMessage,
} from "../errors.ts";
import {
  AscendDevice,
  ascendState,
  DeviceBuffer,
  type DeviceState,
  rememberedGeometry,
  rememberGeometry,
} from "./runtime.ts";
import { opapiSymbols } from "./symbols.ts";

import { type AclnnArg, ARG_KINDS_FOR, type CString, cString } from "./aclnn_args.ts";

export { type AclnnArg, arg } from "./aclnn_args.ts";

type Descriptor =
  | AclTensorDescriptor
  | AclBoolArrayDescriptor
  | AclIntArrayDescriptor
  | CString;
type OpFunction = (...args: NativeArg[]) => number;

function invalidArg(op: string, index: number, kind: string, rule: string): never {
  throw new AclnnError(
    ACLNN_ERR_PARAM_INVALID,
    `${op}: argument ${index} (${kind}) ${rule}`,
    { argument: `#${index}` },
  );
}

/** The declared parameter types of `${op}GetWorkspaceSize` without the two out-params. */
const phaseOneParameters = new Map<string, readonly string[] | undefined>();
function parametersOf(op: string): readonly string[] | undefined {
  if (!phaseOneParameters.has(op)) {
    const table = opapiSymbols as Record<string, { parameters: readonly string[] }>;
    phaseOneParameters.set(op, table[`${op}GetWorkspaceSize`]?.parameters.slice(0, -2));
  }
  return phaseOneParameters.get(op);
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

/**
 * A tensor's geometry as a string, remembered on its storage for the view last used (so a
 * tensor passed again costs a comparison). Not in a WeakMap keyed by tensor: its entry for a
 * result tensor would outlive the call, and V8's young-generation collections keep the values
 * of entries whose keys are young, so a loop that never yields would grow the young
 * generation with them.
 */
function geometryKey(t: Tensor, buffer: DeviceBuffer): string {
  const remembered = rememberedGeometry(buffer, t);
  if (remembered !== undefined) return remembered;
  const { shape, strides } = t;
  let key = `${t.dtype}[`;
  for (let i = 0; i < shape.length; i++) key += `${shape[i]},`;
  key += "][";
  for (let i = 0; i < strides.length; i++) key += `${strides[i]},`;
  key += `]+${t.offset}/${buffer.byteLength}`;
  rememberGeometry(buffer, t, key);
  return key;
}

/** Everything phase 1 depends on, as a string: the cache key. */
function signature(op: string, args: readonly AclnnArg[], buffers: (DeviceBuffer | null)[]) {
  let key = op;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    switch (a.kind) {
      case "tensor":
        key += a.tensor === undefined ? "|-" : `|${geometryKey(a.tensor, buffers[i]!)}`;
        break;
      case "boolArray":
        key += `|[${a.values.map((v) => (v ? 1 : 0)).join("")}]`;
        break;
      case "intArray":
        key += `|{${a.values.join(",")}}`;
        break;
      case "string":
        key += `|${JSON.stringify(a.value)}`;
        break;
      default:
        key += `|${a.value}`;
    }
  }
  return key;
}

function destroyAll(descriptors: readonly Descriptor[]): void {
  for (const d of descriptors) d.destroy();
}

function failure(op: string, what: string, status: number, state: DeviceState): AclnnError {
  const nativeMessage = recentErrorMessage(state.libs.runtime);
  return new AclnnError(
    status,
    failedWith(`${op}${what}`, nativeMessage),
    { nativeMessage },
  );
}

/** What a single call needs: the checked operator functions and buffers. */
interface Call {
  readonly op: string;
  readonly state: DeviceState;
  readonly args: readonly AclnnArg[];
  /** Per argument: the tensor's storage, or null. */
  readonly buffers: (DeviceBuffer | null)[];
  readonly phase1: OpFunction;
  readonly phase2: OpFunction;
}

/**
 * Builds the descriptors and the phase-1 argument list of a new signature. Throws (after
 * destroying what it built) when the library refuses a descriptor.
 */
function prepare(call: Call): {
  descriptors: Descriptor[];
  native: NativeArg[];
  tensors: CachedTensorArg[];
} {
  const { args, buffers, state } = call;
  const libs = state.libs;
  const descriptors: Descriptor[] = [];
  const tensors: CachedTensorArg[] = [];
  const native: NativeArg[] = new Array(args.length + 2);
  let inputs = 0n;
  let outputs = 0n;
  try {
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      switch (a.kind) {
        case "tensor": {
          const index = a.output ? outputs++ : inputs++;
          if (a.tensor === undefined) {
            native[i] = null;
            break;
          }
          const buffer = buffers[i]!;
          const address = buffer.pointer;
          const d = createAclTensor(libs, a.tensor, address, buffer.byteLength, `#${i}`);
          descriptors.push(d);
          tensors.push({ position: i, descriptor: d, output: a.output, index, address });
          native[i] = d.handle;
          break;
        }
        case "boolArray": {
          const d = createAclBoolArray(libs, a.values, `#${i}`);
          descriptors.push(d);
          native[i] = d.handle;
          break;
        }
        case "intArray": {
          const d = createAclIntArray(libs, a.values, `#${i}`);
          descriptors.push(d);
          native[i] = d.handle;
          break;
        }
        case "string": {
          const d = cString(a.value);
          descriptors.push(d);
          native[i] = d.handle;
          break;
        }
        case "bool":
        case "f64":
        case "f32":
        case "i32":
          native[i] = a.value;
          break;
        case "i64":
          native[i] = BigInt(a.value);
          break;
      }
    }
  } catch (e) {
    destroyAll(descriptors);
    throw e;
  }
  native[args.length] = state.workspaceSizeOut as unknown as NativeArg;
  native[args.length + 1] = state.executorOut as unknown as NativeArg;
  return { descriptors, native, tensors };
}

/** Phase 1 on prepared arguments: the workspace size and the executor, or a thrown error. */
function phaseOne(call: Call, native: NativeArg[]): { size: bigint; executor: Deno.PointerValue } {
  const { state } = call;
  state.workspaceSizeOut[0] = 0n;
  state.executorOut[0] = 0n;
  const status = call.phase1(...native);
  if (status !== 0) throw failure(call.op, "GetWorkspaceSize", status, state);
  return {
    size: state.workspaceSizeOut[0],
    executor: Deno.UnsafePointer.create(state.executorOut[0]),
  };
}

/**
 * The error of a workspace that cannot be allocated, naming the operator that asked for it
 * (the allocator's error names only aclrtMalloc); the native code and message are kept.
 */
function workspaceError(op: string, size: bigint, e: unknown): unknown {
  if (!(e instanceof AclError)) return e;
  const what = e.message.replace(/ \[[A-Z_]+ \d+\]$/, "");
  return new AclError(
    e.code,
    `${op}: the ${size}-byte workspace asked for by ${op}GetWorkspaceSize cannot be allocated: ${what}`,
    { nativeMessage: e.nativeMessage, cause: e },
  );
}

/**
 * Phase 2 with the device's workspace. When the workspace cannot be had, a non-repeatable
 * executor (which only phase 2 frees) is destroyed before the error propagates.
 */
function phaseTwo(call: Call, size: bigint, executor: Deno.PointerValue, repeatable: boolean) {
  const { state } = call;
  let workspace: DeviceBuffer | null = null;
  try {
    if (size > 0n) workspace = state.workspaceFor(size);
  } catch (e) {
    if (!repeatable && executor !== null) {
      if (state.libs.nnopbase.aclDestroyAclOpExecutor(executor) !== 0) {
        recentErrorMessage(state.libs.runtime);
      }
    }
    throw workspaceError(call.op, size, e);
  }
  const status = call.phase2(
    workspace === null ? null : workspace.pointer,
    size,
    executor,
    state.stream,
  );
  if (status !== 0) throw launchFailure(call.op, status, state);
  // Queued: every buffer it touches stays alive (and is not freed) until synchronisation.
  const used: DeviceBuffer[] = [];
  for (const b of call.buffers) if (b !== null) used.push(b);
  if (workspace !== null) used.push(workspace);
  state.noteLaunch(used, call.op);
}

/**
 * The error of a phase 2 that failed. A stream that refuses a task (361001) usually does so
 * because queued work failed on it: that failure is drained now and given as the error's
 * cause, so that it is not thrown again by the next, unrelated call.
 */
function launchFailure(op: string, status: number, state: DeviceState): AclnnError {
  const nativeMessage = recentErrorMessage(state.libs.runtime); // before the drain reads its own
  const pending = state.pendingFailure();
  const message = failedWith(op, nativeMessage);
  if (pending === undefined) return new AclnnError(status, message, { nativeMessage });
  const earlier = pending instanceof Error
    ? pending.message.replace(/ \[[A-Z_]+ -?\d+\]$/, "")
    : String(pending);
  return new AclnnError(
    status,
    `${message}; work queued before it had failed (the cause): ${earlier}`,
    { nativeMessage, cause: pending },
  );
}

/** First call of a signature: prepare, phase 1, try to make it repeatable, cache, phase 2. */
function runFresh(call: Call, key: string): void {
  const { state } = call;
  const nn = state.libs.nnopbase;
  const { descriptors, native, tensors } = prepare(call);
  let phase1: { size: bigint; executor: Deno.PointerValue };
  try {
    phase1 = phaseOne(call, native);
  } catch (e) {
    destroyAll(descriptors);
    throw e;
  }
  const { size, executor } = phase1;
  let repeatable = false;
  if (executor !== null) {
    repeatable = nn.aclSetAclOpExecutorRepeatable(executor) === 0;
    if (!repeatable) recentErrorMessage(state.libs.runtime); // refused (561000): clear it
  }
  // Without a repeatable executor the descriptors can only be reused if their addresses can
  // be refreshed before phase 1 (aclSetRawTensorAddr, CANN >= 8.0).
  const cacheable = repeatable || nn.aclSetRawTensorAddr !== null;
  const entry: CachedCall = {
    key,
    descriptors,
    native,
    tensors,
    executor: repeatable ? executor : null,
    workspaceSize: size,
    lastUse: 0,
  };
  if (cacheable) state.calls.add(entry);
  try {
    phaseTwo(call, size, executor, repeatable);
  } catch (e) {
    // Never launched: no queued work uses the executor or the descriptors, so they go now
    // (a failed call leaves nothing behind), not at the next synchronisation.
    if (cacheable) state.calls.discard(key);
    else destroyAll(descriptors);
    throw e;
  }
  // One-shot descriptors go right after phase 2, as CANN allows.
  if (!cacheable) destroyAll(descriptors);
}

/** A cached signature: refresh changed addresses, then phase 2 (and phase 1 if needed). */
function runCached(call: Call, entry: CachedCall): void {
  const { state, buffers } = call;
  const nn = state.libs.nnopbase;
  const executor = entry.executor;
  for (const t of entry.tensors) {
    const address = buffers[t.position]!.pointer;
    if (address === t.address) continue;
    const handle = t.descriptor.handle;
    const status = executor === null
      ? nn.aclSetRawTensorAddr!(handle, address)
      : t.output
      ? nn.aclSetOutputTensorAddr(executor, t.index, handle, address)
      : nn.aclSetInputTensorAddr(executor, t.index, handle, address);
    if (status !== 0) {
      state.calls.retire(entry.key);
      throw failure(call.op, ` (refreshing the address of argument ${t.position})`, status, state);
    }
    t.address = address;
  }
  if (executor !== null) {
    try {
      phaseTwo(call, entry.workspaceSize, executor, true);
    } catch (e) {
      state.calls.retire(entry.key);
      throw e;
    }
    return;
  }
  const { size, executor: oneShot } = phaseOne(call, entry.native);
  phaseTwo(call, size, oneShot, false);
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
  const ops = state.libs.ops as unknown as Record<string, OpFunction | null | undefined>;
  const params = parametersOf(op);
  const phase1 = ops[`${op}GetWorkspaceSize`];
  const phase2 = ops[op];
  if (!params || !phase1 || !phase2) {
    throw new AclnnError(561003, `${op}: the loaded CANN libraries do not export this operator`);
  }
  if (params.length !== args.length) {
    throw new TypeError(`${op}: expected ${params.length} arguments, got ${args.length}`);
  }

  // Check everything before touching any native object.
  const buffers: (DeviceBuffer | null)[] = new Array(args.length).fill(null);
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (!ARG_KINDS_FOR[params[i]]?.includes(a.kind)) {
      throw new TypeError(`${op}: argument ${i} is a ${a.kind}, the C parameter is ${params[i]}`);
    }
    if (a.kind === "tensor" && a.tensor !== undefined) {
      buffers[i] = checkStorage(op, i, a.tensor, device);
    } else if (a.kind === "i64" && !Number.isSafeInteger(a.value)) {
      invalidArg(op, i, "i64", `${a.value} is not an integer`);
    } else if (a.kind === "i32" && (!Number.isInteger(a.value) || a.value !== (a.value | 0))) {
      invalidArg(op, i, "i32", `${a.value} is not a 32-bit integer`);
    } else if (a.kind === "string" && a.value.includes("\0")) {
      invalidArg(op, i, "string", `${JSON.stringify(a.value)} holds a NUL character`);
    } else if (a.kind === "intArray" && !a.values.every((v) => Number.isSafeInteger(v))) {
      invalidArg(
        op,
        i,
        "intArray",
        `[${a.values.join(", ")}] holds a value that is not an integer`,
      );
    }
  }

  state.activate();
  const call: Call = { op, state, args, buffers, phase1, phase2 };
  const key = signature(op, args, buffers);
  const entry = state.calls.get(key);
  if (entry === undefined) runFresh(call, key);
  else runCached(call, entry);
  state.afterLaunch();
}
