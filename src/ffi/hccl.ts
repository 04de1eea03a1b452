/**
 * HCCL communicators bound to an {@linkcode AscendDevice}: the root info, communicator set-up
 * and the two collectives SyncBatchNorm needs, enqueued on the device's stream like any
 * operator (HCCL's collectives are issued synchronously and run asynchronously on the stream,
 * hccl docs/zh/user_guide/fault_diagnosis/debug_thinking.md; their failures, such as a peer
 * that never arrives, surface at stream synchronisation as ACL 507048).
 *
 * Every call runs on the calling thread with the device's context current: HCCL checks for a
 * set device first (HcclDeviceRefresh, HCCL_E_RUNTIME without one), so none of these calls can
 * be `nonblocking` (Deno would run it on another thread, where no device is set).
 *
 * @module
 */

import type { DType } from "../tensor/dtype.ts";
import { dtypeByteSize } from "../tensor/dtype.ts";
import { formatShape, isContiguousLayout, numel } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import {
  HCCL_E_NOT_SUPPORT,
  HCCL_E_PARA,
  HcclError,
  nativeSummary,
  recentErrorMessage,
} from "../errors.ts";
import { type HcclLibrary, openHccl } from "./library.ts";
import { type AscendDevice, ascendState, DeviceBuffer, type DeviceState } from "./runtime.ts";

/** `HCCL_ROOT_INFO_BYTES`: the size of `HcclRootInfo` (hcomm include/hccl/hccl_types.h). */
export const HCCL_ROOT_INFO_BYTES = 4108;
/** `sizeof(HcclCommConfig)` on LP64 (hcomm include/hccl/hccl_types.h, CONFIG_VERSION 10). */
export const HCCL_COMM_CONFIG_BYTES = 2240;

/** `HcclDataType` values (hcomm include/hccl/hccl_types.h). */
export const HcclDataType = {
  INT8: 0,
  INT16: 1,
  INT32: 2,
  FP16: 3,
  FP32: 4,
  INT64: 5,
  UINT64: 6,
  UINT8: 7,
  UINT16: 8,
  UINT32: 9,
  FP64: 10,
  BFP16: 11,
} as const;

/** `HcclReduceOp` values (hcomm include/hccl/hccl_types.h). */
export const HcclReduceOp = { SUM: 0, PROD: 1, MAX: 2, MIN: 3 } as const;

/** The reductions {@linkcode HcclCommunicator.allReduce} offers. */
export type HcclReduction = "sum" | "prod" | "max" | "min";

const REDUCE_OPS: Readonly<Record<HcclReduction, number>> = {
  sum: HcclReduceOp.SUM,
  prod: HcclReduceOp.PROD,
  max: HcclReduceOp.MAX,
  min: HcclReduceOp.MIN,
};

const DATA_TYPES: Readonly<Record<DType, number>> = {
  float32: HcclDataType.FP32,
  float16: HcclDataType.FP16,
  bfloat16: HcclDataType.BFP16,
  int32: HcclDataType.INT32,
};

/** Throws an {@linkcode HcclError} with HCCL's text for the code unless `status` is 0. */
function unwrapHccl(status: number, what: string, hccl: HcclLibrary, state: DeviceState): void {
  if (status === 0) return;
  // Right after the call, before any other: aclGetRecentErrMsg holds the details.
  const nativeMessage = recentErrorMessage(state.rt);
  const p = hccl.symbols.HcclGetErrorString(status);
  const text = p === null ? undefined : Deno.UnsafePointerView.getCString(p);
  const details = [text, nativeSummary(nativeMessage)].filter((s) => s !== undefined).join(": ");
  throw new HcclError(status, `${what} failed${details ? `: ${details}` : ""}`, {
    text,
    nativeMessage,
  });
}

/**
 * An `HcclCommConfig` as `HcclCommConfigInit` (a header-only inline function, not exported)
 * fills it (hcomm include/hccl/hccl_comm.h), with `hcclExecTimeOut` set when given: how long
 * (seconds) a collective waits for its peers before the stream fails.
 *
 * @example
 * ```ts
 * import { hcclCommConfig } from "@aclnn/norm/ascend";
 * const config = new DataView(hcclCommConfig(30).buffer);
 * console.log(config.getUint32(8, true).toString(16), config.getInt32(316, true)); // f0f0f0f0 30
 * ```
 */
