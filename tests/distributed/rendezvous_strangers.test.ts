/**
 * Strangers at rank 0's port (src/distributed/rendezvous.ts): garbage, an HTTP request, hellos
 * of the old shape, of another job, forged or replayed, a 20 MB line and silent connections
 * are closed and logged while the job's ranks complete; only a hello that proves the job id
 * can fail the job (HCCL_E_PARA for a rank out of range, as for any misconfigured rank). All
 * on 127.0.0.1, in this process.
 */

import assert from "node:assert/strict";
import { rendezvous, type RendezvousOptions } from "../../src/distributed/rendezvous.ts";
import { helloParts, jobKey, nonce, prove } from "../../src/distributed/rendezvous_auth.ts";
import { field, Lines, MAX_LINE_BYTES } from "../../src/distributed/rendezvous_wire.ts";
import { HcclError } from "../../src/errors.ts";
import { dial, freePort, provenHello, stray } from "../helpers/net.ts";

const JOB = "strangers-test-job";
const encoder = new TextEncoder();
const line = (value: unknown) => encoder.encode(JSON.stringify(value) + "\n");
const payload = () => new Uint8Array(4108).map((_, i) => (i * 13) & 0xff);

function options(
  rank: number,
  worldSize: number,
  port: number,
  extra: Partial<RendezvousOptions> = {},
): RendezvousOptions {
  return {
    rank,
    worldSize,
    masterAddr: "127.0.0.1",
    masterPort: port,
    timeoutMs: 5000,
    jobId: JOB,
    ...extra,
  };
}

