/**
 * The channels-last kernels (channel_pixels.wat, channel_pixel_blocks.wat) bit for bit against
 * a scalar model of the order their comments state, float32 data, over channel counts of 1 to
 * 7 vectors (whole blocks of four and the vectors after them) and 32 (pixels of 512 bytes), odd
 * and even pixel counts (the steps of two pixels and a last single one) and runs of 128 pixels
 * with a short last one:
 * - the writes (bn_norm_pix, bn_grad_pix): each element's formula rounded to float32 at every
 *   operation, as channel_norms.wat's $bn_value states it;
 * - the sums (bn_sums_pix): per channel, float32 sums over each run of two pixels' terms at
 *   once (then a last single pixel), each run's sums added to float64 in run order, whether
 *   the kernel takes two pixels a step or four (`cached`);
 * - the statistics (bn_stats_pix): one pass about each run's pivots, or two where a pivot is
 *   far from its run's mean, merged in float64, bit for bit against a scalar model, whichever
 *   loop takes the run: the block loops (pixels of up to four vectors, and from memory pixels
 *   of 512 bytes or more, after reading the run's lines in memory order) or the sums in memory
 *   order, two pixels a step (`cached` 0) or four (`cached` 1).
 */

import assert from "node:assert/strict";
import { kernelsWasmBytes } from "../../src/backends/cpu/wasm/kernels_module.ts";
import { blockAt, instantiateWasm, slotAt, wasmReserve } from "../fixtures/wasm_memory.ts";

const f = Math.fround;
const CHANNELS = [4, 8, 12, 16, 20, 28, 128];
const PIXELS = [1, 2, 3, 4, 5, 6, 7, 9, 130, 259];

/** Seeded float32 values in [-3, 3). */
function seeded(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 2 ** 32) * 6 - 3;
  }
  return out;
}

function setup(C: number, pix: number) {
  const w = instantiateWasm(kernelsWasmBytes())!;
  wasmReserve(w, C * pix, 16 * C);
  const at = { dy: blockAt(w, "dy"), x: blockAt(w, "x"), out: blockAt(w, "out") };
  const dy = seeded(C * pix, 11 + C + pix);
  const x = seeded(C * pix, 7 + 3 * C + pix);
  w.f32.set(dy, at.dy / 4);
  w.f32.set(x, at.x / 4);
  return { w, at, dy, x, ex: w.exports };
}

Deno.test("channels-last writes: every element's formula, rounded as stated, bit for bit", () => {
  for (const C of CHANNELS) {
    for (const pix of PIXELS) {
      const { w, at, dy, x, ex } = setup(C, pix);
      // Constants interleaved per four channels: channel 4i + l's k_j at 16 (4i + j) + 4l.
      const k = seeded(4 * C, 5 + C);
      const kAt = slotAt(w, 0);
      w.f32.set(k, kAt / 4);
      const kOf = (c: number, j: number) => k[16 * (c >> 2) + 4 * j + (c & 3)];
      ex.bn_norm_pix(at.x, at.out, C, 0, pix, kAt);
      const norm = w.f32.slice(at.out / 4, at.out / 4 + C * pix);
      ex.bn_grad_pix(at.dy, at.x, at.out, C, 0, pix, kAt);
      const grad = w.f32.slice(at.out / 4, at.out / 4 + C * pix);
      for (let i = 0; i < C * pix; i++) {
        const c = i % C;
        const d = f(f(x[i] - kOf(c, 0)) * kOf(c, 1));
        assert.equal(norm[i], f(d + kOf(c, 2)), `norm C ${C} pix ${pix} [${i}]`);
        const want = f(f(f(dy[i] * kOf(c, 3)) - kOf(c, 2)) - d);
        assert.equal(grad[i], want, `grad C ${C} pix ${pix} [${i}]`);
      }
    }
  }
});

Deno.test("channels-last sums: float32 runs of paired pixels, added in float64, bit for bit", () => {
  // Data taken as from memory (cached 0: two pixels a step) and as in the caches (cached 1:
  // four, two pairs added in turn): the same bits.
  for (const C of CHANNELS) {
    for (const pix of PIXELS) for (const cached of [0, 1]) sumsBitForBit(C, pix, cached);
  }
});

/** bn_sums_pix of C channels and `pix` pixels against the scalar model, bit for bit. */
function sumsBitForBit(C: number, pix: number, cached: number): void {
  const { w, at, dy, x, ex } = setup(C, pix);
  const means = seeded(C, 3 + C).map((v) => v / 3);
  w.f32.set(means, slotAt(w, 0) / 4);
  const [o1, o2, acc] = [slotAt(w, 1), slotAt(w, 2), slotAt(w, 3)];
  ex.bn_sums_pix(at.dy, at.x, C, 0, pix, slotAt(w, 0), o1, o2, acc, cached);
  const where = `C ${C} pix ${pix} cached ${cached}`;
  for (let c = 0; c < C; c++) {
    let s1 = 0, s2 = 0;
    for (let q = 0; q < pix; q += 128) {
      const end = Math.min(pix, q + 128);
      let a1 = 0, a2 = 0;
      const term = (j: number) => f(dy[j * C + c] * f(x[j * C + c] - means[c]));
      let j = q;
      for (; j + 1 < end; j += 2) {
        a1 = f(a1 + f(dy[j * C + c] + dy[(j + 1) * C + c]));
        a2 = f(a2 + f(term(j) + term(j + 1)));
      }
      if (j < end) {
        a1 = f(a1 + dy[j * C + c]);
        a2 = f(a2 + term(j));
      }
      s1 += a1;
      s2 += a2;
    }
    assert.equal(w.f64[o1 / 8 + c], s1, `sum(dy) ${where} channel ${c}`);
    assert.equal(w.f64[o2 / 8 + c], s2, `sum(dy (x - m)) ${where} channel ${c}`);
  }
}

