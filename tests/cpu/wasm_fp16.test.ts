/**
 * The FP16 build of the WebAssembly kernels (src/backends/cpu/wasm/kernels_fp16.wat, chosen
 * by kernels_module.ts) against the baseline build. V8 keeps the FP16 proposal behind
 * `--experimental-wasm-fp16`, which a library cannot set, so the FP16 cases run in child
 * processes (`Deno.execPath()`) started with it:
 * - the choice: the build the engine validates, on the calling thread and on every pool
 *   worker; the baseline without the flag, the FP16 build with it;
 * - the bits: both builds side by side on every float16 pattern, over three million float32
 *   codec values and every kernel export, float16 loads and stores alike
 *   (tests/fixtures/wasm_fp16_compare_child.ts);
 * - tests/cpu/wasm_kernels.test.ts again, against the FP16 build (the codecs exhaustively,
 *   the pool), and tests/cpu/row_kernels.test.ts (the row norms' kernels against the float64
 *   oracle, staged and in place, the pool);
 * - the opcode rewrite of the build (scripts/wasm_opcodes.ts) touches opcodes only.
 */

import assert from "node:assert/strict";
import { FP16_OPCODES } from "../../scripts/build_wasm.ts";
import { forEachSimdOpcode, rewriteSimdOpcodes } from "../../scripts/wasm_opcodes.ts";
import { kernelsWasmBuild, kernelsWasmBytes } from "../../src/backends/cpu/wasm/kernels_module.ts";
import { kernelsWasmBytes as baselineBytes } from "../../src/backends/cpu/wasm/kernels_wasm.ts";
import { kernelsFp16WasmBytes } from "../../src/backends/cpu/wasm/kernels_fp16_wasm.ts";

const FP16_FLAG = "--v8-flags=--experimental-wasm-fp16";
const root = new URL("../../", import.meta.url);

/** Runs `args` with this Deno in the repository root; stdout, or a failure with stderr. */
async function child(args: string[]): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: root.pathname,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  assert.equal(
    out.code,
    0,
    `${args.join(" ")}:\n${stdout}\n${new TextDecoder().decode(out.stderr)}`,
  );
  return stdout;
}

/** A fixture's JSON report, run with or without the FP16 flag. */
async function report(fixture: string, fp16: boolean): Promise<Record<string, unknown>> {
  const path = new URL(`../fixtures/${fixture}`, import.meta.url).pathname;
  const flags = fp16 ? [FP16_FLAG] : [];
  return JSON.parse(await child(["run", ...flags, "--no-prompt", "--quiet", "--allow-read", path]));
}

const same = (a: Uint8Array, b: Uint8Array) =>
  a.length === b.length && a.every((v, i) => v === b[i]);

Deno.test("wasm build: this process runs the build its engine validates", () => {
  const validates = WebAssembly.validate(kernelsFp16WasmBytes() as Uint8Array<ArrayBuffer>);
  assert.equal(kernelsWasmBuild(), validates ? "fp16" : "baseline");
  assert.ok(same(kernelsWasmBytes(), validates ? kernelsFp16WasmBytes() : baselineBytes()));
  assert.ok(!same(kernelsFp16WasmBytes(), baselineBytes()), "two different builds");
});

Deno.test("wasm build: baseline without --experimental-wasm-fp16, FP16 with it, on every thread", async () => {
  const without = await report("wasm_build_choice_child.ts", false);
  // Deno 2.9 (V8 15.0) ships the proposal behind the flag; once it is on by default, the
  // child without the flag validates the FP16 build too and must then run it.
  const expected = without.validates ? "fp16" : "baseline";
  const withFlag = await report("wasm_build_choice_child.ts", true);
  for (const [r, build] of [[without, expected], [withFlag, "fp16"]] as const) {
    assert.equal(r.build, build, JSON.stringify(r));
    assert.equal(r.caller, build, "the calling thread's bytes");
    const workers = r.workers as string[];
    assert.ok(workers.length > 0, "the pool started workers");
    assert.deepEqual(workers, workers.map(() => build), "every worker's bytes");
    assert.ok((r.workerItems as number) > 0, "the workers ran items");
    assert.equal(r.sameAsOneThread, true, "pooled and one-thread results agree");
  }
  assert.equal(withFlag.validates, true);
});

