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

/** Names of aclsimGetStats counters, in order (tests/sim/sim_core.c). */
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
] as const;

/**
 * The live-object counters (11 and 12 are cumulative; 13, the device references, is
 * process-wide state that other open devices hold, so it is checked on its own).
 */
export const LIVE_STATS: readonly (typeof STAT_NAMES)[number][] = STAT_NAMES.slice(0, 11);

/** Counter values by name. */
export type SimStats = Record<(typeof STAT_NAMES)[number], number>;

let statsLib:
  | Deno.DynamicLibrary<{
    aclsimGetStats: { parameters: ["buffer", "u64"]; result: "i32" };
  }>
  | null = null;

/** Reads aclsimGetStats (a test hook exported by the simulator's libacl_rt.so). */
export function simStats(): SimStats {
  // libacl_rt.so needs the simulator core and has no RPATH: load the core first.
  if (!statsLib) Deno.dlopen(`${SIM_DIR}/libaclsim_core.so`, {});
  statsLib ??= Deno.dlopen(`${SIM_DIR}/libacl_rt.so`, {
    aclsimGetStats: { parameters: ["buffer", "u64"], result: "i32" },
  });
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