Deno.test("channels-last statistics: the same bits from memory and in the caches (cached 0, 1)", () => {
  for (const C of CHANNELS) {
    for (const pix of PIXELS) {
      const { w, at, ex } = setup(C, pix);
      const [o1, o2, acc] = [slotAt(w, 1), slotAt(w, 2), slotAt(w, 3)];
      const runs = [0, 1].map((cached) => {
        ex.bn_stats_pix(at.x, C, 0, pix, o1, o2, acc, cached);
        return [...w.f64.subarray(o1 / 8, o1 / 8 + C), ...w.f64.subarray(o2 / 8, o2 / 8 + C)];
      });
      assert.ok(runs[0].some((v) => v !== 0), `C ${C} pix ${pix}: statistics computed`);
      assert.deepEqual(runs[1], runs[0], `C ${C} pix ${pix}`);
    }
  }
});

/** row_sums.wat $rf_pivot4 on one lane: magnitude below 2^100, else (and NaN) 0. */
function pivotRule(v: number): number {
  return Math.abs(v) < 2 ** 100 ? v : 0;
}

/**
 * bn_stats_pix's per-channel (sum, m2) in the order its comments state: per run of at most
 * 128 pixels, a pivot (the mean of the first 8 pixels as a float32 tree, or the first pixel),
 * one float32 pass of paired differences from it and of their squares, kept when
 * 2 len d^2 <= the squares (d = sum / len) for all four lanes of the channel's vector, else
 * the squares again about the float32 mean; each run merged into float64 (Chan et al.).
 * Returns the outputs and how many vector-runs took each path.
 */
function statsModel(x: Float32Array, C: number, pix: number) {
  const sum = new Float64Array(C), m2 = new Float64Array(C);
  let onePass = 0, twoPass = 0;
  for (let q = 0, n = 0; q < pix; q += 128) {
    const len = Math.min(128, pix - q);
    const at = (j: number, c: number) => x[(q + j) * C + c];
    for (let v = 0; v < C; v += 4) {
      const lanes = [0, 1, 2, 3].map((l) => {
        const c = v + l;
        let pv: number;
        if (len < 8) pv = pivotRule(at(0, c));
        else {
          const p = (j: number) => at(j, c);
          const tree = f(f(f(p(0) + p(1)) + f(p(2) + p(3))) + f(f(p(4) + p(5)) + f(p(6) + p(7))));
          pv = pivotRule(f(tree * 0.125));
        }
        let s = 0, t = 0, j = 0;
        for (; j + 1 < len; j += 2) {
          const d = f(at(j, c) - pv), e = f(at(j + 1, c) - pv);
          s = f(s + f(d + e));
          t = f(t + f(f(d * d) + f(e * e)));
        }
        if (j < len) {
          const d = f(at(j, c) - pv);
          s = f(s + d);
          t = f(t + f(d * d));
        }
        const dd = f(s / f(len));
        const tt = f(f(len) * f(dd * dd));
        return { c, pv, s, t, dd, ok: f(tt + tt) <= t && t <= 3.4028234663852886e38 };
      });
      const ok = lanes.every((l) => l.ok);
      if (ok) onePass++;
      else twoPass++;
      for (const l of lanes) {
        let centre = l.pv, sq = l.t;
        if (!ok) {
          centre = f(l.pv + l.dd);
          sq = 0;
          let j = 0;
          for (; j + 1 < len; j += 2) {
            const d = f(at(j, l.c) - centre), e = f(at(j + 1, l.c) - centre);
            sq = f(sq + f(f(d * d) + f(e * e)));
          }
          if (j < len) sq = f(sq + f(f(at(j, l.c) - centre) ** 2));
        }
        const nb = len;
        const mean = l.pv + l.s / nb;
        const dc = mean - centre;
        const qb = Math.max(0, sq - nb * (dc * dc));
        if (n === 0) m2[l.c] = qb;
        else {
          const d = mean - sum[l.c] / n;
          m2[l.c] = m2[l.c] + qb + (d * d * (n * nb)) / (n + nb);
        }
        sum[l.c] = sum[l.c] + mean * nb;
      }
    }
    n += len;
  }
  return { sum, m2, onePass, twoPass };
}

Deno.test("channels-last statistics: one pass about each run's pivots, two where a pivot is far, bit for bit", () => {
  let paths = [0, 0];
  for (const C of CHANNELS) {
    for (const pix of PIXELS) {
      const { w, at, x, ex } = setup(C, pix);
      // Outliers at pixels 0-9 of channel 1 (its vector's first run takes two passes); the
      // data far from zero in the last channel.
      for (let j = 0; j < Math.min(pix, 10); j++) x[j * C + 1] = 40;
      for (let j = 0; j < pix; j++) x[j * C + C - 1] = f(1000 + x[j * C + C - 1]);
      w.f32.set(x, at.x / 4);
      const [o1, o2, acc] = [slotAt(w, 1), slotAt(w, 2), slotAt(w, 3)];
      const model = statsModel(x, C, pix);
      paths = [paths[0] + model.onePass, paths[1] + model.twoPass];
      for (const cached of [0, 1]) {
        ex.bn_stats_pix(at.x, C, 0, pix, o1, o2, acc, cached);
        for (let c = 0; c < C; c++) {
          const where = `C ${C} pix ${pix} cached ${cached} channel ${c}`;
          assert.equal(w.f64[o1 / 8 + c], model.sum[c], `sum ${where}`);
          assert.equal(w.f64[o2 / 8 + c], model.m2[c], `m2 ${where}`);
        }
      }
    }
  }
  assert.ok(paths[0] > 0 && paths[1] > 0, `both paths taken: ${paths}`);
});
