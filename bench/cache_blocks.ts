/**
 * Cache blocks against whole calls (src/backends/cpu/channels/cache_blocks.ts): the two-pass CPU
 * operators (training batchNorm and batchNormBackward, groupNorm and groupNormBackward) on a
 * shape whose data passes the blocking threshold, with the policy's `cacheBlocks` on and off,
 * interleaved round by round (the same bits either way: tests/cpu/cache_blocks.test.ts).
 * Outputs are allocated by each call and disposed; minimum and median per column, ms.
 *
 *   deno run --allow-read bench/cache_blocks.ts [--shape 32,64,56,56] [--threads 1] [--rounds 7]
 *
 * @module
 */

import { parseCommand, positiveInteger } from "../scripts/cli.ts";

const NAME = "bench/cache_blocks.ts";
const flags = parseCommand({
  name: NAME,
  usage: `usage: deno run --allow-read bench/cache_blocks.ts [--shape N,C,H,W] [--threads N]
  [--rounds N]
  --shape S    float32 input shape (default 32,64,56,56)
  --threads N  CPU threads (default 1)
  --rounds N   interleaved rounds (default 7)
  -h, --help   print this text`,
  options: {
    shape: { type: "string", default: "32,64,56,56" },
    threads: { type: "string", default: "1" },
    rounds: { type: "string", default: "7" },
  },
});

const shape = flags.shape.split(",").map((d) => positiveInteger(NAME, "shape", d));
const rounds = positiveInteger(NAME, "rounds", flags.rounds);
// The library loads only after the checks above: --help and a bad flag answer without it.
const { batchNorm, batchNormBackward, groupNorm, groupNormBackward, setCpuThreads, Tensor } =
  await import("../mod.ts");
const { withCpuPolicy } = await import("../src/backends/cpu/pool/pool.ts");
setCpuThreads(positiveInteger(NAME, "threads", flags.threads));
const C = shape[1];
const groups = C % 32 === 0 ? 32 : 1;
const x = Tensor.random(shape, { seed: 1 });
const dy = Tensor.random(shape, { seed: 2 });
const weight = Tensor.ones([C]);
const bn = batchNorm({ input: x, weight, training: true });
const gn = groupNorm({ input: x, gamma: weight, group: groups, eps: 1e-5 });

const cases: [string, () => Disposable][] = [
  ["batchNorm", () => batchNorm({ input: x, weight, training: true })],
  ["batchNormBackward", () =>
    batchNormBackward({
      gradOut: dy,
      input: x,
      weight,
      saveMean: bn.saveMean,
      saveInvstd: bn.saveInvstd,
      training: true,
    })],
  ["groupNorm", () => groupNorm({ input: x, gamma: weight, group: groups, eps: 1e-5 })],
  [
    "groupNormBackward",
    () =>
      groupNormBackward({
        gradOut: dy,
        input: x,
        mean: gn.mean,
        rstd: gn.rstd,
        gamma: weight,
        group: groups,
      }),
  ],
];

/** Milliseconds per call of `run`, over 8 calls after one. */
function time(run: () => Disposable): number {
  run()[Symbol.dispose]();
  const start = performance.now();
  for (let i = 0; i < 8; i++) run()[Symbol.dispose]();
  return (performance.now() - start) / 8;
}

const stats = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  return `${s[0].toFixed(2).padStart(7)} ${s[s.length >> 1].toFixed(2).padStart(7)}`;
};

console.log(
  `cache blocks, float32 [${shape}], ${flags.threads} thread(s), ${rounds} rounds, ms min median`,
);
console.log(`${"operator".padEnd(20)} ${"blocked".padStart(15)} ${"whole".padStart(15)}  ratio`);
for (const [name, run] of cases) {
  const blocked: number[] = [];
  const whole: number[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const on of r % 2 === 0 ? [true, false] : [false, true]) {
      const ms = withCpuPolicy({ cacheBlocks: on }, () => time(run));
      (on ? blocked : whole).push(ms);
    }
  }
  const ratio = Math.min(...blocked) / Math.min(...whole);
  console.log(`${name.padEnd(20)} ${stats(blocked)} ${stats(whole)}  ${ratio.toFixed(2)}`);
}
