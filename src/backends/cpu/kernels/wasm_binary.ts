/**
 * Reading and rewriting a WebAssembly binary in place: its sections, and the unsigned LEB128
 * numbers of their bodies. The kernels' memory import is lowered with it (wasm_instance.ts) and
 * the FP16 build's opcodes rewritten (scripts/wasm_opcodes.ts).
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

/** A reader of a module's bytes from `at`. */
export class WasmReader {
  /** The next byte's address. */
  at = 0;

  /** A reader of `bytes`. */
  constructor(readonly bytes: Uint8Array) {}

  /** The next byte. */
  byte(): number {
    if (this.at >= this.bytes.length) throw new Error("wasm: unexpected end of module");
    return this.bytes[this.at++];
  }

  /** An unsigned LEB128 number (at most 32 bits). */
  u32(): number {
    let result = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const b = this.byte();
      result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result;
    }
    throw new Error(`wasm: LEB128 too long at ${this.at}`);
  }

  /** Skips a signed LEB128 number of at most `bits` bits. */
  skipSigned(bits: number): void {
    for (let n = 0; n < Math.ceil(bits / 7); n++) if ((this.byte() & 0x80) === 0) return;
    throw new Error(`wasm: LEB128 too long at ${this.at}`);
  }

  /** Skips `n` bytes. */
  skip(n: number): void {
    this.at += n;
    if (this.at > this.bytes.length) throw new Error("wasm: unexpected end of module");
  }
}

/** The number of bytes of `value` as an unsigned LEB128. */
export function lebLength(value: number): number {
  let n = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 128);
    n++;
  }
  return n;
}

/** Writes `value` as an unsigned LEB128 of exactly `length` bytes at `at` (padded). */
export function writeLeb(bytes: Uint8Array, at: number, value: number, length: number): void {
  for (let i = 0; i < length; i++) {
    const low = value % 128;
    value = Math.floor(value / 128);
    bytes[at + i] = low | (i < length - 1 ? 0x80 : 0);
  }
}

/**
 * Calls `visit(id, r)` for each section of the version 1 module `bytes`, `r` at the start of
 * its body (the next section is read from the body's end, whatever `visit` leaves `r.at` at).
 */
export function forEachSection(
  bytes: Uint8Array,
  visit: (id: number, r: WasmReader) => void,
): void {
  const header = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  if (!header.every((b, i) => bytes[i] === b)) throw new Error("wasm: not a version 1 module");
  const r = new WasmReader(bytes);
  r.at = 8;
  while (r.at < bytes.length) {
    const id = r.byte();
    const size = r.u32();
    const end = r.at + size;
    visit(id, r);
    r.at = end;
  }
}
