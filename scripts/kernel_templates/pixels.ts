/**
 * The pixel kernel templates: one function per family that emits, for one dtype, the kernel
 * over pixels [q0, q1) of a channels-last (`pixels`) layout, each pixel's C channels at unit
 * stride. scripts/build_kernels.ts instantiates each for its dtypes into
 * src/backends/cpu/kernels/pixel_kernels.ts.
 *
 * Most loops take four pixels per step, so that each channel's constants or accumulators
 * are loaded once per four pixels; the pixel range fixes the association of every sum.
 *
 * @module
 */

import { type KernelDtype, load, scratchParam, tableSetup } from "./dtypes.ts";
import { ADVANCE, BF16_SETUP, bf16Store, kernel, lanes, prefix, type TensorName } from "./emit.ts";
import type { WriteFamily } from "./families.ts";

/** The parameters every pixel kernel takes (see drivers.ts's PixelKernel). */
function params(d: KernelDtype, scratchUsed = false): string {
  return `s: PixelStage, q0: number, q1: number, p: readonly Float64Array[], ${
    scratchParam(d, scratchUsed)
  }: CodecScratch`;
}

/** The arrays of `tensors`, the geometry, and each tensor's base and strides. */
function prologue(tensors: readonly TensorName[], type: (t: TensorName) => string): string {
  return [
    ...tensors.map((t) => `const ${t} = s.${t} as ${type(t)};`),
    "const channels = s.layout.C;",
    "const inner = s.layout.inner;",
    ...tensors.map((t) =>
      `const ${t}Base = s.${t}At.base;
const ${t}N = s.${t}At.strideN;
const ${t}I = s.${t}At.strideI;`
    ),
  ].join("\n");
}

/** The offsets of pixel (n, i) in `tensors`, named by prefix and `tag` (o0, d0, x0, ...). */
function offsets(tensors: readonly TensorName[], tag: string | number): string {
  return tensors
    .map((t) => `const ${prefix(t)}${tag} = (${t}Base + n * ${t}N + i * ${t}I) | 0;`)
    .join("\n");
}

/**
 * Pixels q.. of (n, i) on to q1: four per step with `four` over each channel c (offsets
 * `o0`..`o3`, `d0`..`d3`, `x0`..`x3`), then one per step with `one` (offsets `o0`, `d0`, `x0`).
 */
function walk(tensors: readonly TensorName[], four: string, one: string): string {
  return `for (; q + 3 < q1; q += 4) {
  ${lanes(4, (p) => `${offsets(tensors, p)}\n${ADVANCE}`)}
  for (let c = 0; c < channels; c++) {
    ${four}
  }
}
for (; q < q1; q++) {
  ${offsets(tensors, 0)}
  for (let c = 0; c < channels; c++) {
    ${one}
  }
  ${ADVANCE}
}`;
}

/** (n, i) and q at pixel q0. */
const START = `let n = Math.floor(q0 / inner);
let i = q0 - n * inner;
let q = q0;`;

/** Element c at pixel offset `offset` of tensor `t` (`d1` -> `dy[(d1 + c) | 0]`), decoded. */
function at(d: KernelDtype, t: TensorName, offset: string): string {
  return load(d, t, `(${offset} + c) | 0`);
}

/** p[0][c] += sum(dy), p[1][c] += sum(dy * (x - p[2][c])) per channel. */
export function sumsPixels(d: KernelDtype): string {
  const term = (p: number) => `e${p} * (${at(d, "x", `x${p}`)} - m)`;
  return kernel(
    "sumsPixels",
    d,
    [
      "Per channel over pixels [q0, q1): p[0][c] += sum(dy), p[1][c] += sum(dy * (x - p[2][c])),",
      "float32. Four pixels per step share each channel's accumulator update (faster than",
      "one pixel per step; the sums' association is fixed by the pixel range).",
    ],
    params(d),
    `${prologue(["dy", "x"], () => d.read)}
const [sums, dots, means] = p;
${tableSetup(d)}
${START}
${
      walk(
        ["dy", "x"],
        `const m = means[c];
${lanes(4, (p) => `const e${p} = ${at(d, "dy", `d${p}`)};`)}
sums[c] += (e0 + e1) + (e2 + e3);
dots[c] += (${term(0)} + ${term(1)}) + (${term(2)} + ${term(3)});`,
        `const m = means[c];
const e0 = ${at(d, "dy", "d0")};
sums[c] += e0;
dots[c] += ${term(0)};`,
      )
    }`,
  );
}

