/**
 * The TypeScript row loops of the row norms (LayerNorm, RMSNorm, AddRmsNorm), written once
 * and emitted twice into src/backends/cpu/rows/row_loops.ts: `F32`, where every tensor's rows
 * are float32 at unit stride and read in place (`data[at + i]` of its Float32Array), and
 * `F64`, where every row goes through a float64 scratch row (`data[i]`). Each instance sees one
 * typed-array type at every element access, which V8 needs to compile it well: one loop
 * serving both ran bfloat16 rows 1.2x slower after float32 ones had run (bench/RESULTS.md).
 * The arithmetic is the same float64 on the same values in the same order either way, so
 * both give the same bits, and the same as the WebAssembly row kernels (rows/sums.ts).
 *
 * @module
 */

import { kernel } from "./emit.ts";

/** The two instances: rows read in place as float32, or through float64 scratch rows. */
export type RowLoopMode = "F32" | "F64";

/** The array type of a view's `data` in `mode`. */
function arrayType(mode: RowLoopMode): string {
  return mode === "F32" ? "Float32Array" : "Float64Array";
}

/** Binds view `v`'s current row: its array `<v>d` (and, in place, its offset `<v>o`). */
function bind(mode: RowLoopMode, v: string): string {
  const data = `const ${v}d = ${v}.data as ${arrayType(mode)};`;
  return mode === "F32" ? `${data}\nconst ${v}o = ${v}.at;` : data;
}

/** Element `i` of view `v`'s current row. */
function el(mode: RowLoopMode, v: string, i = "i"): string {
  return mode === "F32" ? `${v}d[${v}o + ${i}]` : `${v}d[${i}]`;
}

/** Offset of view `v`'s current row in its array. */
function offset(mode: RowLoopMode, v: string): string {
  return mode === "F32" ? `${v}o` : "0";
}

/** A loop function (emit.ts `kernel`): the float32 instance carries `doc`, the other points to it. */
function loop(
  m: RowLoopMode,
  doc: readonly string[],
  name: string,
  params: string,
  body: string,
): string {
  const d = { suffix: m, docName: "rows through float64 scratch rows" };
  return kernel(
    name,
    d,
    [...doc.slice(0, -1), `${doc[doc.length - 1]} (rows in place).`],
    params,
    body,
  );
}

/** LayerNorm forward of rows [first, end): y, and each row's mean and rstd. */
function layerNormRows(m: RowLoopMode): string {
  return loop(
    m,
    ["LayerNorm forward of rows [first, end): y, and each row's mean and rstd"],
    "layerNormRows",
    `x: RowView, y: RowView, n: number, eps: number, w: Float64Array, bias: Float64Array,
    mean: Float64Array, rstd: Float64Array, moments: Float64Array, first: number, end: number`,
    `for (let r = first; r < end; r++) {
  x.load(r);
  y.seek(r);
  ${bind(m, "x")}
  ${bind(m, "y")}
  moments8(xd, ${offset(m, "x")}, n, eps, moments);
  const mu = moments[0];
  const rs = moments[1];
  for (let i = 0; i < n; i++) ${el(m, "y")} = (${el(m, "x")} - mu) * rs * w[i] + bias[i];
  y.store(r);
  mean[r] = mu;
  rstd[r] = rs;
}`,
  );
}

