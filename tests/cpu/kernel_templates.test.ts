/**
 * The generated TypeScript kernels (scripts/build_kernels.ts, scripts/kernel_templates/):
 * - the committed row_kernels.ts and pixel_kernels.ts are what the templates build now;
 * - a stale or missing module is reported with its first differing line;
 * - each module exports exactly the per-(family, dtype) kernels kernel_tables.ts takes;
 * - the dtype parameters reach the text: float32 kernels read their arrays directly,
 *   16-bit ones through the decode table of their type, bfloat16 stores through the block.
 * Their numerics are tested in fast_kernels.test.ts and wasm_kernels.test.ts (this folder).
 */

import assert from "node:assert/strict";
import {
  buildKernelModules,
  describeDifference,
  staleModules,
} from "../../scripts/build_kernels.ts";
import * as pixelKernels from "../../src/backends/cpu/kernels/pixel_kernels.ts";
import * as rowKernels from "../../src/backends/cpu/kernels/row_kernels.ts";

const REDUCE = ["F32", "U16"];
const WRITE = ["F32", "F16", "Bf16"];

/** The kernel names of a layout ("Row" or "Pixels"), sorted. */
function expectedNames(layout: string): string[] {
  return [
    ...["sums", "stats"].flatMap((f) => REDUCE.map((d) => `${f}${layout}${d}`)),
    ...["normalize", "gradient", "scale"].flatMap((f) => WRITE.map((d) => `${f}${layout}${d}`)),
  ].sort();
}

/** The source text of the function named `name` in a generated module's text (no docs). */
function functionText(text: string, name: string): string {
  const start = text.indexOf(`export function ${name}(`);
  assert.ok(start >= 0, `${name} is missing`);
  const end = text.indexOf("\n}\n", start);
  return text.slice(start, end < 0 ? text.length : end);
}

Deno.test("kernel templates: the committed modules are their build (run deno task build:kernels)", async () => {
  assert.deepEqual(await staleModules(), []);
});

Deno.test("kernel templates: a stale or missing module is reported with its first differing line", async () => {
  const [row] = await buildKernelModules();
  const lines = row.text.split("\n");
  const at = lines.findIndex((l) => l.includes("const mean = k[0];"));
  assert.ok(at > 0);
  const edited = [...lines.slice(0, at), "  const mean = k[0] + 0;", ...lines.slice(at + 1)];
  assert.equal(
    describeDifference(edited.join("\n"), row.text),
    `first difference at line ${at + 1}: committed "const mean = k[0] + 0;", rebuilt ` +
      `"const mean = k[0];"; ${lines.length} lines committed, ${lines.length} rebuilt`,
  );
  assert.match(describeDifference(row.text + "\n", row.text) ?? "", /line \d+: .*\(end of file\)/);
  assert.equal(describeDifference(undefined, row.text), "missing");
  assert.equal(describeDifference(row.text, row.text), undefined);

  // A repository root with only the row module, edited: every module is stale.
  const root = new URL("../../build/kernel_templates_test/", import.meta.url);
  await Deno.mkdir(new URL("src/backends/cpu/kernels/", root), { recursive: true });
  try {
    await Deno.writeTextFile(new URL(row.path, root), edited.join("\n"));
    const stale = await staleModules(root);
    assert.equal(stale.length, 2);
    assert.match(stale[0], /^src\/backends\/cpu\/kernels\/row_kernels\.ts: first diff/);
    assert.equal(stale[1], "src/backends/cpu/kernels/pixel_kernels.ts: missing");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("kernel templates: one kernel per family and dtype, with kernel_tables.ts's names", () => {
  assert.deepEqual(Object.keys(rowKernels).sort(), expectedNames("Row"));
  assert.deepEqual(Object.keys(pixelKernels).sort(), expectedNames("Pixels"));
  for (const f of [...Object.values(rowKernels), ...Object.values(pixelKernels)]) {
    assert.equal(f.length, 5, `${f.name} takes (s, ..., scratch)`);
  }
});

Deno.test("kernel templates: each dtype's reads, decode table and stores", async () => {
  const [row, pixel] = await buildKernelModules();
  for (const [text, layout] of [[row.text, "Row"], [pixel.text, "Pixels"]]) {
    for (const family of ["sums", "stats", "normalize", "gradient", "scale"]) {
      const writes = !["sums", "stats"].includes(family);
      const f32 = functionText(text, `${family}${layout}F32`);
      assert.doesNotMatch(f32, /table|Uint16Array|Float16Array|bf16/, `${family}${layout}F32`);
      assert.match(f32, /as Float32Array/);
      if (!writes) {
        const u16 = functionText(text, `${family}${layout}U16`);
        assert.match(u16, /decodeTable\(scratch, s\.dtype === BFLOAT16\)/);
        assert.doesNotMatch(u16, /Float32Array/);
        continue;
      }
      const f16 = functionText(text, `${family}${layout}F16`);
      assert.match(f16, /decodeTable\(scratch, false\)/);
      assert.match(f16, /const out = s\.out as Float16Array;/);
      assert.doesNotMatch(f16, /bf16/);
      const bf16 = functionText(text, `${family}${layout}Bf16`);
      assert.match(bf16, /decodeTable\(scratch, true\)/);
      assert.match(bf16, /const out = s\.out as Uint16Array;/);
      assert.match(bf16, /bf16Block\(scratch\)/);
      assert.match(bf16, /bf16Exact\(/);
    }
  }
});
