/**
 * Runs the cases of `deno task verify:npu`: each on the NPU and on the CPU backend (fresh
 * copies of the same host inputs), every output compared (compare.ts), device memory given back
 * after each case (`tidy`). A case the chip does not run, by the library's own rules, is
 * skipped with the reason; a call that throws on either side fails its case.
 *
 * @module
 */

import { type Device, Tensor, tidy } from "../../mod.ts";
import type { SocFamily } from "../../src/backends/ascend/soc.ts";
import { compareOutput, type OutputComparison, type OutputValues } from "./compare.ts";
import { chipRefusal, type Outputs, type VerifyCase } from "./model.ts";

/** What happened to one case. */
export interface CaseResult {
  /** The case. */
  readonly case: VerifyCase;
  /** Whether every output agreed, one did not (or a call threw), or the chip does not run it. */
  readonly status: "passed" | "failed" | "skipped";
  /** Why it was skipped, or the error that failed it. */
  readonly reason?: string;
  /** Every output, compared (empty when skipped or when a call threw). */
  readonly outputs: readonly OutputComparison[];
}

/** An output's largest error as a fraction of its tolerance. */
export function errorRatio(o: OutputComparison): number {
  return o.tolerance > 0 ? o.worstError / o.tolerance : o.worstError > 0 ? Infinity : 0;
}

/** The output of a result that is furthest from its tolerance, if any. */
export function worstOutput(r: CaseResult): OutputComparison | undefined {
  let worst: OutputComparison | undefined;
  for (const o of r.outputs) if (!worst || errorRatio(o) > errorRatio(worst)) worst = o;
  return worst;
}

/** Reads every output back to the host (this synchronises the device). */
function readBack(outputs: Outputs): Map<string, OutputValues | null> {
  const read = new Map<string, OutputValues | null>();
  for (const [name, v] of Object.entries(outputs)) {
    if (v === null || v === undefined) read.set(name, null);
    else if (v instanceof Tensor) {
      read.set(name, { dtype: v.dtype, shape: [...v.shape], values: v.toFloat64Array() });
    } else read.set(name, v);
  }
  return read;
}

function describe(e: unknown): string {
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code;
    const first = e.message.split("\n")[0];
    return `${e.name}${typeof code === "number" ? ` ${code}` : ""}: ${first}`;
  }
  return String(e);
}

/** Runs one case on `device` and on the CPU backend and compares them. */
export async function runCase(
  c: VerifyCase,
  device: Device,
  family: SocFamily | undefined,
): Promise<CaseResult> {
  const refused = chipRefusal(c, family);
  if (refused !== undefined) return { case: c, status: "skipped", reason: refused, outputs: [] };
  return await tidy(async () => {
    let call;
    try {
      call = c.setup();
    } catch (e) {
      return { case: c, status: "failed", reason: `setup: ${describe(e)}`, outputs: [] };
    }
    let npu: Map<string, OutputValues | null>;
    try {
      npu = readBack(await call(device));
    } catch (e) {
      return { case: c, status: "failed", reason: `NPU: ${describe(e)}`, outputs: [] };
    }
    let cpu: Map<string, OutputValues | null>;
    try {
      cpu = readBack(await call("cpu"));
    } catch (e) {
      return { case: c, status: "failed", reason: `CPU backend: ${describe(e)}`, outputs: [] };
    }
    const names = [...new Set([...cpu.keys(), ...npu.keys()])];
    const outputs = names.map((n) => compareOutput(n, npu.get(n) ?? null, cpu.get(n) ?? null));
    const failed = outputs.some((o) => o.mismatches > 0);
    return { case: c, status: failed ? "failed" : "passed", outputs } as CaseResult;
  });
}

/** Runs every case in order; `progress` is told after each. */
export async function runCases(
  cases: readonly VerifyCase[],
  device: Device,
  family: SocFamily | undefined,
  progress?: (done: number, total: number) => void,
): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  for (const c of cases) {
    results.push(await runCase(c, device, family));
    progress?.(results.length, cases.length);
  }
  return results;
}
