/**
 * numpy's legacy MT19937 generator (`np.random.seed(int)` + `uniform`), so that peer tests
 * seeded with numpy can be replayed with their known answers. Data generation only: the
 * oracle is tests/oracle/.
 *
 * @module
 */

/**
 * numpy's legacy `RandomState` (MT19937 seeded with init_genrand, as `np.random.seed(int)`
 * does), enough of it to replay `np.random.uniform(low, high, shape)`.
 */
export class NumpyRandomState {
  #mt = new Uint32Array(624);
  #index = 624;

  constructor(seed: number) {
    const mt = this.#mt;
    mt[0] = seed >>> 0;
    for (let i = 1; i < 624; i++) {
      const prev = mt[i - 1] ^ (mt[i - 1] >>> 30);
      mt[i] = (Math.imul(1812433253, prev) + i) >>> 0;
    }
  }

  #twist(): void {
    const mt = this.#mt;
    for (let k = 0; k < 624; k++) {
      const y = (mt[k] & 0x80000000) | (mt[(k + 1) % 624] & 0x7fffffff);
      mt[k] = (mt[(k + 397) % 624] ^ (y >>> 1) ^ ((y & 1) ? 0x9908b0df : 0)) >>> 0;
    }
    this.#index = 0;
  }

  /** One 32-bit output (genrand_int32). */
  nextUint32(): number {
    if (this.#index >= 624) this.#twist();
    let y = this.#mt[this.#index++];
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /** `random_sample()`: 53-bit double in [0, 1). */
  randomSample(): number {
    const a = this.nextUint32() >>> 5;
    const b = this.nextUint32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }

  /** `uniform(low, high, size)` in row-major order. */
  uniform(low: number, high: number, size: number): Float64Array {
    const out = new Float64Array(size);
    for (let i = 0; i < size; i++) out[i] = low + (high - low) * this.randomSample();
    return out;
  }
}
