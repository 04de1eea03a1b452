/**
 * Derives the polynomial of the WebAssembly kernels' exp (src/backends/cpu/wasm/channel_swish.wat
 * `$cs_one_plus_exp4`): e^r ≈ 1 + r + r² Q(r) on the reduced range |r| ≤ ln2 / 2, Q of degree
 * 4, fitted for the least maximum relative error of e^r by Lawson's iteration (weighted least
 * squares whose weights grow where the error is largest, converging to the minimax fit) over
 * Chebyshev points, in float64. Prints Q's coefficients rounded to float32 and doubled (the
 * kernel evaluates 2 e^r, so that its last step is one multiply-add), each with the float32
 * value's decimal form as the .wat file writes it, and the fit's error in float32 ulps.
 *
 *   deno run scripts/fit_exp_polynomial.ts
 *
 * The kernel's own error (the fit, its float32 evaluation, the range reduction) is checked by
 * tests/cpu/wasm_exp.test.ts against the file's contract (2 ulp of 1 + exp(t)).
 *
 * @module
 */

/** Q's degree. */
const DEGREE = 4;
/** Sample points on [-ln2 / 2, ln2 / 2]. */
const POINTS = 4001;
/** Lawson iterations. */
const ITERATIONS = 200;

const half = Math.LN2 / 2;
const rs = Array.from({ length: POINTS }, (_, i) => half * Math.cos((Math.PI * i) / (POINTS - 1)));

/** Solves the square system `a x = b` by Gaussian elimination with partial pivoting. */
function solve(a: number[][], b: number[]): number[] {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]!]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[p]![c]!)) p = r;
    [m[c], m[p]] = [m[p]!, m[c]!];
    for (let r = c + 1; r < n; r++) {
      const f = m[r]![c]! / m[c]![c]!;
      for (let k = c; k <= n; k++) m[r]![k]! -= f * m[c]![k]!;
    }
  }
  const x = new Array<number>(n).fill(0);
  for (let r = n - 1; r >= 0; r--) {
    let s = m[r]![n]!;
    for (let k = r + 1; k < n; k++) s -= m[r]![k]! * x[k]!;
    x[r] = s / m[r]![r]!;
  }
  return x;
}

/** Relative error of 1 + r + r² Q(r) against e^r at every sample point. */
function errors(q: readonly number[]): number[] {
  return rs.map((r) => {
    let v = 0;
    for (let k = q.length - 1; k >= 0; k--) v = v * r + q[k]!;
    return (1 + r + r * r * v - Math.exp(r)) / Math.exp(r);
  });
}

let weights = rs.map(() => 1);
let q: number[] = [];
for (let it = 0; it < ITERATIONS; it++) {
  // Weighted least squares in relative terms: minimise sum w (r² Q(r) - (e^r - 1 - r))² / e^2r.
  const normal = Array.from({ length: DEGREE + 1 }, () => new Array<number>(DEGREE + 1).fill(0));
  const rhs = new Array<number>(DEGREE + 1).fill(0);
  rs.forEach((r, i) => {
    const scale = (r * r) / Math.exp(r);
    const target = (Math.exp(r) - 1 - r) / Math.exp(r);
    const basis = Array.from({ length: DEGREE + 1 }, (_, k) => scale * r ** k);
    for (let a = 0; a <= DEGREE; a++) {
      rhs[a]! += weights[i]! * basis[a]! * target;
      for (let b = 0; b <= DEGREE; b++) normal[a]![b]! += weights[i]! * basis[a]! * basis[b]!;
    }
  });
  q = solve(normal, rhs);
  const e = errors(q);
  const total = e.reduce((s, v, i) => s + weights[i]! * Math.abs(v), 0);
  weights = weights.map((w, i) => (w * Math.abs(e[i]!)) / total);
}

const rounded = q.map((c) => Math.fround(c));
const worst = Math.max(...errors(rounded).map(Math.abs));
for (const [k, c] of rounded.entries()) {
  console.log(`q${k}: ${c}  doubled: ${(2 * c).toExponential(10)} (${2 * c})`);
}
console.log(`fit error with the float32 coefficients: ${(worst * 2 ** 23).toFixed(4)} ulp`);
