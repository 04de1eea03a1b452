/**
 * The write families: each writes one output element from the same position of dy and/or x
 * and per-channel constants, with a formula of formulas.ts. The row and pixel templates
 * (rows.ts, pixels.ts) take one of these and a dtype.
 *
 * @module
 */

import type { TensorName } from "./emit.ts";

/** One write family. */
export interface WriteFamily {
  /** The kernel name's stem (and the stage op). */
  readonly name: "normalize" | "gradient" | "scale";
  /** The inputs it reads. */
  readonly reads: readonly Exclude<TensorName, "out">[];
  /** The names of its per-channel constant arrays in a pixel kernel's `p`, in order. */
  readonly constants: readonly string[];
  /** The output element from the decoded inputs and the constants (expressions). */
  formula(dy: string, x: string, k: readonly string[]): string;
  /** The float32 row kernel's doc (wrapped lines). */
  readonly rowDoc: readonly string[];
  /** The float32 pixel kernel's doc (wrapped lines). */
  readonly pixelDoc: readonly string[];
}

/** out = x * scale + shift. */
export const NORMALIZE: WriteFamily = {
  name: "normalize",
  reads: ["x"],
  constants: ["scale", "shift"],
  formula: (_dy, x, k) => `affine(${x}, ${k[0]}, ${k[1]})`,
  rowDoc: ["out = x * k[0] + k[1] over row (n, c), float32 (see {@linkcode affine})."],
  pixelDoc: [
    "Channels-last out = x * scale[c] + shift[c] (p = [scale, shift]; see {@linkcode affine}),",
    "float32.",
  ],
};

/** out = dy * a + (x * b + c). */
export const GRADIENT: WriteFamily = {
  name: "gradient",
  reads: ["dy", "x"],
  constants: ["ka", "kb", "kc"],
  formula: (dy, x, k) => `gradient(${dy}, ${x}, ${k[0]}, ${k[1]}, ${k[2]})`,
  rowDoc: [
    "out = dy * k[0] + (x * k[1] + k[2]) over row (n, c), float32 (see {@linkcode gradient}).",
  ],
  pixelDoc: [
    "Channels-last out = dy * ka[c] + (x * kb[c] + kc[c]) (p = [ka, kb, kc]; see",
    "{@linkcode gradient}), float32.",
  ],
};

/** out = dy * scale. */
export const SCALE: WriteFamily = {
  name: "scale",
  reads: ["dy"],
  constants: ["scale"],
  formula: (dy, _x, k) => `${dy} * ${k[0]}`,
  rowDoc: ["out = dy * k[0] over row (n, c), float32."],
  pixelDoc: ["Channels-last out = dy * scale[c] (p = [scale]), float32."],
};

/** Every write family, in the order the generated modules list them. */
export const WRITE_FAMILIES: readonly WriteFamily[] = [NORMALIZE, GRADIENT, SCALE];
