/**
 * Central finite differences, the oracle's independent check of every gradient formula.
 *
 * @module
 */

/**
 * Central differences of a scalar function: d f / d v_i ~ (f(v + h e_i) - f(v - h e_i)) / 2h.
 * `v` is restored after each probe.
 */
export function numericalGradient(
  f: (v: Float64Array) => number,
  v: Float64Array,
  h = 1e-5,
): Float64Array {
  const grad = new Float64Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const keep = v[i];
    v[i] = keep + h;
    const up = f(v);
    v[i] = keep - h;
    const down = f(v);
    v[i] = keep;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

/** sum(a * b): the scalar loss L = <gradOut, y> whose gradient wrt y is gradOut. */
export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}
