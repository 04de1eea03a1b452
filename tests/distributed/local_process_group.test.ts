/**
 * The local process group when a rank stops waiting: a composition whose `timeoutMs` passes
 * aborts its call's signal, the round fails at once for every rank in it (361001 naming the
 * rank), and the round's timer ends, so the process exits at once instead of when the group's
 * own timeout (60 s by default) would have passed. The test sanitizers check that no timer is
 * left behind. The collectives' values: allGather stacks the ranks in rank order (row r is rank
 * r's tensor, on every rank, whatever order the ranks call in), allReduce sums them.
 *
 * @module
 */

import assert from "node:assert/strict";
import { AclnnError } from "../../src/errors.ts";
import { createLocalProcessGroup } from "../../src/distributed/local_process_group.ts";
import { Tensor } from "../../src/tensor/tensor.ts";

const call = { op: "syncBatchNormBackward", payload: "[sumDy, sumDyXmu]" };

function isWithdrawn(round: number, rank: number) {
  return (e: unknown) =>
    e instanceof AclnnError && e.code === 361001 &&
    e.message.includes(`round ${round} failed: rank ${rank} of 3 stopped waiting for it`);
}

Deno.test("local group: a rank whose signal aborts fails its round for every rank at once", async () => {
  const [a, b] = createLocalProcessGroup(3); // rank 2 never comes; the group waits 60 s
  const t = Tensor.ones([2]);
  const controller = new AbortController();
  const started = performance.now();
  const waiting = [
    a.allReduce(t, { ...call, signal: controller.signal }),
    b.allReduce(t, call),
  ];
  setTimeout(() => controller.abort(), 20);
  const results = await Promise.allSettled(waiting);
  for (const r of results) {
    assert.equal(r.status, "rejected");
    assert.ok(isWithdrawn(0, 0)((r as PromiseRejectedResult).reason), String(r));
  }
  assert.ok(performance.now() - started < 2000, "at once, not after the group's timeout");
  // A signal aborted before the call: refused at once, no round (and no timer) is made.
  await assert.rejects(
    async () => await b.allReduce(t, { ...call, signal: AbortSignal.abort() }),
    isWithdrawn(1, 1),
  );
});

const root = new URL("../..", import.meta.url).pathname;
const CHILD = `
import { createLocalProcessGroup, syncBatchNormForward, Tensor } from "${root}mod.ts";
const [rank0] = createLocalProcessGroup(2); // the group's own timeout: 60 s
try {
  await syncBatchNormForward({ input: Tensor.ones([2, 2, 3]), allGather: rank0.allGather, timeoutMs: 100 });
} catch (e) {
  console.log(e.code, e.message);
}
`;

Deno.test("local group: a process whose composition timed out exits at once", async () => {
  const started = performance.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", CHILD],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const seconds = (performance.now() - started) / 1000;
  const stdout = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  assert.match(stdout, /^361001 syncBatchNormForward: allGather did not complete within 100 ms/);
  // Deno's start-up and the 100 ms timeout; the round's timer would have held it for 60 s.
  assert.ok(seconds < 5, `the child exited after ${seconds.toFixed(1)} s`);
});

Deno.test("local group: allGather gives every rank row r = rank r's tensor; allReduce the sum", async () => {
  const W = 4;
  const ranks = createLocalProcessGroup(W);
  const gather = { op: "syncBatchNormForward", payload: "[mean, invstd, count]" };
  // Distinct values per rank and element: rank r sends [10r + 1, 10r + 2, 10r + 3].
  const local = (r: number) => Tensor.fromArray([10 * r + 1, 10 * r + 2, 10 * r + 3], [3]);
  // The ranks call in reverse order: the rows still come in rank order.
  const order = [3, 1, 0, 2];
  const gathered: Tensor[] = new Array(W);
  await Promise.all(order.map(async (r) => {
    gathered[r] = await ranks[r].allGather(local(r), gather);
  }));
  const expected = Array.from({ length: W }, (_, r) => [10 * r + 1, 10 * r + 2, 10 * r + 3]);
  for (let r = 0; r < W; r++) {
    assert.deepEqual(gathered[r].shape, [W, 3], `rank ${r}'s shape`);
    for (let row = 0; row < W; row++) {
      assert.deepEqual(
        gathered[r].slice(0, row, row + 1).toArray(),
        expected[row],
        `rank ${r}, row ${row}`,
      );
    }
  }
  const sums = await Promise.all(order.map((r) => ranks[r].allReduce(local(r), call)));
  for (const s of sums) assert.deepEqual(s.toArray(), [64, 68, 72]);
});
