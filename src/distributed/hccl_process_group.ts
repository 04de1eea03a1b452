/**
 * `createHcclProcessGroup`: SyncBatchNorm across processes and machines over HCCL, as
 * torch.distributed's "hccl" backend gives it to torch_npu users. One process per NPU: each
 * calls it with its rank, the ranks meet at a TCP rendezvous (rank 0 listens at
 * `masterAddr:masterPort`) that hands out HCCL's root info, and each joins the HCCL
 * communicator on its device. The returned collectives run on the device's stream (no host
 * round trip) and plug into {@linkcode syncBatchNormForward}/{@linkcode syncBatchNormBackward}
 * as they are.
 *
 * The ranks of one job share a job id (`jobId`, else torchrun's `$TORCHELASTIC_RUN_ID`, else
 * `$ACLNN_NORM_JOB_ID`; src/distributed/job_id.ts): a process that cannot prove it is not let
 * into the rendezvous, and cannot stop it.
 *
 * @module
 */

import { HCCL_E_PARA, HcclError } from "../errors.ts";
import { HcclCommunicator, hcclRootInfo } from "../ffi/hccl.ts";
import { AscendDevice } from "../ffi/runtime.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { grantedEnv } from "../tensor/env.ts";
import { socFamily } from "../backends/ascend/soc.ts";
import { jobIdWarning, resolveJobId } from "./job_id.ts";
import { rendezvous } from "./rendezvous.ts";

/** The port PyTorch's launchers use when MASTER_PORT is unset. */
const DEFAULT_PORT = 29500;
const DEFAULT_TIMEOUT_MS = 300_000;
const OP = "createHcclProcessGroup";

/** Options of {@linkcode createHcclProcessGroup}. Unset values come from the environment. */
export interface HcclProcessGroupOptions {
  /** This process's NPU (opened with `openAscend`). */
  device: AscendDevice;
  /** This process's rank, 0..worldSize-1. Default: `$RANK`. */
  rank?: number;
  /** The number of processes. Default: `$WORLD_SIZE`. */
  worldSize?: number;
  /** Where rank 0 listens for the rendezvous. Default: `$MASTER_ADDR`, else `127.0.0.1`. */
  masterAddr?: string;
  /** The rendezvous port. Default: `$MASTER_PORT`, else 29500. */
  masterPort?: number;
  /**
   * Milliseconds the rendezvous may take, and how long a synchronisation (reading a result)
   * waits for a collective whose peers do not come: past it, that call fails with HcclError
   * HCCL_E_TIMEOUT, on every SoC. It is also HCCL's exec timeout (rounded up to whole seconds;
   * CANN rounds it again to 68 s steps off Atlas A2/A3), after which the stream fails and the
   * device works again. Default 300000 (5 minutes).
   */
  timeoutMs?: number;
  /**
   * The job's id, the same on every rank and unknown to other processes: rank 0 admits only
   * hellos that prove it (HMAC over per-connection nonces; the id itself is never sent) and
   * drops the rest, and a rank accepts only a root info proved with it. Default:
   * `$TORCHELASTIC_RUN_ID` (torchrun sets it), else `$ACLNN_NORM_JOB_ID`, else `"none"`
   * (torchrun's default id; rank 0 then warns through `log` that anyone reaching its port can
   * join). 1..1024 characters.
   */
  jobId?: string;
  /**
   * Where rank 0 reports the connections it drops (strangers, other jobs) and a job id anyone
   * knows. Default: `console.warn`.
   */
  log?: (message: string) => void;
}

/** One rank's HCCL process group: the SyncBatchNorm collectives, and `close()`. */
export interface HcclProcessGroup {
  /** This process's rank. */
  readonly rank: number;
  /** The number of ranks. */
  readonly worldSize: number;
  /** The device the collectives run on. */
  readonly device: AscendDevice;
  /** All-gather in rank order, `[worldSize, ...shape]`, on the device's stream. */
  allGather(tensor: Tensor): Tensor;
  /** Element-wise sum over the ranks, on the device's stream. */
  allReduce(tensor: Tensor): Tensor;
  /** Destroys the communicator (after queued collectives finish). Idempotent. */
  close(): void;
  /** Same as `close()`, for `using` declarations. */
  [Symbol.dispose](): void;
}

function integer(name: string, value: number | undefined, env: string): number {
  if (value !== undefined) return value;
  const text = grantedEnv(env);
  if (text === undefined) {
    throw new HcclError(
      HCCL_E_PARA,
      `${OP}: ${name} is required: pass { ${name} } or set ${env} (readable with --allow-env)`,
    );
  }
  const parsed = Number(text);
  if (!Number.isInteger(parsed)) {
    throw new HcclError(HCCL_E_PARA, `${OP}: ${env}=${text} is not an integer`);
  }
  return parsed;
}

