/**
 * A digest of an operator's outputs, bit for bit: bench/cpu_hashes.ts prints one per case, and
 * child scripts of the tests print one to compare runs of two processes.
 *
 * @module
 */

import { Tensor } from "../../mod.ts";

/** The named output tensors of an operator's result (a Tensor or an object of them). */
export function outputs(result: unknown): [string, Tensor][] {
  if (result instanceof Tensor) return [["out", result]];
  if (!result || typeof result !== "object") return [];
  return Object.entries(result)
    .filter((entry): entry is [string, Tensor] => entry[1] instanceof Tensor)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Hex SHA-256 over each output's name, dtype, shape and float64 values (exact for all three). */
export async function digest(named: [string, Tensor][]): Promise<string> {
  const parts: Uint8Array[] = [];
  const text = new TextEncoder();
  for (const [name, t] of named) {
    parts.push(text.encode(`${name}:${t.dtype}:${t.shape.join("x")};`));
    parts.push(new Uint8Array(t.toFloat64Array().buffer));
  }
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.length;
  }
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("");
}
