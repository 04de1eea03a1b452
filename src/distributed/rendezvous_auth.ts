/**
 * Proof of the job id in the rendezvous (src/distributed/rendezvous.ts): HMAC-SHA256 keyed
 * with the job id, over the nonces of both ends, so that the id itself never crosses the
 * wire and a proof is good for one connection only.
 *
 * - A rank proves to rank 0 that it belongs to the job: HMAC(id, "hello", rank 0's
 *   challenge, its own nonce, rank, world size). Rank 0 drops hellos whose proof fails.
 * - Rank 0 proves to the rank that the payload (HCCL's root info) is the job's: HMAC(id,
 *   "payload", both nonces, rank, payload). A rank refuses a payload whose proof fails.
 *
 * What this protects against: a process that does not know the id (a port scanner, a stray
 * client, a rank of another job, anyone replaying a recorded hello) cannot take a rank's
 * slot, stop the job, or hand a rank a root info of its own; a process listening on the
 * master port in rank 0's place learns only proofs bound to its own challenge, not the id.
 * What it does not: the id is only as secret as its value and the environment it comes
 * from (torchrun's default `none` is known to all); the root info still crosses the network
 * in clear (HCCL's own root-info exchange then runs on the address and port it names); an
 * eavesdropper on the path can read it, and nothing here encrypts anything.
 *
 * @module
 */

import { base64, fromBase64 } from "./rendezvous_wire.ts";

/** Bytes of a nonce (rank 0's challenge and a rank's own). */
export const NONCE_BYTES = 16;
/** Separates this protocol's MACs from any other use of the same id as a key. */
const DOMAIN = "@aclnn/norm rendezvous v2";
const encoder = new TextEncoder();

/** A fresh random nonce, base64. */
export function nonce(): string {
  return base64(crypto.getRandomValues(new Uint8Array(NONCE_BYTES)));
}

/** Whether `text` is a base64 nonce as {@linkcode nonce} makes them. */
export function isNonce(text: unknown): text is string {
  if (typeof text !== "string" || text.length !== 24) return false;
  try {
    return fromBase64(text).length === NONCE_BYTES;
  } catch {
    return false;
  }
}

/** The HMAC-SHA256 key of a job id (its UTF-8 bytes). */
export function jobKey(jobId: string): Promise<CryptoKey> {
  return crypto.subtle.importKey(
    "raw",
    encoder.encode(jobId),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign", "verify"],
  );
}

function message(parts: readonly (string | number)[]): Uint8Array<ArrayBuffer> {
  return encoder.encode([DOMAIN, ...parts].join("\n"));
}

/** The proof (base64 HMAC) of `parts` under `key`. */
export async function prove(key: CryptoKey, parts: readonly (string | number)[]): Promise<string> {
  return base64(new Uint8Array(await crypto.subtle.sign("HMAC", key, message(parts))));
}

/** Whether `proof` is the proof of `parts` under `key` (compared in constant time). */
export async function verify(
  key: CryptoKey,
  proof: unknown,
  parts: readonly (string | number)[],
): Promise<boolean> {
  if (typeof proof !== "string" || proof.length !== 44) return false; // 32 bytes, base64
  let mac: Uint8Array<ArrayBuffer>;
  try {
    mac = fromBase64(proof);
  } catch {
    return false;
  }
  return await crypto.subtle.verify("HMAC", key, mac, message(parts));
}

/** What a rank's hello proof covers. */
export function helloParts(
  challenge: string,
  hello: { rank: number; worldSize: number; nonce: string },
): (string | number)[] {
  return ["hello", challenge, hello.nonce, hello.rank, hello.worldSize];
}

/** What rank 0's payload proof to `rank` covers (`payload` as base64). */
export function payloadParts(
  challenge: string,
  rankNonce: string,
  rank: number,
  payload: string,
): (string | number)[] {
  return ["payload", challenge, rankNonce, rank, payload];
}
