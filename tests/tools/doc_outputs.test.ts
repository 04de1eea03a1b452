/**
 * The doc examples' output check can fail: the rule (tests/helpers/output_rule.ts) on pairs of
 * printed text and comment, the wrong strides Tensor.zerosLike's example once stated among
 * them; which calls state an output (tests/helpers/stated_outputs.ts); and the runner
 * (tests/helpers/doc_runner.ts) on blocks written to state wrong outputs, run as
 * tests/tools/doc_examples.test.ts runs the package's.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { DocBlock } from "../helpers/doc_blocks.ts";
import { runDocBlocks } from "../helpers/doc_runner.ts";
import { isExplanation, outputMatches, statedValues } from "../helpers/output_rule.ts";
import { outputFailures, statedOutputs } from "../helpers/stated_outputs.ts";

Deno.test("doc outputs: the rule refuses the strides Tensor.zerosLike's example stated", () => {
  // Its comment stated channels-last strides; it printed x's row-major ones.
  assert.equal(outputMatches("[ 60, 20, 5, 1 ]", "[60, 1, 15, 3]: channels-last, like x"), false);
  assert.equal(outputMatches("[ 60, 1, 15, 3 ]", "[60, 1, 15, 3]: channels-last, like x"), true);
});

Deno.test("doc outputs: whitespace is layout, nothing else is rewritten", () => {
  const grouped = "[\n  4, 4, 4, 4,\n  4, 4, 4, 4\n]"; // how Deno prints 8 numbers
  assert.equal(outputMatches(grouped, "[4, 4, 4, 4, 4, 4, 4, 4]"), true);
  assert.equal(outputMatches(grouped, "[4, 4, 4, 4, 4, 4, 4]"), false);
  assert.equal(outputMatches("{ axis: 2, rows: 128 }", "{ axis: 2, rows: 128 }"), true);
  assert.equal(outputMatches("{ axis: 2, rows: 128 }", "{ axis: 2, rows: 127 }"), false);
  const typed = "[ 3, 2 ] Float64Array(6) [ 1, 4, 2, 5, 3, 6 ]";
  assert.equal(outputMatches(typed, "[3, 2] Float64Array(6) [1, 4, 2, 5, 3, 6]"), true);
  assert.equal(outputMatches(typed, "[3, 2] Float64Array [1, 4, 2, 5, 3, 6]"), false);
  assert.equal(outputMatches("cpu", '"cpu"'), false); // console.log prints a string bare
  assert.equal(outputMatches('[ "ascend", "cpu" ]', '["ascend", "cpu"]'), true);
  assert.equal(outputMatches("true 32", "true 3"), false); // the whole text, never a prefix
  assert.equal(outputMatches("true 32", "true"), false);
});

Deno.test("doc outputs: `...` stands for any text, and only there", () => {
  const printed = "[ 0.8485281467437744, 1.1313709020614624 ] [ 2, 1 ]";
  assert.equal(outputMatches(printed, "[0.8485..., 1.1313...] [2, 1]"), true);
  assert.equal(outputMatches(printed, "[0.8486..., 1.1313...] [2, 1]"), false);
  assert.equal(outputMatches(printed, "[0.8485, 1.1313] [2, 1]"), false); // digits cut need `...`
  assert.equal(outputMatches(printed, "[...] [2, 1]"), true);
  assert.equal(outputMatches(printed, "[...] [2, 2]"), false);
  assert.equal(outputMatches("true npu:0 Ascend950PR_9599", "true npu:0 Ascend..."), true);
  assert.equal(outputMatches('[ "ascend", "cpu" ]', '[..., "ascend", "cpu"]'), false);
  assert.equal(outputMatches("1.5", "1.5..."), true); // `...` may stand for nothing
  assert.equal(outputMatches("1x5", "1.5"), false); // a `.` is no wildcard
});

Deno.test("doc outputs: an explanation follows `: `, ` (` or `; ` outside brackets and quotes", () => {
  assert.deepEqual(statedValues("4096: kept for the next allocation"), [
    "4096: kept for the next allocation",
    "4096",
  ]);
  assert.deepEqual(statedValues("[1, 1] (reading synchronises)"), [
    "[1, 1] (reading synchronises)",
    "[1, 1]",
  ]);
  assert.deepEqual(statedValues("[2, 3, 1]; hidden now holds y"), [
    "[2, 3, 1]; hidden now holds y",
    "[2, 3, 1]",
  ]);
  assert.deepEqual(statedValues("{ axis: 2 } ['a: b']"), ["{ axis: 2 } ['a: b']"]);
  assert.deepEqual(statedValues('"a: b" 1'), ['"a: b" 1']);
  // A message with a colon is stated whole.
  const timeout = "HCCL_E_TIMEOUT rendezvous: rank 1 never joined [HCCL_E_TIMEOUT 9]";
  assert.equal(outputMatches(timeout, timeout), true);
  assert.equal(outputMatches("[ 2048, 2048 ]", "[2048, 2048]: sum(dy) per channel"), true);
  assert.equal(outputMatches("[ 2048, 2047 ]", "[2048, 2048]: sum(dy) per channel"), false);
  assert.equal(isExplanation("(no CANN here)"), true);
  assert.equal(isExplanation("[1] (no CANN here)"), false);
});

Deno.test("doc outputs: which calls state an output", () => {
  const code = [
    "const x = [1, 2];",
    "console.log(x); // [1, 2]",
    "console.log(x.length, x.map((v) => v * 2));",
    "// 2 [2, 4]",
    "console.log(x[0]);",
    "const y = 1; // not a call",
    "// console.log(x); // [1, 2]",
    "if (x) console.log(x[1]); // (an explanation)",
    "console.log(",
    "  x,",
    "); // [1, 2]",
  ].join("\n");
  assert.deepEqual(statedOutputs(code), [
    { line: 1, comment: "[1, 2]" },
    { line: 2, comment: "2 [2, 4]" },
    { line: 7, comment: "(an explanation)" },
  ]);
  assert.throws(() => statedOutputs("console.log(1); console.log(2); // 1"), /two console.log/);
});

Deno.test("doc outputs: a wrong, a missing and an unprinted output each fail", () => {
  const code = [
    "console.log(strides); // [60, 1, 15, 3]",
    "for (const r of [0, 1]) console.log(r); // 0",
    "if (never) console.log(1); // 1",
    "if (never) console.log(2); // (no CANN here)",
    "console.log(ok); // [1, 2]",
  ].join("\n");
  const printed: Record<number, string[]> = {
    0: ["[ 60, 20, 5, 1 ]"],
    1: ["0", "1"],
    4: ["[ 1, 2 ]"],
  };
  assert.deepEqual(outputFailures(code, (line) => printed[line] ?? [], (line) => `b:${line}`), [
    'b:0: printed "[ 60, 20, 5, 1 ]", its comment states "[60, 1, 15, 3]"',
    'b:1: printed "1", its comment states "0"',
    'b:2: states "1" but never printed',
  ]);
});

Deno.test("doc outputs: the runner fails blocks that state wrong outputs", async () => {
  const blocks: DocBlock[] = [
    {
      // As Tensor.zerosLike's example was: a row-major tensor stated channels-last.
      name: "fake.md#1-4",
      code: [
        "const strides = [60, 20, 5, 1];",
        "console.log(strides); // [60, 1, 15, 3]: channels-last, like x",
      ].join("\n"),
    },
    {
      name: "fake.md#10-16",
      code: [
        "const shapes = [[4, 3], [4, 3]];",
        "shapes.forEach((s, rank) => console.log(rank, s)); // ... [4, 3]: on each rank",
        "console.log([1, 2, 3, 4, 5, 6, 7, 8].map((v) => v / 3));",
        "// [0.33..., 0.66..., 1, 1.33..., 1.66..., 2, 2.33..., 2.6...]",
        "try { JSON.parse('{}'); } catch { console.log('no'); } // (never runs)",
      ].join("\n"),
    },
    {
      name: "fake.md#20-25",
      code: [
        "const n: number = JSON.parse('2');",
        "if (n > 2) console.log(n); // 3",
        "console.log(n, 'a'); // 2 a",
        "console.log(n);",
        "// 3",
      ].join("\n"),
    },
  ];
  const dir = new URL("../../build/doc_outputs_self_test/", import.meta.url);
  const run = await runDocBlocks(blocks, dir, []);
  assert.equal(run.code, 0, run.output);
  assert.equal(run.summary, "doc examples: 3 passed, 0 failed", run.output);
  assert.deepEqual(run.failures, [
    'fake.md:3: printed "[ 60, 20, 5, 1 ]", its comment states "[60, 1, 15, 3]: channels-last, like x"',
    'fake.md:22: states "3" but never printed',
    'fake.md:24: printed "2", its comment states "3"',
  ]);
});
