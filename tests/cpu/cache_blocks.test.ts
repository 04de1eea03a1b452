/**
 * Cache blocks (src/backends/cpu/channels/cache_blocks.ts): a training-mode batchNorm or
 * batchNormBackward whose data passes BLOCKED_FROM_BYTES runs block by block of channels and
 * must give the bits of the same call run whole (the policy's cacheBlocks off), every output:
 * wrong offsets, a block's statistics applied to another, a wrong count all change bits here.
 * One and two threads.
 */

import assert from "node:assert/strict";
import { batchNorm, batchNormBackward, Tensor } from "../../mod.ts";
import { withCpuPolicy } from "../../src/backends/cpu/pool/pool.ts";
import { cpuThreads, setCpuThreads } from "../../src/backends/cpu/threads.ts";
import {
  BLOCK_BYTES,
  BLOCKED_FROM_BYTES,
  channelBlocks,
} from "../../src/backends/cpu/channels/cache_blocks.ts";
import { MEMORY_ORDER_FROM_INNER } from "../../src/backends/cpu/kernels/layout_types.ts";
import { channelGeometry } from "../../src/backends/types.ts";

/** [N, C, H, W] float32 with x alone past the threshold. */
const SHAPE = [16, 40, 96, 96];

/**
 * BatchNorm's: runs of 48 elements, below MEMORY_ORDER_FROM_INNER: rows taken channel by
 * channel, which channel blocks serve (rows in memory order run whole: a linear sweep).
 */
const BN_SHAPE = [2560, 40, 6, 8];

/** The float32 bits of a tensor's values. */
function bits(t: Tensor): Uint32Array {
  return new Uint32Array(Float32Array.from(t.toFloat64Array()).buffer);
}

Deno.test("channel blocks: the shape under test is blocked, and blocks cover every channel once", () => {
  const x = Tensor.zeros(SHAPE);
  assert.ok(x.numel * 4 >= BLOCKED_FROM_BYTES);
  const blocks = channelBlocks(channelGeometry(SHAPE), [x, x], [])!;
  assert.ok(blocks.length > 2, `${blocks.length} blocks`);
  let next = 0;
  for (const [c0, c1] of blocks) {
    assert.equal(c0, next);
    assert.ok(
      c1 > c0 &&
        (c1 - c0) * (2 * x.numel * 4 / SHAPE[1]) <= BLOCK_BYTES + 2 * x.numel * 4 / SHAPE[1],
    );
    next = c1;
  }
  assert.equal(next, SHAPE[1]);
  // A call below the threshold, or with per-channel tensors of another shape, runs whole.
  assert.equal(
    channelBlocks(channelGeometry([2, 40, 8, 8]), [Tensor.zeros([2, 40, 8, 8])], []),
    undefined,
  );
  assert.equal(channelBlocks(channelGeometry(SHAPE), [x, x], [Tensor.zeros([1, 40])]), undefined);
});

/** The float32 bits of every output of `run`, under the policy's cacheBlocks `blocked`. */
function outputBits(blocked: boolean, run: () => object): Uint32Array[] {
  return withCpuPolicy({ cacheBlocks: blocked }, () => {
    const outputs = Object.values(run()).filter((t): t is Tensor => t instanceof Tensor);
    const all = outputs.map(bits);
    for (const t of outputs) t.dispose();
    return all;
  });
}

/** The two blocked calls, each from fresh inputs (running statistics included). */
function cases(): [string, () => object][] {
  const C = SHAPE[1];
  assert.equal(BN_SHAPE[1], C);
  assert.ok(BN_SHAPE[2] * BN_SHAPE[3] < MEMORY_ORDER_FROM_INNER);
  assert.ok(BN_SHAPE.reduce((a, b) => a * b) * 4 >= BLOCKED_FROM_BYTES);
  const bnX = Tensor.random(BN_SHAPE, { seed: 16 });
  const bnDy = Tensor.random(BN_SHAPE, { seed: 17 });
  const weight = Tensor.random([C], { seed: 13 });
  const bias = Tensor.random([C], { seed: 14 });
  const bn = batchNorm({ input: bnX, weight, bias, training: true });
  return [
    ["batchNorm", () => {
      const runningMean = Tensor.random([C], { seed: 15 });
      const runningVar = Tensor.ones([C]);
      const r = batchNorm({ input: bnX, weight, bias, runningMean, runningVar, training: true });
      return { ...r, runningMean, runningVar };
    }],
    ["batchNormBackward", () =>
      batchNormBackward({
        gradOut: bnDy,
        input: bnX,
        weight,
        saveMean: bn.saveMean,
        saveInvstd: bn.saveInvstd,
        training: true,
      })],
  ];
}

for (const threads of [1, 2]) {
  Deno.test(`cache blocks: the bits of the whole call (${threads} thread(s))`, () => {
    const before = cpuThreads();
    setCpuThreads(threads);
    try {
      for (const [name, run] of cases()) {
        const blocked = outputBits(true, run);
        const whole = outputBits(false, run);
        assert.equal(blocked.length, whole.length);
        blocked.forEach((b, i) => assert.deepEqual(b, whole[i], `${name}, output ${i}`));
      }
    } finally {
      setCpuThreads(before);
    }
  });
}