export function hcclCommConfig(execTimeoutSeconds?: number): Uint8Array {
  const bytes = new Uint8Array(HCCL_COMM_CONFIG_BYTES);
  const view = new DataView(bytes.buffer);
  const NOT_SET = 0xffffffff;
  view.setBigUint64(0, BigInt(HCCL_COMM_CONFIG_BYTES), true); // size
  view.setUint32(8, 0xf0f0f0f0, true); // magicWord
  view.setUint32(12, 10, true); // version
  view.setUint32(24, NOT_SET, true); // hcclBufferSize
  view.setUint32(28, NOT_SET, true); // hcclDeterministic
  view.setUint32(292, NOT_SET, true); // hcclRdmaTrafficClass
  view.setUint32(296, NOT_SET, true); // hcclRdmaServiceLevel
  view.setInt32(316, execTimeoutSeconds ?? -1, true); // hcclExecTimeOut (-1: not set)
  view.setUint32(2228, NOT_SET, true); // hcclQos
  view.setBigUint64(2232, 16n, true); // hcclSymWinMaxMemSizePerRank
  return bytes;
}

/** Options of {@linkcode HcclCommunicator.create}. */
export interface HcclCommunicatorOptions {
  /** This process's rank, 0..worldSize-1. */
  rank: number;
  /** The number of ranks. */
  worldSize: number;
  /** The root info rank 0 made with {@linkcode hcclRootInfo}, as every rank received it. */
  rootInfo: Uint8Array;
  /**
   * Seconds a collective waits for its peers before the stream fails (HcclCommConfig's
   * hcclExecTimeOut). Default: HCCL's (HCCL_EXEC_TIMEOUT, or 1836 s).
   */
  execTimeoutSeconds?: number;
  /**
   * Milliseconds a synchronisation waits for this communicator's collectives: past it, the
   * call that synchronises fails with HcclError HCCL_E_TIMEOUT while HCCL goes on waiting (CANN
   * rounds hcclExecTimeOut up to 68 s steps off Atlas A2/A3), and the device is held until it
   * gives up. Default: no deadline (synchronisations wait for HCCL).
   */
  timeoutMs?: number;
  /** How a timeout error describes HCCL's own wait (default: from execTimeoutSeconds). */
  nativeTimeout?: string;
}

/**
 * Makes the root info of a new communicator (HcclGetRootInfo) on rank 0's device: the bytes
 * every rank passes to {@linkcode HcclCommunicator.create}.
 *
 * @example
 * ```ts
 * import { openAscend } from "@aclnn/norm";
 * import { hcclRootInfo } from "@aclnn/norm/ascend";
 * try {
 *   using npu = openAscend();
 *   console.log(hcclRootInfo(npu).length); // 4108
 * } catch (e) {
 *   console.log((e as Error).message.split("\n")[0]); // (no CANN or HCCL here)
 * }
 * ```
 */
export function hcclRootInfo(device: AscendDevice): Uint8Array {
  const state = ascendState(device);
  state.check("HcclGetRootInfo");
  const hccl = openHccl(state.libs);
  state.activate();
  const info = new Uint8Array(HCCL_ROOT_INFO_BYTES);
  unwrapHccl(hccl.symbols.HcclGetRootInfo(info), "HcclGetRootInfo", hccl, state);
  return info;
}

function checkRank(what: string, rank: number, worldSize: number): void {
  if (!Number.isInteger(worldSize) || worldSize < 1 || worldSize > 0xffffffff) {
    throw new HcclError(HCCL_E_PARA, `${what}: worldSize ${worldSize} must be an integer >= 1`);
  }
  if (!Number.isInteger(rank) || rank < 0 || rank >= worldSize) {
    throw new HcclError(
      HCCL_E_PARA,
      `${what}: rank ${rank} must be an integer in 0..${worldSize - 1}`,
    );
  }
}

/**
 * One rank's HCCL communicator on one device. Collectives take device tensors and return new
 * device tensors; they are queued on the device's stream and return at once (reading a result,
 * or any synchronisation, waits for them and reports a collective that failed). Destroyed by
 * {@linkcode HcclCommunicator.destroy} or when its device closes.
 *
 * @example
 * ```ts
 * import { openAscend, Tensor } from "@aclnn/norm";
 * import { HcclCommunicator, hcclRootInfo } from "@aclnn/norm/ascend";
 * try {
 *   using npu = openAscend();
 *   // A world of one: rank 0 makes the root info and joins alone.
 *   using comm = HcclCommunicator.create(npu, { rank: 0, worldSize: 1, rootInfo: hcclRootInfo(npu) });
 *   console.log(comm.allReduce(Tensor.ones([3], "float32", npu)).toArray()); // [1, 1, 1]
 * } catch (e) {
 *   console.log((e as Error).message.split("\n")[0]); // (no CANN or HCCL here)
 * }
 * ```
 */