/** p[0][c] = sum(x), p[1][c] = sum((x - m_c)^2) per channel, two passes over the block. */
export function statsPixels(d: KernelDtype): string {
  const x = (p: number) => at(d, "x", `x${p}`);
  const deviation = (p: number) => `const a${p} = ${x(p)} - m;`;
  return kernel(
    "statsPixels",
    d,
    [
      "Two-pass statistics per channel over pixels [q0, q1) (a block small enough to stay in",
      "cache): p[0][c] = sum(x), p[1][c] = sum((x - m_c)^2) with m_c the block's channel mean.",
      "Overwrites both, float32. Four pixels per step, as in {@linkcode sumsPixelsF32}.",
    ],
    params(d, true),
    `${prologue(["x"], () => d.read)}
const [sums, m2s] = p;
${tableSetup(d)}
const means = channelScratch(scratch, channels);
sums.fill(0, 0, channels);
m2s.fill(0, 0, channels);
const n0 = Math.floor(q0 / inner);
const i0 = q0 - n0 * inner;
let n = n0;
let i = i0;
let q = q0;
${walk(["x"], `sums[c] += (${x(0)} + ${x(1)}) + (${x(2)} + ${x(3)});`, `sums[c] += ${x(0)};`)}
const count = q1 - q0;
for (let c = 0; c < channels; c++) means[c] = sums[c] / count;
n = n0;
i = i0;
q = q0;
${
      walk(
        ["x"],
        `const m = means[c];
${lanes(4, deviation)}
m2s[c] += (a0 * a0 + a1 * a1) + (a2 * a2 + a3 * a3);`,
        `const m = means[c];
${deviation(0)}
m2s[c] += a0 * a0;`,
      )
    }`,
  );
}

/** A write family per pixel and channel: out = formula(dy, x, constants[c]). */
export function writePixels(f: WriteFamily, d: KernelDtype): string {
  const tensors: TensorName[] = ["out", ...f.reads];
  const type = (t: TensorName) => t === "out" ? d.write : d.read;
  const head = `${prologue(tensors, type)}
const [${f.constants.join(", ")}] = p;
${tableSetup(d)}`;
  // The element of pixel offsets tagged `tag` with constants `k`.
  const value = (tag: string | number, k: readonly string[]) =>
    f.formula(at(d, "dy", `d${tag}`), at(d, "x", `x${tag}`), k);
  const loops = d.store === "native" ? nativeStores(f, value) : blockStores(f, value);
  return kernel(`${f.name}Pixels`, d, f.pixelDoc, params(d), `${head}\n${loops}`);
}

/** Stores straight into the output, four pixels per step. */
function nativeStores(
  f: WriteFamily,
  value: (tag: string | number, k: readonly string[]) => string,
): string {
  const m = f.constants.map((_, j) => `m${j}`);
  const constants = lanes(m.length, (j) => `const m${j} = ${f.constants[j]}[c];`);
  const store = (p: number) => `out[(o${p} + c) | 0] = ${value(p, m)};`;
  return `${START}
// Four pixels per step load each channel's constants once.
${walk(["out", ...f.reads], `${constants}\n${lanes(4, store)}`, `${constants}\n${store(0)}`)}`;
}

/**
 * Stores through the bfloat16 block: per chunk of pixels that fits it, one loop computes
 * into the block, a second rounds it into the output (see {@linkcode bf16Store}).
 */
function blockStores(
  f: WriteFamily,
  value: (tag: string | number, k: readonly string[]) => string,
): string {
  const v = value("b", f.constants.map((name) => `${name}[c]`));
  // (n, i) at the chunk's first pixel, and the block from its start.
  const chunkStart = (decl: string) =>
    `${decl}n = Math.floor(first / inner);\n${decl}i = first - n * inner;\n${decl}m = 0;`;
  return `${BF16_SETUP}
const chunk = Math.max(1, Math.floor(block.length / channels));
for (let first = q0; first < q1; first += chunk) {
  const last = Math.min(q1, first + chunk);
  ${chunkStart("let ")}
  for (let q = first; q < last; q++) {
    ${offsets(f.reads, "b")}
    for (let c = 0; c < channels; c++) block[m++] = ${v};
    ${ADVANCE}
  }
  ${chunkStart("")}
  for (let q = first; q < last; q++) {
    ${offsets(["out", ...f.reads], "b")}
    for (let c = 0; c < channels; c++) {
      ${bf16Store("out[(ob + c) | 0]", "bits[m++]", v)}
    }
    ${ADVANCE}
  }
}`;
}
