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
 * Wire format: one JSON object per line. `{"hello":{"rank":r,"worldSize":w}}` from a rank,
 * `{"payload":"<base64>"}` or `{"error":{"code":c,"message":"..."}}` from rank 0.
 *
 * @module
 */

import {
  HCCL_E_PARA,
  HCCL_E_TCP_CONNECT,
  HCCL_E_TCP_TRANSFER,
  HCCL_E_TIMEOUT,
  HcclError,
} from "../ffi/errors.ts";

/** HCCL_E_UNAVAIL: the resource (here the master port) is taken. */
const HCCL_E_UNAVAIL = 7;
/** How often a rank retries while rank 0 is not listening yet. */
const RETRY_MS = 50;
/**
 * How long past its own deadline a rank waits for rank 0's verdict: rank 0's deadline ends at
 * about the same time, and its message says which rank is missing.
 */
const VERDICT_GRACE_MS = 1000;

/** Options of {@linkcode rendezvous}. */
export interface RendezvousOptions {
  /** This process's rank (0 listens). */
  readonly rank: number;
  /** The number of ranks. */
  readonly worldSize: number;
  /** Where rank 0 listens (a host name or IP address). */
  readonly masterAddr: string;
  /** The TCP port rank 0 listens on. */
  readonly masterPort: number;
  /** Milliseconds for the whole rendezvous. */
  readonly timeoutMs: number;
}

interface Message {
  hello?: { rank: number; worldSize: number };
  payload?: string;
  error?: { code: number; message: string };
}

const encoder = new TextEncoder();

function base64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