/**
 * Joins an HCCL process group: meets the other ranks at the rendezvous, then creates this
 * rank's HCCL communicator on `device`. Every rank calls it with its own rank and the same
 * world size, address and port (as `torch.distributed.init_process_group("hccl")`).
 *
 * Errors are {@linkcode HcclError}s, within `timeoutMs` and on every rank concerned: a wrong
 * world size or a rank given twice (HCCL_E_PARA), a rank that never comes (HCCL_E_TIMEOUT),
 * rank 0 unreachable (HCCL_E_TCP_CONNECT); HCCL's own failures carry its code and text. A
 * process with another job id is turned away (it fails with HCCL_E_PARA, the job does not);
 * other strangers at rank 0's port are closed and logged, never fatal. A rank that dies
 * mid-collective makes the others' next synchronisation (reading a result) fail with ACL
 * 507048 (HCCL saw it go); one that stops answering makes it fail with HCCL_E_TIMEOUT once
 * `timeoutMs` has passed, whatever HCCL's own exec timeout on the chip (68 s steps off Atlas
 * A2/A3): the error names both, and the device is held until HCCL gives up.
 *
 * @example
 * ```ts
 * import {
 *   createHcclProcessGroup, openAscend, syncBatchNormForward, Tensor,
 * } from "@aclnn/norm";
 * try {
 *   using npu = openAscend();
 *   // A world of one (launch W processes with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
 *   using group = await createHcclProcessGroup({ device: npu, rank: 0, worldSize: 1, masterPort: 29517 });
 *   const input = Tensor.random([4, 3, 5], { seed: 1, device: npu });
 *   const { output } = await syncBatchNormForward({ input, allGather: group.allGather });
 *   console.log(output.shape); // [4, 3, 5]
 * } catch (e) {
 *   console.log((e as Error).message.split("\n")[0]); // (no CANN or HCCL here)
 * }
 * ```
 */
export async function createHcclProcessGroup(
  options: HcclProcessGroupOptions,
): Promise<HcclProcessGroup> {
  const { device } = options;
  if (!(device instanceof AscendDevice)) {
    throw new HcclError(HCCL_E_PARA, `${OP}: device must be an AscendDevice (from openAscend())`);
  }
  const rank = integer("rank", options.rank, "RANK");
  const worldSize = integer("worldSize", options.worldSize, "WORLD_SIZE");
  if (!(worldSize >= 1)) {
    throw new HcclError(HCCL_E_PARA, `${OP}: worldSize ${worldSize} must be >= 1`);
  }
  if (!(rank >= 0 && rank < worldSize)) {
    throw new HcclError(HCCL_E_PARA, `${OP}: rank ${rank} must be in 0..${worldSize - 1}`);
  }
  const masterAddr = options.masterAddr ?? grantedEnv("MASTER_ADDR") ?? "127.0.0.1";
  const masterPort = options.masterPort ?? masterPortFromEnv();
  if (!Number.isInteger(masterPort) || masterPort < 1 || masterPort > 65535) {
    throw new HcclError(HCCL_E_PARA, `${OP}: masterPort ${masterPort} must be in 1..65535`);
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new HcclError(HCCL_E_PARA, `${OP}: timeoutMs ${timeoutMs} must be a number > 0`);
  }
  const job = resolveJobId(options.jobId, OP);
  const log = options.log ?? console.warn;
  device.synchronize(); // a closed device fails here, before any peer waits for this rank

  const warning = rank === 0 && worldSize > 1
    ? jobIdWarning(job, OP, `${masterAddr}:${masterPort}`)
    : undefined;
  if (warning !== undefined) log(warning);
  const rootInfo = await rendezvous(
    { rank, worldSize, masterAddr, masterPort, timeoutMs, jobId: job.id, log },
    () => hcclRootInfo(device),
  );
  const execTimeoutSeconds = Math.max(1, Math.ceil(timeoutMs / 1000));
  const communicator = HcclCommunicator.create(device, {
    rank,
    worldSize,
    rootInfo,
    execTimeoutSeconds,
    timeoutMs,
    nativeTimeout: hcclExecTimeout(device.socName, execTimeoutSeconds),
  });
  const close = () => communicator.destroy();
  return {
    rank,
    worldSize,
    device,
    allGather: (tensor: Tensor) => communicator.allGather(tensor),
    allReduce: (tensor: Tensor) => communicator.allReduce(tensor, "sum"),
    close,
    [Symbol.dispose]: close,
  };
}

/**
 * HCCL's own wait for a collective, in words: the hcclExecTimeOut HcclCommConfig asked for, as
 * CANN applies it. On Atlas A2/A3 (910B, 910_93) it is taken as it is; elsewhere it is rounded
 * down to a multiple of 68 s, at least 68 s (hcomm src/framework/communicator/comm_config.cc
 * CommConfig::SetConfigExecTimeout).
 */
export function hcclExecTimeout(socName: string | null, seconds: number): string {
  const family = socFamily(socName);
  if (family === undefined) return `its exec timeout (${seconds} s asked; unknown SoC ${socName})`;
  const exact = family.name === "Ascend910B" || family.name === "Ascend910_93";
  const applied = exact ? seconds : Math.max(1, Math.floor(seconds / 68)) * 68;
  return `${applied} s on ${socName}` +
    (exact
      ? ""
      : `, where CANN rounds hcclExecTimeOut ${seconds} s to 68 s steps (off Atlas A2/A3)`);
}

/** `$MASTER_PORT` when set, else PyTorch's customary 29500. */
function masterPortFromEnv(): number {
  const text = grantedEnv("MASTER_PORT");
  if (text === undefined) return DEFAULT_PORT;
  const parsed = Number(text);
  if (!Number.isInteger(parsed)) {
    throw new HcclError(HCCL_E_PARA, `${OP}: MASTER_PORT=${text} is not an integer`);
  }
  return parsed;
}
