/**
 * Networking for the rendezvous tests, on 127.0.0.1 only: a free port, and stray clients that
 * speak to rank 0's port as strangers do (garbage, HTTP, hellos of other jobs, endless lines).
 *
 * @module
 */

import { helloParts, jobKey, nonce, prove } from "../../src/distributed/rendezvous_auth.ts";
import { field, Lines } from "../../src/distributed/rendezvous_wire.ts";

/** Ports {@linkcode freePort} has handed out in this process: never handed out twice. */
const portsGiven = new Set<number>();

/**
 * A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it) and that this process's
 * tests have not been given before, for tests that start a rendezvous (two runs started
 * together, each with its own port, could otherwise be handed the same one).
 */
export function freePort(): number {
  for (;;) {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close();
    if (!portsGiven.has(port)) {
      portsGiven.add(port);
      return port;
    }
  }
}

/** Connects to 127.0.0.1:`port`, retrying every 20 ms while nothing listens (up to 10 s). */
export async function dial(port: number): Promise<Deno.Conn> {
  const until = performance.now() + 10_000;
  for (;;) {
    try {
      return await Deno.connect({ hostname: "127.0.0.1", port });
    } catch (e) {
      if (performance.now() > until) throw e;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** What a stray client saw: everything rank 0 sent, and whether rank 0 closed first. */
export interface StrayOutcome {
  /** All bytes received, as text. */
  received: string;
  /** Bytes of `bytes` that were written before the connection failed. */
  written: number;
  /** The write error, when rank 0 closed the connection before all of `bytes` was written. */
  writeError?: unknown;
}

/**
 * Connects to `port`, writes `bytes` (stopping at the first write error), then reads until rank
 * 0 closes the connection (or `readMs` pass, which fails the caller's assertions: the stray is
 * then still open).
 */
export async function stray(port: number, bytes: Uint8Array, readMs = 5000): Promise<StrayOutcome> {
  const conn = await dial(port);
  let written = 0;
  let writeError: unknown;
  try {
    while (written < bytes.length) written += await conn.write(bytes.subarray(written));
  } catch (e) {
    writeError = e;
  }
  const chunks: Uint8Array[] = [];
  const buffer = new Uint8Array(4096);
  const timer = setTimeout(() => conn.close(), readMs);
  try {
    for (;;) {
      const n = await conn.read(buffer);
      if (n === null) break;
      chunks.push(buffer.slice(0, n));
    }
  } catch {
    // reset by rank 0, or closed by the timer
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch {
      // closed by the timer
    }
  }
  const received = new TextDecoder().decode(new Uint8Array(chunks.flatMap((c) => [...c])));
  return { received, written, writeError };
}

/**
 * Connects to `port`, reads rank 0's challenge and answers with a hello for `rank` of
 * `worldSize`, proved with `jobId` (over `challengeOverride` instead of the real challenge
 * when given: a replayed or forged proof). Returns every line rank 0 sends afterwards.
 */
export async function provenHello(
  port: number,
  jobId: string,
  rank: number,
  worldSize: number,
  challengeOverride?: string,
): Promise<unknown[]> {
  const conn = await dial(port);
  const lines = new Lines(conn);
  try {
    const challenge = field(await lines.next(), "challenge") as string;
    const hello = { rank, worldSize, nonce: nonce() };
    const proof = await prove(
      await jobKey(jobId),
      helloParts(challengeOverride ?? challenge, hello),
    );
    await conn.write(
      new TextEncoder().encode(JSON.stringify({ hello: { ...hello, proof } }) + "\n"),
    );
    const replies: unknown[] = [];
    for (;;) {
      const m = await lines.next().catch(() => null);
      if (m === null) return replies;
      replies.push(m);
    }
  } finally {
    try {
      conn.close();
    } catch {
      // closed
    }
  }
}
