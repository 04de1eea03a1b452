/**
 * The TCP rendezvous that hands HCCL's root info from rank 0 to the other ranks
 * (src/distributed/rendezvous.ts): every rank gets the payload; a wrong world size, a rank
 * given twice, a rank that never comes, an unreachable rank 0, a port in use and a rank with
 * another job id end in an HcclError with HCCL's code for the situation, on every rank
 * concerned, within the timeout. Where the job id comes from (src/distributed/job_id.ts).
 * The ranks run concurrently in this process (the rendezvous is asynchronous); strangers and
 * a peer that leaves mid-way are in rendezvous_strangers.test.ts.
 */

import assert from "node:assert/strict";
import { DEFAULT_JOB_ID, jobIdWarning, resolveJobId } from "../../src/distributed/job_id.ts";
import { rendezvous, type RendezvousOptions } from "../../src/distributed/rendezvous.ts";
import { HCCL_E_INTERNAL, HcclError } from "../../src/errors.ts";
import { freePort } from "../helpers/net.ts";

function options(
  rank: number,
  worldSize: number,
  port: number,
  timeoutMs = 2000,
): RendezvousOptions {
  return { rank, worldSize, masterAddr: "127.0.0.1", masterPort: port, timeoutMs, jobId: JOB };
}

const JOB = "rendezvous-test-job";

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

Deno.test("rendezvous: a payload rank 0 cannot make fails every rank with HCCL_E_INTERNAL", async () => {
  const port = freePort();
  const broken = new TypeError("no root info");
  const results = await Promise.allSettled([
    rendezvous(options(0, 2, port), () => {
      throw broken;
    }),
    rendezvous(options(1, 2, port), payload),
  ]);
  for (const r of results) {
    assert.equal(r.status, "rejected");
    hcclCode(HCCL_E_INTERNAL, /TypeError: no root info/)((r as PromiseRejectedResult).reason);
  }
  assert.equal((results[0] as PromiseRejectedResult).reason.cause, broken, "rank 0 keeps it");
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

Deno.test("rendezvous: a rank with another job id fails at once (HCCL_E_PARA); rank 0 times out naming it", async () => {
  const port = freePort();
  const logs: string[] = [];
  const started = performance.now();
  const master = Promise.allSettled([
    rendezvous({ ...options(0, 2, port, 1500), log: (m) => logs.push(m) }, payload),
  ]);
  await assert.rejects(
    rendezvous({ ...options(1, 2, port, 1500), jobId: "another-job" }, payload),
    hcclCode(1, /rank 0 rejected rank 1's hello: the two have different job ids/),
  );
  // Not at its deadline (1500 ms) or after: the rejection ends it at once.
  assert.ok(performance.now() - started < 1000, "the rank of another job fails at once");
  const [result] = await master;
  assert.equal(result.status, "rejected");
  hcclCode(
    9,
    /rank\(s\) 1 of 2 never joined within 1500 ms; hellos for rank\(s\) 1 came without proof of this job's id/,
  )((result as PromiseRejectedResult).reason);
  assert.equal(logs.length, 1, logs.join("\n"));
  assert.match(logs[0], /hello \(rank 1 of 2\) carries no proof of this job's id/);
});

/** Runs `body` with the job id variables set as given (undefined: unset), then restores them. */
function withJobEnv(vars: Record<string, string | undefined>, body: () => void): void {
  const names = ["TORCHELASTIC_RUN_ID", "ACLNN_NORM_JOB_ID"];
  const saved = names.map((n) => Deno.env.get(n));
  try {
    for (const n of names) {
      const v = vars[n];
      if (v === undefined) Deno.env.delete(n);
      else Deno.env.set(n, v);
    }
    body();
  } finally {
    names.forEach((n, i) =>
      saved[i] === undefined ? Deno.env.delete(n) : Deno.env.set(n, saved[i]!)
    );
  }
}

Deno.test("job id: the option, else TORCHELASTIC_RUN_ID, else ACLNN_NORM_JOB_ID, else none", () => {
  const both = { TORCHELASTIC_RUN_ID: "torchrun-42", ACLNN_NORM_JOB_ID: "own-7" };
  withJobEnv(both, () => {
    assert.deepEqual(resolveJobId("opt-1", "op"), { id: "opt-1", source: "jobId" });
    assert.deepEqual(resolveJobId(undefined, "op"), {
      id: "torchrun-42",
      source: "TORCHELASTIC_RUN_ID",
    });
  });
  withJobEnv({ TORCHELASTIC_RUN_ID: "", ACLNN_NORM_JOB_ID: "own-7" }, () => {
    assert.deepEqual(resolveJobId(undefined, "op"), { id: "own-7", source: "ACLNN_NORM_JOB_ID" });
  });
  withJobEnv({}, () => {
    assert.deepEqual(resolveJobId(undefined, "op"), { id: DEFAULT_JOB_ID, source: "default" });
    assert.equal(DEFAULT_JOB_ID, "none");
  });
});

Deno.test("job id: an empty, non-string or over-long id is HCCL_E_PARA naming it", () => {
  for (const bad of ["", 42, "x".repeat(1025)]) {
    assert.throws(
      () => resolveJobId(bad, "createHcclProcessGroup"),
      hcclCode(1, /^createHcclProcessGroup: jobId must be a string of 1\.\.1024 characters/),
    );
  }
  assert.equal(resolveJobId("x".repeat(1024), "op").id.length, 1024);
  withJobEnv({ TORCHELASTIC_RUN_ID: "y".repeat(1025) }, () => {
    assert.throws(
      () => resolveJobId(undefined, "op"),
      hcclCode(1, /^op: TORCHELASTIC_RUN_ID has 1025 characters, more than 1024/),
    );
  });
});

Deno.test("job id: rank 0 warns about an id anyone knows, and only then", () => {
  const at = "10.0.0.1:29500";
  assert.match(
    jobIdWarning({ id: "none", source: "default" }, "op", at)!,
    /^op: no job id is set \(the jobId option, TORCHELASTIC_RUN_ID or ACLNN_NORM_JOB_ID, read with --allow-env\).*10\.0\.0\.1:29500 can take a rank's slot/,
  );
  assert.match(
    jobIdWarning({ id: "none", source: "TORCHELASTIC_RUN_ID" }, "op", at)!,
    /TORCHELASTIC_RUN_ID is "none" \(torchrun without --rdzv-id\).*--rdzv-id=<an unguessable id> or --standalone/,
  );
  assert.match(jobIdWarning({ id: "none", source: "jobId" }, "op", at)!, /is known to anyone/);
  assert.equal(jobIdWarning({ id: "3f2a9c", source: "TORCHELASTIC_RUN_ID" }, "op", at), undefined);
});
