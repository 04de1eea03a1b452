/**
 * Shared set-up of the FFI tests: where the built software CANN lives (`deno task build:sim`
 * writes it to build/sim), the environment it needs, and its test-only counters.
 *
 * The simulator, like real CANN, fails aclnn phase 1 with 561107 unless ASCEND_OPP_PATH is
 * set; `simEnv()` sets it (to the simulator directory: any non-empty value works).
 *
 * @module
 */

import { openAscend } from "../../src/ffi/runtime.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";

/** build/sim as an absolute path (or $ACLSIM_DIR, to test another simulator build). */
export const SIM_DIR: string = Deno.env.get("ACLSIM_DIR") ??
  new URL("../../build/sim", import.meta.url).pathname;

/** Sets what the simulator needs (ASCEND_OPP_PATH) unless already set. */
export function simEnv(): void {
  if (!Deno.env.get("ASCEND_OPP_PATH")) Deno.env.set("ASCEND_OPP_PATH", SIM_DIR);
}

/** Opens device `deviceId` of the simulator. */
export function openSim(deviceId = 0): AscendDevice {
  simEnv();
  return openAscend({ libDir: SIM_DIR, deviceId });
}

/** Names of aclsimGetStats counters, in order (tests/sim/sim_runtime.c sim_get_stats). */
export const STAT_NAMES = [
  "deviceAllocations",
  "deviceBytes",
  "hostAllocations",
  "tensors",
  "boolArrays",
  "intArrays",
  "scalars",
  "executors",
  "streams",
  "pendingTasks",
  "contexts",
  "tasksDone",
  "tasksFailed",
  "deviceReferences",
  "faultsInjected",
] as const;

/**
 * The live-object counters (11 and 12 are cumulative; 13, the device references, is
 * process-wide state that other open devices hold, so it is checked on its own).
 */
export const LIVE_STATS: readonly (typeof STAT_NAMES)[number][] = STAT_NAMES.slice(0, 11);

/** Counter values by name. */
export type SimStats = Record<(typeof STAT_NAMES)[number], number>;

const STATS_HOOK = {
  aclsimGetStats: { parameters: ["buffer", "u64"], result: "i32" },
} as const;
const FAULT_HOOK = {
  aclsimInjectFault: { parameters: ["i32", "i64", "i64", "i64"], result: "i32" },
  aclGetRecentErrMsg: { parameters: [], result: "pointer" },
} as const;

let statsLib: Deno.DynamicLibrary<typeof STATS_HOOK> | null = null;
let faultLib: Deno.DynamicLibrary<typeof FAULT_HOOK> | null = null;

/** Opens the simulator's libacl_rt.so with `symbols` (its core first: it has no RPATH). */
function openRuntime<S extends Deno.ForeignLibraryInterface>(symbols: S): Deno.DynamicLibrary<S> {
  Deno.dlopen(`${SIM_DIR}/libaclsim_core.so`, {});
  return Deno.dlopen(`${SIM_DIR}/libacl_rt.so`, symbols);
}

/** Reads aclsimGetStats (a test hook exported by the simulator's libacl_rt.so). */
export function simStats(): SimStats {
  statsLib ??= openRuntime(STATS_HOOK);
  const out = new BigInt64Array(STAT_NAMES.length);
  statsLib.symbols.aclsimGetStats(out, BigInt(out.length));
  return Object.fromEntries(STAT_NAMES.map((n, i) => [n, Number(out[i])])) as SimStats;
}

/** Live counters that differ between two snapshots. */
export function liveDelta(before: SimStats, after: SimStats): Partial<SimStats> {
  const delta: Partial<SimStats> = {};
  for (const n of LIVE_STATS) if (after[n] !== before[n]) delta[n] = after[n] - before[n];
  return delta;
}

/** Fault kinds of aclsimInjectFault (tests/sim/README_test_hooks.md "Fault injection"). */
export const FAULT = {
  /** aclrtMalloc fails (default 207001 ACL_ERROR_RT_MEMORY_ALLOCATION). */
  malloc: 1,
  /** aclrtMemcpy fails (default 507899 ACL_ERROR_RT_DRV_INTERNAL_ERROR). */
  memcpy: 2,
  /** An operator's task fails at synchronisation (default 507015 ACL_ERROR_RT_AICORE_EXCEPTION). */
  kernel: 3,
  /** Phase 1 asks for a workspace no aclrtMalloc can give (value: its size in bytes). */
  workspace: 4,
  /** aclrtCreateStream fails (default 207008 ACL_ERROR_RT_NO_STREAM_RESOURCE). */
  createStream: 5,
  /** A stream refuses a task (default 107023 ACL_ERROR_RT_STREAM_ABORT; a launch is 361001). */
  stream: 6,
  /**
   * [aclsim] A kernel succeeds with every value it writes multiplied by 1 + value * 1e-6
   * (value 0: 1 + 1e-2) before its rounding: a silent wrong result.
   */
  corrupt: 7,
} as const;

/** Options of {@linkcode injectFault}. */
export interface FaultOptions {
  /** Which call of that kind from now fails (1 = the next). Default 1. */
  nth?: number;
  /** How many calls fail from there (-1: every one until cleared). Default 1. */
  times?: number;
  /**
   * The status code (0 = the kind's default), the workspace size in bytes, or (corrupt) the
   * relative perturbation in millionths. Default 0.
   */
  value?: number;
}

/** Arms one fault (aclsimInjectFault); throws if the simulator refuses the arguments. */
export function injectFault(kind: keyof typeof FAULT, options: FaultOptions = {}): void {
  const { nth = 1, times = 1, value = 0 } = options;
  faultLib ??= openRuntime(FAULT_HOOK);
  const h = faultLib.symbols;
  const rc = h.aclsimInjectFault(FAULT[kind], BigInt(nth), BigInt(times), BigInt(value));
  if (rc !== 0) {
    const p = h.aclGetRecentErrMsg();
    throw new Error(
      `aclsimInjectFault: ${rc} ${p === null ? "" : Deno.UnsafePointerView.getCString(p)}`,
    );
  }
}

/** Disarms every fault (aclsimInjectFault(0, 0, 0, 0)). */
export function clearFaults(): void {
  faultLib ??= openRuntime(FAULT_HOOK);
  faultLib.symbols.aclsimInjectFault(0, 0n, 0n, 0n);
}
