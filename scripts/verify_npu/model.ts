/**
 * What `deno task verify:npu` runs: a case is one operator call on seeded host inputs, run
 * once on the NPU and once on the CPU backend, each on its own copy of the inputs laid out the
 * same way (placeOn). Which cases the chip runs is what the library claims
 * (src/backends/ascend/soc.ts: operatorSupported, bf16Allowed, groupNormBackwardMixedPrecision).
 *
 * @module
 */

import type { Device, DType } from "../../mod.ts";
import { Tensor } from "../../mod.ts";
import type { OutputValues } from "./compare.ts";
import {
  bf16Allowed,
  groupNormBackwardMixedPrecision,
  operatorSupported,
  type SocFamily,
  type SocOperator,
} from "../../src/backends/ascend/soc.ts";
import { groupNormTakesFloat16 } from "../../src/backends/ascend/rules.ts";

/**
 * A call's outputs by name (in-place updated inputs included), as tensors or as values already
 * read back; null where masked off.
 */
export type Outputs = Record<string, Tensor | OutputValues | null | undefined>;

/** Places the case's host inputs on `device`, runs the call and returns its outputs. */
export type Call = (device: Device) => Outputs | Promise<Outputs>;

/** Where a case comes from. */
export type Suite = "conformance" | "sweep";

/** One verified call. */
export interface VerifyCase {
  /** The library's function (the table it is counted in), e.g. `batchNormBackward`. */
  readonly op: string;
  /** Conformance (the test suite's cases) or sweep. */
  readonly suite: Suite;
  /** What the case is (its source, shape and variant). */
  readonly name: string;
  /** Its dtypes as a label, e.g. `float16` or `float16 + float32 stats`. */
  readonly dtype: string;
  /** The layout of its data tensors, e.g. `contiguous`, `channels-last`, `strided`. */
  readonly layout: string;
  /** The aclnn operators the call runs on an NPU (their chip rules apply). */
  readonly kernels: readonly SocOperator[];
  /** The dtypes of its tensors. */
  readonly dtypes: readonly DType[];
  /** GroupNorm backward with statistics in another dtype than the data. */
  readonly mixedPrecision?: boolean;
  /** Elements of its data tensor (the quick run keeps the small cases). */
  readonly numel: number;
  /** The case's own reading of the chip rules (instead of kernels/dtypes), if it has one. */
  readonly refusal?: (family: SocFamily) => string | undefined;
  /** A chip rule beyond its kernels' and dtypes' (read after them), if it has one. */
  readonly alsoRefused?: (family: SocFamily) => string | undefined;
  /** Builds the host inputs (once) and returns the call that runs on a device. */
  setup(): Call;
}

/**
 * Why the library says the chip does not run case `c` (undefined: it does). An unknown SoC
 * (no family) is claimed to run everything: its own library decides.
 */
export function chipRefusal(c: VerifyCase, family: SocFamily | undefined): string | undefined {
  if (!family) return undefined;
  if (c.refusal) return c.refusal(family);
  for (const op of c.kernels) {
    if (!operatorSupported(op, family)) return `${op} does not run on ${family.name}`;
    if (c.dtypes.includes("bfloat16") && !bf16Allowed(op, family)) {
      return `${op} takes no bfloat16 on ${family.name}`;
    }
    if (
      (op === "aclnnGroupNorm" || op === "aclnnGroupNormBackward") &&
      c.dtypes.includes("float16") && !groupNormTakesFloat16(family)
    ) {
      return `${op} takes no float16 on ${family.name}`;
    }
    if (op === "aclnnGroupNormBackward" && c.mixedPrecision) {
      if (!groupNormBackwardMixedPrecision(family)) {
        return `${op} takes no mixed precision on ${family.name}`;
      }
    }
  }
  return c.alsoRefused?.(family);
}

/** Elements a view spans in its storage (0 when empty). */
function span(t: Tensor): number {
  if (t.numel === 0) return 0;
  return 1 + t.shape.reduce((s, d, i) => s + (d - 1) * t.strides[i], 0);
}

/**
 * A copy of host tensor `t` on `device` with the same strides (a channels-last view stays
 * channels-last, a strided view keeps its gaps): the span it touches is copied, the view is
 * rebuilt over the copy. Never the host tensor itself, so a call that writes in place leaves
 * the inputs of the next run alone.
 */
export function placeOn(t: Tensor, device: Device): Tensor {
  if (t.device !== "cpu") throw new TypeError("placeOn: expected a host tensor");
  const n = span(t);
  if (n === 0) return Tensor.zeros(t.shape, t.dtype, device);
  const elements = (t.storage as Exclude<Tensor["storage"], { device: unknown }>)
    .subarray(t.offset, t.offset + n);
  let placed: Tensor;
  if (device === "cpu") {
    // Where the library puts a host tensor of this size (the host heap from 4 KiB).
    placed = Tensor.zeros([n], t.dtype).copy_(Tensor.fromData(elements, [n]));
  } else {
    placed = Tensor.fromData(elements.slice(), [n]).to(device);
  }
  return new Tensor(placed.storage, t.dtype, t.shape, t.strides, 0);
}

/** {@linkcode placeOn} for an optional tensor. */
export function placeOpt(t: Tensor | undefined, device: Device): Tensor | undefined {
  return t === undefined ? undefined : placeOn(t, device);
}

/** A layout name of the conformance cases' data ("contiguous" when none). */
export function layoutName(layout: string | undefined): string {
  return layout ?? "contiguous";
}

/** `float16` or `float16 + float32 stats`. */
export function dtypeLabel(data: DType, stats?: DType, what = "stats"): string {
  return stats === undefined || stats === data ? data : `${data} + ${stats} ${what}`;
}

/**
 * The data's dtype, then each other dtype with the tensors that have it (absent ones left
 * out): `float16`, or `float16 + float32 x2/gamma`.
 */
export function dtypesLabel(
  data: DType,
  others: Readonly<Record<string, DType | null | undefined>>,
): string {
  const byDType = new Map<DType, string[]>();
  for (const [name, dtype] of Object.entries(others)) {
    if (dtype && dtype !== data) byDType.set(dtype, [...byDType.get(dtype) ?? [], name]);
  }
  return [data, ...[...byDType].map(([dtype, names]) => `${dtype} ${names.join("/")}`)]
    .join(" + ");
}

/** Elements of a shape. */
export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** A conformance case of operator `op` (the library's function). */
export function conformanceCase(
  op: string,
  name: string,
  fields: Omit<VerifyCase, "op" | "suite" | "name" | "setup">,
  setup: () => Call,
): VerifyCase {
  return { op, suite: "conformance", name, ...fields, setup };
}