function hcclCode(code: number, pattern: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof HcclError, String(e));
    assert.equal(e.code, code, e.message);
    assert.match(e.message, pattern);
    return true;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("rendezvous: strangers are closed and logged, never fatal, while 3 ranks complete", async () => {
  const port = freePort();
  const logs: string[] = [];
  const master = rendezvous(
    options(0, 3, port, { helloTimeoutMs: 300, log: (m) => logs.push(m) }),
    payload,
  );
  const garbage = new Uint8Array(3000).map((_, i) => (i * 7919) & 0xff);
  const big = new Uint8Array(20 * 1024 * 1024).fill(0x7b); // "{{{{...", no newline
  const [
    junk,
    http,
    oldSeven,
    oldOne,
    wrongJob,
    forged,
    replayed,
    huge,
    silent,
  ] = await Promise.all([
    stray(port, garbage),
    stray(port, encoder.encode("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")),
    // The two attacks of the issue, verbatim: they used to abort the job or take rank 1.
    stray(port, line({ hello: { rank: 7, worldSize: 2 } })),
    stray(port, line({ hello: { rank: 1, worldSize: 3 } })),
    // A rank of another job says rank 1 first: it is turned away, not given the slot.
    rendezvous(options(1, 3, port, { jobId: "another-job" }), payload).then(
      () => assert.fail("a rank of another job was let in"),
      (e) => e,
    ),
    // The right shape, a proof made with a wrong id; and the right id over another challenge.
    provenHello(port, "guessed-id", 2, 3),
    provenHello(port, JOB, 2, 3, nonce()),
    stray(port, big),
    stray(port, new Uint8Array(0)),
  ]);
  // Only now do the job's ranks come; the strangers are all gone.
  const ranks = await Promise.all([
    rendezvous(options(1, 3, port), payload),
    rendezvous(options(2, 3, port), payload),
    master,
  ]);
  for (const r of ranks) assert.deepEqual(r, payload());

  hcclCode(1, /rank 0 rejected rank 1's hello: the two have different job ids/)(wrongJob);
  for (const replies of [forged, replayed]) assert.deepEqual(replies, [{ rejected: "job id" }]);
  for (const s of [junk, http, oldSeven, oldOne, huge, silent]) {
    assert.match(
      s.received,
      /^\{"challenge":"[A-Za-z0-9+/=]{24}"\}\n$/,
      "a challenge, then closed",
    );
  }
  // The 20 MB line: rank 0 closed after 64 KiB, so the writer failed long before the end.
  assert.ok(huge.writeError !== undefined, `rank 0 read all ${huge.written} bytes`);
  assert.ok(huge.written < big.length, `${huge.written} bytes written`);

  const dropped = (why: RegExp) =>
    logs.filter((m) =>
      /^rendezvous at 127\.0\.0\.1:\d+: dropped the connection from 127\.0\.0\.1:\d+: /.test(m) &&
      why.test(m)
    );
  assert.equal(dropped(/sent a line that is not JSON/).length, 2, logs.join("\n")); // junk, http
  assert.equal(dropped(/not JSON: "GET \/ HTTP\/1\.1\\r"/).length, 1, logs.join("\n"));
  assert.equal(dropped(/"hello":\{"rank":7,"worldSize":2\}\}, not a hello/).length, 1);
  assert.equal(dropped(/"hello":\{"rank":1,"worldSize":3\}\}, not a hello/).length, 1);
  assert.equal(dropped(/hello \(rank 1 of 3\) carries no proof of this job's id/).length, 1);
  assert.equal(dropped(/hello \(rank 2 of 3\) carries no proof of this job's id/).length, 2);
  assert.equal(dropped(new RegExp(`a line longer than ${MAX_LINE_BYTES} bytes`)).length, 1);
  assert.equal(dropped(/said no hello within 300 ms/).length, 1, logs.join("\n"));
  assert.equal(logs.length, 9, logs.join("\n"));
});

Deno.test("rendezvous: a hello with the job's id and a rank out of range fails every rank (HCCL_E_PARA)", async () => {
  const port = freePort();
  const logs: string[] = [];
  const master = Promise.allSettled([
    rendezvous(options(0, 2, port, { log: (m) => logs.push(m) }), payload),
  ]);
  const misconfigured = await provenHello(port, JOB, 7, 2);
  const late = rendezvous(options(1, 2, port), payload);
  const results = [...await master, ...await Promise.allSettled([late])];
  for (const r of results) {
    assert.equal(r.status, "rejected");
    hcclCode(1, /rendezvous at 127\.0\.0\.1:\d+: a process joined as rank 7, outside 1\.\.1/)(
      (r as PromiseRejectedResult).reason,
    );
  }
  assert.equal(misconfigured.length, 1);
  assert.equal(field(field(misconfigured[0], "error"), "code"), 1);
  assert.match(
    field(field(misconfigured[0], "error"), "message") as string,
    /^rendezvous at .* outside 1\.\.1$/,
  );
  assert.deepEqual(logs, []);
});

Deno.test("rendezvous: a rank that leaves before the end fails the others (HCCL_E_TCP_TRANSFER)", async () => {
  // World of 4: rank 3 has not come yet when rank 1 leaves, so the world can never complete.
  const port = freePort();
  const started = performance.now();
  const master = rendezvous(options(0, 4, port), payload);
  const waiting = rendezvous(options(2, 4, port), payload);
  // Rank 1 says hello (with the job's proof), then its process "dies" (the connection closes).
  const quitter = await dial(port);
  const challenge = field(await new Lines(quitter).next(), "challenge") as string;
  const hello = { rank: 1, worldSize: 4, nonce: nonce() };
  const proof = await prove(await jobKey(JOB), helloParts(challenge, hello));
  await quitter.write(line({ hello: { ...hello, proof } }));
  await sleep(50);
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

Deno.test("rendezvous: a process in rank 0's place learns no id and cannot hand out a root info", async () => {
  const impostor = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (impostor.addr as Deno.NetAddr).port;
  const heard: unknown[] = [];
  const serving = (async () => {
    const conn = await impostor.accept();
    const lines = new Lines(conn);
    await conn.write(line({ challenge: nonce() }));
    heard.push(await lines.next());
    await conn.write(line({ payload: btoa("forged root info"), proof: btoa("x".repeat(32)) }));
    await lines.next().catch(() => null);
    conn.close();
  })();
  try {
    await assert.rejects(
      rendezvous(options(1, 2, port, { jobId: "a-secret-id" }), payload),
      hcclCode(1, /rank 1 got a root info without proof of this job's id/),
    );
    await serving;
    assert.equal(heard.length, 1);
    assert.ok(!JSON.stringify(heard).includes("a-secret-id"), JSON.stringify(heard));
    assert.equal(field(field(heard[0], "hello"), "rank"), 1);
  } finally {
    impostor.close();
  }
});

Deno.test("rendezvous: with too many silent connections the oldest is closed and the ranks still join", async () => {
  const port = freePort();
  const logs: string[] = [];
  const started = performance.now();
  const master = rendezvous(
    options(0, 2, port, { maxWaiting: 4, helloTimeoutMs: 4000, log: (m) => logs.push(m) }),
    payload,
  );
  const silent = await Promise.all(Array.from({ length: 10 }, () => dial(port)));
  await sleep(100);
  const ranks = await Promise.all([rendezvous(options(1, 2, port), payload), master]);
  const elapsed = performance.now() - started;
  for (const r of ranks) assert.deepEqual(r, payload());
  assert.ok(elapsed < 2000, `long before the hello timeout (${elapsed} ms)`);
  const evicted = logs.filter((m) => /4 connections were waiting to say hello; the oldest/.test(m));
  assert.ok(evicted.length >= 6, logs.join("\n"));
  for (const conn of silent) conn.close();
});

Deno.test("rendezvous: dropped connections are logged one by one up to 20, then counted", async () => {
  const port = freePort();
  const logs: string[] = [];
  const master = rendezvous(options(0, 2, port, { log: (m) => logs.push(m) }), payload);
  for (let i = 0; i < 25; i++) await stray(port, encoder.encode(`junk ${i}\n`));
  const ranks = await Promise.all([rendezvous(options(1, 2, port), payload), master]);
  for (const r of ranks) assert.deepEqual(r, payload());
  assert.equal(logs.filter((m) => /dropped the connection from/.test(m)).length, 20);
  assert.match(logs[20], /20 connections dropped; further ones are counted/);
  assert.match(logs.at(-1)!, /: 25 connections dropped in all$/);
  assert.equal(logs.length, 22);
});
