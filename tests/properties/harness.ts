/**
 * The property suite's harness: its budget and seed, the shape and dtype arbitraries, and
 * `property()`, which registers one Deno.test per backend (tests/helpers/backends.ts) that
 * checks a predicate over the same seeded cases on each: the CPU backend, the software CANN
 * as Ascend 950 and as Atlas A2. Each backend is compared with the float64 oracle, so the CPU
 * backend == the simulator == the oracle within the tolerance table.
 *
 * Budget: {@linkcode DEFAULT_RUNS} runs per property and backend in `deno task test` (CI: the
 * whole property suite takes ~15 s on 2 cores), {@linkcode NIGHTLY_RUNS} with `deno task
 * test:props` (it sets PROPS_NIGHTLY=1), or exactly `PROPS_RUNS` when that is set. The seed is
 * fixed ({@linkcode SEED}; `PROPS_SEED` picks another). A failure prints the shrunk case as a
 * plain object (shape, dtypes, layouts, masks, eps, momentum and the value seed), enough to
 * replay it, and the first mismatching element.
 *
 * @module
 */

import fc from "fast-check";
import { type BackendContext, forEachBackend } from "../helpers/backends.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { tidy } from "../../src/tensor/scope.ts";

/** Runs per property and backend in CI (`deno task test`). */
export const DEFAULT_RUNS = 1000;
/** Runs per property and backend with `deno task test:props` (PROPS_NIGHTLY=1). */
export const NIGHTLY_RUNS = 10_000;

function envNumber(name: string, fallback: number): number {
  const raw = Deno.env.get(name);
  if (raw === undefined || raw === "") return fallback;
  const v = Number(raw);
  if (!Number.isInteger(v) || v <= 0) throw new RangeError(`${name}=${raw}: a positive integer`);
  return v;
}

/** Runs per property and backend. */
export const RUNS: number = envNumber(
  "PROPS_RUNS",
  Deno.env.get("PROPS_NIGHTLY") === "1" ? NIGHTLY_RUNS : DEFAULT_RUNS,
);
/** The fast-check seed. */
export const SEED: number = envNumber("PROPS_SEED", 20260807);

/** The float dtypes. */
export const FLOAT_DTYPES: readonly DType[] = ["float32", "float16", "bfloat16"];

/** One of the float dtypes. */
export const dtypeArb: fc.Arbitrary<DType> = fc.constantFrom(...FLOAT_DTYPES);

/** A dimension 0..5, rarely 0 (most cases should have data), shrinking towards small. */
export function dimArb(min = 0): fc.Arbitrary<number> {
  return min > 0 ? fc.integer({ min, max: 5 }) : fc.oneof(
    { weight: 1, arbitrary: fc.constant(0) },
    { weight: 14, arbitrary: fc.integer({ min: 1, max: 5 }) },
  );
}

/** Options of {@linkcode shapeArb}. */
export interface ShapeOptions {
  /** Smallest dim 1 (the channel dim); default 0. */
  minChannels?: number;
  /** Largest element count; larger shapes are cut down (their largest dims halved). */
  maxNumel?: number;
}

/** Shapes of rank 2..8 with dims 0..5, at most `maxNumel` elements. */
export function shapeArb(options: ShapeOptions = {}): fc.Arbitrary<number[]> {
  const maxNumel = options.maxNumel ?? 1536;
  return fc.integer({ min: 2, max: 8 }).chain((rank) =>
    fc.tuple(
      ...Array.from({ length: rank }, (_, d) => dimArb(d === 1 ? options.minChannels ?? 0 : 0)),
    )
  ).map((dims) => {
    const s = [...dims];
    const numel = () => s.reduce((a, b) => a * b, 1);
    while (numel() > maxNumel) {
      let k = -1;
      for (let d = 0; d < s.length; d++) if (d !== 1 && (k < 0 || s[d] > s[k])) k = d;
      if (s[k] <= 1) k = 1;
      s[k] = Math.max(1, Math.floor(s[k] / 2));
    }
    return s;
  });
}

/** eps > 0, from tiny to large. */
export const epsArb: fc.Arbitrary<number> = fc.constantFrom(1e-5, 1e-3, 0.1, 0.5);

/** momentum, including the edges. */
export const momentumArb: fc.Arbitrary<number> = fc.constantFrom(0.1, 0, 0.5, 1);

/** The seed of a case's values. */
export const seedArb: fc.Arbitrary<number> = fc.integer({ min: 1, max: 1_000_000 });

/**
 * Registers `property: <name> [<backend>]` for every backend: fast-check runs `check` over
 * `arb` with the suite's seed and budget. `check` compares the backend with the oracle; it may
 * throw an assertion error (the case is then shrunk and printed).
 */
export function property<T>(
  name: string,
  arb: fc.Arbitrary<T>,
  check: (ctx: BackendContext, c: T) => void,
  runs = RUNS,
): void {
  forEachBackend(`property: ${name}`, (ctx) => {
    // tidy: each case's device memory is freed when it ends (the loop never yields).
    fc.assert(fc.property(arb, (c) => tidy(() => check(ctx, c))), {
      seed: SEED,
      numRuns: runs,
      // One line per shrink step would drown the report: print the final case only.
      verbose: fc.VerbosityLevel.None,
    });
  });
}

/** `n` seeded uniform values in [low, high) (mulberry32), the values of one tensor. */
export function uniform(n: number, seed: number, low = -1, high = 1): Float64Array {
  let a = seed >>> 0;
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = low + (high - low) * (((t ^ (t >>> 14)) >>> 0) / 4294967296);
  }
  return out;
}

/** The number of elements of a shape. */
export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}
