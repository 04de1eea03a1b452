/**
 * A small TCP rendezvous for W processes, in the role PyTorch's TCPStore plays for
 * torch_npu's HCCL process group (ProcessGroupHCCL::broadcastMasterID: rank 0 publishes the
 * HCCL root info, the others fetch it). Rank 0 listens on the master address; every other rank
 * connects and says who it is; once all W ranks are there and agree on W, rank 0 makes the
 * payload (the root info) and sends it to each. Everything is bounded by one deadline.
 *
 * Failures are {@linkcode HcclError}s with the codes HCCL's own root-info exchange uses for the
 * same situations (hcomm topoinfo_exchange_*.cc): a wrong world size or a rank claimed twice
 * is HCCL_E_PARA (1), a rank that never came HCCL_E_TIMEOUT (9), rank 0 unreachable
 * HCCL_E_TCP_CONNECT (11), a connection lost mid-way HCCL_E_TCP_TRANSFER (13), and a master
 * port already taken HCCL_E_UNAVAIL (7, as HcclGetRootInfo answers for a bound port).
 * The error reaches every rank that is still connected, not only the one that caused it.
 *
 * Every rank knows the job's id (`jobId`); hellos prove it, and rank 0 proves it with the
 * payload (rendezvous_auth.ts says how, and what that does and does not protect against).
 * HCCL's own root server likewise accepts its agents by a socket tag made of the root info's
 * identifier and port (cann-hccl src/domain/collective_communication/framework/common/src/
 * topo/topoinfo_exchange_server.cc, TopoInfoExchangeServer::Connect).
 * Rank 0 closes, logs (`log`) and otherwise ignores any connection that is not a rank of this
 * job: one that says nothing within `helloTimeoutMs`, sends a line over 64 KiB or not JSON,
 * sends something else than a hello, or a hello without the proof (that one is told
 * `rejected`, so that a rank of another job fails at once with HCCL_E_PARA). A hello with the
 * proof is a rank of this job: a wrong world size or rank from it fails the job as above.
 *
 * Wire format: one JSON object per line (rendezvous_wire.ts). On each connection rank 0 says
 * `{"challenge":c}`; the rank answers `{"hello":{"rank":r,"worldSize":w,"nonce":n,"proof":p}}`;
 * rank 0 answers `{"payload":"<base64>","proof":q}`, `{"error":{"code":c,"message":"..."}}`
 * or `{"rejected":"job id"}`.
 *
 * @module
 */

import type { RendezvousOptions } from "./rendezvous_options.ts";
export type { RendezvousOptions } from "./rendezvous_options.ts";
import { HCCL_E_PARA, HCCL_E_TCP_TRANSFER, HCCL_E_TIMEOUT, HcclError } from "../errors.ts";
import {
  helloParts,
  isNonce,
  jobKey,
  nonce,
  payloadParts,
  prove,
  verify,
} from "./rendezvous_auth.ts";
import { join } from "./rendezvous_join.ts";
import {
  base64,
  beforeDeadline,
  closeQuietly,
  field,
  Lines,
  MAX_LINE_BYTES,
  previewJson,
  remote,
  send,
  where,
  WireError,
} from "./rendezvous_wire.ts";

/** HCCL_E_UNAVAIL: the resource (here the master port) is taken. */
const HCCL_E_UNAVAIL = 7;
/** Default time a connection to rank 0 has to say hello. */
const HELLO_TIMEOUT_MS = 10_000;
/** Default bound on connections that have not said hello yet (each holds at most a line). */
const MAX_WAITING = 256;
/** Dropped connections logged one by one; the ones after are counted. */
const MAX_LOGGED_DROPS = 20;
/** The largest payload: its base64 line stays well under the line bound. */
export const MAX_PAYLOAD_BYTES: number = MAX_LINE_BYTES / 2;

/** A hello as it came: the proof is still to be checked. */
interface Hello {
  rank: number;
  worldSize: number;
  nonce: string;
  proof: unknown;
}

/** A rank that proved the job id: its connection and the nonces its payload proof binds. */
interface Peer {
  conn: Deno.Conn;
  challenge: string;
  nonce: string;
}

function asHello(message: unknown): Hello | undefined {
  const h = field(message, "hello");
  const [rank, worldSize, n] = [field(h, "rank"), field(h, "worldSize"), field(h, "nonce")];
  if (!Number.isSafeInteger(rank) || !Number.isSafeInteger(worldSize) || !isNonce(n)) {
    return undefined;
  }
  const proof = field(h, "proof");
  return { rank: rank as number, worldSize: worldSize as number, nonce: n, proof };
}

/** Rank 0's record of the connections it dropped: the first few logged, all counted. */
class Drops {
  count = 0;
  /** Ranks (1..W-1) claimed by hellos without the proof of the job id. */
  readonly claimed: Set<number> = new Set();
  readonly #log: (message: string) => void;
  readonly #where: string;