/** LayerNorm backward of rows [first, end) of item `item`. */
function layerNormGradRows(m: RowLoopMode): string {
  return loop(
    m,
    [
      "LayerNorm backward of rows [first, end) of item `item`: each row's sums, the column",
      "partials of the item (when `pw`/`pb` are given) and gradInput (when `gi` is)",
    ],
    "layerNormGradRows",
    `dy: RowView, x: RowView, gi: RowView | undefined, n: number, mean: Float64Array,
    rstd: Float64Array, w: Float64Array, pw: Float64Array | undefined,
    pb: Float64Array | undefined, first: number, end: number, item: number`,
    `const at = item * n;
const t1 = scratchRow(TERMS, n);
const t2 = scratchRow(TERMS + 1, n);
for (let r = first; r < end; r++) {
  dy.load(r);
  x.load(r);
  ${bind(m, "dy")}
  ${bind(m, "x")}
  const mu = mean[r];
  const rs = rstd[r];
  for (let i = 0; i < n; i++) {
    const e = ${el(m, "dy")};
    const xh = (${el(m, "x")} - mu) * rs;
    const g = e * w[i];
    t1[i] = g;
    t2[i] = g * xh;
    if (pw && pb) {
      pw[at + i] += e * xh;
      pb[at + i] += e;
    }
  }
  const s1 = sum8(t1, n);
  const s2 = sum8(t2, n);
  if (!gi) continue;
  gi.seek(r);
  ${bind(m, "gi")}
  const a = s1 / n;
  const c = s2 / n;
  for (let i = 0; i < n; i++) {
    const xh = (${el(m, "x")} - mu) * rs;
    ${el(m, "gi")} = rs * (${el(m, "dy")} * w[i] - a - xh * c);
  }
  gi.store(r);
}`,
  );
}

/** RMSNorm forward of rows [first, end). */
function rmsNormRows(m: RowLoopMode): string {
  return loop(
    m,
    ["RMSNorm forward of rows [first, end): y = x * rstd * g, and each row's rstd"],
    "rmsNormRows",
    `x: RowView, y: RowView, n: number, eps: number, g: Float64Array, rstd: Float64Array,
    first: number, end: number`,
    `for (let r = first; r < end; r++) {
  x.load(r);
  y.seek(r);
  ${bind(m, "x")}
  ${bind(m, "y")}
  const rs = rstd8(xd, ${offset(m, "x")}, n, eps);
  for (let i = 0; i < n; i++) ${el(m, "y")} = ${el(m, "x")} * rs * g[i];
  y.store(r);
  rstd[r] = rs;
}`,
  );
}

/** RMSNorm backward of rows [first, end) of item `item`. */
function rmsNormGradRows(m: RowLoopMode): string {
  return loop(
    m,
    ["RMSNorm backward of rows [first, end) of item `item`: dgamma partials and dx"],
    "rmsNormGradRows",
    `dy: RowView, x: RowView, dx: RowView, n: number, rstd: Float64Array, g: Float64Array,
    pg: Float64Array, first: number, end: number, item: number`,
    `const at = item * n;
const t = scratchRow(TERMS, n);
for (let r = first; r < end; r++) {
  dy.load(r);
  x.load(r);
  dx.seek(r);
  ${bind(m, "dy")}
  ${bind(m, "x")}
  ${bind(m, "dx")}
  const rs = rstd[r];
  for (let i = 0; i < n; i++) {
    const p = ${el(m, "dy")} * ${el(m, "x")};
    t[i] = p * g[i];
    pg[at + i] += p * rs;
  }
  const s = sum8(t, n);
  const k = rs * rs * rs * s / n;
  for (let i = 0; i < n; i++) ${el(m, "dx")} = rs * ${el(m, "dy")} * g[i] - ${el(m, "x")} * k;
  dx.store(r);
}`,
  );
}

/** AddRmsNorm's sum of rows [first, end). */
function addRows(m: RowLoopMode): string {
  return loop(
    m,
    [
      "AddRmsNorm's sum of rows [first, end): x = x1 + x2, rounded by its store (the",
      "statistics, rmsNormRows of x afterwards, see the stored sum)",
    ],
    "addRows",
    `x1: RowView, x2: RowView, x: RowView, n: number, first: number, end: number`,
    `for (let r = first; r < end; r++) {
  x1.load(r);
  x2.load(r);
  x.seek(r);
  ${bind(m, "x1")}
  ${bind(m, "x2")}
  ${bind(m, "x")}
  for (let i = 0; i < n; i++) ${el(m, "x")} = ${el(m, "x1")} + ${el(m, "x2")};
  x.store(r);
}`,
  );
}

/** Every loop of `mode`, in module order. */
export function rowLoops(mode: RowLoopMode): string[] {
  return [layerNormRows, layerNormGradRows, rmsNormRows, rmsNormGradRows, addRows].map((f) =>
    f(mode)
  );
}
