/**
 * The PyTorch fixture (tests/nn/fixtures/torch_modules.json, written by
 * tests/nn/make_torch_fixtures.py with torch.nn on float32 CPU tensors) and the pieces the
 * replays share: its types, the layouts an input is replayed in, the comparison of one step,
 * and the SGD update the fixture applied (p <- p - lr * grad).
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Device } from "../../src/tensor/device.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import type { NormGradients } from "../../src/nn/mod.ts";
import { assertClose } from "../helpers/assert.ts";
import { on } from "../helpers/backends.ts";
import { PYTORCH_FLOAT32 } from "../helpers/tolerance.ts";

/** A module's state after a step, by the package's property names. */
export interface TorchState {
  weight?: number[];
  bias?: number[];
  runningMean?: number[];
  runningVar?: number[];
  numBatchesTracked?: number;
}

/** One forward + backward (+ SGD update in training) as torch ran it. */
export interface TorchStep {
  x: number[];
  dy: number[];
  output: number[];
  gradInput: number[];
  gradWeight?: number[];
  gradBias?: number[];
  /** The state after the step (after the SGD update in training). */
  after: TorchState;
}

/** One case: a module, its training steps, eval, and the state-dict round trip. */
export interface TorchCase {
  name: string;
  module: "BatchNorm" | "GroupNorm" | "InstanceNorm";
  shape: number[];
  options: Record<string, number | boolean | null>;
  lr: number;
  steps: TorchStep[];
  eval: TorchStep;
  stateDict: Record<string, number[] | number>;
  loaded: { eval: TorchStep; train?: TorchStep };
}

const url = new URL("./fixtures/torch_modules.json", import.meta.url);

/** The fixture's arrays: each is stored as one string of space-separated decimals. */
const ARRAYS = new Set([
  "x",
  "dy",
  "output",
  "gradInput",
  "gradWeight",
  "gradBias",
  "weight",
  "bias",
  "runningMean",
  "runningVar",
  "running_mean",
  "running_var",
]);

/** The fixture's cases. */
export const TORCH_CASES: readonly TorchCase[] = JSON.parse(
  Deno.readTextFileSync(url),
  (key, value) =>
    ARRAYS.has(key) && typeof value === "string" ? value.split(" ").map(Number) : value,
).cases;

/** The fixture's BatchNorm cases. */
export const BATCH_NORM_CASES: readonly TorchCase[] = TORCH_CASES.filter((c) =>
  c.module === "BatchNorm"
);

/** The fixture's GroupNorm cases. */
export const GROUP_NORM_CASES: readonly TorchCase[] = TORCH_CASES.filter((c) =>
  c.module === "GroupNorm"
);

/** The fixture's InstanceNorm cases. */
export const INSTANCE_NORM_CASES: readonly TorchCase[] = TORCH_CASES.filter((c) =>
  c.module === "InstanceNorm"
);

/** How a replay lays out its inputs: the same logical values, other strides. */
export interface Layout {
  readonly name: string;
  make(values: readonly number[], shape: readonly number[]): Tensor;
}

/** Row-major. */
export const CONTIGUOUS: Layout = {
  name: "contiguous",
  make: (values, shape) => Tensor.fromArray(values, shape),
};

/** Channel innermost (PyTorch's channels_last for rank 4, its analog for other ranks). */
export const CHANNELS_LAST: Layout = {
  name: "channels-last",
  make(values, shape) {
    const r = shape.length;
    const toLast = [0, ...Array.from({ length: r - 2 }, (_, i) => i + 2), 1];
    const back = [0, r - 1, ...Array.from({ length: r - 2 }, (_, i) => i + 1)];
    const t = Tensor.fromArray(values, shape).permute(toLast).contiguous().permute(back);
    assert.ok(r === 2 || t.strides[1] === 1, "channel stride 1");
    return t;
  },
};

/** A tensor of the fixture's values in `layout` on `device`. */
export function input(
  values: readonly number[],
  shape: readonly number[],
  layout: Layout,
  device: Device,
): Tensor {
  return on(layout.make(values, shape), device);
}

/** Compares a step's output and gradients with torch's. */
export function checkStep(
  where: string,
  output: Tensor,
  grads: NormGradients,
  step: TorchStep,
): void {
  assertClose(output, step.output, PYTORCH_FLOAT32, `${where} output`);
  assertClose(grads.gradInput, step.gradInput, PYTORCH_FLOAT32, `${where} gradInput`);
  if (step.gradWeight) {
    assertClose(grads.gradWeight, step.gradWeight, PYTORCH_FLOAT32, `${where} gradWeight`);
    assertClose(grads.gradBias, step.gradBias!, PYTORCH_FLOAT32, `${where} gradBias`);
  } else {
    assert.equal(grads.gradWeight, null, `${where}: no gradWeight without affine`);
    assert.equal(grads.gradBias, null, `${where}: no gradBias without affine`);
  }
}

/** The module state a step compares (BatchNorm, SyncBatchNorm, GroupNorm, InstanceNorm). */
export interface ModuleState {
  readonly weight: Tensor | null;
  readonly bias: Tensor | null;
  readonly runningMean?: Tensor | null;
  readonly runningVar?: Tensor | null;
  readonly numBatchesTracked?: number | null;
}

/** Compares a module's state with torch's after the same step. */
export function checkState(where: string, m: ModuleState, after: TorchState): void {
  const pairs = [
    ["weight", m.weight, after.weight],
    ["bias", m.bias, after.bias],
    ["runningMean", m.runningMean ?? null, after.runningMean],
    ["runningVar", m.runningVar ?? null, after.runningVar],
  ] as const;
  for (const [name, actual, expected] of pairs) {
    if (expected === undefined) assert.equal(actual, null, `${where}: no ${name}`);
    else assertClose(actual, expected, PYTORCH_FLOAT32, `${where} ${name}`);
  }
  assert.equal(m.numBatchesTracked ?? null, after.numBatchesTracked ?? null, `${where} count`);
}

/** p <- p - lr * grad, as torch.optim.SGD(lr) without momentum (a no-op without affine). */
export function sgd(
  m: ModuleState,
  grads: { gradWeight: Tensor | null; gradBias: Tensor | null },
  lr: number,
): void {
  for (const [p, g] of [[m.weight, grads.gradWeight], [m.bias, grads.gradBias]] as const) {
    if (!p || !g) continue;
    const gv = g.toFloat64Array();
    p.copy_(p.toFloat64Array().map((v, i) => v - lr * gv[i]));
  }
}
