/**
 * The local process group when a rank stops waiting: a composition whose `timeoutMs` passes
 * aborts its call's signal, the round fails at once for every rank in it (361001 naming the
 * rank), and the round's timer ends, so the process exits at once instead of when the group's
 * own timeout (60 s by default) would have passed. The test sanitizers check that no timer is
 * left behind.
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
