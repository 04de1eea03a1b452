/**
 * A SHA-256 of every output of every CPU benchmark case (bench/cpu_cases.ts: the 10
 * operators x float32/float16/bfloat16 x the three shapes x contiguous/channels-last), one
 * line per case. Run it before and after a change to the kernels and `diff` the two outputs:
 * any line that differs is a case whose bits changed.
 *
 *   deno run --allow-read bench/cpu_hashes.ts [--threads N] > hashes.txt
 *
 * @module
 */

import { parseCommand, positiveInteger } from "../scripts/cli.ts";
import type { DType } from "../mod.ts";
import { type BenchLayout, CPU_OPS, CPU_SHAPES } from "./cpu_case_names.ts";

const NAME = "cpu_hashes";
const flags = parseCommand({
  name: NAME,
  usage: `usage: deno run --allow-read bench/cpu_hashes.ts [--threads N]
  --threads N   CPU threads (default 2)
  -h, --help    print this text`,
  options: { threads: { type: "string", default: "2" } },
});

const DTYPES: readonly DType[] = ["float32", "float16", "bfloat16"];
const LAYOUTS: readonly BenchLayout[] = ["contiguous", "channels_last"];

const threads = positiveInteger(NAME, "threads", flags.threads);
// The library loads only after the checks above: --help and a bad flag answer without it.
const { digest, outputs } = await import("../tests/helpers/output_digest.ts");
const { setCpuThreads, startCpuPool } = await import("../src/backends/cpu/threads.ts");
const { cpuCase } = await import("./cpu_cases.ts");

let cases = 0;
setCpuThreads(threads);
await startCpuPool();
for (const op of CPU_OPS) {
  for (const dtype of DTYPES) {
    for (const shape of CPU_SHAPES) {
      for (const layout of LAYOUTS) {
        const c = cpuCase(op, dtype, shape, layout);
        if (!c) continue;
        const result = c.result();
        const named = outputs(result);
        const names = named.map(([n]) => n).join(",");
        console.log(
          `${op} ${dtype} ${shape.join("x")} ${layout} ${names} ${await digest(named)}`,
        );
        for (const [, t] of named) t.dispose();
        c.dispose();
        cases++;
      }
    }
  }
}
console.log(`${cases} cases`);
Deno.exit(0);
