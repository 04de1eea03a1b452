/**
 * Rank 0's side of the TCP rendezvous (rendezvous.ts describes the protocol and its errors):
 * a {@linkcode RendezvousServer} listens, greets every connection, admits the ranks of the job
 * that prove its id, waits until all W are there, then sends each its payload. Its state, the
 * ranks admitted, the connections still to say hello, the first failure, and whether the world
 * is complete and served, lives in one object; each step is a method.
 *
 * @module
 */

import type { RendezvousOptions } from "./rendezvous_options.ts";
import {
  HCCL_E_INTERNAL,
  HCCL_E_PARA,
  HCCL_E_TCP_TRANSFER,
  HCCL_E_TIMEOUT,
  HCCL_E_UNAVAIL,
  HcclError,
} from "../errors.ts";
import {
  helloParts,
  isNonce,
  jobKey,
  nonce,
  payloadParts,
  prove,
  verify,
} from "./rendezvous_auth.ts";
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

/** The error as it travels to the other ranks (they add the code's name again). */
function wireError(error: HcclError): { code: number; message: string } {
  return { code: error.code, message: error.message.replace(/ \[[A-Z_]+ -?\d+\]$/, "") };
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

/** `Deno.listen` on the master address; a taken port is HCCL_E_UNAVAIL, as HcclGetRootInfo. */
function listen(o: RendezvousOptions): Deno.Listener {
  try {
    return Deno.listen({ hostname: o.masterAddr, port: o.masterPort });
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
}

/** Rank 0 of one rendezvous: from listening to the payload sent (or the failure told). */
export class RendezvousServer {
  readonly #o: RendezvousOptions;
  readonly #key: CryptoKey;
  readonly #deadline: number;
  readonly #helloMs: number;
  readonly #maxWaiting: number;
  readonly #listener: Deno.Listener;
  readonly #drops: Drops;
  /** The ranks admitted so far (1..W-1). */
  readonly #peers = new Map<number, Peer>();
  /** Connections that have not said a line yet, oldest first, with how to cut each off. */
  readonly #waiting = new Map<Deno.Conn, (why: string) => void>();
  /** Settles when every rank is admitted, or with the first failure. */
  readonly #allHere = Promise.withResolvers<void>();
  /** The first failure; it is told to every rank still connected or still to come. */
  #failure: HcclError | undefined;
  /** Whether every rank has been admitted. */
  #complete: boolean;
  /** Whether the payload went out (a rank leaving after that is no failure). */
  #served = false;
  /** The accept loop (ends when the listener closes). */
  readonly #accepting: Promise<void>;

  private constructor(o: RendezvousOptions, key: CryptoKey, deadline: number) {
    this.#o = o;
    this.#key = key;
    this.#deadline = deadline;
    this.#helloMs = o.helloTimeoutMs ?? Math.min(HELLO_TIMEOUT_MS, o.timeoutMs);
    this.#maxWaiting = o.maxWaiting ?? Math.max(MAX_WAITING, 2 * o.worldSize);
    this.#listener = listen(o);
    this.#drops = new Drops(o.log ?? console.warn, where(o));
    this.#complete = o.worldSize === 1;
    if (this.#complete) this.#allHere.resolve();
    this.#accepting = this.#acceptAll();
  }

  /** Listens at `o.masterAddr:o.masterPort`; the deadline starts now. */
  static async listen(o: RendezvousOptions): Promise<RendezvousServer> {
    const deadline = performance.now() + o.timeoutMs;
    return new RendezvousServer(o, await jobKey(o.jobId), deadline);
  }

  /**
   * Waits for every rank, then sends each the payload `makePayload` returns (called once, when
   * all are there); returns it. On failure tells every rank why, and keeps answering late ones
   * until the deadline.
   */
  async serve(makePayload: () => Uint8Array): Promise<Uint8Array> {
    try {
      await this.#awaitAll();
      closeQuietly(this.#listener);
      await this.#accepting;
      return await this.#deliver(makePayload());
    } catch (e) {
      throw await this.#abort(e);
    } finally {
      await this.#finish();
    }
  }

  /** Records the first failure (later ones are consequences of it). */
  #fail(error: HcclError): HcclError {
    this.#failure ??= error;
    return this.#failure;
  }

  /** Fails the world: the rendezvous cannot complete. */
  #failWorld(error: HcclError): void {
    this.#fail(error);
    this.#allHere.reject(error);
  }

  /** Tells `conn` why the rendezvous failed, then closes it. */
  async #tell(conn: Deno.Conn, error: HcclError): Promise<void> {
    await send(conn, { error: wireError(error) }).catch(() => {});
    closeQuietly(conn);
  }

  /** The ranks not admitted yet. */
  #missing(): number[] {
    const absent: number[] = [];
    for (let r = 1; r < this.#o.worldSize; r++) if (!this.#peers.has(r)) absent.push(r);
    return absent;
  }

  /** Accepts connections until the listener closes; each is greeted on its own. */
  async #acceptAll(): Promise<void> {
    try {
      for await (const conn of this.#listener) {
        const from = remote(conn);
        this.#greet(conn, from).catch((e) => {
          closeQuietly(conn);
          this.#drops.note(from, `its connection failed (${String(e)})`);
        });
      }
    } catch {
      // the listener was closed
    }
  }

  /** The first line of `conn` within helloMs, or why there is none (`conn` is then closed). */
  async #hear(
    conn: Deno.Conn,
    lines: Lines,
    challenge: string,
  ): Promise<{ message: unknown; problem: string | undefined }> {
    let cutBecause: string | undefined;
    const cut = (why: string) => {
      cutBecause ??= why;
      closeQuietly(conn);
    };
    this.#waiting.set(conn, cut);
    if (this.#waiting.size > this.#maxWaiting) {
      const [oldest, cutOldest] = this.#waiting.entries().next().value!;
      this.#waiting.delete(oldest);
      cutOldest(`${this.#maxWaiting} connections were waiting to say hello; the oldest is closed`);
    }
    const timer = setTimeout(() => cut(`said no hello within ${this.#helloMs} ms`), this.#helloMs);
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
      this.#waiting.delete(conn);
    }
    problem = cutBecause ?? problem ??
      (message === null ? "closed the connection without a hello" : undefined);
    if (problem !== undefined) closeQuietly(conn);
    return { message, problem };
  }

  /** Challenges one connection and handles its hello: a stranger is dropped, a rank admitted. */
  async #greet(conn: Deno.Conn, from: string): Promise<void> {
    if (this.#failure) conn.unref(); // lingering after a failure: never keeps the process
    const challenge = nonce();
    const lines = new Lines(conn);
    const { message, problem } = await this.#hear(conn, lines, challenge);
    if (problem !== undefined) return this.#drops.note(from, problem);
    const h = asHello(message);
    if (!h) {
      closeQuietly(conn);
      return this.#drops.note(from, `sent ${previewJson(message)}, not a hello`);
    }
    if (!(await verify(this.#key, h.proof, helloParts(challenge, h)))) {
      if (h.rank >= 1 && h.rank < this.#o.worldSize) this.#drops.claimed.add(h.rank);
      await send(conn, { rejected: "job id" }).catch(() => {});
      closeQuietly(conn);
      return this.#drops.note(
        from,
        `its hello (rank ${h.rank} of ${h.worldSize}) carries no proof of this job's id`,
      );
    }
    // Late ranks of a failed rendezvous hear why at once instead of retrying to their deadline.
    if (this.#failure) return this.#tell(conn, this.#failure);
    if (this.#complete) {
      closeQuietly(conn);
      return this.#drops.note(from, `rank ${h.rank} said hello after every rank had joined`);
    }
    const wrong = this.#wrongWorld(h);
    if (wrong !== undefined) {
      const error = new HcclError(HCCL_E_PARA, `rendezvous at ${where(this.#o)}: ${wrong}`);
      this.#failWorld(error);
      return this.#tell(conn, error);
    }
    this.#admit(h, conn, challenge, lines);
  }

  /** Why a proven hello cannot be part of this world (undefined: it can). */
  #wrongWorld(h: Hello): string | undefined {
    const { worldSize } = this.#o;
    if (h.worldSize !== worldSize) {
      return `rank ${h.rank} says worldSize ${h.worldSize}, rank 0 says ${worldSize}`;
    }
    if (h.rank < 1 || h.rank >= worldSize) {
      return `a process joined as rank ${h.rank}, outside 1..${worldSize - 1}`;
    }
    if (this.#peers.has(h.rank)) {
      return `rank ${h.rank} joined twice (two processes were given the same rank)`;
    }
    return undefined;
  }

  /** Admits a rank; a rank that leaves before the payload leaves the world incomplete. */
  #admit(h: Hello, conn: Deno.Conn, challenge: string, lines: Lines): void {
    this.#peers.set(h.rank, { conn, challenge, nonce: h.nonce });
    const gone = () => {
      if (this.#failure || this.#served) return;
      this.#failWorld(
        new HcclError(
          HCCL_E_TCP_TRANSFER,
          `rendezvous at ${where(this.#o)}: rank ${h.rank} disconnected before the rendezvous ` +
            "completed",
        ),
      );
    };
    lines.next().then((m) => m === null && gone(), gone);
    if (this.#peers.size === this.#o.worldSize - 1) {
      this.#complete = true;
      this.#allHere.resolve();
    }
  }

  /** Waits until every rank is admitted; HCCL_E_TIMEOUT naming the absent ones at the deadline. */
  #awaitAll(): Promise<void> {
    return beforeDeadline(this.#deadline, this.#allHere.promise, () => {
      const absent = this.#missing();
      const claimed = absent.filter((r) => this.#drops.claimed.has(r));
      return this.#fail(
        new HcclError(
          HCCL_E_TIMEOUT,
          `rendezvous at ${where(this.#o)}: rank(s) ${absent.join(", ")} of ` +
            `${this.#o.worldSize} never joined within ${this.#o.timeoutMs} ms` +
            (claimed.length === 0 ? "" : `; hellos for rank(s) ${claimed.join(", ")} came ` +
              "without proof of this job's id and were dropped (every rank needs the same job id)"),
        ),
      );
    });
  }

  /** Sends every rank the payload with its proof. */
  async #deliver(payload: Uint8Array): Promise<Uint8Array> {
    if (payload.length > MAX_PAYLOAD_BYTES) {
      throw new HcclError(
        HCCL_E_PARA,
        `rendezvous: the payload has ${payload.length} bytes, more than ${MAX_PAYLOAD_BYTES}`,
      );
    }
    const text = base64(payload);
    this.#served = true;
    await Promise.all(
      [...this.#peers].map(async ([rank, p]) =>
        send(p.conn, {
          payload: text,
          proof: await prove(this.#key, payloadParts(p.challenge, p.nonce, rank, text)),
        })
      ),
    );
    return payload;
  }

  /**
   * The rendezvous failed with `e`: every admitted rank is told, and the listener keeps
   * answering until the deadline (unref'd, it never keeps the process alive), so that ranks
   * still on their way learn the reason. Returns the error to throw.
   */
  async #abort(e: unknown): Promise<HcclError> {
    const error = this.#fail(
      e instanceof HcclError ? e : new HcclError(HCCL_E_INTERNAL, String(e), { cause: e }),
    );
    await Promise.all([...this.#peers.values()].map((p) => this.#tell(p.conn, error)));
    this.#listener.unref();
    const linger = setTimeout(
      () => closeQuietly(this.#listener),
      Math.max(0, this.#deadline - performance.now()),
    );
    Deno.unrefTimer(linger);
    return error;
  }

  /** Closes the ranks' connections; after a success, the listener and the silent ones too. */
  async #finish(): Promise<void> {
    for (const p of this.#peers.values()) closeQuietly(p.conn);
    if (!this.#failure) {
      closeQuietly(this.#listener);
      for (const cut of [...this.#waiting.values()]) {
        cut("the rendezvous completed before its hello");
      }
      await this.#accepting;
    } else {
      for (const conn of this.#waiting.keys()) conn.unref(); // they hear the reason if they say hello
    }
    if (this.#drops.count > MAX_LOGGED_DROPS) {
      this.#drops.say(
        `rendezvous at ${where(this.#o)}: ${this.#drops.count} connections dropped in all`,
      );
    }
  }
}
