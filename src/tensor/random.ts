/**
 * A small seeded generator (SplitMix32-style mixing over a 32-bit state) so that tests,
 * benchmarks and the demo produce the same data on every machine.
 *
 * @module
 */

import type { Device } from "./device.ts";
import type { DType } from "./dtype.ts";

/** A deterministic source of uniform and normal numbers. */
export class Random {
  #state: number;
  #spareNormal: number | undefined;

  /** Creates a generator; equal seeds give equal sequences. */
  constructor(seed = 0x9e3779b9) {
    this.#state = seed >>> 0;
  }

  /** A uniform number in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x9e3779b9) >>> 0;
    let z = this.#state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    z = (z ^ (z >>> 16)) >>> 0;
    return z / 4294967296;
  }

  /** A uniform number in [low, high). */
  uniform(low = 0, high = 1): number {
    return low + (high - low) * this.next();
  }

  /** A standard normal number (Box-Muller; the second value is kept for the next call). */
  normal(): number {
    if (this.#spareNormal !== undefined) {
      const v = this.#spareNormal;
      this.#spareNormal = undefined;
      return v;
    }
    let u = this.next();
    while (u === 0) u = this.next();
    const v = this.next();
    const r = Math.sqrt(-2 * Math.log(u));
    this.#spareNormal = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  }
}

/** Options of `Tensor.random`. */
export interface RandomOptions {
  /** Seed of the generator; equal seeds give equal tensors. Default 1. */
  seed?: number;
  /** Element type. Default `float32`. */
  dtype?: DType;
  /** `uniform` in [low, high) or `normal` with mean `low` and std `high`. Default uniform. */
  distribution?: "uniform" | "normal";
  /** Lower bound (uniform) or mean (normal). Default 0 (uniform -1). */
  low?: number;
  /** Upper bound (uniform) or standard deviation (normal). Default 1. */
  high?: number;
  /** Where to put the tensor. Default `"cpu"`. */
  device?: Device;
}

/**
 * A seeded stream of random numbers drawn as `options` say (its dtype and device aside): each
 * call fills `values` with the stream's next `values.length` numbers, so that `Tensor.random`
 * fills a tensor a chunk at a time, the same numbers as one draw of them all, without a
 * float64 array of the whole tensor (twice a float32 tensor's bytes, four times a 16-bit one's).
 */
export function randomStream(options: RandomOptions): (values: Float64Array) => void {
  const rng = new Random(options.seed ?? 1);
  const normal = options.distribution === "normal";
  const low = options.low ?? (normal ? 0 : -1);
  const high = options.high ?? 1;
  return (values) => {
    for (let i = 0; i < values.length; i++) {
      values[i] = normal ? low + high * rng.normal() : rng.uniform(low, high);
    }
  };
}
