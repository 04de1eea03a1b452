/**
 * The property sweep of `deno task verify:npu`: every operator the library exports, in every
 * float dtype (and, where the operator takes them, float32 statistics with 16-bit data), in
 * every layout its data tensors can have (contiguous, channels-last, a strided view whose gaps
 * hold NaN), over a set of shapes, on deterministic seeded inputs. The operators and how each
 * call is built are in sweep_ops.ts; which ones the chip runs is the library's claim
 * (model.ts `chipRefusal`).
 *
 * @module
 */

import { type DType, Tensor } from "../../mod.ts";
import { channelsLast } from "../../tests/fixtures/conformance/build.ts";
import type { Call, VerifyCase } from "./model.ts";
import { dtypeLabel } from "./model.ts";
import type { SocOperator } from "../../src/backends/ascend/soc.ts";

/**
 * A data tensor's layout in the sweep; "in-place" (the InfiniOp descriptor writing gradInput
 * over gradOutput) is contiguous data.
 */
export type SweepLayout = "contiguous" | "channels-last" | "strided" | "in-place";

/** One point of the sweep. */
export interface SweepPoint {
  /** Logical shape of the data tensor (channel = dim 1). */
  readonly shape: readonly number[];
  /** dtype of the data tensors. */
  readonly dtype: DType;
  /** dtype of the statistics / per-channel tensors (`dtype`, or float32). */
  readonly stats: DType;
  readonly layout: SweepLayout;
  /** The variant (e.g. training or eval), "" when the operator has one. */
  readonly variant: string;
  /** Seed of the point's values. */
  readonly seed: number;
}

/** An operator of the sweep. */
export interface SweepOp {
  /** The library's function. */
  readonly op: string;
  /** The aclnn operators it runs. */
  readonly kernels: readonly SocOperator[];
  /** Whether it takes float32 statistics with 16-bit data. */
  readonly mixed: boolean;
  /** GroupNorm backward: mixed statistics are a chip trait of their own. */
  readonly mixedIsChipTrait?: boolean;
  /** The layouts its data tensors can have. */
  readonly layouts: readonly SweepLayout[];
  /** Its variants (one "" when it has none). */
  readonly variants: readonly string[];
  /** Extra dtypes its tensors have whatever the point (e.g. float32 outputs). */
  readonly extraDTypes?: readonly DType[];
  /** The data dtypes it takes (all of SWEEP_DTYPES when absent). */
  readonly dtypes?: readonly DType[];
  /** The sweep shapes it takes (all when absent), e.g. 4-D only. */
  readonly takes?: (shape: readonly number[]) => boolean;
  /** A chip rule beyond its kernels' and dtypes' (VerifyCase.alsoRefused). */
  readonly alsoRefused?: VerifyCase["alsoRefused"];
  /** Builds the host inputs of `p` and returns the call. */
  build(p: SweepPoint): Call;
}

/** The sweep's shapes: the quick run takes the first only. */
export const SWEEP_SHAPES: readonly (readonly number[])[] = [
  [4, 6, 5, 3],
  [3, 4],
  [2, 5, 7],
  [2, 3, 2, 3, 4],
  [5, 1, 9, 2],
  [8, 16, 24, 24], // 73728 elements: the CPU backend's worker pool
  [16, 32, 56, 56], // 1.6M elements, 50176 per channel: the NPU's float32 accumulation
];

/** The float dtypes. */
export const SWEEP_DTYPES: readonly DType[] = ["float32", "float16", "bfloat16"];

/** Seeded values in [low, high), rounded to `dtype`, as a contiguous host tensor. */
export function values(
  shape: readonly number[],
  dtype: DType,
  seed: number,
  low = -1,
  high = 1,
): Tensor {
  return Tensor.random(shape, { seed, dtype, low, high });
}

/**
 * `t` (contiguous, on the host) laid out as `layout`: channels-last storage (rank >= 3), or
 * every other element of a storage twice as long in the last dim whose gaps hold NaN (so a
 * kernel that reads outside the view poisons its result).
 */
export function laidOut(t: Tensor, layout: SweepLayout): Tensor {
  if (layout === "contiguous" || layout === "in-place") return t;
  if (layout === "channels-last") return channelsLast(t);
  const last = t.rank - 1;
  const wide = [...t.shape];
  wide[last] = t.shape[last] * 2;
  const view = Tensor.full(wide, NaN, t.dtype).slice(last, 0, wide[last], 2);
  view.copy_(t);
  return view;
}

/** Seeded data of shape `p.shape` in `p.dtype`, laid out as `p.layout`. */
export function dataTensor(p: SweepPoint, seed: number, low = -2, high = 2): Tensor {
  return laidOut(values(p.shape, p.dtype, seed, low, high), p.layout);
}

/** Every case of `ops` (quick: the first shape only). */
export function sweepCases(ops: readonly SweepOp[], quick: boolean): VerifyCase[] {
  const shapes = quick ? SWEEP_SHAPES.slice(0, 1) : SWEEP_SHAPES;
  const cases: VerifyCase[] = [];
  let seed = 1;
  for (const op of ops) {
    for (const shape of shapes.filter((s) => op.takes?.(s) ?? true)) {
      for (const dtype of op.dtypes ?? SWEEP_DTYPES) {
        const statsDTypes: DType[] = op.mixed && dtype !== "float32" ? [dtype, "float32"] : [dtype];
        for (const stats of statsDTypes) {
          for (const layout of op.layouts) {
            // Channels-last is the row-major layout of a rank-2 tensor.
            if (layout === "channels-last" && shape.length < 3) continue;
            for (const variant of op.variants) {
              const p: SweepPoint = { shape, dtype, stats, layout, variant, seed: 1000 * seed++ };
              cases.push({
                op: op.op,
                suite: "sweep",
                name: `[${shape}]${variant ? ` ${variant}` : ""} seed ${p.seed}`,
                dtype: dtypeLabel(dtype, stats),
                layout,
                kernels: op.kernels,
                dtypes: [dtype, stats, ...(op.extraDTypes ?? [])],
                mixedPrecision: op.mixedIsChipTrait ? stats !== dtype : undefined,
                numel: shape.reduce((a, b) => a * b, 1),
                alsoRefused: op.alsoRefused,
                setup: () => op.build(p),
              });
            }
          }
        }
      }
    }
  }
  return cases;
}