Deno.test("wasm FP16 build: the bits of the baseline build, every kernel, every float16 input", async () => {
  const r = await report("wasm_fp16_compare_child.ts", true);
  assert.equal(r.error, undefined);
  assert.equal(r.sameConstants, true, "both builds write the same constants table");
  const opcodes = r.fp16Opcodes as { promote: number; demote: number };
  assert.ok(opcodes.promote > 0 && opcodes.demote > 0, "the FP16 build uses the conversions");
  // Decode: only the signalling NaNs differ (made quiet; 2 signs x 511 payloads).
  assert.deepEqual(r.decode, { lanes: 65536, differing: 1022, allQuietedSignallingNaNs: true });
  const encode = r.encode as Record<string, number | string>;
  assert.ok((encode.values as number) > 3_000_000);
  assert.equal(encode.differingBlocks, 0, String(encode.first));
  const kernels = r.kernels as {
    calls: number;
    differing: number;
    exports: string[];
    first: string[];
  };
  // 2 input sets x 2 shapes x 6 constant sets x the 26 calls of the 25 kernel exports
  // (gs_sums_rows with and without the kept dYNew).
  assert.equal(kernels.calls, 624);
  assert.deepEqual(kernels.exports.toSorted(), [
    "ada_ln_bwd",
    "ada_ln_fwd",
    "add_ln_bwd",
    "add_ln_fwd",
    "add_rms_cast_fwd",
    "add_rms_fwd",
    "bn_grad_pix",
    "bn_grad_rows",
    "bn_norm_pix",
    "bn_norm_rows",
    "bn_scale_pix",
    "bn_scale_rows",
    "bn_stats_pix",
    "bn_stats_rows",
    "bn_sums_pix",
    "bn_sums_rows",
    "bn_swish_pix",
    "bn_swish_rows",
    "gs_grad_cached_rows",
    "gs_grad_rows",
    "gs_sums_rows",
    "ln_bwd",
    "ln_fwd",
    "rms_bwd",
    "rms_fwd",
  ]);
  assert.equal(kernels.differing, 0, kernels.first.join("\n"));
});

Deno.test("wasm FP16 build: tests/cpu/wasm_kernels.test.ts passes against it", async () => {
  const stdout = await child([
    "test",
    FP16_FLAG,
    "--allow-read",
    "--allow-env",
    "--no-check",
    "tests/cpu/wasm_kernels.test.ts",
  ]);
  // The codec tests name the build they ran (and the build check is skipped there).
  const codecs = stdout.match(/wasm codecs \(fp16 build\).* ok/g) ?? [];
  assert.equal(codecs.length, 5, stdout);
  assert.match(stdout, /ok \| \d+ passed \| 0 failed \| 1 ignored/);
});

Deno.test("wasm FP16 build: tests/cpu/row_kernels.test.ts passes against it", async () => {
  const stdout = await child([
    "test",
    FP16_FLAG,
    "--allow-read",
    "--allow-env",
    "--no-check",
    "tests/cpu/row_kernels.test.ts",
  ]);
  assert.match(stdout, /ok \| 9 passed \| 0 failed/);
});

Deno.test("wasm opcode rewrite: opcodes only, never immediates or data that look like one", () => {
  // A function that returns i16x8.abs(v128.const with the placeholder's bytes) and
  // i16x8.neg(...) after an i32.const whose LEB128 holds 0xfd 0x81 0x01; a data segment holds
  // the bytes too. Only the two opcodes are rewritten.
  const bytes = Uint8Array.from([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    0x01,
    0x05,
    0x01,
    0x60,
    0x00,
    0x01,
    0x7b, // type: [] -> [v128]
    0x03,
    0x02,
    0x01,
    0x00, // function 0 has type 0
    0x05,
    0x03,
    0x01,
    0x00,
    0x01, // memory 1 page
    0x0a,
    0x21,
    0x01,
    0x1f,
    0x00, // code: one body of 31 bytes, no locals
    0x41,
    0xfd,
    0x81,
    0x01,
    0x1a, // i32.const (LEB 0xfd 0x81 0x01), drop
    0xfd,
    0x0c,
    ...[0xfd, 0x80, 0x01, 0xfd, 0x81, 0x01],
    ...new Array(10).fill(0), // v128.const
    0xfd,
    0x80,
    0x01, // i16x8.abs
    0xfd,
    0x81,
    0x01, // i16x8.neg
    0x0b,
    0x0b,
    0x0a,
    0x01,
    0x00,
    0x41,
    0x00,
    0x0b,
    0x04,
    0xfd,
    0x80,
    0x01,
    0x00, // data
  ]);
  assert.ok(WebAssembly.validate(bytes), "the test module is valid");
  const { bytes: out, counts } = rewriteSimdOpcodes(bytes, FP16_OPCODES);
  assert.deepEqual([...counts], [[0x80, 1], [0x81, 1]]);
  const changed = [...out.keys()].filter((i) => out[i] !== bytes[i]);
  assert.deepEqual(changed, [53, 54, 56, 57], "the two opcodes' bytes only");
  assert.deepEqual([...out.subarray(52, 58)], [0xfd, 0xcb, 0x02, 0xfd, 0xc9, 0x02]);
  const seen: number[] = [];
  forEachSimdOpcode(out, (op) => seen.push(op));
  assert.deepEqual(seen, [12, 0x14b, 0x149]);
});
