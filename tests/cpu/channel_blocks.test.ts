/**
 * Channel blocks (src/backends/cpu/fast/channel_blocks.ts): a training-mode batchNorm or
 * batchNormBackward whose data passes BLOCKED_FROM_BYTES runs block by block of channels and
 * must give, channel for channel, the bits of the same computation on that channel alone (a
 * call far below the threshold, so run whole): a channel's items and merge depend only on N
 * and the inner size. Wrong offsets, a block's mean applied to another, or a wrong count M
 * all change bits here. One and two threads.
 */

import assert from "node:assert/strict";
import { batchNorm, batchNormBackward, Tensor } from "../../mod.ts";
import { cpuThreads, setCpuThreads } from "../../src/backends/cpu/threads.ts";
import {
  BLOCK_BYTES,
  BLOCKED_FROM_BYTES,
  channelBlocks,
} from "../../src/backends/cpu/fast/channel_blocks.ts";
import { channelGeometry } from "../../src/backends/types.ts";

/** [N, C, H, W] float32 with x alone past the threshold. */
const SHAPE = [16, 40, 96, 96];

/** Channel c of `t` ([N, C, ...]) as a new contiguous [N, 1, ...] tensor. */
function channel(t: Tensor, c: number): Tensor {
  const view = t.slice(1, c, c + 1);
  return Tensor.fromArray(view.toFloat64Array(), view.shape);
}

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

for (const threads of [1, 2]) {
  Deno.test(`channel blocks: batchNorm and batchNormBackward give each channel's bits (${threads} thread(s))`, () => {
    const before = cpuThreads();
    setCpuThreads(threads);
    try {
      const C = SHAPE[1];
      using x = Tensor.random(SHAPE, { seed: 11 });
      using dy = Tensor.random(SHAPE, { seed: 12 });
      using weight = Tensor.random([C], { seed: 13 });
      using bias = Tensor.random([C], { seed: 14 });
      using runningMean = Tensor.random([C], { seed: 15 });
      using runningVar = Tensor.ones([C]);
      using f = batchNorm({ input: x, weight, bias, runningMean, runningVar, training: true });
      using b = batchNormBackward({
        gradOut: dy,
        input: x,
        weight,
        saveMean: f.saveMean,
        saveInvstd: f.saveInvstd,
        training: true,
      });
      const rm0 = Tensor.random([C], { seed: 15 }).toFloat64Array();
      for (const c of [0, 1, 7, C - 1]) {
        using xc = channel(x, c);
        using dyc = channel(dy, c);
        using wc = Tensor.fromArray([weight.toFloat64Array()[c]], [1]);
        using bc = Tensor.fromArray([bias.toFloat64Array()[c]], [1]);
        using rmc = Tensor.fromArray([rm0[c]], [1]);
        using rvc = Tensor.ones([1]);
        using fc = batchNorm({
          input: xc,
          weight: wc,
          bias: bc,
          runningMean: rmc,
          runningVar: rvc,
          training: true,
        });
        assert.deepEqual(
          bits(f.output.slice(1, c, c + 1)),
          bits(fc.output),
          `output, channel ${c}`,
        );
        assert.deepEqual(bits(f.saveMean.slice(0, c, c + 1)), bits(fc.saveMean));
        assert.deepEqual(bits(f.saveInvstd.slice(0, c, c + 1)), bits(fc.saveInvstd));
        assert.deepEqual(bits(runningMean.slice(0, c, c + 1)), bits(rmc), `runningMean ${c}`);
        assert.deepEqual(bits(runningVar.slice(0, c, c + 1)), bits(rvc), `runningVar ${c}`);
        using bc2 = batchNormBackward({
          gradOut: dyc,
          input: xc,
          weight: wc,
          saveMean: fc.saveMean,
          saveInvstd: fc.saveInvstd,
          training: true,
        });
        assert.deepEqual(
          bits(b.gradInput!.slice(1, c, c + 1)),
          bits(bc2.gradInput!),
          `gradInput ${c}`,
        );
        assert.deepEqual(bits(b.gradWeight!.slice(0, c, c + 1)), bits(bc2.gradWeight!));
        assert.deepEqual(bits(b.gradBias!.slice(0, c, c + 1)), bits(bc2.gradBias!));
      }
    } finally {
      setCpuThreads(before);
    }
  });
}
