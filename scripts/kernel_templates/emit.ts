/**
 * Text helpers shared by the kernel templates: unrolled lanes, the fixed summation trees,
 * doc comments and the bfloat16 store. The templates' output is formatted by `deno fmt`
 * afterwards (scripts/build_kernels.ts), so these care about tokens, not indentation.
 *
 * @module
 */

/** `line(0)`, ..., `line(count - 1)` joined by `separator` (unrolled lanes or pixels). */
export function lanes(count: number, line: (lane: number) => string, separator = "\n"): string {
  return Array.from({ length: count }, (_, lane) => line(lane)).join(separator);
}

/** `base + lane` as an index expression (`base` alone for lane 0). */
export function plus(base: string, lane: number): string {
  return lane === 0 ? base : `${base} + ${lane}`;
}

/**
 * The combination of eight chains `v0`..`v7` (element j went to chain j mod 8):
 * ((v0 + v2) + (v4 + v6)) + ((v1 + v3) + (v5 + v7)), the association of the WebAssembly
 * kernels' vector lanes, which the TypeScript kernels share so that both give the same bits.
 */
export function tree8(v: string): string {
  return `((${v}0 + ${v}2) + (${v}4 + ${v}6)) + ((${v}1 + ${v}3) + (${v}5 + ${v}7))`;
}

/** A doc comment of the given lines (already wrapped). */
export function doc(lines: readonly string[]): string {
  if (lines.length === 1) return `/** ${lines[0]} */`;
  return ["/**", ...lines.map((l) => ` * ${l}`), " */"].join("\n");
}

/** Moves pixel position (n, i) on by one: i wraps at `inner` into the next n. */
export const ADVANCE = `if (++i === inner) {
  i = 0;
  n++;
}`;

/**
 * The second loop of a bfloat16 store: `target` gets the bfloat16 rounding of the float32
 * whose bits are `bits` (the block entry the first loop stored `value` into). Rounding the
 * float32 again is exact unless its low half is the tie pattern 0x8000 or it is Inf/NaN;
 * those take `bf16Exact(value)` (codecs.ts), which recomputes `value` in float64.
 */
export function bf16Store(target: string, bits: string, value: string): string {
  return `const w = ${bits};
${target} = (w & 0xffff) !== 0x8000 && (w & 0x7f800000) !== 0x7f800000
  ? (w + 0x7fff + ((w >> 16) & 1)) >> 16
  : bf16Exact(${value}, aliasF32, aliasI32);`;
}

/** The two statements every bfloat16-storing kernel starts its stores with. */
export const BF16_SETUP = `const { aliasF32, aliasI32 } = scratch;
const [block, bits] = bf16Block(scratch);`;

/** A tensor a kernel touches, by its stage field. */
export type TensorName = "out" | "dy" | "x";

/** The one-letter prefix of a tensor's element offsets (o0, d0, x0, ...). */
export function prefix(t: TensorName): string {
  return t === "out" ? "o" : t === "dy" ? "d" : "x";
}

/**
 * One exported kernel `${stem}${suffix}(params): void`: the float32 kernel carries
 * `float32Doc`, every other dtype's a one-line doc that points to it.
 */
export function kernel(
  stem: string,
  d: { readonly suffix: string; readonly docName: string },
  float32Doc: readonly string[],
  params: string,
  body: string,
): string {
  const lines = d.suffix === "F32" ? float32Doc : [`{@linkcode ${stem}F32} for ${d.docName}.`];
  // A template line left empty (a step this dtype does not take) is dropped.
  const text = body.split("\n").filter((line) => line.trim() !== "").join("\n");
  return `${doc(lines)}\nexport function ${stem}${d.suffix}(${params}): void {\n${text}\n}\n`;
}
