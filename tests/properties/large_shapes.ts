/**
 * The large-shape property suite's harness (large_shapes_*.test.ts): the CPU backend on shapes of
 * ~10^4 to ~2.2 * 10^6 elements, whose sizes straddle the kernels' thresholds (row work items of
 * 2^13 and 2^16 elements, channel items of 32768, BatchNorm rows in memory order from 1024
 * elements, cache blocks from 16 MiB, channels-last pixels up to 8192 channels, a row longer than
 * a thread's WebAssembly region, the pool from 2^16 elements), each case run at 1 thread and at 2
 * (the pool forced) with the same bits asserted, then held to the float64 oracle (tests/oracle)
 * under the tolerance table (tests/helpers/tolerance.ts) through `assertClose`.
 *
 * Budget: {@linkcode LARGE_DEFAULT_RUNS} cases per operator in `deno task test`,
 * {@linkcode LARGE_NIGHTLY_RUNS} with PROPS_NIGHTLY=1, and with PROPS_RUNS the harness's runs
 * scaled by the same ratio (PROPS_RUNS=1000, the default, gives the default); PROPS_LARGE_RUNS
 * sets the count exactly. The fast-check seed is the harness's SEED (PROPS_SEED) plus a hash of
 * the operator's name, so that operators with the same arbitraries see different shapes. A case
 * is not shrunk (`endOnFailure`: shrinking a case of a million elements costs minutes); a failure
 * prints the case as one JSON line, and `PROPS_LARGE_CASE='<that line>'` runs that case alone.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { pooledJobCount, withCpuPolicy } from "../../src/backends/cpu/pool/pool.ts";
import { cpuThreads, setCpuThreads, startCpuPool } from "../../src/backends/cpu/threads.ts";
import { type DType, roundToDType } from "../../src/tensor/dtype.ts";
import { tidy } from "../../src/tensor/scope.ts";
import type { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { cancellation, type Tolerance } from "../helpers/tolerance.ts";
import { DEFAULT_RUNS, dtypeArb, RUNS, SEED, uniform } from "./harness.ts";
import { channelsLastOrder, type Layout, place, type Placed } from "./layouts.ts";

/** Cases per operator in `deno task test`. */
export const LARGE_DEFAULT_RUNS = 3;
/** Cases per operator with PROPS_NIGHTLY=1. */
export const LARGE_NIGHTLY_RUNS = 100;

function largeRuns(): number {
  const exact = Deno.env.get("PROPS_LARGE_RUNS");
  if (exact !== undefined && exact !== "") {
    const v = Number(exact);
    if (!Number.isInteger(v) || v <= 0) {
      throw new RangeError(`PROPS_LARGE_RUNS=${exact}: a positive integer`);
    }
    return v;
  }
  if (Deno.env.get("PROPS_RUNS")) {
    return Math.max(1, Math.round(RUNS / DEFAULT_RUNS * LARGE_DEFAULT_RUNS));
  }
  return Deno.env.get("PROPS_NIGHTLY") === "1" ? LARGE_NIGHTLY_RUNS : LARGE_DEFAULT_RUNS;
}

/** PROPS_LARGE_LOG=1: one line per case (its size, time, whether it ran on the pool). */
const LOG = Deno.env.get("PROPS_LARGE_LOG") === "1";

/** Cases per operator (module doc). */
export const LARGE_RUNS: number = largeRuns();

/** Most elements of a case's data tensor (16 MiB of float32 gradOut and input: cache blocks). */
export const MAX_NUMEL = 2_300_000;
/** Fewest elements of a case's data tensor. */
export const MIN_NUMEL = 10_000;

/** How a case's data is drawn ({@linkcode dataValues}). */
export type DataKind = "uniform" | "far" | "constant" | "range";

/** The data kinds, uniform around 0 most often. */
export const dataKindArb: fc.Arbitrary<DataKind> = fc.oneof(
  { weight: 3, arbitrary: fc.constant("uniform" as const) },
  { weight: 2, arbitrary: fc.constant("far" as const) },
  { weight: 1, arbitrary: fc.constant("constant" as const) },
  { weight: 1, arbitrary: fc.constant("range" as const) },
);

/** eps from 1e-12 to 0.5. */
export const largeEpsArb: fc.Arbitrary<number> = fc.constantFrom(
  1e-12,
  1e-9,
  1e-6,
  1e-5,
  1e-3,
  0.1,
  0.5,
);

/** The float dtypes (the harness's). */
export const largeDtypeArb: fc.Arbitrary<DType> = dtypeArb;

