/**
 * The wire of the rendezvous (src/distributed/rendezvous.ts): one JSON object per line over
 * TCP. Lines are bounded: a peer that sends more than {@linkcode MAX_LINE_BYTES} without a
 * newline costs at most that much memory before the reader gives up on it, and a line that
 * is not JSON is an error of that connection only. Which messages exist and what they carry
 * is in rendezvous.ts.
 *
 * @module
 */

/** The longest line (without its newline) either side accepts: 64 KiB. */
export const MAX_LINE_BYTES = 64 * 1024;

/** Why a line could not be read: too long, or not JSON. */
export class WireError extends Error {
  /** What was wrong with the line. */
  readonly reason: "too-long" | "not-json";

  /** A line that was `reason`, described by `message`. */
  constructor(reason: "too-long" | "not-json", message: string) {
    super(message);
    this.name = "WireError";
    this.reason = reason;
  }
}

const NEWLINE = 0x0a;
const encoder = new TextEncoder();

/** `text` cut to `max` characters and quoted, all but printable ASCII escaped (for logs). */
export function preview(text: string, max = 60): string {
  const quoted = JSON.stringify(text.length > max ? text.slice(0, max) : text);
  const ascii = quoted.replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  return text.length > max ? ascii + "..." : ascii;
}

/** A JSON value as compact JSON, cut to `max` characters (for logs). */
export function previewJson(value: unknown, max = 80): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > max ? text.slice(0, max) + "..." : text;
}

/**
 * Reads newline-delimited JSON messages from a connection with `conn.read`. (Through its
 * `readable` stream and a TextDecoderStream, rank 0's process stayed alive after a
 * successful rendezvous on Deno 2.8.3; a minimal stream read on a closed connection did not
 * reproduce that, so the exact cause in 2.8.3 is not known.)
 */
export class Lines {
  readonly #conn: Deno.Conn;
  readonly #chunk = new Uint8Array(4096);
  /** Bytes received after the last newline (at most MAX_LINE_BYTES + one chunk). */
  #held: Uint8Array = new Uint8Array(0);

  /** A reader of `conn`'s lines. */
  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  /**
   * The next message (any JSON value), or null when the peer closed the connection (bytes
   * after the last newline are then ignored). Throws a {@linkcode WireError} for a line over
   * {@linkcode MAX_LINE_BYTES} or one that is not JSON; read errors pass through.
   */
  async next(): Promise<unknown> {
    for (;;) {
      const end = this.#held.indexOf(NEWLINE);
      if (end > MAX_LINE_BYTES || (end < 0 && this.#held.length > MAX_LINE_BYTES)) {
        throw new WireError("too-long", `sent a line longer than ${MAX_LINE_BYTES} bytes`);
      }
      if (end >= 0) {
        const text = new TextDecoder().decode(this.#held.subarray(0, end));
        this.#held = this.#held.slice(end + 1);
        try {
          return JSON.parse(text);
        } catch {
          throw new WireError("not-json", `sent a line that is not JSON: ${preview(text)}`);
        }
      }
      const n = await this.#conn.read(this.#chunk);
      if (n === null) return null;
      const grown = new Uint8Array(this.#held.length + n);
      grown.set(this.#held);
      grown.set(this.#chunk.subarray(0, n), this.#held.length);
      this.#held = grown;
    }
  }
}

/** Writes `message` as one line. */
export async function send(conn: Deno.Conn, message: object): Promise<void> {
  const bytes = encoder.encode(JSON.stringify(message) + "\n");
  for (let done = 0; done < bytes.length;) done += await conn.write(bytes.subarray(done));
}

/** Closes a connection or listener that may be closed already. */
export function closeQuietly(c: { close(): void }): void {
  try {
    c.close();
  } catch {
    // already closed
  }
}

/** `host:port` of the other end of `conn` (for logs). */
export function remote(conn: Deno.Conn): string {
  const addr = conn.remoteAddr as Deno.NetAddr;
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  return `${host}:${addr.port}`;
}

/** The value of `key` in `message` when `message` is a plain object, else undefined. */
export function field(message: unknown, key: string): unknown {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return undefined;
  return Object.hasOwn(message, key) ? (message as Record<string, unknown>)[key] : undefined;
}

/** Bytes to base64. */
export function base64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

/** Base64 to bytes; throws on text that is not base64. */
export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** `masterAddr:masterPort` (for messages). */
export function where(o: { masterAddr: string; masterPort: number }): string {
  return `${o.masterAddr}:${o.masterPort}`;
}

/** Rejects with `error()` when the deadline passes first; the timer never keeps the process. */
export function beforeDeadline<T>(
  deadline: number,
  work: Promise<T>,
  error: () => Error,
): Promise<T> {
  const remaining = Math.max(0, deadline - performance.now());
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(error()), remaining);
    Deno.unrefTimer(timer!);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
