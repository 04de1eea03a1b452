/**
 * The backward row kernels' second pass from the terms their first pass kept (a scratch pair of
 * rows: kernels.wat `$keeps_terms`, the 16-bit dtypes, and `$keeps_float16`) against the same
 * pass loading the rows again (scratch -1: rows too long for a thread's region, and float32),
 * in row_norms_grad.wat `ln_bwd` (LayerNorm), row_norms_rms_grad.wat `rms_bwd` (RMSNorm),
 * row_norms_add_grad.wat `add_ln_bwd` (AddLayerNormGrad, DeepNormGrad) and
 * row_norms_ada_grad.wat `ada_ln_bwd` (AdaLayerNormBackward): the same bits in every output
 * and partial, for
 * every tail of a vector, the 256-element blocks of the row sums, each kernel's flags, and
 * float16 rows with an Inf or a NaN (whose first pass takes the full loads: kernels.wat
 * `$f16_specials`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { kernelsWasmBytes } from "../../src/backends/cpu/wasm/kernels_module.ts";
import {
  blockAt,
  instantiateWasm,
  slotAt,
  type WasmBlock,
  wasmReserve,
  type WasmState,
} from "../fixtures/wasm_memory.ts";

const ROWS = 3;
const COLS = [1, 3, 5, 8, 13, 255, 256, 257, 1027];
/** Dtype codes: float32, float16, bfloat16. */
const CODES = [0, 1, 2];
/** The data blocks: dy, the two inputs (x, or a and b), and the two outputs (or dsum). */
const DATA: readonly WasmBlock[] = ["dy", "x", "x2", "out", "out2"];

/** The 16 bits of float16 (code 1) or bfloat16 (code 2, truncated) of `v`. */
function bits16(code: number, v: number): number {
  if (code === 1) return new Uint16Array(new Float16Array([v]).buffer)[0];
  return new Uint32Array(new Float32Array([v]).buffer)[0] >>> 16;
}

/** A case's memory: every data block filled, weights, means and rstds in slots 0, 2, 3. */
interface Case {
  readonly w: WasmState;
  readonly code: number;
  readonly n: number;
  /** Bytes between rows of the data blocks. */
  readonly rs: number;
  /** The data blocks' addresses. */
  readonly b: Readonly<Record<WasmBlock, number>>;
  /** The slots' addresses. */
  readonly s: readonly number[];
  readonly what: string;
}

/**
 * Every case: each dtype code, row length and (float16) row 1 holding an Inf or a NaN in its
 * middle, with the memory filled.
 */
function* cases(): Generator<Case> {
  const w = instantiateWasm(kernelsWasmBytes());
  if (w === null) throw new Error("the kernels do not instantiate");
  const value = (i: number, seed: number) => Math.sin(i * 12.9898 + seed) * 3;
  for (const code of CODES) {
    for (const n of COLS) {
      for (const special of code === 1 ? [0, Infinity, NaN] : [0]) {
        const n4 = (n + 3) & ~3;
        wasmReserve(w, ROWS * n, 2 * n4 + 8);
        const b = Object.fromEntries(DATA.map((k) => [k, blockAt(w, k)])) as Record<
          WasmBlock,
          number
        >;
        const s = Array.from({ length: 8 }, (_, j) => slotAt(w, j));
        DATA.forEach((block, seed) => {
          for (let i = 0; i < ROWS * n; i++) {
            const v = seed === 0 && special !== 0 && i === n + (n >> 1) ? special : value(i, seed);
            if (code === 0) w.f32[b[block] / 4 + i] = v;
            else w.u16[b[block] / 2 + i] = bits16(code, v);
          }
        });
        for (let c = 0; c < n4; c++) w.f32[s[0] / 4 + c] = c < n ? 1 + value(c, 7) / 4 : 0;
        for (let r = 0; r < ROWS; r++) {
          w.f32[s[2] / 4 + r] = value(r, 8) / 8;
          w.f32[s[3] / 4 + r] = 1 + r / 4;
        }
        const rs = n * (code === 0 ? 4 : 2);
        yield { w, code, n, rs, b, s, what: `code ${code}, n ${n}, special ${special}` };
      }
    }
  }
}

/** The bytes of `count` elements of `c`'s dtype at block `block`, or of float32 at slot `slot`. */
function bytesOf(c: Case, block: WasmBlock | number, count: number): Uint8Array {
  const at = typeof block === "number" ? c.s[block] : c.b[block];
  const size = typeof block === "number" || c.code === 0 ? 4 : 2;
  return new Uint8Array(c.w.memory.buffer, at, count * size).slice();
}

/**
 * Runs `call` with the scratch rows (slot 6, two padded rows) and with -1 and requires the same
 * bytes in `outputs` (blocks of rows, filled with 0xee before each run; slots of columns).
 */
function sameBits(
  c: Case,
  label: string,
  call: (scratch: number) => void,
  outputs: readonly (WasmBlock | number)[],
): void {
  const count = (o: WasmBlock | number) => typeof o === "number" ? (c.n + 3) & ~3 : ROWS * c.n;
  const run = (scratch: number) => {
    for (const o of outputs) {
      if (typeof o !== "number") new Uint8Array(c.w.memory.buffer, c.b[o], 4 * count(o)).fill(0xee);
    }
    call(scratch);
    return outputs.map((o) => bytesOf(c, o, count(o)));
  };
  const kept = run(c.s[6]);
  const loaded = run(-1);
  outputs.forEach((o, i) => assert.deepEqual(kept[i], loaded[i], `${c.what}, ${label}: ${o}`));
}