/**
 * `n` values of `kind`: uniform in [-2, 3); far from zero, 1e4 (or -1e4, by the seed's parity)
 * plus [0, `spread`) with spread 0.01, 1 or 100 by the seed; constant (10000.3, -2500.7 or 0.3
 * by the seed); a large dynamic range, each value of either sign and of magnitude 10^[-6, 4).
 */
export function dataValues(kind: DataKind, n: number, seed: number): Float64Array {
  switch (kind) {
    case "uniform":
      return uniform(n, seed, -2, 3);
    case "far": {
      const spread = [0.01, 1, 100][seed % 3];
      const base = seed % 2 ? -1e4 : 1e4;
      return uniform(n, seed, base, base + spread);
    }
    case "constant":
      return new Float64Array(n).fill([10000.3, -2500.7, 0.3][seed % 3]);
    case "range": {
      const u = uniform(n, seed, 0, 1);
      const sign = uniform(n, seed + 7, -1, 1);
      return u.map((v, i) => Math.sign(sign[i] || 1) * 10 ** (10 * v - 6));
    }
  }
}

/** A case's storage layout: its name and the layouts.ts `Layout` it stands for. */
export interface LargeLayout extends Layout {
  /** contiguous, channels-last (dim 1 innermost), a permuted view, or a sliced view. */
  readonly kind: "contiguous" | "channels-last" | "permuted" | "sliced";
}

/**
 * Layouts of a rank-`rank` tensor: row-major, channels-last, a permutation (reversed dims or
 * two dims swapped), or a slice (every 1st or 2nd element of a storage dim after 1-3 skipped
 * ones, NaN in the gaps) of row-major or channels-last storage.
 */
export function largeLayoutArb(rank: number): fc.Arbitrary<LargeLayout> {
  const identity = Array.from({ length: rank }, (_, i) => i);
  const reversed = [...identity].reverse();
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant({ kind: "contiguous" as const, order: identity }) },
    {
      weight: 2,
      arbitrary: fc.constant({ kind: "channels-last" as const, order: channelsLastOrder(rank) }),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.nat({ max: rank - 1 }), fc.nat({ max: rank - 1 }), fc.boolean())
        .map(([a, b, rev]) => {
          const o = rev ? [...reversed] : [...identity];
          [o[a], o[b]] = [o[b], o[a]];
          return { kind: "permuted" as const, order: o };
        }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        last: fc.boolean(),
        dim: fc.nat({ max: rank - 1 }),
        step: fc.integer({ min: 1, max: 2 }),
        offset: fc.integer({ min: 1, max: 3 }),
      }).map(({ last, dim, step, offset }) => ({
        kind: "sliced" as const,
        order: last ? channelsLastOrder(rank) : identity,
        slice: { dim, step, offset },
      })),
    },
  );
}

/** A number from `list` or an integer in [lo, hi] (the lists hold the thresholds). */
export function pick(list: readonly number[], lo: number, hi: number): fc.Arbitrary<number> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...list) },
    { weight: 1, arbitrary: fc.integer({ min: lo, max: hi }) },
  );
}

/**
 * A target element count, log-uniform in [MIN_NUMEL, MAX_NUMEL] (without fast-check's bias to
 * the bounds, which would make most cases the largest).
 */
export const numelTargetArb: fc.Arbitrary<number> = fc.noBias(
  fc.integer({ min: 0, max: 1 << 20 }),
).map((k) => Math.round(MIN_NUMEL * (MAX_NUMEL / MIN_NUMEL) ** (k / (1 << 20))));

/** `d` split into at most `parts` factors (in order), for views of more dims. */
export function splitDim(d: number, parts: number): number[] {
  const out: number[] = [];
  let rest = d;
  for (let p = 1; p < parts; p++) {
    let f = 0;
    for (const k of [7, 5, 4, 3, 2]) {
      if (rest % k === 0 && rest / k >= 2) {
        f = k;
        break;
      }
    }
    if (f === 0) break;
    out.push(f);
    rest /= f;
  }
  return [...out, rest];
}

/** Largest |v| of finite values (0 when none). */
export function maxAbs(values: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < values.length; i++) {
    const a = Math.abs(values[i]);
    if (a > m && Number.isFinite(a)) m = a;
  }
  return m;
}

/**
 * `t` for an output (x - mean) * rstd * w (+ ...), expected `expected`: tolerance.ts
 * `cancellation` with terms = the largest |x| * rstd * |w|.
 */
export function normalizedTolerance(
  t: Tolerance,
  terms: number,
  expected: ArrayLike<number>,
): Tolerance {
  return cancellation(t, terms, Math.max(1, maxAbs(expected)));
}

