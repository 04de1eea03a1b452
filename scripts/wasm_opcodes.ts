/**
 * Rewrites SIMD opcodes (prefix 0xfd) in the code section of a WebAssembly binary, walking
 * every instruction with its immediates, so that only opcodes are rewritten, never bytes of
 * an immediate, a constant or a data segment that happen to look like one.
 *
 * scripts/build_wasm.ts uses it for the FP16 build of the kernels: wabt 1.0.37 and Binaryen
 * 123 do not know the FP16 proposal's conversions, so kernels_fp16.wat writes placeholders
 * of the same stack type, and their opcodes are replaced here after Binaryen has optimised
 * the module. The walker knows the instructions of the MVP, sign extension, non-trapping
 * conversions, bulk memory, SIMD (with relaxed SIMD and FP16) and threads; anything else is
 * an error rather than a guess.
 *
 * @module
 */

import {
  forEachSection,
  lebLength,
  type WasmReader as Reader,
  writeLeb,
} from "../src/backends/cpu/kernels/wasm_binary.ts";

/** A memory argument: alignment (with the multi-memory index flag) and offset. */
function skipMemarg(r: Reader): void {
  const align = r.u32();
  if (align & 0x40) r.u32(); // memory index
  r.u32();
}

/** Skips a block type: empty, a value type, or a type index (s33). */
function skipBlockType(r: Reader): void {
  const b = r.bytes[r.at];
  if (b === 0x40 || (b >= 0x6f && b <= 0x7f)) r.skip(1);
  else r.skipSigned(33);
}

/** Skips the immediates of SIMD instruction `op` (after its prefix and opcode). */
function skipSimd(r: Reader, op: number): void {
  if (op <= 11 || op === 92 || op === 93) skipMemarg(r); // loads, store, load*_zero
  else if (op === 12 || op === 13) r.skip(16); // v128.const, i8x16.shuffle
  else if (op >= 21 && op <= 34) r.skip(1); // extract_lane, replace_lane
  else if (op >= 84 && op <= 91) { // load_lane, store_lane
    skipMemarg(r);
    r.skip(1);
  } else if (op === 0x121 || op === 0x122) r.skip(1); // f16x8.extract_lane, replace_lane
  else if (op > 0x14f) throw new Error(`wasm: unknown SIMD opcode 0x${op.toString(16)}`);
}

/** A SIMD instruction met: its opcode, and the address and length of the opcode's LEB128. */
type SimdVisitor = (opcode: number, at: number, length: number) => void;

/** Skips the immediates of instruction `op` after its opcode byte (prefixed ones too). */
function skipImmediates(r: Reader, op: number, simd: SimdVisitor): void {
  if (op === 0x02 || op === 0x03 || op === 0x04) skipBlockType(r);
  else if (op === 0x0c || op === 0x0d || op === 0x10 || op === 0x12 || op === 0xd2) r.u32();
  else if (op === 0x0e) {
    for (let n = r.u32(); n > 0; n--) r.u32();
    r.u32();
  } else if (op === 0x11 || op === 0x13) {
    r.u32();
    r.u32();
  } else if (op === 0x1c) r.skip(r.u32()); // select with numeric/vector value types
  else if (op >= 0x20 && op <= 0x26) r.u32();
  else if (op >= 0x28 && op <= 0x3e) skipMemarg(r);
  else if (op === 0x3f || op === 0x40) r.u32();
  else if (op === 0x41) r.skipSigned(32);
  else if (op === 0x42) r.skipSigned(64);
  else if (op === 0x43) r.skip(4);
  else if (op === 0x44) r.skip(8);
  else if (op === 0xd0) r.skip(1);
  else if (op === 0xfc) skipMisc(r, r.u32());
  else if (op === 0xfd) {
    const at = r.at;
    const sub = r.u32();
    simd(sub, at, r.at - at);
    skipSimd(r, sub);
  } else if (op === 0xfe) {
    const sub = r.u32();
    if (sub === 0x03) r.skip(1); // atomic.fence
    else skipMemarg(r);
  } else if (
    !(op <= 0x01 || op === 0x05 || op === 0x0b || op === 0x0f || op === 0x1a || op === 0x1b ||
      (op >= 0x45 && op <= 0xc4) || op === 0xd1)
  ) {
    throw new Error(`wasm: unknown opcode 0x${op.toString(16)} at ${r.at - 1}`);
  }
}

/** Skips the immediates of a 0xfc instruction (saturating conversions, bulk memory). */
function skipMisc(r: Reader, sub: number): void {
  if (sub <= 7) return;
  if (sub === 8 || sub === 10 || sub === 12 || sub === 14) {
    r.u32();
    r.u32();
  } else if (sub <= 17) r.u32();
  else throw new Error(`wasm: unknown 0xfc opcode ${sub}`);
}

/**
 * Calls `simd(opcode, at, length)` for every SIMD instruction in the code section of
 * `bytes` (`at`, `length`: where its opcode's LEB128 is, after the 0xfd prefix).
 */
export function forEachSimdOpcode(bytes: Uint8Array, simd: SimdVisitor): void {
  forEachSection(bytes, (id, r) => {
    if (id !== 10) return;
    for (let count = r.u32(); count > 0; count--) {
      const bodySize = r.u32();
      const bodyEnd = r.at + bodySize;
      for (let groups = r.u32(); groups > 0; groups--) {
        r.u32();
        const type = r.byte();
        if (type < 0x7b || type > 0x7f) {
          throw new Error(`wasm: local type 0x${type.toString(16)}`);
        }
      }
      while (r.at < bodyEnd) skipImmediates(r, r.byte(), simd);
      if (r.at !== bodyEnd) throw new Error("wasm: a function body ends inside an instruction");
    }
  });
}

/**
 * A copy of `bytes` with each SIMD opcode that is a key of `map` replaced by its value,
 * written in the same number of bytes (a LEB128 may be padded), so no size changes; and how
 * many of each were replaced.
 */
export function rewriteSimdOpcodes(
  bytes: Uint8Array,
  map: ReadonlyMap<number, number>,
): { bytes: Uint8Array; counts: Map<number, number> } {
  const out = bytes.slice();
  const counts = new Map<number, number>([...map.keys()].map((k) => [k, 0]));
  forEachSimdOpcode(bytes, (opcode, at, length) => {
    const to = map.get(opcode);
    if (to === undefined) return;
    if (lebLength(to) > length) throw new Error(`wasm: no room for opcode 0x${to.toString(16)}`);
    writeLeb(out, at, to, length);
    counts.set(opcode, counts.get(opcode)! + 1);
  });
  return { bytes: out, counts };
}
