/**
 * Bad and edge inputs end in the documented error or the right answer, on the CPU backend and
 * on the NPU code path (issue 12): outputs that overlap (each other, themselves, an input),
 * calls without an argument object, forged or unusable tensors, negative counts, eps <= 0,
 * training on one value per channel, an empty rank in SyncBatchNorm, ranks out of step or
 * missing in the local process group, and empty views with an offset.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  batchNorm,
  batchNormBackward,
  batchNormElemt,
  batchNormElemtBackward,
  batchNormGatherStatsWithCounts,
  batchNormReduceBackward,
  batchNormStats,
  createBatchNormBackwardDescriptor,
  createLocalProcessGroup,
  type Device,
  groupNorm,
  groupNormBackward,
  syncBatchNormBackward,
  syncBatchNormForward,
  Tensor,
} from "../../mod.ts";
import { AclnnError } from "../../src/errors.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { EXACT } from "../helpers/tolerance.ts";
import { forEachBackend } from "../helpers/backends.ts";

const INVALID = 161002;
const NULLPTR = 161001;

const rnd = (shape: number[], seed: number, device: Device) =>
  Tensor.random(shape, { seed }).to(device);

forEachBackend(
  "reliability: outputs that share memory are refused with 161002",
  ({ device: d }) => {
    const a = {
      gradOut: rnd([4, 3, 2], 1, d),
      input: rnd([4, 3, 2], 2, d),
      mean: Tensor.zeros([3]).to(d),
      invstd: Tensor.ones([3]).to(d),
    };
    const shared = Tensor.zeros([3]).to(d);
    assertAclnnError(
      () => batchNormReduceBackward({ ...a, out: { sumDy: shared, sumDyXmu: shared } }),
      INVALID,
      "sumDyXmu",
    );
    assertAclnnError(
      () => batchNormReduceBackward({ ...a, out: { gradWeight: shared, gradBias: shared } }),
      INVALID,
      "gradBias",
    );
    assertAclnnError(
      () => batchNormStats({ input: a.input, out: { mean: shared, invstd: shared } }),
      INVALID,
      "invstd",
    );
    // An output that is an input (batchNorm wrote saveMean before reading weight on the CPU).
    const weight = Tensor.ones([3]).to(d);
    assertAclnnError(
      () => batchNorm({ input: a.input, weight, training: true, out: { saveMean: weight } }),
      INVALID,
      "saveMean",
    );
    // Partial overlap: two slices of one buffer.
    const packed = Tensor.zeros([5]).to(d);
    assertAclnnError(
      () =>
        batchNormReduceBackward({
          ...a,
          out: { sumDy: packed.slice(0, 0, 3), sumDyXmu: packed.slice(0, 2, 5) },
        }),
      INVALID,
      "sumDyXmu",
    );
    // Disjoint slices of one buffer are fine (SyncBatchNorm packs its sums that way).
    const r = batchNormReduceBackward({
      ...a,
      out: { sumDy: Tensor.zeros([6]).to(d).slice(0, 0, 3) },
    });
    assert.equal(r.sumDy?.shape[0], 3);
    // An output whose own elements share memory: a stride-0 (expanded) view.
    const expanded = new Tensor(
      Tensor.zeros([1]).to(d).storage,
      "float32",
      [4, 3, 2],
      [0, 0, 0],
    );
    const e = assertAclnnError(
      () =>
        batchNormBackward({
          gradOut: a.gradOut,
          input: a.input,
          training: true,
          out: { gradInput: expanded },
        }),
      INVALID,
      "gradInput",
    );
    assert.match(e.message, /more than one element of the written-to tensor/);
    // gradInput over gradOut is not documented for aclnnBatchNormBackward.
    assertAclnnError(
      () =>
        batchNormBackward({
          gradOut: a.gradOut,
          input: a.input,
          training: true,
          out: { gradInput: a.gradOut },
        }),
      INVALID,
      "gradInput",
    );
    // The running statistics are written in place: they must not be another argument.
    assertAclnnError(
      () => batchNorm({ input: a.input, weight, runningMean: weight, training: true }),
      INVALID,
      "runningMean",
    );
  },
);

forEachBackend(
  "reliability: InfiniOp's documented in-place gradInput = gradOutput stays allowed",
  ({ device: d }) => {
    const x = rnd([2, 3, 4], 1, d);
    const dy = rnd([2, 3, 4], 2, d);
    const expected = rnd([2, 3, 4], 2, d);
    const c = () => Tensor.ones([3]).to(d);
    const t = {
      input: x,
      gradOutput: dy,
      weight: c(),
      runningMean: Tensor.zeros([3]).to(d),
      runningVar: c(),
    };
    const perChannel = { dtype: "float32", shape: [3] } as const;
    using desc = createBatchNormBackwardDescriptor({
      ...t,
      gradInput: dy,
      gradWeight: perChannel,
      gradBias: perChannel,
    });
    const reference = { gradInput: Tensor.zeros([2, 3, 4]).to(d), gradWeight: c(), gradBias: c() };
    desc.compute({ ...t, gradOutput: expected, ...reference });
    desc.compute({ ...t, gradInput: dy, gradWeight: c(), gradBias: c() });
    assertClose(dy, reference.gradInput, EXACT, "in place = out of place");
    // A partial overlap is not in place: BAD_PARAM.
    const big = Tensor.zeros([48]).to(d);
    const e = assertAclnnError(
      () =>
        desc.compute({
          ...t,
          gradOutput: big.slice(0, 0, 24).reshape([2, 3, 4]),
          gradInput: big.slice(0, 12, 36).reshape([2, 3, 4]),
          gradWeight: c(),
          gradBias: c(),
        }),
      INVALID,
      "gradInput",
    );
    assert.equal(e.status, "BAD_PARAM");
  },
);

Deno.test("reliability: a missing argument object is 161001 naming args, in every operator", () => {
  const ops = [
    batchNormReduceBackward,
    batchNormBackward,
    groupNormBackward,
    batchNormStats,
    batchNormGatherStatsWithCounts,
    batchNormElemt,
    batchNormElemtBackward,
    batchNorm,
    groupNorm,
  ] as ((args: unknown) => unknown)[];
  for (const op of ops) {
    for (const args of [undefined, null]) assertAclnnError(() => op(args), NULLPTR, "args");
    assertAclnnError(() => op(42), INVALID, "args");
  }
});

Deno.test("reliability: forged, rewritten or detached tensors are 161002, not TypeErrors", () => {
  const good = Tensor.random([4, 3], { seed: 1 });
  const forged = Object.assign(Object.create(Tensor.prototype), {
    dtype: "float32",
    shape: [4, 3],
    strides: [3, 1],
    offset: 0,
    storage: new Float32Array(2),
  });
  const e = assertAclnnError(() => batchNormStats({ input: forged }), INVALID, "input");
  assert.match(e.message, /not a Tensor made by this package/);
  assertAclnnError(() => batchNormStats({ input: { shape: [4, 3] } as never }), INVALID, "input");
  // A Tensor cannot be rewritten into a view past its storage.
  assert.throws(() => {
    (good as unknown as { offset: number }).offset = 1000;
  }, TypeError);
  // A view whose buffer was transferred away no longer fits its storage.
  const data = new Float32Array(12);
  const view = Tensor.fromData(data, [4, 3]);
  structuredClone(data.buffer, { transfer: [data.buffer] });
  const e2 = assertAclnnError(() => batchNormStats({ input: view }), INVALID, "input");
  assert.match(e2.message, /needs 12 elements but its storage holds 0/);
});

forEachBackend(
  "reliability: eps <= 0, negative counts and one value per channel are 161002",
  ({ device: d }) => {
    const x = rnd([4, 3], 1, d);
    const stats = { mean: Tensor.zeros([3]).to(d), invstd: Tensor.ones([3]).to(d) };
    for (const eps of [0, -1e-5]) {
      assertAclnnError(() => batchNormStats({ input: x, eps }), INVALID, "eps");
      assertAclnnError(() => batchNorm({ input: x, training: true, eps }), INVALID, "eps");
      assertAclnnError(() => batchNormElemt({ input: x, ...stats, eps }), INVALID, "eps");
      assertAclnnError(
        () => batchNormBackward({ gradOut: x, input: x, training: false, eps }),
        INVALID,
        "eps",
      );
      assertAclnnError(
        () => groupNorm({ input: x.reshape([4, 3, 1]), group: 1, eps }),
        INVALID,
        "eps",
      );
    }
    const gather = (counts: number[]) =>
      batchNormGatherStatsWithCounts({
        input: x,
        mean: Tensor.zeros([2, 3]).to(d),
        invstd: Tensor.ones([2, 3]).to(d),
        counts: Tensor.fromArray(counts, [2]).to(d),
      });
    const e = assertAclnnError(() => gather([4, -2]), INVALID, "counts");
    assert.match(e.message, /\[1\] is -2; counts must be finite and >= 0/);
    assertAclnnError(() => gather([4, NaN]), INVALID, "counts");
    assert.equal(gather([4, 0]).mean.shape[0], 3);
    // Training on one value per channel: the running variance would be NaN (M - 1 = 0).
    const runningVar = Tensor.ones([3]).to(d);
    const e2 = assertAclnnError(
      () => batchNorm({ input: rnd([1, 3], 1, d), runningVar, training: true }),
      INVALID,
      "input",
    );
    assert.match(e2.message, /training needs more than 1 value per channel/);
    assert.deepEqual(runningVar.toArray(), [1, 1, 1]);
    // Evaluation on one value per channel is fine.
    batchNorm({ input: rnd([1, 3], 1, d), training: false });
  },
);

Deno.test("reliability: a rank with an empty batch adds nothing to SyncBatchNorm, as in PyTorch", async () => {
  const x = Tensor.random([6, 2, 3], { seed: 3, distribution: "normal", low: 1, high: 2 });
  const ranks = createLocalProcessGroup(3);
  const shares = [x.slice(0, 0, 3), x.slice(0, 3, 3), x.slice(0, 3, 6)]; // rank 1 is empty
  const runningVars = [0, 1, 2].map(() => Tensor.ones([2]));
  const results = await Promise.all(ranks.map(async (group, r) => {
    const fwd = await syncBatchNormForward({
      input: shares[r],
      runningVar: runningVars[r],
      allGather: group.allGather,
    });
    const bwd = await syncBatchNormBackward({
      gradOut: Tensor.ones(shares[r].shape),
      input: shares[r],
      mean: fwd.mean,
      invstd: fwd.invstd,
      counts: fwd.counts,
      allReduce: group.allReduce,
    });
    return { fwd, bwd };
  }));
  const wholeVar = Tensor.ones([2]);
  const whole = batchNorm({ input: x, runningVar: wholeVar, training: true });
  const joined = [...results[0].fwd.output.toArray(), ...results[2].fwd.output.toArray()];
  assertClose(joined, whole.output, undefined, "the two non-empty ranks");
  for (const r of [0, 1, 2]) {
    // The empty rank sends count 0 (and finite statistics): its row weighs nothing.
    assert.deepEqual(results[r].fwd.counts.toArray(), [9, 0, 9]);
    assertClose(runningVars[r], wholeVar, undefined, `rank ${r} runningVar`);
    assertClose(results[r].fwd.invstd, whole.saveInvstd, undefined, `rank ${r} invstd`);
  }
  assert.deepEqual(results[1].fwd.output.shape, [0, 2, 3]);
  assert.deepEqual(results[1].bwd.gradInput?.shape, [0, 2, 3]);
});

Deno.test("reliability: the local process group refuses ranks out of step and times out", async () => {
  const [a, b] = createLocalProcessGroup(2, { timeoutMs: 200 });
  const t = Tensor.ones([2]);
  // Rank 0 gathers while rank 1 reduces: out of step, an error for both, at once.
  const results = await Promise.allSettled([
    a.allGather(t, { op: "syncBatchNormForward", payload: "[mean, invstd, count]" }),
    b.allReduce(t, { op: "syncBatchNormBackward", payload: "[sumDy, sumDyXmu]" }),
  ]);
  for (const r of results) {
    assert.equal(r.status, "rejected");
    const e = (r as PromiseRejectedResult).reason;
    assert.ok(e instanceof AclnnError && e.code === INVALID, String(e));
    assert.match(e.message, /ranks are out of step in round 0: rank 0 made allGather/);
  }
  // A rank that never comes: the waiting rank fails after the timeout, naming it.
  const started = performance.now();
  await assert.rejects(
    async () => await a.allReduce(t, { op: "x", payload: "[y]" }),
    (e: unknown) =>
      e instanceof AclnnError && e.code === 361001 &&
      /round 1 did not complete within 200 ms: rank\(s\) 1 of 2 never joined it/.test(e.message),
  );
  assert.ok(performance.now() - started < 2000);
  // The compositions take a timeout too.
  await assert.rejects(
    () =>
      syncBatchNormForward({
        input: Tensor.ones([2, 2]),
        allGather: () => new Promise<Tensor>(() => {}),
        timeoutMs: 100,
      }),
    /allGather did not complete within 100 ms/,
  );
});

forEachBackend(
  "reliability: an empty view with an offset copies nothing instead of throwing",
  ({ device: d }) => {
    const base = Tensor.zeros([4]).to(d);
    const empty = base.slice(0, 4, 4);
    assert.equal(empty.numel, 0);
    empty.copy_([]);
    assert.deepEqual(empty.toArray(), []);
    const past = Tensor.fromData(new Float32Array(0), [0], { offset: 7 });
    past.copy_([]);
    assert.deepEqual(past.toArray(), []);
  },
);
