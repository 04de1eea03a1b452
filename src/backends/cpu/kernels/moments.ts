/**
 * Combining statistics of disjoint parts without losing accuracy: a part is (count, sum,
 * m2) with m2 the sum of squared deviations from the part's own mean. Chan et al.'s update
 * adds the between-part term delta^2 * nA * nB / (nA + nB), which is never a difference of
 * large numbers, so a single read pass over memory (two passes over each cached segment) is
 * as accurate as the reference's two passes over the whole tensor.
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

/**
 * Merges part B (countB elements, sumB, m2B) into the part stored at out[sumAt] (sum) and
 * out[m2At] (m2) that holds countA elements.
 */
export function mergeMoments(
  out: Float64Array,
  sumAt: number,
  m2At: number,
  countA: number,
  sumB: number,
  m2B: number,
  countB: number,
): void {
  if (countA === 0) {
    out[sumAt] = sumB;
    out[m2At] = m2B;
    return;
  }
  const sumA = out[sumAt];
  const delta = sumB / countB - sumA / countA;
  out[sumAt] = sumA + sumB;
  out[m2At] = out[m2At] + m2B + ((delta * delta) * countA * countB) / (countA + countB);
}
