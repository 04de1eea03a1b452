/**
 * The TCP rendezvous that hands HCCL's root info from rank 0 to the other ranks
 * (src/distributed/rendezvous.ts): every rank gets the payload; a wrong world size, a rank
 * given twice, a rank that never comes, an unreachable rank 0, a port in use and a peer that
 * leaves mid-way end in an HcclError with HCCL's code for the situation, on every rank
 * concerned, within the timeout. The ranks run concurrently in this process (the rendezvous
 * is asynchronous).
 */

import assert from "node:assert/strict";
import { rendezvous, type RendezvousOptions } from "../src/distributed/rendezvous.ts";
import { HcclError } from "../src/ffi/errors.ts";
import { freePort } from "./helpers/net.ts";

function options(
  rank: number,
  worldSize: number,
  port: number,
  timeoutMs = 2000,
): RendezvousOptions {
  return { rank, worldSize, masterAddr: "127.0.0.1", masterPort: port, timeoutMs };
}

const payload = () => new Uint8Array(4108).map((_, i) => (i * 7) & 0xff);

function hcclCode(code: number, pattern: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof HcclError, String(e));
    assert.equal(e.code, code, e.message);
    assert.match(e.message, pattern);
    return true;
  };
}

Deno.test("rendezvous: every rank receives rank 0's payload, whoever starts first", async () => {
  const port = freePort();
  let made = 0;
  // Ranks 2 and 1 start before rank 0 is listening: they retry until it is.
  const late = new Promise((resolve) => setTimeout(resolve, 150));
  const results = await Promise.all([
    rendezvous(options(2, 3, port), payload),
    rendezvous(options(1, 3, port), payload),
    late.then(() => rendezvous(options(0, 3, port), () => (made++, payload()))),
  ]);
  assert.equal(made, 1, "rank 0 makes the payload once, when every rank is there");
  for (const r of results) assert.deepEqual(r, payload());
  // A world of one needs nobody.
  assert.deepEqual(await rendezvous(options(0, 1, freePort()), payload), payload());
});

Deno.test("rendezvous: a wrong world size fails every rank with HCCL_E_PARA", async () => {
  const port = freePort();
  const results = await Promise.allSettled([
    rendezvous(options(0, 3, port), payload),
    rendezvous(options(1, 3, port), payload),
    rendezvous(options(2, 4, port), payload),
  ]);
  for (const r of results) {
    assert.equal(r.status, "rejected");
    hcclCode(1, /rank 2 says worldSize 4, rank 0 says 3/)((r as PromiseRejectedResult).reason);
  }
});

Deno.test("rendezvous: a rank given to two processes fails with HCCL_E_PARA", async () => {
  const port = freePort();
  const results = await Promise.allSettled([
    rendezvous(options(0, 3, port), payload),
    rendezvous(options(1, 3, port), payload),
    rendezvous(options(1, 3, port), payload),
  ]);
  for (const r of results) {
    assert.equal(r.status, "rejected");
    hcclCode(1, /rank 1 joined twice/)((r as PromiseRejectedResult).reason);
  }
});

Deno.test("rendezvous: a rank that never comes is HCCL_E_TIMEOUT for all, naming it", async () => {
  const port = freePort();
  const started = performance.now();
  const results = await Promise.allSettled([
    rendezvous(options(0, 4, port, 400), payload),
    rendezvous(options(1, 4, port, 400), payload),
    rendezvous(options(3, 4, port, 400), payload),
  ]);
  const elapsed = performance.now() - started;
  assert.ok(elapsed < 2000, `within the timeout (${elapsed} ms)`);
  for (const r of results) {
    assert.equal(r.status, "rejected");
    hcclCode(9, /rank\(s\) 2 of 4 never joined within 400 ms/)(
      (r as PromiseRejectedResult).reason,
    );
  }
});

Deno.test("rendezvous: no rank 0 is HCCL_E_TCP_CONNECT; a taken port HCCL_E_UNAVAIL", async () => {
  const port = freePort();
  await assert.rejects(
    rendezvous(options(1, 2, port, 300), payload),
    hcclCode(11, /rank 1 could not reach rank 0 at 127\.0\.0\.1:\d+ within 300 ms/),
  );
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const busy = (taken.addr as Deno.NetAddr).port;
    await assert.rejects(
      rendezvous(options(0, 2, busy, 300), payload),
      hcclCode(7, /cannot listen on 127\.0\.0\.1:\d+: the port is in use/),
    );
  } finally {
    taken.close();
  }
});

Deno.test("rendezvous: a rank that leaves before the end fails the others (HCCL_E_TCP_TRANSFER)", async () => {
  // World of 4: rank 3 has not come yet when rank 1 leaves, so the world can never complete.
  const port = freePort();
  const started = performance.now();
  const master = rendezvous(options(0, 4, port, 2000), payload);
  const waiting = rendezvous(options(2, 4, port, 2000), payload);
  // Rank 1 says hello, then its process "dies" (the connection closes).
  const quitter = await (async () => {
    for (;;) {
      try {
        return await Deno.connect({ hostname: "127.0.0.1", port });
      } catch {
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  })();
  await quitter.write(
    new TextEncoder().encode(JSON.stringify({ hello: { rank: 1, worldSize: 4 } }) + "\n"),
  );
  await new Promise((r) => setTimeout(r, 50));
  quitter.close();
  const results = await Promise.allSettled([master, waiting]);
  assert.ok(performance.now() - started < 1000, "at once, not at the timeout");
  for (const r of results) {
    assert.equal(r.status, "rejected");
    hcclCode(13, /rank 1 disconnected before the rendezvous completed/)(
      (r as PromiseRejectedResult).reason,
    );
  }
});
