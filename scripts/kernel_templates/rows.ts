/**
 * The row kernel templates: one function per family that emits, for one dtype, the kernel
 * over row (n, c) of a `rows` layout (`layout.inner` elements at unit stride in every
 * tensor). scripts/build_kernels.ts instantiates each for its dtypes into
 * src/backends/cpu/kernels/row_kernels.ts.
 *
 * @module
 */

import { type KernelDtype, load, scratchParam, tableSetup } from "./dtypes.ts";
import {
  BF16_SETUP,
  bf16Store,
  kernel,
  lanes,
  plus,
  prefix,
  type TensorName,
  tree8,
} from "./emit.ts";
import type { WriteFamily } from "./families.ts";

/** The parameters every row kernel takes (see drivers.ts's RowKernel). */
function params(d: KernelDtype, scratchUsed = false): string {
  return `s: RowStage, n: number, c: number, k: Float64Array, ${
    scratchParam(d, scratchUsed)
  }: CodecScratch`;
}

/** Tensor `t` as an array of type `type`, and the offset of its row (n, c) (`o0`, `d0`, `x0`). */
function row(t: TensorName, type: string): string {
  return `const ${t} = s.${t} as ${type};
const ${t}At = s.${t}At;
const ${prefix(t)}0 = (${t}At.base + n * ${t}At.strideN + c * ${t}At.strideC) | 0;`;
}

/** The header of a loop over the row in segments of SEGMENT_ELEMENTS, with each one's count. */
const SEGMENTS = `for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
  const count = Math.min(SEGMENT_ELEMENTS, length - start);`;

/** k[1] += sum(dy), k[2] += sum(dy * (x - k[0])), in segments of eight chains each. */
export function sumsRow(d: KernelDtype): string {
  const dy = (i: string) => load(d, "dy", i);
  const x = (i: string) => load(d, "x", i);
  return kernel(
    "sumsRow",
    d,
    [
      "k[1] += sum(dy), k[2] += sum(dy * (x - k[0])) over row (n, c), float32. The row is summed",
      "in blocks of SEGMENT_ELEMENTS, each with eight chains (element j into chain j mod 8,",
      "combined as ((s0 + s2) + (s4 + s6)) + ((s1 + s3) + (s5 + s7)), then the tail in order):",
      "the association of the WebAssembly kernel (kernels.wat), which gives the same bits.",
    ],
    params(d),
    `${row("dy", d.read)}
${row("x", d.read)}
const length = s.layout.inner | 0;
const mean = k[0];
${tableSetup(d)}
${SEGMENTS}
  const ds = (d0 + start) | 0;
  const xs = (x0 + start) | 0;
  const end = count & ~7;
  let ${lanes(8, (l) => `s${l} = 0`, ", ")};
  let ${lanes(8, (l) => `t${l} = 0`, ", ")};
  let j = 0;
  for (; j < end; j += 8) {
    const a = (ds + j) | 0;
    const b = (xs + j) | 0;
    ${lanes(8, (l) => `const e${l} = ${dy(plus("a", l))};`)}
    ${lanes(8, (l) => `s${l} += e${l};`)}
    ${lanes(8, (l) => `t${l} += e${l} * (${x(plus("b", l))} - mean);`)}
  }
  let sum = ${tree8("s")};
  let dot = ${tree8("t")};
  for (; j < count; j++) {
    const e = ${dy("(ds + j) | 0")};
    sum += e;
    dot += e * (${x("(xs + j) | 0")} - mean);
  }
  k[1] += sum;
  k[2] += dot;
}`,
  );
}

/** Merges a row's (sum, m2) into k[1], k[2] (k[3] elements so far), segment by segment. */
export function statsRow(d: KernelDtype): string {
  const x = (i: string) => load(d, "x", i);
  return kernel(
    "statsRow",
    d,
    [
      "Merges the statistics of row (n, c) into k[1] (sum) and k[2] (squared deviations), which",
      "hold k[3] elements (updated), float32. Segments of SEGMENT_ELEMENTS are read twice while in",
      "cache (sum, then squared deviations from the segment mean) and merged with Chan's update.",
      "Each pass sums in eight chains as {@linkcode sumsRowF32} does.",
    ],
    params(d),
    `const x = s.x as ${d.read};
const xAt = s.xAt;
const x0 = (xAt.base + n * xAt.strideN + c * xAt.strideC) | 0;
const length = s.layout.inner | 0;
${tableSetup(d)}
${SEGMENTS}
  const first = (x0 + start) | 0;
  const end = (first + (count & ~7)) | 0;
  const last = (first + count) | 0;
  let ${lanes(8, (l) => `s${l} = 0`, ", ")};
  let j = first;
  for (; j < end; j += 8) {
    ${lanes(8, (l) => `s${l} += ${x(plus("j", l))};`)}
  }
  let sum = ${tree8("s")};
  for (; j < last; j++) sum += ${x("j")};
  const mean = sum / count;
  ${lanes(8, (l) => `s${l} = 0;`)}
  for (j = first; j < end; j += 8) {
    ${lanes(8, (l) => `const a${l} = ${x(plus("j", l))} - mean;`)}
    ${lanes(8, (l) => `s${l} += a${l} * a${l};`)}
  }
  let m2 = ${tree8("s")};
  for (; j < last; j++) {
    const a = ${x("j")} - mean;
    m2 += a * a;
  }
  mergeMoments(k, 1, 2, k[3], sum, m2, count);
  k[3] += count;
}`,
  );
}

/** A write family over row (n, c): out[j] = formula(dy[j], x[j], k[0], ...). */
export function writeRow(f: WriteFamily, d: KernelDtype): string {
  const k = f.constants.map((_, j) => `k${j}`);
  // The element at j of the row (at "0") or of the segment (at "s").
  const value = (at: "0" | "s") =>
    f.formula(load(d, "dy", `(d${at} + j) | 0`), load(d, "x", `(x${at} + j) | 0`), k);
  const origins = f.reads.map((t) => row(t, d.read)).join("\n");
  const head = `${row("out", d.write)}
${origins}
const length = s.layout.inner | 0;
${lanes(k.length, (j) => `const k${j} = k[${j}];`)}
${tableSetup(d)}`;
  const loop = d.store === "native"
    ? `for (let j = 0; j < length; j++) out[(o0 + j) | 0] = ${value("0")};`
    : `${BF16_SETUP}
${SEGMENTS}
  const os = (o0 + start) | 0;
  ${f.reads.map((t) => `const ${prefix(t)}s = (${prefix(t)}0 + start) | 0;`).join("\n")}
  for (let j = 0; j < count; j++) block[j] = ${value("s")};
  for (let j = 0; j < count; j++) {
    ${bf16Store("out[(os + j) | 0]", "bits[j]", value("s"))}
  }
}`;
  return kernel(`${f.name}Row`, d, f.rowDoc, params(d), `${head}\n${loop}`);
}