Deno.test("layerNormBackward: kept terms give the bits of loading the rows again", () => {
  let compared = 0;
  for (const c of cases()) {
    const { w, code, n, rs, b, s } = c;
    const rows = [b.dy, rs, b.x, rs, b.out, rs, n, code, ROWS] as const;
    for (const flags of [2, 3]) {
      const call = (scratch: number) =>
        w.exports.ln_bwd(...rows, s[2], s[3], s[0], s[4], s[5], flags, scratch);
      sameBits(c, `flags ${flags}`, call, flags === 3 ? ["out", 4, 5] : ["out"]);
      compared++;
    }
  }
  assert.equal(compared, 2 * COLS.length * 5);
});

Deno.test("addLayerNormGrad and deepNormGrad: kept terms give the bits of loading the rows again", () => {
  let compared = 0;
  for (const c of cases()) {
    const { w, code, n, rs, b, s } = c;
    // dy, a = x, b = x2; o = out; dsum in out2 (flags 1), DeepNormGrad's dx to out2 (flags 2).
    const rows = [b.dy, rs, b.x, rs, b.x2, rs, b.out2, rs, b.out, rs, n, code, ROWS] as const;
    for (const [alpha, flags] of [[1, 0], [1, 1], [Math.fround(0.3), 2]]) {
      const call = (scratch: number) =>
        w.exports.add_ln_bwd(...rows, alpha, flags, s[0], s[2], s[3], s[4], s[5], scratch);
      const outputs: (WasmBlock | number)[] = flags === 2 ? ["out", "out2", 4, 5] : ["out", 4, 5];
      sameBits(c, `alpha ${alpha}, flags ${flags}`, call, outputs);
      compared++;
    }
  }
  assert.equal(compared, 3 * COLS.length * 5);
});

Deno.test("rmsNormGrad: kept rows give the bits of loading them again", () => {
  let compared = 0;
  for (const c of cases()) {
    const { w, code, n, rs, b, s } = c;
    const call = (scratch: number) =>
      w.exports.rms_bwd(b.dy, rs, b.x, rs, b.out, rs, n, code, ROWS, s[3], s[0], s[4], scratch);
    sameBits(c, "dx", call, ["out", 4]);
    compared++;
  }
  assert.equal(compared, COLS.length * 5);
});

Deno.test("adaLayerNormBackward: kept terms give the bits of loading the rows again", () => {
  let compared = 0;
  for (const c of cases()) {
    const { w, code, n, rs, b, s } = c;
    // Weights (slot 0) double as the bias; 1 + scale one batch row (slot 1, seq = ROWS); the
    // column partials to slots 4, 5, the batch partials to slot 7 and block x2.
    for (let k = 0; k < ((n + 3) & ~3); k++) w.f32[s[1] / 4 + k] = 1 + ((k % 5) - 2) / 8;
    const rows = [b.dy, rs, b.x, rs, b.out, rs, n, code, ROWS] as const;
    for (const flags of [1, 5, 7]) {
      const arrays = [s[0], s[0], s[1], 0, ROWS, s[2], s[3], s[4], s[5], s[7], b.x2] as const;
      const call = (scratch: number) => w.exports.ada_ln_bwd(...rows, flags, ...arrays, scratch);
      const outputs: (WasmBlock | number)[] = ["out"];
      if (flags & 2) outputs.push(4, 5);
      if (flags & 4) outputs.push(7);
      sameBits(c, `flags ${flags}`, call, outputs);
      compared++;
    }
  }
  assert.equal(compared, 3 * COLS.length * 5);
});

Deno.test("addRmsNorm and addRmsNormCast: the kept sum gives the bits of forming it again", () => {
  let compared = 0;
  for (const c of cases()) {
    const { w, code, n, rs, b, s } = c;
    const eps = Math.fround(1e-5);
    // a = dy, b = x; x to out2, y to out; addRmsNormCast's y1 (float32) to x2.
    const plain = (scratch: number) =>
      w.exports.add_rms_fwd(
        b.dy,
        rs,
        b.x,
        rs,
        b.out2,
        rs,
        b.out,
        rs,
        n,
        code,
        ROWS,
        eps,
        s[0],
        s[3],
        scratch,
      );
    sameBits(c, "addRmsNorm", plain, ["out", "out2"]);
    const ab = [b.dy, rs, b.x, rs, b.out2, rs, b.x2, 4 * n, b.out, rs] as const;
    const cast = (scratch: number) =>
      w.exports.add_rms_cast_fwd(...ab, n, code, ROWS, eps, s[0], s[3], scratch);
    sameBits(c, "addRmsNormCast", cast, ["out", "out2"]);
    // y1, float32: the same bytes too.
    const y1 = (
      scratch: number,
    ) => (cast(scratch), new Uint8Array(w.memory.buffer, b.x2, 4 * ROWS * n).slice());
    assert.deepEqual(y1(s[6]), y1(-1), `${c.what}: addRmsNormCast y1`);
    compared++;
  }
  assert.equal(compared, COLS.length * 5);
});
