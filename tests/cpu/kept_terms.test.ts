/**
 * layerNormBackward's gradInput pass from the terms its first pass kept (row_norms_grad.wat
 * `ln_bwd` with a scratch pair of rows, kernels.wat `$keeps_terms`: the 16-bit dtypes) against
 * the same pass loading dy and x again (scratch -1: rows too long for a thread's region, and
 * float32): the same bits in gradInput and in the column partials, for every tail of a vector,
 * the 256-element blocks of the row sums, both flags that write gradInput, and float16 rows
 * with an Inf or a NaN (whose first pass takes the full loads: kernels.wat `$f16_specials`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { kernelsWasmBytes } from "../../src/backends/cpu/wasm/kernels_module.ts";
import { blockAt, instantiateWasm, slotAt, wasmReserve } from "../fixtures/wasm_memory.ts";

const ROWS = 3;
const COLS = [1, 3, 5, 8, 13, 255, 256, 257, 1027];
/** Dtype codes: float32, float16, bfloat16. */
const CODES = [0, 1, 2];

/** The 16 bits of float16 (code 1) or bfloat16 (code 2, truncated) of `v`. */
function bits16(code: number, v: number): number {
  if (code === 1) return new Uint16Array(new Float16Array([v]).buffer)[0];
  return new Uint32Array(new Float32Array([v]).buffer)[0] >>> 16;
}

Deno.test("layerNormBackward: kept terms give the bits of loading the rows again", () => {
  const instance = instantiateWasm(kernelsWasmBytes());
  if (instance === null) throw new Error("the kernels do not instantiate");
  const w = instance;
  let compared = 0;
  for (const code of CODES) {
    for (const n of COLS) {
      for (const special of code === 1 ? [0, Infinity, NaN] : [0]) {
        const n4 = (n + 3) & ~3;
        wasmReserve(w, ROWS * n, 2 * n4 + 8);
        const bytes = code === 0 ? 4 : 2;
        const [dy, x, out, scratch] = [
          blockAt(w, "dy"),
          blockAt(w, "x"),
          blockAt(w, "out"),
          blockAt(w, "out2"),
        ];
        const value = (i: number, seed: number) => Math.sin(i * 12.9898 + seed) * 3;
        for (let i = 0; i < ROWS * n; i++) {
          // Row 1 of the float16 cases holds the special value in its middle.
          const s = special !== 0 && i === n + (n >> 1) ? special : undefined;
          const [a, b] = [s ?? value(i, 1), value(i, 2)];
          if (code === 0) {
            w.f32[dy / 4 + i] = a;
            w.f32[x / 4 + i] = b;
          } else {
            w.u16[dy / 2 + i] = bits16(code, a);
            w.u16[x / 2 + i] = bits16(code, b);
          }
        }
        const [wt, mean, rstd, pw, pb] = [0, 2, 3, 4, 5].map((j) => slotAt(w, j));
        for (let c = 0; c < n4; c++) w.f32[wt / 4 + c] = c < n ? 1 + value(c, 3) / 4 : 0;
        for (let r = 0; r < ROWS; r++) {
          w.f32[mean / 4 + r] = value(r, 4) / 8;
          w.f32[rstd / 4 + r] = 1 + r / 4;
        }
        const run = (flags: number, keep: number): Uint8Array[] => {
          new Uint8Array(w.memory.buffer, out, ROWS * n * bytes).fill(0xee);
          w.exports.ln_bwd(
            dy,
            n * bytes,
            x,
            n * bytes,
            out,
            n * bytes,
            n,
            code,
            ROWS,
            mean,
            rstd,
            wt,
            pw,
            pb,
            flags,
            keep,
          );
          return [
            new Uint8Array(w.memory.buffer, out, ROWS * n * bytes).slice(),
            new Uint8Array(w.memory.buffer, pw, 4 * n4).slice(),
            new Uint8Array(w.memory.buffer, pb, 4 * n4).slice(),
          ];
        };
        for (const flags of [2, 3]) {
          const [kept, loaded] = [run(flags, scratch), run(flags, -1)];
          const what = `code ${code}, n ${n}, special ${special}, flags ${flags}`;
          assert.deepEqual(kept[0], loaded[0], `${what}: gradInput`);
          if (flags === 3) assert.deepEqual(kept.slice(1), loaded.slice(1), `${what}: partials`);
          compared++;
        }
      }
    }
  }
  assert.equal(compared, 2 * COLS.length * 5);
});