/**
 * A mean's bound: `t`, widened as for an output that cancels terms as large as the data
 * (tolerance.ts `cancellation`): the float32 runs of a mean of data of both signs err by a few
 * epsilons of its largest terms, not of the mean (an adaLayerNormV2 row of values from 1e-6 to
 * 1e4 of both signs: a mean of -2.78 off by 1.2e-3, 1.2e-7 of its terms). For data of one sign
 * far from zero the terms are the mean's size, and `t` stands.
 */
export function meanTolerance(
  t: Tolerance,
  values: ArrayLike<number>,
  expected: ArrayLike<number>,
): Tolerance {
  return cancellation(t, maxAbs(values), Math.max(1, maxAbs(expected)));
}

/**
 * The oracle's values as an output stored in `dtype` can hold them: a value beyond the dtype's
 * range rounds to an infinity (rstd = 1/sqrt(eps) of a constant group, 1e6, in float16).
 */
export function storable(expected: ArrayLike<number>, dtype: DType): Float64Array {
  const out = Float64Array.from(expected);
  // Only values this large can round to an infinity (float16's largest finite value is 65504).
  const from = dtype === "float16" ? 65504 : 3.38e38;
  for (let i = 0; i < out.length; i++) {
    if (Math.abs(out[i]) >= from && Number.isFinite(out[i])) {
      const r = roundToDType(out[i], dtype);
      if (!Number.isFinite(r)) out[i] = r;
    }
  }
  return out;
}

/** What a case checks in one output: the oracle's values and the tolerance. */
export interface Expectation {
  /** The oracle's values, logical row-major. */
  readonly expected: ArrayLike<number>;
  /** The tolerance table's entry (widened by its own rules where they apply). */
  readonly tol: Tolerance;
}

/** One case set up: its call and its expectations. */
export interface LargeRun {
  /** Runs the operator once; in-place tensors are made afresh by each call. */
  call(): Record<string, Tensor>;
  /** The oracle's values and tolerance of each output `call` returns. */
  expect(): Record<string, Expectation>;
}

/** The given outputs of `o` (absent and null ones dropped), for `LargeRun.call`. */
export function outputs(o: Record<string, Tensor | null | undefined>): Record<string, Tensor> {
  const out: Record<string, Tensor> = {};
  for (const [k, t] of Object.entries(o)) if (t) out[k] = t;
  return out;
}

/** Every case's fields the report needs (the rest is the operator's). */
export interface LargeCaseBase {
  /** The data tensors' logical shape. */
  readonly shape: readonly number[];
  /** The data tensors' dtype. */
  readonly dtype: DType;
  /** The data tensors' storage layout. */
  readonly layout: LargeLayout;
  /** How the data is drawn. */
  readonly data: DataKind;
  /** The seed of the case's values. */
  readonly seed: number;
}

/** Places `values` of `shape` in the case's layout (layouts.ts `place`, on the CPU). */
export function placeIn(
  values: ArrayLike<number>,
  shape: readonly number[],
  dtype: DType,
  layout: Layout,
): Placed {
  return place(values, shape, dtype, layout, "cpu");
}

function bits(t: Tensor): Uint32Array | Uint16Array {
  const c = t.contiguous();
  const s = c.storage as Float32Array | Uint16Array;
  const wide = c.dtype === "float32" || c.dtype === "int32";
  const byteAt = s.byteOffset + c.offset * (wide ? 4 : 2);
  return wide
    ? new Uint32Array(s.buffer, byteAt, c.numel)
    : new Uint16Array(s.buffer, byteAt, c.numel);
}

/** The first element where `a` and `b` differ in bits, or -1. */
function firstBitDifference(a: Tensor, b: Tensor): number {
  const [x, y] = [bits(a), bits(b)];
  if (x.length !== y.length) return 0;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return i;
  return -1;
}

/**
 * The first element outside the bound of `assertClose`'s rule (tests/helpers/assert.ts, the same
 * rule on Float64Arrays: |actual - expected| <= atol * scale + rtol * |expected|, scale = max(1,
 * max finite |expected|), NaN matching NaN and infinities exactly), described; undefined when
 * every element is within it. `assertClose` itself takes ~0.5-1.5 s per 2 * 10^6 elements on
 * this suite's machine, more than a case's whole budget, so it is called only on a failure (for
 * its message: the verdict is the same).
 */
