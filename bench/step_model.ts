/**
 * The training step of `deno task bench:step`, layer for layer what bench/torch_step.py runs
 * in PyTorch: BatchNorm (training, running statistics updated) on [16,64,32,32],
 * [16,128,16,16] and [16,256,8,8], GroupNorm [16,64,32,32] with 32 groups, LayerNorm and
 * RMSNorm on [2048,768]; forward in order, backward in reverse, each backward fed a fixed
 * upstream gradient. Every call allocates its outputs.
 *
 * @module
 */

import {
  batchNorm,
  batchNormBackward,
  type DType,
  groupNorm,
  groupNormBackward,
  layerNorm,
  layerNormBackward,
  rmsNorm,
  rmsNormGrad,
  Tensor,
} from "../mod.ts";

/** BatchNorm layers' input shapes. */
export const BN_SHAPES: readonly (readonly number[])[] = [
  [16, 64, 32, 32],
  [16, 128, 16, 16],
  [16, 256, 8, 8],
];
/** GroupNorm's input shape and group count. */
export const GN_SHAPE: readonly number[] = [16, 64, 32, 32];
/** GroupNorm's groups. */
export const GN_GROUPS = 32;
/** LayerNorm's and RMSNorm's input shape, normalized over the last dim. */
export const ROWS_SHAPE: readonly number[] = [2048, 768];

/** One layer's tensors: input, upstream gradient, parameters. */
interface Layer {
  readonly x: Tensor;
  readonly dy: Tensor;
  readonly weight: Tensor;
  readonly bias: Tensor;
}

/** The model's tensors in one dtype. */
export interface StepModel {
  /** Data dtype (parameters and running statistics too, as `nn.BatchNorm2d(dtype=...)`). */
  readonly dtype: DType;
  /** BatchNorm layers with their running statistics. */
  readonly bn: readonly (Layer & { readonly runningMean: Tensor; readonly runningVar: Tensor })[];
  /** The GroupNorm layer. */
  readonly gn: Layer;
  /** The LayerNorm layer. */
  readonly ln: Layer;
  /** The RMSNorm layer (bias unused). */
  readonly rms: Layer;
}

/** The model's tensors: standard-normal data from fixed seeds. */
export function stepModel(dtype: DType): StepModel {
  let seed = 1;
  const layer = (shape: readonly number[], features: number): Layer => ({
    x: Tensor.random(shape, { seed: seed++, dtype }),
    dy: Tensor.random(shape, { seed: seed++, dtype }),
    weight: Tensor.ones([features], dtype),
    bias: Tensor.zeros([features], dtype),
  });
  return {
    dtype,
    bn: BN_SHAPES.map((s) => ({
      ...layer(s, s[1]),
      runningMean: Tensor.zeros([s[1]], dtype),
      runningVar: Tensor.ones([s[1]], dtype),
    })),
    gn: layer(GN_SHAPE, GN_SHAPE[1]),
    ln: layer(ROWS_SHAPE, ROWS_SHAPE[1]),
    rms: layer(ROWS_SHAPE, ROWS_SHAPE[1]),
  };
}

/** Every tensor a step allocated, for the style that frees them. */
export type StepResults = Disposable[];

/**
 * One training step. Returns the result objects the calls made; the caller drops them (the
 * dropped style) or disposes each (`using`).
 */
export function trainingStep(m: StepModel): StepResults {
  const results: Disposable[] = [];
  const forwards = m.bn.map((l) => {
    const f = batchNorm({
      input: l.x,
      weight: l.weight,
      bias: l.bias,
      runningMean: l.runningMean,
      runningVar: l.runningVar,
      training: true,
    });
    results.push(f);
    return f;
  });
  const [N, C] = GN_SHAPE;
  const HxW = GN_SHAPE[2] * GN_SHAPE[3];
  const gn = groupNorm({ input: m.gn.x, gamma: m.gn.weight, beta: m.gn.bias, group: GN_GROUPS });
  const normalizedShape = [ROWS_SHAPE[1]];
  const ln = layerNorm({ input: m.ln.x, normalizedShape, weight: m.ln.weight, bias: m.ln.bias });
  const rms = rmsNorm({ x: m.rms.x, gamma: m.rms.weight });
  results.push(gn, ln, rms);

  results.push(rmsNormGrad({ dy: m.rms.dy, x: m.rms.x, rstd: rms.rstd, gamma: m.rms.weight }));
  results.push(layerNormBackward({
    gradOut: m.ln.dy,
    input: m.ln.x,
    normalizedShape,
    mean: ln.mean,
    rstd: ln.rstd,
    weight: m.ln.weight,
    bias: m.ln.bias,
  }));
  results.push(groupNormBackward({
    gradOut: m.gn.dy,
    input: m.gn.x,
    mean: gn.mean,
    rstd: gn.rstd,
    gamma: m.gn.weight,
    N,
    C,
    HxW,
    group: GN_GROUPS,
  }));
  for (let i = m.bn.length - 1; i >= 0; i--) {
    const l = m.bn[i];
    results.push(batchNormBackward({
      gradOut: l.dy,
      input: l.x,
      weight: l.weight,
      runningMean: l.runningMean,
      runningVar: l.runningVar,
      saveMean: forwards[i].saveMean,
      saveInvstd: forwards[i].saveInvstd,
      training: true,
    }));
  }
  return results;
}
