/**
 * Raw calls into the software CANN for the fidelity tests: aclnn operators through the real FFI
 * path (`runAclnn`), bypassing the library's own validation, with the SoC chosen per call
 * through ACLSIM_SOC_NAME (the simulator reads it on every phase 1, like the runtime's platform
 * info; the library caches `AscendDevice.socName`, which these helpers never use).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  operatorSupported,
  SOC_FAMILIES,
  type SocFamily,
  type SocOperator,
} from "../../src/backends/ascend/soc.ts";
import { AclnnError } from "../../src/errors.ts";
import { type AclnnArg, runAclnn } from "../../src/ffi/executor.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import { type DType, dtypeByteSize } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { parsePlatformConfig } from "../../scripts/sim_platform.ts";
import { liveDelta, openSim, simStats } from "./ffi_sim.ts";
import { SIM_AVAILABLE } from "./backends.ts";

/** What `aclrtGetSocName()` returns when ACLSIM_SOC_NAME is unset. */
export const DEFAULT_SOC = "Ascend950PR_9599";

/** The SoC names the software CANN has platform files for (tests/sim/platform_config.txt). */
export const SIM_SOC_NAMES: readonly string[] = parsePlatformConfig(
  Deno.readTextFileSync(new URL("../sim/platform_config.txt", import.meta.url)),
).map((e) => e.socVersion);

/**
 * A SoC name of the family that the simulator has a platform file for: its first exact name, or
 * the simulator's first SoC name with its first prefix (`<prefix>9599` when there is one).
 */
export function sampleSoc(family: SocFamily): string {
  if (family.names.length > 0) return family.names[0];
  const prefix = family.prefixes[0];
  const named = SIM_SOC_NAMES.filter((n) => n.startsWith(prefix));
  const soc = named.find((n) => n === `${prefix}9599`) ?? named[0];
  assert.ok(soc, `the simulator has no platform file for a SoC named ${prefix}*`);
  return soc;
}

/** Every family with a sample SoC name, in SOC_FAMILIES order. */
export const FAMILIES: readonly { family: SocFamily; soc: string }[] = SOC_FAMILIES.map((
  family,
) => ({ family, soc: sampleSoc(family) }));

/** The sample SoC of every family supporting `op`. */
export const supporting = (
  op: SocOperator,
): readonly { family: SocFamily; soc: string }[] =>
  FAMILIES.filter((f) => operatorSupported(op, f.family));

/** An Atlas A2 training SoC. */
export const A2 = "Ascend910B4";
/** An Atlas A3 SoC. */
export const A3 = "Ascend910_9391";

/** Runs `fn` with ACLSIM_SOC_NAME = `soc` (undefined: unset, the default SoC), then restores it. */
export function withSoc<T>(soc: string | undefined, fn: () => T): T {
  const saved = Deno.env.get("ACLSIM_SOC_NAME");
  if (soc === undefined) Deno.env.delete("ACLSIM_SOC_NAME");
  else Deno.env.set("ACLSIM_SOC_NAME", soc);
  try {
    return fn();
  } finally {
    if (saved === undefined) Deno.env.delete("ACLSIM_SOC_NAME");
    else Deno.env.set("ACLSIM_SOC_NAME", saved);
  }
}

/**
 * Runs `fn` on a device opened while ACLSIM_SOC_NAME = `soc`, closed afterwards. A fresh device
 * per SoC matters: the library caches repeatable executors per device, and a cached executor
 * (planned under one SoC) runs again without phase 1.
 */
export function onSoc<T>(soc: string | undefined, fn: (npu: AscendDevice) => T): T {
  return withSoc(soc, () => {
    using npu = openSim();
    return fn(npu);
  });
}

/**
 * A Deno.test (ignored without the built simulator) that runs `fn` on a device opened while the
 * simulator plays `soc` (undefined: its default), then checks that nothing is left live.
 */
export function leakCheckedSimTest(
  name: string,
  fn: (npu: AscendDevice) => void,
  soc?: string,
): void {
  Deno.test({
    name,
    ignore: !SIM_AVAILABLE,
    fn: () => {
      const before = simStats();
      onSoc(soc, fn);
      assert.deepEqual(liveDelta(before, simStats()), {}, "every descriptor was destroyed");
    },
  });
}

/** A device tensor holding `values` (row-major), rounded to `dtype`. */
export function dev(
  npu: AscendDevice,
  values: ArrayLike<number>,
  shape: readonly number[],
  dtype: DType = "float32",
): Tensor {
  return Tensor.fromArray(values, shape, dtype).to(npu);
}

/** A device tensor filled with `value`. */
export function full(
  npu: AscendDevice,
  shape: readonly number[],
  value: number,
  dtype: DType = "float32",
): Tensor {
  return dev(npu, new Array(shape.reduce((a, b) => a * b, 1)).fill(value), shape, dtype);
}

/**
 * A device tensor that nothing has written: aclrtMalloc fills fresh memory with 0xFF, which
 * reads as NaN in every float dtype, so "the operator wrote nothing" stays visible.
 */
export function fresh(
  npu: AscendDevice,
  shape: readonly number[],
  dtype: DType = "float32",
): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return new Tensor(npu.allocate(n * dtypeByteSize(dtype)), dtype, shape);
}

/** Runs `op` and returns the AclnnError it threw, or null on success. */
export function tryAclnn(
  npu: AscendDevice,
  op: string,
  args: readonly AclnnArg[],
): AclnnError | null {
  try {
    runAclnn(npu, op, args);
    return null;
  } catch (e) {
    if (e instanceof AclnnError) return e;
    throw e;
  }
}

/** Runs `op`, which must succeed. */
export function expectOk(
  npu: AscendDevice,
  op: string,
  args: readonly AclnnArg[],
  what = op,
): void {
  const e = tryAclnn(npu, op, args);
  assert.equal(e, null, `${what}: ${e?.message}`);
}

/** Runs `op`, which must fail with `code` and a native text matching `text` (a substring or RegExp). */
export function expectAclnn(
  npu: AscendDevice,
  op: string,
  args: readonly AclnnArg[],
  code: number,
  text?: string | RegExp,
  what = op,
): AclnnError {
  const e = tryAclnn(npu, op, args);
  assert.ok(e, `${what}: expected ${code}, but the call succeeded`);
  assert.equal(e.code, code, `${what}: ${e.message}`);
  const native = e.nativeMessage ?? "";
  if (typeof text === "string") {
    assert.ok(
      native.includes(text),
      `${what}: native text ${JSON.stringify(native)} lacks ${JSON.stringify(text)}`,
    );
  } else if (text) {
    assert.match(native, text, what);
  }
  return e;
}

/** The values of a tensor (synchronises). */
export function values(t: Tensor): number[] {
  return Array.from(t.toFloat64Array());
}
