/**
 * Argument lists of the norm operators for raw calls into the software CANN (`runAclnn`,
 * bypassing the library's validation): valid by default on every SoC that runs the operator,
 * any argument replaceable by name. Shared by the simulator fidelity tests.
 *
 * @module
 */

import type { SocOperator } from "../../src/backends/ascend/soc.ts";
import { type AclnnArg, arg } from "../../src/ffi/executor.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import type { Tensor } from "../../src/tensor/tensor.ts";
import { dev, fresh, full } from "./sim_raw.ts";

/** Batch size of the default geometry (x is [N, C, L]). */
export const N = 4;
/** Channels of the default geometry. */
export const C = 3;
/** Length of the default geometry. */
export const L = 5;
/** The default input shape [N, C, L]. */
export const X: readonly number[] = [N, C, L];
/** Elements per channel of the default geometry. */
export const M: number = N * L;
/** The eps every default argument list passes. */
export const EPS = 1e-5;

/** The row statistics shape of the LayerNorm/RMSNorm defaults (x [N, C, L] normalized over L). */
export const ROWS: readonly number[] = [N, C, 1];

/**
 * What the software CANN says when `op` refuses bfloat16 data on a chip (tests/sim/README_norm.md):
 * the OP_CHECK_DTYPE_NOT_SUPPORT text of the hand-written operators, the documentation rule of
 * aclnnLayerNormBackward, the OpDef mismatch of the generated RmsNorm/RmsNormGrad/GemmaRmsNorm/
 * InplaceAddRmsNorm.
 */