function firstMismatch(actual: Float64Array, expected: Float64Array, tol: Tolerance) {
  let scale = 1;
  for (let i = 0; i < expected.length; i++) {
    const v = expected[i];
    if (Number.isFinite(v) && Math.abs(v) > scale) scale = Math.abs(v);
  }
  const { atol, rtol } = tol;
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i];
    const x = expected[i];
    if (Number.isFinite(x)) {
      const bound = atol * scale + rtol * Math.abs(x);
      if (Math.abs(a - x) <= bound) continue;
      const over = Math.abs(a - x) / bound;
      return `first mismatch [${i}]: expected ${x}, actual ${a}, bound ${bound.toPrecision(4)} ` +
        `(${over.toPrecision(3)}x the bound)`;
    }
    if (Object.is(a, x) || (Number.isNaN(a) && Number.isNaN(x))) continue;
    return `first mismatch [${i}]: expected ${x}, actual ${a}`;
  }
  return undefined;
}

/** A case as one JSON line (its replay: PROPS_LARGE_CASE). */
export function describe(op: string, c: object): string {
  return JSON.stringify({ op, ...c });
}

/** What the operator's cases ran: how many, and how many ran on the pool. */
interface Tally {
  cases: number;
  pooled: number;
}

function runCase<C extends LargeCaseBase>(
  op: string,
  c: C,
  setup: (c: C) => LargeRun,
  tally: Tally,
): void {
  tidy(() => {
    const what = describe(op, c);
    const start = performance.now();
    const run = setup(c);
    const t1 = performance.now();
    setCpuThreads(1);
    const one = run.call();
    setCpuThreads(2);
    const jobs = pooledJobCount();
    const two = withCpuPolicy({ pool: "always" }, () => run.call());
    tally.cases++;
    const pooled = pooledJobCount() > jobs;
    if (pooled) tally.pooled++;
    const t2 = performance.now();
    const expected = run.expect();
    assert.deepEqual(Object.keys(one).sort(), Object.keys(expected).sort(), `${what}: outputs`);
    for (const [k, t] of Object.entries(one)) {
      const d = firstBitDifference(t, two[k]);
      if (d >= 0) {
        const [a, b] = [t.toFloat64Array()[d], two[k].toFloat64Array()[d]];
        assert.fail(`${what}\n${k}: 1 and 2 threads differ at [${d}]: ${a} vs ${b}`);
      }
    }
    for (const [k, t] of Object.entries(one)) {
      const actual = t.toFloat64Array();
      // The oracle's values as the output's dtype holds them (beyond its range: infinities).
      const e = storable(expected[k].expected, t.dtype);
      const tol = expected[k].tol;
      assert.equal(actual.length, e.length, `${what}\n${k}: ${actual.length} values`);
      const detail = firstMismatch(actual, e, tol);
      if (detail === undefined) continue;
      let message = "";
      try {
        assertClose(actual, e, tol, k);
      } catch (err) {
        message = (err as Error).message;
      }
      assert.fail(`${what}\n${k} (${t.dtype}): ${detail}\n${message}`);
    }
    if (LOG) {
      const ms = (performance.now() - start).toFixed(0);
      const phases = `setup ${(t1 - start).toFixed(0)} calls ${(t2 - t1).toFixed(0)}`;
      console.log(
        `${op} ${c.shape.reduce((a, b) => a * b, 1)} ${ms} ms (${phases}) pooled=${pooled} ${what}`,
      );
    }
  });
}

function seedOf(op: string): number {
  let h = SEED;
  for (const ch of op) h = (Math.imul(h, 31) + ch.charCodeAt(0)) | 0;
  return h;
}

/**
 * Registers `property (large shapes): <op> [cpu]`: fast-check draws LARGE_RUNS cases of `arb`;
 * each is set up by `setup`, run at 1 and 2 threads (same bits) and held to the oracle. With
 * PROPS_LARGE_CASE naming this operator, only that case runs. `examples` run first in every
 * budget (cases pinned at a threshold).
 */
export function largeProperty<C extends LargeCaseBase>(
  op: string,
  arb: fc.Arbitrary<C>,
  setup: (c: C) => LargeRun,
  examples: readonly C[] = [],
): void {
  Deno.test(`property (large shapes): ${op} [cpu]`, async () => {
    const threads = cpuThreads();
    await startCpuPool();
    const tally: Tally = { cases: 0, pooled: 0 };
    try {
      const replay = Deno.env.get("PROPS_LARGE_CASE");
      if (replay) {
        const { op: name, ...c } = JSON.parse(replay);
        if (name === op) runCase(op, c as C, setup, tally);
        return;
      }
      fc.assert(fc.property(arb, (c) => runCase(op, c, setup, tally)), {
        seed: seedOf(op),
        numRuns: LARGE_RUNS,
        endOnFailure: true,
        examples: examples.map((c): [C] => [c]),
        verbose: fc.VerbosityLevel.None,
      });
    } finally {
      setCpuThreads(threads);
    }
    if (LOG) console.log(`${op}: ${tally.cases} cases, ${tally.pooled} pooled`);
  });
}
