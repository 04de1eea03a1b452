/**
 * Ranks 1..W-1 of the rendezvous (src/distributed/rendezvous.ts): connect to rank 0 (retrying
 * while it is not listening yet, or when it closed the connection before its challenge),
 * answer the challenge with a hello that proves the job id, and accept only a payload that
 * rank 0 proved with the same id. Every failure is an {@linkcode HcclError} within the
 * rendezvous timeout (plus a grace for rank 0's verdict).
 *
 * @module
 */

import {
  HCCL_E_PARA,
  HCCL_E_TCP_CONNECT,
  HCCL_E_TCP_TRANSFER,
  HCCL_E_TIMEOUT,
  HcclError,
} from "../errors.ts";
import type { RendezvousOptions } from "./rendezvous_options.ts";
import * as auth from "./rendezvous_auth.ts";
import {
  beforeDeadline,
  closeQuietly,
  field,
  fromBase64,
  Lines,
  previewJson,
  send,
  where,
} from "./rendezvous_wire.ts";

/** How often a rank retries while rank 0 is not listening yet. */
const RETRY_MS = 50;
/**
 * How long past its own deadline a rank waits for rank 0's verdict: rank 0's deadline ends at
 * about the same time, and its message says which rank is missing.
 */
const VERDICT_GRACE_MS = 1000;

/** Connects to rank 0, retrying while it is not listening yet, until the deadline. */
async function connect(o: RendezvousOptions, deadline: number): Promise<Deno.Conn> {
  let lastError: unknown;
  for (;;) {
    try {
      return await beforeDeadline(
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
}

/** After rank 0's challenge: says hello with the proof, returns the payload rank 0 proved. */
async function exchange(
  o: RendezvousOptions,
  key: CryptoKey,
  conn: Deno.Conn,
  lines: Lines,
  challenge: string,
  deadline: number,
): Promise<Uint8Array> {
  const mine = auth.nonce();
  const hello = { rank: o.rank, worldSize: o.worldSize, nonce: mine };
  await send(conn, {
    hello: { ...hello, proof: await auth.prove(key, auth.helloParts(challenge, hello)) },
  });
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
  const payload = field(reply, "payload");
  if (typeof payload === "string") {
    const proof = field(reply, "proof");
    if (!(await auth.verify(key, proof, auth.payloadParts(challenge, mine, o.rank, payload)))) {
      throw new HcclError(
        HCCL_E_PARA,
        `rendezvous at ${where(o)}: rank ${o.rank} got a root info without proof of this ` +
          `job's id: the process listening there is not rank 0 of this job`,
      );
    }
    return fromBase64(payload);
  }
  const error = field(reply, "error");
  const [code, message] = [field(error, "code"), field(error, "message")];
  if (Number.isSafeInteger(code) && typeof message === "string") {
    throw new HcclError(code as number, message);
  }
  if (field(reply, "rejected") !== undefined) {
    throw new HcclError(
      HCCL_E_PARA,
      `rendezvous at ${where(o)}: rank 0 rejected rank ${o.rank}'s hello: the two have ` +
        `different job ids (every rank needs the same job id)`,
    );
  }
  throw new HcclError(
    HCCL_E_TCP_TRANSFER,
    reply === null
      ? `rendezvous at ${where(o)}: rank 0 closed the connection before sending the root info`
      : `rendezvous at ${where(o)}: rank 0 sent ${previewJson(reply)} instead of ` +
        `the root info`,
  );
}

/** Ranks 1..W-1: connect to rank 0, answer its challenge, get the payload it proved. */
export async function join(o: RendezvousOptions): Promise<Uint8Array> {
  const deadline = performance.now() + o.timeoutMs;
  const key = await auth.jobKey(o.jobId);
  for (;;) {
    const conn = await connect(o, deadline);
    const lines = new Lines(conn);
    try {
      const first = await beforeDeadline(
        deadline + VERDICT_GRACE_MS,
        lines.next(),
        () =>
          new HcclError(
            HCCL_E_TIMEOUT,
            `rendezvous at ${where(o)}: rank ${o.rank} got no challenge from rank 0 within ` +
              `${o.timeoutMs} ms`,
          ),
      );
      if (first !== null) {
        const challenge = field(first, "challenge");
        if (!auth.isNonce(challenge)) {
          throw new HcclError(
            HCCL_E_TCP_TRANSFER,
            `rendezvous at ${where(o)}: the process there is not rank 0 of a rendezvous (it ` +
              `sent ${previewJson(first)} instead of a challenge)`,
          );
        }
        return await exchange(o, key, conn, lines, challenge, deadline);
      }
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
    // Closed before rank 0 spoke (it had too many connections waiting): try again.
    if (performance.now() + RETRY_MS >= deadline) {
      throw new HcclError(
        HCCL_E_TCP_CONNECT,
        `rendezvous: rank ${o.rank} could not reach rank 0 at ${where(o)} within ` +
          `${o.timeoutMs} ms (every connection was closed before rank 0 spoke)`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}