function fromBase64(text: string): Uint8Array {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/**
 * Reads newline-delimited JSON messages from a connection, with `conn.read`. (Through its
 * `readable` stream and a TextDecoderStream, rank 0's process stayed alive after a
 * successful rendezvous on Deno 2.8.3; a minimal stream read on a closed connection did not
 * reproduce that, so the exact cause in 2.8.3 is not known.)
 */
class Lines {
  readonly #conn: Deno.Conn;
  readonly #decoder = new TextDecoder();
  readonly #bytes = new Uint8Array(4096);
  #buffer = "";

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  /** The next message, or null when the peer closed the connection. */
  async next(): Promise<Message | null> {
    for (;;) {
      const end = this.#buffer.indexOf("\n");
      if (end >= 0) {
        const line = this.#buffer.slice(0, end);
        this.#buffer = this.#buffer.slice(end + 1);
        try {
          return JSON.parse(line) as Message;
        } catch {
          throw new HcclError(HCCL_E_TCP_TRANSFER, `rendezvous: unreadable message ${line}`);
        }
      }
      const n = await this.#conn.read(this.#bytes);
      if (n === null) return null;
      this.#buffer += this.#decoder.decode(this.#bytes.subarray(0, n), { stream: true });
    }
  }
}

async function send(conn: Deno.Conn, message: Message): Promise<void> {
  const bytes = encoder.encode(JSON.stringify(message) + "\n");
  for (let done = 0; done < bytes.length;) done += await conn.write(bytes.subarray(done));
}

function closeQuietly(c: { close(): void }): void {
  try {
    c.close();
  } catch {
    // already closed
  }
}

/** Rejects with `error()` when the deadline passes first; the timer never keeps the process. */
function beforeDeadline<T>(deadline: number, work: Promise<T>, error: () => Error): Promise<T> {
  const remaining = Math.max(0, deadline - performance.now());
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(error()), remaining);
    Deno.unrefTimer(timer!);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

function where(o: RendezvousOptions): string {
  return `${o.masterAddr}:${o.masterPort}`;
}

/** Rank 0: waits for every rank, checks the world, sends them the payload. */
async function serve(o: RendezvousOptions, makePayload: () => Uint8Array): Promise<Uint8Array> {
  const deadline = performance.now() + o.timeoutMs;
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
  const peers = new Map<number, Deno.Conn>();
  const pending = new Set<Deno.Conn>();
  let failure: HcclError | undefined;
  const fail = (error: HcclError) => {
    failure ??= error;
  };
  const tell = async (conn: Deno.Conn, error: HcclError) => {
    await send(conn, { error: { code: error.code, message: error.message } }).catch(() => {});
    closeQuietly(conn);
  };
  const missing = () => {
    const absent: number[] = [];
    for (let r = 1; r < o.worldSize; r++) if (!peers.has(r)) absent.push(r);
    return absent;
  };
  const allHere = Promise.withResolvers<void>();
  if (o.worldSize === 1) allHere.resolve();

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
  const greet = async (conn: Deno.Conn) => {
    pending.add(conn);
    const lines = new Lines(conn);
    let hello: Message | null;
    try {
      hello = await lines.next();
    } catch {
      hello = null;
    }
    pending.delete(conn);
    const h = hello?.hello;
    if (!h || !Number.isInteger(h.rank) || !Number.isInteger(h.worldSize)) {
      closeQuietly(conn); // not one of ours (a port scanner, a stale client)
      return;
    }
    // Late ranks of a failed rendezvous hear why at once instead of retrying to their deadline.
    if (failure) return tell(conn, failure);
    let problem: string | undefined;
    if (h.worldSize !== o.worldSize) {
      problem = `rank ${h.rank} says worldSize ${h.worldSize}, rank 0 says ${o.worldSize}`;
    } else if (h.rank < 1 || h.rank >= o.worldSize) {
      problem = `a process joined as rank ${h.rank}, outside 1..${o.worldSize - 1}`;
    } else if (peers.has(h.rank)) {
      problem = `rank ${h.rank} joined twice (two processes were given the same rank)`;
    }
    if (problem !== undefined) {
      const error = new HcclError(HCCL_E_PARA, `rendezvous at ${where(o)}: ${problem}`);
      fail(error);
      allHere.reject(error);
      return tell(conn, error);
    }
    peers.set(h.rank, conn);
    // A rank that goes away before the payload leaves the world incomplete for good.
    lines.next().then(
      (m) => m === null && !failure && peersGone(h.rank),
      () => !failure && peersGone(h.rank),
    );
    if (peers.size === o.worldSize - 1) allHere.resolve();
  };

  const accepting = (async () => {
    try {
      for await (const conn of listener) greet(conn);
    } catch {
      // the listener was closed
    }
  })();

  try {
    await beforeDeadline(deadline, allHere.promise, () => {
      const error = new HcclError(
        HCCL_E_TIMEOUT,
        `rendezvous at ${where(o)}: rank(s) ${missing().join(", ")} of ${o.worldSize} never ` +
          `joined within ${o.timeoutMs} ms`,
      );
      fail(error);
      return error;
    });
    closeQuietly(listener);
    await accepting;
    const payload = makePayload();
    const text = base64(payload);
    served = true;
    await Promise.all([...peers.values()].map((conn) => send(conn, { payload: text })));
    return payload;
  } catch (e) {
    const error = failure ??
      (e instanceof HcclError ? e : new HcclError(4, String(e), { cause: e }));
    fail(error);
    await Promise.all([...peers.values()].map((conn) => tell(conn, error)));
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
    for (const conn of peers.values()) closeQuietly(conn);
    if (!failure) {
      closeQuietly(listener);
      for (const conn of pending) closeQuietly(conn);
      await accepting;
    } else {
      for (const conn of pending) conn.unref(); // they hear the reason if they say hello
    }
  }
}

/** Ranks 1..W-1: connect to rank 0 (retrying while it is not up), say hello, get the payload. */
async function join(o: RendezvousOptions): Promise<Uint8Array> {
  const deadline = performance.now() + o.timeoutMs;
  let conn: Deno.Conn | undefined;
  let lastError: unknown;
  while (conn === undefined) {
    try {
      conn = await beforeDeadline(
        deadline,
        Deno.connect({ hostname: o.masterAddr, port: o.masterPort }),
        () => new Error("deadline"),
      );
    } catch (e) {
      lastError = e;
      if (performance.now() + RETRY_MS >= deadline) {
        throw new HcclError(
          HCCL_E_TCP_CONNECT,
          `rendezvous: rank ${o.rank} could not reach rank 0 at ${where(o)} within ` +
            `${o.timeoutMs} ms (is rank 0 running, with the same masterAddr and masterPort?)`,
          { cause: lastError },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }
  const lines = new Lines(conn);
  try {
    await send(conn, { hello: { rank: o.rank, worldSize: o.worldSize } });
    const reply = await beforeDeadline(
      deadline + VERDICT_GRACE_MS,
      lines.next(),
      () =>
        new HcclError(
          HCCL_E_TIMEOUT,
          `rendezvous at ${where(o)}: rank ${o.rank} got no answer from rank 0 within ` +
            `${o.timeoutMs} ms (the other ranks did not all join)`,
        ),
    );
    if (reply?.payload !== undefined) return fromBase64(reply.payload);
    if (reply?.error) throw new HcclError(reply.error.code, reply.error.message);
    throw new HcclError(
      HCCL_E_TCP_TRANSFER,
      `rendezvous at ${where(o)}: rank 0 closed the connection before sending the root info`,
    );
  } catch (e) {
    if (e instanceof HcclError) throw e;
    throw new HcclError(
      HCCL_E_TCP_TRANSFER,
      `rendezvous at ${where(o)}: the connection to rank 0 failed: ${String(e)}`,
      { cause: e },
    );
  } finally {
    closeQuietly(conn);
  }
}

/**
 * Meets the other W-1 ranks at `masterAddr:masterPort` and returns the payload rank 0 made
 * with `makePayload` (called on rank 0 only, once every rank is there). Throws an
 * {@linkcode HcclError} as described in the module documentation, on every rank concerned,
 * within `timeoutMs`.
 */
export function rendezvous(
  options: RendezvousOptions,
  makePayload: () => Uint8Array,
): Promise<Uint8Array> {
  return options.rank === 0 ? serve(options, makePayload) : join(options);
}
