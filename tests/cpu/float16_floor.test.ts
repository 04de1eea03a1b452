/**
 * bench/float16_floor.ts is the evidence for what a float16 write can cost on this engine
 * (issue 9's float16 target), so its kernels must do what its table says: the float32-math
 * kernel rounds every one of the 65536 float16 inputs as Math.f16round does, the rebias-only
 * bound does so wherever the result is a normal float16, and (in a child process with
 * V8's --experimental-wasm-fp16) the FP16 proposal's kernel is checked the same way.
 */

import assert from "node:assert/strict";
import {
  checkFloat16,
  floorKernels,
  newMemory,
  runFp16Child,
  type Write,
} from "../../bench/float16_floor.ts";

Deno.test("float16 floor kernels round like Math.f16round (all 65536 inputs)", async () => {
  const memory = newMemory();
  const kernels = await floorKernels(memory);
  checkFloat16("float32 math", kernels.float16_float32_math as Write, memory);
  checkFloat16("rebias only", kernels.float16_rebias_only as Write, memory, true);
  assert.throws(
    () => checkFloat16("rebias only", kernels.float16_rebias_only as Write, memory),
    /rebias only: 0x/,
    "the rebias-only bound is wrong outside the normal range, as documented",
  );
});

Deno.test("float16 floor: the FP16 proposal kernel, in a child process with the V8 flag", async () => {
  const out = await runFp16Child(64, 1, "piped");
  const stderr = new TextDecoder().decode(out.stderr);
  assert.ok(out.success, `child failed: ${stderr}`);
  const { ns } = JSON.parse(new TextDecoder().decode(out.stdout));
  assert.ok(ns > 0 && Number.isFinite(ns), `ns per element ${ns}`);
});
