/**
 * The host heap's fallback where the system refuses a memory of 65536 pages (4 GiB of address
 * space): a growable memory, and the kernels' module with its memory import lowered to fit it
 * (src/backends/cpu/kernels/wasm_instance.ts `fitMemoryImport`), giving the same bits.
 */

import assert from "node:assert/strict";
import { kernelsWasmBytes } from "../../src/backends/cpu/wasm/kernels_wasm.ts";
import { fitMemoryImport, instantiateOn } from "../../src/backends/cpu/kernels/wasm_instance.ts";
import { childJson } from "../helpers/child_json.ts";

Deno.test("host heap fallback: the module's memory import is lowered to 1 page, nothing else", () => {
  const bytes = kernelsWasmBytes()!;
  const lowered = fitMemoryImport(bytes, 16);
  assert.equal(
    fitMemoryImport(bytes, 65536),
    bytes,
    "a memory of 65536 pages takes the module as it is",
  );
  const changed = [...bytes.keys()].filter((i) => bytes[i] !== lowered[i]);
  // 65536 (0x80 0x80 0x04) becomes 1 padded to the same length (0x81 0x80 0x00).
  assert.equal(changed.length, 2);
  assert.deepEqual([...lowered.subarray(changed[0], changed[0] + 3)], [0x81, 0x80, 0x00]);
  const memory = new WebAssembly.Memory({ initial: 16, maximum: 65536, shared: true });
  assert.throws(() =>
    new WebAssembly.Instance(new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>), {
      env: { memory },
    })
  );
  assert.equal(typeof instantiateOn(bytes, memory).ln_fwd, "function");
});

Deno.test("host heap fallback: a growable memory gives the bits of the 4 GiB one, on two threads", async () => {
  const child = new URL("../fixtures/heap_growable_child.ts", import.meta.url).pathname;
  const run = (mode: string) =>
    childJson<{ hash: string; memoryBytes: number }>([
      "run",
      "--allow-read",
      "--allow-env",
      child,
      mode,
    ]);
  const [growable, fixed] = await Promise.all([run("growable"), run("fixed")]);
  assert.equal(fixed.memoryBytes, 2 ** 32);
  assert.ok(
    growable.memoryBytes > 16 * 65536 && growable.memoryBytes < 2 ** 32,
    `${growable.memoryBytes}`,
  );
  assert.equal(growable.hash, fixed.hash);
});
