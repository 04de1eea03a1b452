/**
 * One SyncBatchNorm training step over 4 simulated ranks (each holds a quarter of the batch;
 * the collectives are createLocalProcessGroup's in-process all-gather and all-reduce),
 * compared with single-process BatchNorm on the whole batch: prints the largest deviation of
 * the output, the statistics, the running statistics and the gradients, and exits non-zero
 * if one exceeds the threshold.
 *
 * Run: `deno run --allow-ffi --allow-env --allow-read examples/sync_batch_norm.ts [--cpu]`
 *
 * @module
 */

import {
  batchNorm,
  batchNormBackward,
  createLocalProcessGroup,
  syncBatchNormBackward,
  syncBatchNormForward,
  Tensor,
} from "../mod.ts";
import { openBackend } from "./backend.ts";

const RANKS = 4;
const THRESHOLD = 1e-4;
const backend = openBackend();
const device = backend.device;
const shape = [16, 32, 8, 8];
const C = shape[1];
const perRank = shape[0] / RANKS;

const x = Tensor.random(shape, { seed: 1, distribution: "normal", low: 1, high: 2, device });
const dy = Tensor.random(shape, { seed: 2, distribution: "normal", device });
const weight = Tensor.random([C], { seed: 3, low: 0.5, high: 1.5, device });
const bias = Tensor.random([C], { seed: 4, device });

const started = performance.now();
const group = createLocalProcessGroup(RANKS);
const ranks = await Promise.all(group.map(async (collectives, rank) => {
  const input = x.slice(0, rank * perRank, (rank + 1) * perRank);
  const gradOut = dy.slice(0, rank * perRank, (rank + 1) * perRank);
  const runningMean = Tensor.zeros([C], "float32", device);
  const runningVar = Tensor.ones([C], "float32", device);
  const fwd = await syncBatchNormForward({
    input,
    weight,
    bias,
    runningMean,
    runningVar,
    momentum: 0.1,
    eps: 1e-5,
    allGather: collectives.allGather,
  });
  const bwd = await syncBatchNormBackward({
    gradOut,
    input,
    weight,
    mean: fwd.mean,
    invstd: fwd.invstd,
    counts: fwd.counts,
    allReduce: collectives.allReduce,
  });
  return { fwd, bwd, runningMean, runningVar };
}));
const syncMs = performance.now() - started;

const runningMean = Tensor.zeros([C], "float32", device);
const runningVar = Tensor.ones([C], "float32", device);
const single = batchNorm({
  input: x,
  weight,
  bias,
  runningMean,
  runningVar,
  training: true,
  momentum: 0.1,
  eps: 1e-5,
});
const singleGrads = batchNormBackward({
  gradOut: dy,
  input: x,
  weight,
  saveMean: single.saveMean,
  saveInvstd: single.saveInvstd,
  training: true,
});

function maxDeviation(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    worst = Math.max(worst, Math.abs(actual[i] - expected[i]) / Math.max(1, Math.abs(expected[i])));
  }
  return worst;
}
const concat = (parts: Tensor[]) => Float64Array.from(parts.flatMap((t) => t.toArray()));
const sum = (parts: Tensor[]) => {
  const out = new Float64Array(parts[0].numel);
  for (const p of parts) p.toArray().forEach((v, i) => out[i] += v);
  return out;
};
const worstOverRanks = (pick: (r: (typeof ranks)[number]) => Tensor, expected: Tensor) =>
  Math.max(...ranks.map((r) => maxDeviation(pick(r).toFloat64Array(), expected.toFloat64Array())));

const deviations: [string, number][] = [
  ["output", maxDeviation(concat(ranks.map((r) => r.fwd.output)), single.output.toFloat64Array())],
  ["mean", worstOverRanks((r) => r.fwd.mean, single.saveMean)],
  ["invstd", worstOverRanks((r) => r.fwd.invstd, single.saveInvstd)],
  ["runningMean", worstOverRanks((r) => r.runningMean, runningMean)],
  ["runningVar", worstOverRanks((r) => r.runningVar, runningVar)],
  [
    "gradInput",
    maxDeviation(
      concat(ranks.map((r) => r.bwd.gradInput!)),
      singleGrads.gradInput!.toFloat64Array(),
    ),
  ],
  [
    "gradWeight (sum)",
    maxDeviation(
      sum(ranks.map((r) => r.bwd.gradWeight!)),
      singleGrads.gradWeight!.toFloat64Array(),
    ),
  ],
  [
    "gradBias (sum)",
    maxDeviation(sum(ranks.map((r) => r.bwd.gradBias!)), singleGrads.gradBias!.toFloat64Array()),
  ],
];

console.log(
  `SyncBatchNorm step: ${RANKS} ranks x [${[perRank, ...shape.slice(1)].join(", ")}] ` +
    `in ${syncMs.toFixed(0)} ms, vs BatchNorm on [${shape.join(", ")}]`,
);
for (const [name, d] of deviations) console.log(`  ${name.padEnd(18)} ${d.toExponential(2)}`);
const worst = Math.max(...deviations.map(([, d]) => d));
console.log(
  `max deviation from single-process BN: ${worst.toExponential(2)} ` +
    `(threshold ${THRESHOLD}) ${worst <= THRESHOLD ? "ok" : "FAIL"}`,
);
backend.close();
if (!(worst <= THRESHOLD)) Deno.exit(1);