  constructor(log: (message: string) => void, where: string) {
    this.#log = log;
    this.#where = where;
  }

  note(from: string, why: string): void {
    this.count++;
    if (this.count <= MAX_LOGGED_DROPS) {
      this.say(`rendezvous at ${this.#where}: dropped the connection from ${from}: ${why}`);
    }
    if (this.count === MAX_LOGGED_DROPS) {
      this.say(
        `rendezvous at ${this.#where}: ${MAX_LOGGED_DROPS} connections dropped; further ones ` +
          `are counted, not logged one by one`,
      );
    }
  }

  say(message: string): void {
    try {
      this.#log(message);
    } catch {
      // a failing logger does not stop the rendezvous
    }
  }
}

/** The error as it travels to the other ranks (they add the code's name again). */
function wireError(error: HcclError): { code: number; message: string } {
  return { code: error.code, message: error.message.replace(/ \[[A-Z_]+ -?\d+\]$/, "") };
}

/** Rank 0: waits for every rank, checks the world, sends them the payload. */
async function serve(o: RendezvousOptions, makePayload: () => Uint8Array): Promise<Uint8Array> {
  const deadline = performance.now() + o.timeoutMs;
  const key = await jobKey(o.jobId);
  const helloMs = o.helloTimeoutMs ?? Math.min(HELLO_TIMEOUT_MS, o.timeoutMs);
  const maxWaiting = o.maxWaiting ?? Math.max(MAX_WAITING, 2 * o.worldSize);
  let listener: Deno.Listener;
  try {
    listener = Deno.listen({ hostname: o.masterAddr, port: o.masterPort });
  } catch (e) {
    if (e instanceof Deno.errors.AddrInUse) {
      throw new HcclError(
        HCCL_E_UNAVAIL,
        `rendezvous: rank 0 cannot listen on ${where(o)}: the port is in use (choose another ` +
          `masterPort / MASTER_PORT)`,
        { cause: e },
      );
    }
    throw e;
  }
  const drops = new Drops(o.log ?? console.warn, where(o));
  const peers = new Map<number, Peer>();
  /** Connections that have not said a line yet, oldest first, with how to cut each off. */
  const waiting = new Map<Deno.Conn, (why: string) => void>();
  let failure: HcclError | undefined;
  const fail = (error: HcclError) => {
    failure ??= error;
  };
  const tell = async (conn: Deno.Conn, error: HcclError) => {
    await send(conn, { error: wireError(error) }).catch(() => {});
    closeQuietly(conn);
  };
  const missing = () => {
    const absent: number[] = [];
    for (let r = 1; r < o.worldSize; r++) if (!peers.has(r)) absent.push(r);
    return absent;
  };
  const allHere = Promise.withResolvers<void>();
  let complete = o.worldSize === 1;
  if (complete) allHere.resolve();

  let served = false;
  const peersGone = (rank: number) => {
    if (served) return;
    const error = new HcclError(
      HCCL_E_TCP_TRANSFER,
      `rendezvous at ${where(o)}: rank ${rank} disconnected before the rendezvous completed`,
    );
    fail(error);
    allHere.reject(error);
  };

  /** The first line of `conn` within helloMs, or why there is none (`conn` is then closed). */
  const hear = async (conn: Deno.Conn, lines: Lines, challenge: string) => {
    let cutBecause: string | undefined;
    const cut = (why: string) => {
      cutBecause ??= why;
      closeQuietly(conn);
    };
    waiting.set(conn, cut);
    if (waiting.size > maxWaiting) {
      const [oldest, cutOldest] = waiting.entries().next().value!;
      waiting.delete(oldest);
      cutOldest(`${maxWaiting} connections were waiting to say hello; the oldest is closed`);
    }
    const timer = setTimeout(() => cut(`said no hello within ${helloMs} ms`), helloMs);
    Deno.unrefTimer(timer);
    let message: unknown = null;
    let problem: string | undefined;
    try {
      await send(conn, { challenge });
      message = await lines.next();
    } catch (e) {
      problem = e instanceof WireError ? e.message : `the connection failed (${String(e)})`;
    } finally {
      clearTimeout(timer);
      waiting.delete(conn);
    }
    problem = cutBecause ?? problem ??
      (message === null ? "closed the connection without a hello" : undefined);
    if (problem !== undefined) closeQuietly(conn);
    return { message, problem };
  };

  const greet = async (conn: Deno.Conn, from: string) => {
    if (failure) conn.unref(); // lingering after a failure: a late comer never keeps the process
    const challenge = nonce();
    const lines = new Lines(conn);
    const { message, problem } = await hear(conn, lines, challenge);
    if (problem !== undefined) return drops.note(from, problem);
    const h = asHello(message);
    if (!h) {
      closeQuietly(conn);
      return drops.note(from, `sent ${previewJson(message)}, not a hello`);
    }
    if (!(await verify(key, h.proof, helloParts(challenge, h)))) {
      if (h.rank >= 1 && h.rank < o.worldSize) drops.claimed.add(h.rank);
      await send(conn, { rejected: "job id" }).catch(() => {});
      closeQuietly(conn);
      return drops.note(
        from,
        `its hello (rank ${h.rank} of ${h.worldSize}) carries no proof of this job's id`,
      );
    }
    // Late ranks of a failed rendezvous hear why at once instead of retrying to their deadline.
    if (failure) return tell(conn, failure);
    if (complete) {
      closeQuietly(conn);
      return drops.note(from, `rank ${h.rank} said hello after every rank had joined`);
    }
    let problemOfJob: string | undefined;
    if (h.worldSize !== o.worldSize) {
      problemOfJob = `rank ${h.rank} says worldSize ${h.worldSize}, rank 0 says ${o.worldSize}`;
    } else if (h.rank < 1 || h.rank >= o.worldSize) {
      problemOfJob = `a process joined as rank ${h.rank}, outside 1..${o.worldSize - 1}`;
    } else if (peers.has(h.rank)) {
      problemOfJob = `rank ${h.rank} joined twice (two processes were given the same rank)`;
    }
    if (problemOfJob !== undefined) {
      const error = new HcclError(HCCL_E_PARA, `rendezvous at ${where(o)}: ${problemOfJob}`);
      fail(error);
      allHere.reject(error);
      return tell(conn, error);
    }
    peers.set(h.rank, { conn, challenge, nonce: h.nonce });
    // A rank that goes away before the payload leaves the world incomplete for good.
    lines.next().then(
      (m) => m === null && !failure && peersGone(h.rank),
      () => !failure && peersGone(h.rank),
    );
    if (peers.size === o.worldSize - 1) {
      complete = true;
      allHere.resolve();
    }
  };

  const accepting = (async () => {
    try {
      for await (const conn of listener) {
        const from = remote(conn);
        greet(conn, from).catch((e) => {
          closeQuietly(conn);
          drops.note(from, `its connection failed (${String(e)})`);
        });
      }
    } catch {
      // the listener was closed
    }
  })();

  try {
    await beforeDeadline(deadline, allHere.promise, () => {
      const absent = missing();
      const claimed = absent.filter((r) => drops.claimed.has(r));
      const error = new HcclError(
        HCCL_E_TIMEOUT,
        `rendezvous at ${where(o)}: rank(s) ${absent.join(", ")} of ${o.worldSize} never ` +
          `joined within ${o.timeoutMs} ms` +
          (claimed.length === 0 ? "" : `; hellos for rank(s) ${claimed.join(", ")} came ` +
            `without proof of this job's id and were dropped (every rank needs the same job id)`),
      );
      fail(error);
      return error;
    });
    closeQuietly(listener);
    await accepting;
    const payload = makePayload();
    if (payload.length > MAX_PAYLOAD_BYTES) {
      throw new HcclError(
        HCCL_E_PARA,
        `rendezvous: the payload has ${payload.length} bytes, more than ${MAX_PAYLOAD_BYTES}`,
      );
    }
    const text = base64(payload);
    served = true;
    await Promise.all(
      [...peers].map(async ([rank, p]) =>
        send(p.conn, {
          payload: text,
          proof: await prove(key, payloadParts(p.challenge, p.nonce, rank, text)),
        })
      ),
    );
    return payload;
  } catch (e) {
    const error = failure ??
      (e instanceof HcclError ? e : new HcclError(4, String(e), { cause: e }));
    fail(error);
    await Promise.all([...peers.values()].map((p) => tell(p.conn, error)));
    // Keep answering until the deadline, so that ranks still on their way (or still to say
    // hello) learn the reason; unref'd, the listener never keeps this process alive.
    listener.unref();
    const linger = setTimeout(
      () => closeQuietly(listener),
      Math.max(0, deadline - performance.now()),
    );
    Deno.unrefTimer(linger);
    throw error;
  } finally {
    for (const p of peers.values()) closeQuietly(p.conn);
    if (!failure) {
      closeQuietly(listener);
      for (const cut of [...waiting.values()]) cut("the rendezvous completed before its hello");
      await accepting;
    } else {
      for (const conn of waiting.keys()) conn.unref(); // they hear the reason if they say hello
    }
    if (drops.count > MAX_LOGGED_DROPS) {
      drops.say(`rendezvous at ${where(o)}: ${drops.count} connections dropped in all`);
    }
  }
}

/**
 * Meets the other W-1 ranks at `masterAddr:masterPort` and returns the payload rank 0 made
 * with `makePayload` (called on rank 0 only, once every rank is there; at most
 * {@linkcode MAX_PAYLOAD_BYTES}). Throws an {@linkcode HcclError} as described in the module
 * documentation, on every rank concerned, within `timeoutMs`.
 */
export function rendezvous(
  options: RendezvousOptions,
  makePayload: () => Uint8Array,
): Promise<Uint8Array> {
  return options.rank === 0 ? serve(options, makePayload) : join(options);
}