export class HcclCommunicator {
  readonly #state: DeviceState;
  readonly #hccl: HcclLibrary;
  #comm: Deno.PointerValue;
  /** This process's rank. */
  readonly rank: number;
  /** The number of ranks. */
  readonly worldSize: number;
  /** The device the communicator runs on. */
  readonly device: AscendDevice;
  /** The deadline of synchronisations over its collectives, and how HCCL's own wait reads. */
  readonly #deadline: { timeoutMs: number; nativeTimeout: string } | null;
  /** Collectives launched. */
  #launched = 0;

  private constructor(
    device: AscendDevice,
    state: DeviceState,
    hccl: HcclLibrary,
    comm: Deno.PointerValue,
    options: HcclCommunicatorOptions,
  ) {
    this.device = device;
    this.#state = state;
    this.#hccl = hccl;
    this.#comm = comm;
    this.rank = options.rank;
    this.worldSize = options.worldSize;
    const { timeoutMs, execTimeoutSeconds } = options;
    this.#deadline = timeoutMs === undefined ? null : {
      timeoutMs,
      nativeTimeout: options.nativeTimeout ??
        (execTimeoutSeconds === undefined
          ? "its exec timeout"
          : `its exec timeout, hcclExecTimeOut ${execTimeoutSeconds} s (CANN rounds it to ` +
            "68 s steps off Atlas A2/A3)"),
    };
    state.dependents.add(this);
  }

  /**
   * Joins the communicator described by `rootInfo` as `rank` of `worldSize`
   * (HcclCommInitRootInfoConfig, or HcclCommInitRootInfo on releases without it). Blocks until
   * every rank has joined; HCCL bounds the wait with HCCL_CONNECT_TIMEOUT (120 s by default),
   * so agree on the world with a rendezvous first (see `createHcclProcessGroup`).
   */
  static create(device: AscendDevice, options: HcclCommunicatorOptions): HcclCommunicator {
    const what = "HcclCommInitRootInfo";
    const { rank, worldSize, rootInfo, execTimeoutSeconds, timeoutMs } = options;
    checkRank(what, rank, worldSize);
    if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
      throw new HcclError(HCCL_E_PARA, `${what}: timeoutMs ${timeoutMs} must be a number > 0`);
    }
    if (!(rootInfo instanceof Uint8Array) || rootInfo.length !== HCCL_ROOT_INFO_BYTES) {
      throw new HcclError(
        HCCL_E_PARA,
        `${what}: rootInfo must be the ${HCCL_ROOT_INFO_BYTES} bytes of HcclGetRootInfo`,
      );
    }
    if (
      execTimeoutSeconds !== undefined &&
      (!Number.isInteger(execTimeoutSeconds) || execTimeoutSeconds < 1 ||
        execTimeoutSeconds > 0x7fffffff)
    ) {
      throw new HcclError(
        HCCL_E_PARA,
        `${what}: execTimeoutSeconds ${execTimeoutSeconds} must be an integer >= 1`,
      );
    }
    const state = ascendState(device);
    state.check(what);
    const hccl = openHccl(state.libs);
    state.activate();
    const out = new BigUint64Array(1);
    const withConfig = hccl.symbols.HcclCommInitRootInfoConfig;
    if (withConfig && execTimeoutSeconds !== undefined) {
      const config = hcclCommConfig(execTimeoutSeconds);
      unwrapHccl(withConfig(worldSize, rootInfo, rank, config, out), what, hccl, state);
    } else {
      unwrapHccl(
        hccl.symbols.HcclCommInitRootInfo(worldSize, rootInfo, rank, out),
        what,
        hccl,
        state,
      );
    }
    return new HcclCommunicator(device, state, hccl, Deno.UnsafePointer.create(out[0]), options);
  }

  /** Whether {@linkcode HcclCommunicator.destroy} ran (or the device closed). */
  get destroyed(): boolean {
    return this.#comm === null;
  }

  #ready(what: string): void {
    this.#state.check(what);
    if (this.#comm === null) {
      throw new HcclError(
        HCCL_E_PARA,
        `${what}: the communicator of rank ${this.rank} was destroyed`,
      );
    }
    this.#state.activate();
  }

  /** The device address of a tensor's first element, checking it can be sent as is. */
  #address(
    what: string,
    name: string,
    t: Tensor,
  ): { pointer: Deno.PointerValue; buffer: DeviceBuffer } {
    const storage = t.storage;
    if (!(storage instanceof DeviceBuffer) || t.device !== this.device) {
      throw new HcclError(
        HCCL_E_PARA,
        `${what}: ${name} must be a tensor on ${this.device.name} (it is on ${
          t.device === "cpu" ? "cpu" : t.device.name
        })`,
      );
    }
    if (!isContiguousLayout(t.shape, t.strides)) {
      throw new HcclError(
        HCCL_E_PARA,
        `${what}: ${name} of shape ${formatShape(t.shape)} must be contiguous (call .contiguous())`,
      );
    }
    const base = storage.pointer;
    const bytes = t.offset * dtypeByteSize(t.dtype);
    const pointer = bytes === 0 || base === null ? base : Deno.UnsafePointer.offset(base, bytes);
    return { pointer, buffer: storage };
  }

  /**
   * Launches one collective on `tensor` into a new tensor of `shape` on this device: `launch`
   * gets the send and receive pointers, the element count of `tensor` and its HCCL data
   * type. A failed launch frees the result; a queued one keeps both buffers alive until the
   * stream is synchronised.
   */
  #collective(
    what: string,
    tensor: Tensor,
    shape: readonly number[],
    launch: (
      send: Deno.PointerValue,
      recv: Deno.PointerValue,
      count: bigint,
      dataType: number,
    ) => number,
  ): Tensor {
    const send = this.#address(what, "tensor", tensor);
    const result = new Tensor(
      this.device.allocate(numel(shape) * dtypeByteSize(tensor.dtype)),
      tensor.dtype,
      shape,
    );
    const recv = this.#address(what, "result", result);
    try {
      unwrapHccl(
        launch(send.pointer, recv.pointer, BigInt(tensor.numel), DATA_TYPES[tensor.dtype]),
        what,
        this.#hccl,
        this.#state,
      );
      this.#state.noteLaunch([send.buffer, recv.buffer], what);
      this.#launched++;
      if (this.#deadline !== null) {
        this.#state.watch.note({
          what: `${what} #${this.#launched} (rank ${this.rank} of ${this.worldSize})`,
          ...this.#deadline,
        });
      }
      this.#state.afterLaunch(); // ASCEND_LAUNCH_BLOCKING: waits for it, reports its failure
    } catch (e) {
      result.dispose();
      throw e;
    }
    return result;
  }

  /**
   * The element-wise reduction (default sum) of `tensor` over every rank, as a new tensor of
   * the same shape on this device (HcclAllReduce). Every rank must call it with the same shape
   * and dtype, in the same order as its other collectives.
   */
  allReduce(tensor: Tensor, op: HcclReduction = "sum"): Tensor {
    const what = "HcclAllReduce";
    this.#ready(what);
    const reduceOp = REDUCE_OPS[op];
    if (reduceOp === undefined) {
      throw new HcclError(
        HCCL_E_NOT_SUPPORT,
        `${what}: op ${String(op)} must be one of ${Object.keys(REDUCE_OPS).join(", ")}`,
      );
    }
    return this.#collective(
      what,
      tensor,
      tensor.shape,
      (send, recv, count, dataType) =>
        this.#hccl.symbols.HcclAllReduce(
          send,
          recv,
          count,
          dataType,
          reduceOp,
          this.#comm,
          this.#state.stream,
        ),
    );
  }

  /**
   * Every rank's `tensor` stacked in rank order, `[worldSize, ...shape]`, as a new tensor on
   * this device (HcclAllGather: rank r's block starts at element r * numel). Every rank must
   * call it with the same shape and dtype.
   */
  allGather(tensor: Tensor): Tensor {
    const what = "HcclAllGather";
    this.#ready(what);
    return this.#collective(
      what,
      tensor,
      [this.worldSize, ...tensor.shape],
      (send, recv, count, dataType) =>
        this.#hccl.symbols.HcclAllGather(
          send,
          recv,
          count,
          dataType,
          this.#comm,
          this.#state.stream,
        ),
    );
  }

  /**
   * Waits for queued collectives, then destroys the communicator (HcclCommDestroy).
   * Idempotent; also called when the device closes.
   */
  destroy(): void {
    const comm = this.#comm;
    if (comm === null) return;
    this.#comm = null;
    this.#state.dependents.delete(this);
    // A collective that missed its deadline still runs: HCCL would refuse (HCCL_E_AGAIN); the
    // communicator goes with the process.
    if (this.#state.closed || this.#state.watch.held) return;
    let failure: unknown;
    try {
      // HCCL refuses to destroy a communicator with work in flight (HCCL_E_AGAIN).
      this.#state.synchronize();
    } catch (e) {
      failure = e;
    }
    this.#state.activate();
    unwrapHccl(
      this.#hccl.symbols.HcclCommDestroy(comm),
      "HcclCommDestroy",
      this.#hccl,
      this.#state,
    );
    if (failure !== undefined) throw failure;
  }

  /** Same as {@linkcode HcclCommunicator.destroy} (for the device's close). */
  close(): void {
    this.destroy();
  }

  /** Same as {@linkcode HcclCommunicator.destroy}, for `using` declarations. */
  [Symbol.dispose](): void {
    this.destroy();
  }
}
