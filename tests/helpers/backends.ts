/**
 * `forEachBackend`: one suite, registered once per available backend. The CPU backend always;
 * the NPU code path on the software CANN (build/sim, `deno task build:sim`) once per SoC it
 * plays, the default Ascend 950 and the Atlas A2 (whose BatchNorm stores the variance in
 * saveInvstd, so the library's conversion runs there). Each variant is its own Deno.test:
 *
 * ```
 * name [cpu]
 * name [sim Ascend950PR_9599]
 * name [sim Ascend910B4]
 * ```
 *
 * A sim variant sets ACLSIM_SOC_NAME, opens a fresh device (the device reads the SoC name when
 * it opens, the simulator reads the variable on every call), runs the body, closes the device,
 * restores the variable and checks that nothing is left live on the simulator. The body gets
 * the device and the SoC family (from src/backends/ascend/soc.ts), so a case can skip, or
 * better assert, what the chip refuses (`chipAccepts`, `assertChipRefuses`): the chip lists
 * come from soc.ts, never from the tests.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  bf16Allowed,
  groupNormBackwardMixedPrecision,
  operatorSupported,
  type SocFamily,
  type SocOperator,
} from "../../src/backends/ascend/soc.ts";
import { resolveSocFamily } from "../../src/backends/ascend/device_soc.ts";
import { AclnnError } from "../../src/errors.ts";
import { openAscend } from "../../src/ffi/runtime.ts";
import type { Device } from "../../src/tensor/device.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import type { Tensor } from "../../src/tensor/tensor.ts";
import { liveDelta, SIM_DIR, simStats } from "./ffi_sim.ts";
import { startHostHeap } from "../../src/tensor/host_heap.ts";

// Every test that asserts results also catches an output element no kernel wrote: reused
// host blocks handed out without zero-filling come filled with NaN (the heap is created
// under that policy before any test allocates).
startHostHeap({ poisonReused: true });

/** The SoCs the software CANN plays for every suite: its default, and an Atlas A2. */
export const SIM_SOCS: readonly string[] = ["Ascend950PR_9599", "Ascend910B4"];

/** Whether the simulator libraries exist (the sim variants are ignored otherwise). */
export const SIM_AVAILABLE: boolean = (() => {
  try {
    return Deno.statSync(`${SIM_DIR}/libopapi.so`).isFile &&
      Deno.statSync(`${SIM_DIR}/libacl_rt.so`).isFile;
  } catch {
    return false;
  }
})();

/** What a suite body runs on. */
export interface BackendContext {
  /** "cpu", or the opened (simulated) NPU. */
  readonly device: Device;
  /** The SoC family the NPU plays; undefined on the CPU backend. */
  readonly soc: SocFamily | undefined;
  /** The SoC name (aclrtGetSocName); undefined on the CPU backend. */
  readonly socName: string | undefined;
  /** "cpu" or "sim <SoC name>", for messages. */
  readonly label: string;
}

/** Options of {@linkcode forEachBackend}. */
export interface ForEachBackendOptions {
  /** The SoCs to play on the simulator (default {@linkcode SIM_SOCS}); [] for none. */
  socs?: readonly string[];
  /** Register the CPU variant (default true). */
  cpu?: boolean;
  /** Check that the sim variant leaves no live native object behind (default true). */
  checkLeaks?: boolean;
}

/** Registers `name [cpu]` and `name [sim <SoC>]` for each SoC (module doc). */
export function forEachBackend(
  name: string,
  body: (ctx: BackendContext) => void | Promise<void>,
  options: ForEachBackendOptions = {},
): void {
  if (options.cpu ?? true) {
    Deno.test(`${name} [cpu]`, () =>
      body({ device: "cpu", soc: undefined, socName: undefined, label: "cpu" }));
  }
  for (const socName of options.socs ?? SIM_SOCS) {
    Deno.test({
      name: `${name} [sim ${socName}]`,
      ignore: !SIM_AVAILABLE,
      fn: () => runOnSim(socName, body, options.checkLeaks ?? true),
    });
  }
}

async function runOnSim(
  socName: string,
  body: (ctx: BackendContext) => void | Promise<void>,
  checkLeaks: boolean,
): Promise<void> {
  // The library's own placement: its table, else the chip's platform file beside build/sim.
  const soc = resolveSocFamily(socName, SIM_DIR).family;
  assert.ok(soc, `${socName} is placed in no SoC family by the library`);
  const saved = Deno.env.get("ACLSIM_SOC_NAME");
  Deno.env.set("ACLSIM_SOC_NAME", socName);
  try {
    const before = checkLeaks ? simStats() : undefined;
    const device = openAscend({ libDir: SIM_DIR });
    try {
      assert.equal(device.socName, socName, "the simulator plays the requested SoC");
      await body({ device, soc, socName, label: `sim ${socName}` });
    } finally {
      device.close();
    }
    if (before) {
      assert.deepEqual(liveDelta(before, simStats()), {}, "nothing left live on the simulator");
    }
  } finally {
    if (saved === undefined) Deno.env.delete("ACLSIM_SOC_NAME");
    else Deno.env.set("ACLSIM_SOC_NAME", saved);
  }
}

/**
 * Whether the chip accepts `op` with tensors of `dtypes` (always true on the CPU backend):
 * the operator must run on the family, bfloat16 must be allowed for it there, and, for
 * GroupNorm backward, statistics of another dtype than the data need mixed precision.
 */
export function chipAccepts(
  soc: SocFamily | undefined,
  op: SocOperator,
  dtypes: readonly (DType | undefined)[],
  options: { mixedPrecision?: boolean } = {},
): boolean {
  if (!soc) return true;
  if (!operatorSupported(op, soc)) return false;
  if (dtypes.includes("bfloat16") && !bf16Allowed(op, soc)) return false;
  if (
    op === "aclnnGroupNormBackward" && options.mixedPrecision &&
    !groupNormBackwardMixedPrecision(soc)
  ) return false;
  return true;
}

/**
 * Asserts that the NPU path refuses `fn` up front as the chip does: 161002, a message that
 * names the SoC, and (when given) the argument.
 */
export function assertChipRefuses(
  ctx: BackendContext,
  fn: () => unknown,
  argument?: string,
): AclnnError {
  assert.ok(ctx.socName, `${ctx.label}: only an NPU refuses by chip`);
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof AclnnError, `${ctx.label}: expected an AclnnError, got ${e}`);
    assert.equal(e.code, 161002, e.message);
    assert.ok(e.message.includes(ctx.socName), `the message names ${ctx.socName}: ${e.message}`);
    if (argument !== undefined) assert.equal(e.argument, argument, e.message);
    return e;
  }
  assert.fail(`${ctx.label}: expected the chip to refuse the call, nothing was thrown`);
}

/** Moves a host tensor to the backend's device (dense views keep their strides). */
export function on(t: Tensor, device: Device): Tensor {
  return device === "cpu" ? t : t.to(device);
}

/** Same, for an optional tensor. */
export function onOpt(t: Tensor | undefined, device: Device): Tensor | undefined {
  return t === undefined ? undefined : on(t, device);
}