export function bf16RefusalText(op: SocOperator): RegExp {
  switch (op) {
    case "aclnnLayerNormBackward":
      return /is DT_BF16, which the .* does not support \(CANN's documentation/;
    case "aclnnRmsNorm":
    case "aclnnGemmaRmsNorm":
    case "aclnnInplaceAddRmsNorm":
    case "aclnnRmsNormGrad":
    case "aclnnAddLayerNorm":
    case "aclnnDeepNorm":
    case "aclnnAddLayerNormGrad":
    case "aclnnDeepNormGrad":
    case "aclnnGroupNormSwish":
    case "aclnnGroupNormSwishGrad":
      return /inconsistent with that defined in the operator prototype OpDef/;
    default:
      return /not implemented for DT_BF16, should be in dtype support list \[/;
  }
}

/** Deterministic data. */
export function seq(n: number, seed: number, scale = 1, shift = 0): number[] {
  return Array.from(
    { length: n },
    (_, i) => Math.sin(1.7 * i + seed) * scale + shift + (i % 3) * 0.25,
  );
}

/** Tensors replacing argsFor's defaults, by argument name (undefined = a NULL pointer). */
export type Opt = Record<string, Tensor | undefined>;
/** o[k] when the caller gave k (undefined = a NULL pointer), else the default. */
function pick(o: Opt, k: string, d: () => Tensor | undefined): Tensor | undefined {
  return k in o ? o[k] : d();
}
/** An input tensor argument (NULL when undefined). */
export const t = (x: Tensor | undefined): AclnnArg => arg.tensor(x);
/** An output tensor argument (NULL when undefined). */
export const out = (x: Tensor | undefined): AclnnArg => arg.output(x);

/** Valid argument lists per operator: data tensors in `dt`, statistics in float32 where CANN allows it. */
export function argsFor(
  npu: AscendDevice,
  op: SocOperator,
  dt: DType,
  o: Opt = {},
  flags: { training?: boolean; mask?: boolean[] } = {},
): AclnnArg[] {
  const x = () => dev(npu, seq(N * C * L, 1, 2, 0.5), X, dt);
  const dy = () => dev(npu, seq(N * C * L, 2), X, dt);
  const stat = (v: number) => () => full(npu, [C], v);
  const training = flags.training ?? true;
  const mask = flags.mask ?? [true, true, true];
  switch (op) {
    case "aclnnBatchNorm":
      return [
        t(pick(o, "input", x)),
        t(pick(o, "weight", () => undefined)),
        t(pick(o, "bias", () => undefined)),
        t(pick(o, "runningMean", () => undefined)),
        t(pick(o, "runningVar", () => undefined)),
        arg.bool(training),
        arg.f64(0.1),
        arg.f64(EPS),
        out(pick(o, "output", () => fresh(npu, X, dt))),
        out(pick(o, "saveMean", () => fresh(npu, [C]))),
        out(pick(o, "saveInvstd", () => fresh(npu, [C]))),
      ];
    case "aclnnBatchNormBackward":
      return [
        t(pick(o, "gradOut", dy)),
        t(pick(o, "input", x)),
        t(pick(o, "weight", () => undefined)),
        t(pick(o, "runningMean", () => undefined)),
        t(pick(o, "runningVar", () => undefined)),
        t(pick(o, "saveMean", stat(0.5))),
        t(pick(o, "saveInvstd", stat(1.5))),
        arg.bool(training),
        arg.f64(EPS),
        "outputMask" in o ? t(undefined) : arg.boolArray(mask),
        out(pick(o, "gradInput", () => fresh(npu, X, dt))),
        out(pick(o, "gradWeight", () => fresh(npu, [C]))),
        out(pick(o, "gradBias", () => fresh(npu, [C]))),
      ];
    case "aclnnFastBatchNormBackward": {
      // aclnnBatchNormBackward's list with `int version` after outputMask.
      const list = argsFor(npu, "aclnnBatchNormBackward", dt, o, flags);
      list.splice(10, 0, arg.i32(1));
      return list;
    }
    case "aclnnBatchNormReduceBackward":
      return [
        t(pick(o, "gradOut", dy)),
        t(pick(o, "input", x)),
        t(pick(o, "mean", stat(0.5))),
        t(pick(o, "invstd", stat(1.5))),
        t(pick(o, "weight", () => undefined)),
        arg.bool(mask[0]),
        arg.bool(mask[1]),
        arg.bool(mask[2]),
        out(pick(o, "sumDy", () => fresh(npu, [C]))),
        out(pick(o, "sumDyXmu", () => fresh(npu, [C]))),
        out(pick(o, "gradWeight", () => fresh(npu, [C]))),
        out(pick(o, "gradBias", () => fresh(npu, [C]))),
      ];
    case "aclnnBatchNormStats":
      return [
        t(pick(o, "input", x)),
        arg.f64(EPS),
        out(pick(o, "mean", () => fresh(npu, [C]))),
        out(pick(o, "invstd", () => fresh(npu, [C]))),
      ];
    case "aclnnBatchNormGatherStatsWithCounts":
      return [
        t(pick(o, "input", x)),
        t(pick(o, "mean", () => dev(npu, seq(2 * C, 3), [2, C]))),
        t(pick(o, "invstd", () => full(npu, [2, C], 2))),
        t(pick(o, "runningMean", () => undefined)),
        t(pick(o, "runningVar", () => undefined)),
        arg.f64(0.1),
        arg.f64(EPS),
        t(pick(o, "counts", () => dev(npu, [8, 12], [2]))),
        out(pick(o, "meanAll", () => fresh(npu, [C]))),
        out(pick(o, "invstdAll", () => fresh(npu, [C]))),
      ];
    case "aclnnBatchNormElemt":
      return [
        t(pick(o, "input", x)),
        t(pick(o, "weight", () => undefined)),
        t(pick(o, "bias", () => undefined)),
        t(pick(o, "mean", stat(0.5))),
        t(pick(o, "invstd", stat(1.5))),
        arg.f64(EPS),
        out(pick(o, "output", () => fresh(npu, X, dt))),
      ];
    case "aclnnBatchNormElemtBackward":
      return [
        t(pick(o, "gradOut", dy)),
        t(pick(o, "input", x)),
        t(pick(o, "mean", stat(0.5))),
        t(pick(o, "invstd", stat(1.5))),
        t(pick(o, "weight", () => undefined)),
        t(pick(o, "sumDy", stat(2))),
        t(pick(o, "sumDyXmu", stat(-1))),
        t(pick(o, "counter", () => dev(npu, [M], [1], "int32"))),
        out(pick(o, "gradInput", () => fresh(npu, X, dt))),
      ];
    case "aclnnGroupNorm":
      return [
        t(pick(o, "self", x)),
        t(pick(o, "gamma", () => undefined)),
        t(pick(o, "beta", () => undefined)),
        arg.i64(N),
        arg.i64(C),
        arg.i64(L),
        arg.i64(1),
        arg.f64(EPS),
        out(pick(o, "out", () => fresh(npu, X, dt))),
        out(pick(o, "meanOut", () => fresh(npu, [N, 1], dt))),
        out(pick(o, "rstdOut", () => fresh(npu, [N, 1], dt))),
      ];
    case "aclnnGroupNormBackward":
      return [
        t(pick(o, "gradOut", dy)),
        t(pick(o, "input", x)),
        t(pick(o, "mean", () => full(npu, [N, 1], 0.5, dt))),
        t(pick(o, "rstd", () => full(npu, [N, 1], 1.5, dt))),
        t(pick(o, "gamma", () => undefined)),
        arg.i64(N),
        arg.i64(C),
        arg.i64(L),
        arg.i64(1),
        "outputMask" in o ? t(undefined) : arg.boolArray(mask),
        out(pick(o, "gradInput", () => fresh(npu, X, dt))),
        out(pick(o, "gradGammaOut", () => fresh(npu, [C], dt))),
        out(pick(o, "gradBetaOut", () => fresh(npu, [C], dt))),
      ];
    case "aclnnLayerNorm":
    case "aclnnFastLayerNorm": // aclnnLayerNorm's prototype (aclnn_layer_norm.h)
      return [
        t(pick(o, "input", x)),
        arg.intArray([L]),
        t(pick(o, "weight", () => undefined)),
        t(pick(o, "bias", () => undefined)),
        arg.f64(EPS),
        out(pick(o, "out", () => fresh(npu, X, dt))),
        out(pick(o, "meanOut", () => fresh(npu, ROWS))),
        out(pick(o, "rstdOut", () => fresh(npu, ROWS))),
      ];
    case "aclnnLayerNormBackward":
      return [
        t(pick(o, "gradOut", dy)),
        t(pick(o, "input", x)),
        arg.intArray([L]),
        t(pick(o, "mean", () => full(npu, ROWS, 0.5))),
        t(pick(o, "rstd", () => full(npu, ROWS, 1.5))),
        t(pick(o, "weight", () => undefined)),
        t(pick(o, "bias", () => undefined)),
        "outputMask" in o ? t(undefined) : arg.boolArray(mask),
        out(pick(o, "gradInput", () => fresh(npu, X, dt))),
        out(pick(o, "gradWeight", () => fresh(npu, [L]))),
        out(pick(o, "gradBias", () => fresh(npu, [L]))),
      ];
    case "aclnnRmsNorm":
    case "aclnnGemmaRmsNorm": // the same prototype (x, gamma, epsilon, yOut, rstdOut)
      return [
        t(pick(o, "x", x)),
        t(pick(o, "gamma", () => full(npu, [L], 1.5, dt))),
        arg.f64(EPS),
        out(pick(o, "y", () => fresh(npu, X, dt))),
        out(pick(o, "rstd", () => fresh(npu, ROWS))),
      ];
    case "aclnnRmsNormGrad":
      return [
        t(pick(o, "dy", dy)),
        t(pick(o, "x", x)),
        t(pick(o, "rstd", () => full(npu, ROWS, 1.5))),
        t(pick(o, "gamma", () => full(npu, [L], 1.5, dt))),
        out(pick(o, "dx", () => fresh(npu, X, dt))),
        out(pick(o, "dgamma", () => fresh(npu, [L]))),
      ];
    case "aclnnInplaceAddRmsNorm":
      return [
        t(pick(o, "x1Ref", x)),
        t(pick(o, "x2Ref", dy)),
        t(pick(o, "gamma", () => full(npu, [L], 1.5, dt))),
        arg.f64(EPS),
        out(pick(o, "rstd", () => fresh(npu, ROWS))),
      ];
    case "aclnnBatchNormReduce":
      return [
        t(pick(o, "x", () => dev(npu, seq(N * C * L, 1, 2, 0.5), [N, C, L, 1], dt))),
        out(pick(o, "sum", () => fresh(npu, [C]))),
        out(pick(o, "squareSum", () => fresh(npu, [C]))),
      ];
    case "aclnnSyncBatchNormGatherStats":
      return [
        t(pick(o, "totalSum", () => dev(npu, seq(2 * C, 3), [2, C], dt))),
        t(pick(o, "totalSquareSum", () => full(npu, [2, C], 20, dt))),
        t(pick(o, "sampleCount", () => full(npu, [2], 10, dt))),
        t(pick(o, "mean", () => full(npu, [C], 0, dt))),
        t(pick(o, "variance", () => full(npu, [C], 1, dt))),
        arg.f32(0.1),
        arg.f32(EPS),
        out(pick(o, "batchMean", () => fresh(npu, [C], dt))),
        out(pick(o, "batchInvstd", () => fresh(npu, [C], dt))),
      ];
    case "aclnnAddRmsNorm":
      return [
        t(pick(o, "x1", x)),
        t(pick(o, "x2", dy)),
        t(pick(o, "gamma", () => full(npu, [L], 1.5, dt))),
        arg.f64(EPS),
        out(pick(o, "y", () => fresh(npu, X, dt))),
        out(pick(o, "rstd", () => fresh(npu, ROWS))),
        out(pick(o, "x", () => fresh(npu, X, dt))),
      ];
    case "aclnnAddRmsNormCast": {
      // A 16-bit operator (its OpDef has no FLOAT row): float16 stands for float32.
      const h = dt === "float32" ? "float16" : dt;
      return [
        t(pick(o, "x1", () => dev(npu, seq(N * C * L, 1, 2, 0.5), X, h))),
        t(pick(o, "x2", () => dev(npu, seq(N * C * L, 2), X, h))),
        t(pick(o, "gamma", () => full(npu, [L], 1.5, h))),
        arg.f64(EPS),
        out(pick(o, "y1", () => fresh(npu, X))),
        out(pick(o, "y2", () => fresh(npu, X, h))),
        out(pick(o, "rstd", () => fresh(npu, ROWS))),
        out(pick(o, "x", () => fresh(npu, X, h))),
      ];
    }
    case "aclnnAdaLayerNorm":
    case "aclnnAdaLayerNormV2": // x [N, C, L]: B = N, S = C, H = L
      return [
        t(pick(o, "x", x)),
        t(pick(o, "scale", () => dev(npu, seq(N * L, 3, 0.5), [N, L], dt))),
        t(pick(o, "shift", () => dev(npu, seq(N * L, 4, 0.5), [N, 1, L], dt))),
        t(pick(o, "weight", () => undefined)),
        t(pick(o, "bias", () => undefined)),
        arg.f64(EPS),
        out(pick(o, "out", () => fresh(npu, X, dt))),
        ...(op === "aclnnAdaLayerNormV2"
          ? [
            out(pick(o, "mean", () => fresh(npu, ROWS, dt))),
            out(pick(o, "rstd", () => fresh(npu, ROWS, dt))),
          ]
          : []),
      ];
    case "aclnnAdaLayerNormBackward": // input [N, C, L]: B = N, S = C, H = L
      return [
        t(pick(o, "gradOut", dy)),
        t(pick(o, "input", x)),
        arg.intArray([L]),
        t(pick(o, "rstd", () => full(npu, ROWS, 1.5, dt))),
        t(pick(o, "mean", () => full(npu, ROWS, 0.5, dt))),
        t(pick(o, "scale", () => dev(npu, seq(N * L, 3, 0.5), [N, L], dt))),
        t(pick(o, "shift", () => dev(npu, seq(N * L, 4, 0.5), [N, 1, L], dt))),
        t(pick(o, "weight", () => undefined)),
        t(pick(o, "bias", () => undefined)),
        out(pick(o, "gradInput", () => fresh(npu, X, dt))),
        out(pick(o, "gradScale", () => fresh(npu, [N, L], dt))),
        out(pick(o, "gradShift", () => fresh(npu, [N, 1, L], dt))),
        out(pick(o, "gradWeight", () => fresh(npu, [L]))),
        out(pick(o, "gradBias", () => fresh(npu, [L]))),
      ];
    case "aclnnAddLayerNorm":
      return [
        t(pick(o, "x1", x)),
        t(pick(o, "x2", dy)),
        t(pick(o, "gamma", () => full(npu, [L], 1.5, dt))),
        t(pick(o, "beta", () => full(npu, [L], 0.5, dt))),
        t(pick(o, "bias", () => undefined)),
        arg.f64(EPS),
        arg.bool(true),
        out(pick(o, "y", () => fresh(npu, X, dt))),
        out(pick(o, "mean", () => fresh(npu, ROWS))),
        out(pick(o, "rstd", () => fresh(npu, ROWS))),
        out(pick(o, "x", () => fresh(npu, X, dt))),
      ];
    case "aclnnDeepNorm":
      return [
        t(pick(o, "x", x)),
        t(pick(o, "gx", dy)),
        t(pick(o, "beta", () => full(npu, [L], 0.5, dt))),
        t(pick(o, "gamma", () => full(npu, [L], 1.5, dt))),
        arg.f64(0.3),
        arg.f64(EPS),
        out(pick(o, "mean", () => fresh(npu, ROWS))),
        out(pick(o, "rstd", () => fresh(npu, ROWS))),
        out(pick(o, "y", () => fresh(npu, X, dt))),
      ];
    case "aclnnInstanceNorm": {
      // 4-D NCHW, C and H * W of 8 elements: the 32 bytes per axis the 310P kernel needs in
      // float32 (aclnnInstanceNorm.md); statistics in x's dtype.
      const x4 = [2, 8, 2, 4];
      return [
        t(pick(o, "x", () => dev(npu, seq(128, 1, 2, 0.5), x4, dt))),
        t(pick(o, "gamma", () => full(npu, [8], 1.5, dt))),
        t(pick(o, "beta", () => full(npu, [8], 0.5, dt))),
        arg.string("NCHW"),
        arg.f64(EPS),
        out(pick(o, "y", () => fresh(npu, x4, dt))),
        out(pick(o, "mean", () => fresh(npu, [2, 8, 1, 1], dt))),
        out(pick(o, "variance", () => fresh(npu, [2, 8, 1, 1], dt))),
      ];
    }
    case "aclnnAddLayerNormGrad":
      return [
        t(pick(o, "dy", dy)),
        t(pick(o, "x1", x)),
        t(pick(o, "x2", dy)),
        t(pick(o, "rstd", () => full(npu, ROWS, 1.25))),
        t(pick(o, "mean", () => full(npu, ROWS, 0.5))),
        t(pick(o, "gamma", () => full(npu, [L], 1.5, dt))),
        t(pick(o, "dsum", () => undefined)),
        out(pick(o, "dx", () => fresh(npu, X, dt))),
        out(pick(o, "dgamma", () => fresh(npu, [L]))),
        out(pick(o, "dbeta", () => fresh(npu, [L]))),
      ];
    case "aclnnDeepNormGrad":
      return [
        t(pick(o, "dy", dy)),
        t(pick(o, "x", x)),
        t(pick(o, "gx", dy)),
        t(pick(o, "gamma", () => full(npu, [L], 1.5, dt))),
        t(pick(o, "mean", () => full(npu, ROWS, 0.5))),
        t(pick(o, "rstd", () => full(npu, ROWS, 1.25))),
        arg.f64(0.3),
        out(pick(o, "dx", () => fresh(npu, X, dt))),
        out(pick(o, "dgx", () => fresh(npu, X, dt))),
        out(pick(o, "dbeta", () => fresh(npu, [L]))),
        out(pick(o, "dgamma", () => fresh(npu, [L]))),
      ];
    case "aclnnGroupNormSilu":
    case "aclnnGroupNormSiluV2":
      return [
        t(pick(o, "self", x)),
        t(pick(o, "gamma", () => full(npu, [C], 1.5, dt))),
        t(pick(o, "beta", () => full(npu, [C], 0.5, dt))),
        arg.i64(1),
        arg.f64(EPS),
        ...(op === "aclnnGroupNormSiluV2" ? [arg.bool(true)] : []),
        out(pick(o, "out", () => fresh(npu, X, dt))),
        out(pick(o, "meanOut", () => fresh(npu, [N, 1], dt))),
        out(pick(o, "rstdOut", () => fresh(npu, [N, 1], dt))),
      ];
    case "aclnnGroupNormSwish":
      return [
        t(pick(o, "x", x)),
        t(pick(o, "gamma", () => full(npu, [C], 1.5, dt))),
        t(pick(o, "beta", () => full(npu, [C], 0.5, dt))),
        arg.i64(1),
        arg.string("NCHW"),
        arg.f64(EPS),
        arg.bool(true),
        arg.f64(1),
        out(pick(o, "yOut", () => fresh(npu, X, dt))),
        out(pick(o, "meanOut", () => fresh(npu, [N, 1], dt))),
        out(pick(o, "rstdOut", () => fresh(npu, [N, 1], dt))),
      ];
    case "aclnnGroupNormSwishGrad":
      return [
        t(pick(o, "dy", dy)),
        t(pick(o, "mean", () => full(npu, [N, 1], 0.5, dt))),
        t(pick(o, "rstd", () => full(npu, [N, 1], 1.25, dt))),
        t(pick(o, "x", x)),
        t(pick(o, "gamma", () => full(npu, [C], 1.5, dt))),
        t(pick(o, "beta", () => full(npu, [C], 0.5, dt))),
        arg.i64(1),
        arg.string("NCHW"),
        arg.f64(1),
        arg.bool(true),
        arg.bool(true),
        out(pick(o, "dxOut", () => fresh(npu, X, dt))),
        out(pick(o, "dgammaOut", () => fresh(npu, [C], dt))),
        out(pick(o, "dbetaOut", () => fresh(npu, [C], dt))),
      ];
  }
}
