/**
 * The CPU benchmark cases shared by `bench/cpu_kernels.bench.ts` and `bench/cpu_compare.ts`:
 * the public operators on one dtype, shape and layout, with their inputs built once and
 * the large outputs preallocated (`out`) in the inputs' layout, so that a run times the
 * kernel (plus validation) and a channels-last call writes channels-last, as PyTorch does.
 *
 * @module
 */

import {
  batchNorm,
  batchNormBackward,
  batchNormElemt,
  batchNormElemtBackward,
  batchNormGatherStatsWithCounts,
  batchNormReduceBackward,
  batchNormStats,
  createBatchNormBackwardDescriptor,
  type DType,
  groupNorm,
  groupNormBackward,
  groupNormSilu,
  Tensor,
} from "../mod.ts";
import type { BenchLayout, CpuOp } from "./cpu_case_names.ts";

/** GroupNorm groups: 32, or 4 when C = 16 (as the PyTorch baseline uses). */
export function groupsFor(C: number): number {
  return C === 16 ? 4 : 32;
}

/**
 * A tensor of `shape` (NCHW logical) stored channels-last when asked (the NCHW original is
 * disposed, so its host heap block is free at once).
 */
function inLayout(t: Tensor, layout: BenchLayout): Tensor {
  if (layout === "contiguous" || t.rank < 3) return t;
  const r = t.rank;
  const toLast = [0, ...Array.from({ length: r - 2 }, (_, i) => i + 2), 1];
  const back = [0, r - 1, ...Array.from({ length: r - 2 }, (_, i) => i + 1)];
  const stored = t.permute(toLast).contiguous().permute(back);
  t.dispose();
  return stored;
}

/** A zero tensor of `shape` in `layout`. */
function zerosIn(shape: readonly number[], dtype: DType, layout: BenchLayout): Tensor {
  return inLayout(Tensor.zeros(shape, dtype), layout);
}

/** One benchmark case: its tensors are built; `run` calls the operator once. */
export interface CpuCase {
  /** Runs the operator once on the case's tensors, into preallocated data outputs (`out`). */
  run(): void;
  /**
   * Runs it as users write it: outputs allocated by the call, the result disposed at once (as
   * `using` does).
   */
  runNatural(): void;
  /** Outputs allocated by the call, the result dropped (left to the garbage collector). */
  runDropped(): void;
  /**
   * Runs it with outputs allocated by the call and returns the result (a Tensor or a result
   * object), for comparing outputs; the caller disposes it.
   */
  result(): unknown;
  /**
   * Frees the case's data tensors (their host heap blocks: cases are built one at a time,
   * so that every case finds room in the heap, as a program that disposes would).
   */
  dispose(): void;
}

/**
 * A case that runs `op` on prepared tensors, or undefined when the op does not take this
 * case (the InfiniOp descriptor takes contiguous (N, C, L) tensors only).
 */
export function cpuCase(
  op: CpuOp,
  dtype: DType,
  shape: readonly number[],
  layout: BenchLayout,
): CpuCase | undefined {
  const made: Tensor[] = [];
  const run = caseRun(op, dtype, shape, layout, made);
  if (!run) {
    for (const t of made) t.dispose();
    return undefined;
  }
  return {
    run: () => void run(true),
    runNatural: () => disposeResult(run(false)),
    runDropped: () => void run(false),
    result: () => run(false),
    dispose: () => made.forEach((t) => t.dispose()),
  };
}

/**
 * What a case costs, for an estimate of a run (bench:cpu): building it, one call as users write
 * it (after a first one), and one such call inside `reference` (which swaps in other kernels;
 * 0 without it), in milliseconds. Frees the case.
 */
export function probeCase(
  op: CpuOp,
  dtype: DType,
  shape: readonly number[],
  layout: BenchLayout,
  reference?: <T>(body: () => T) => T,
): { build: number; fast: number; reference: number } {
  const began = performance.now();
  const built = cpuCase(op, dtype, shape, layout)!;
  const build = performance.now() - began;
  const callMs = () => {
    const start = performance.now();
    built.runNatural();
    return performance.now() - start;
  };
  try {
    built.runNatural();
    return { build, fast: callMs(), reference: reference ? reference(callMs) : 0 };
  } finally {
    built.dispose();
  }
}

/** Disposes an operator's result: a Tensor or a Disposable result object. */
function disposeResult(result: unknown): void {
  if (result instanceof Tensor) result.dispose();
  else if (result && typeof result === "object" && Symbol.dispose in result) {
    (result as Disposable)[Symbol.dispose]();
  }
}

/**
 * The operator call of a case, with its data outputs preallocated (`withOut`) or allocated by
 * the call; the data tensors it makes go into `made`.
 */
function caseRun(
  op: CpuOp,
  dtype: DType,
  shape: readonly number[],
  layout: BenchLayout,
  made: Tensor[],
): ((withOut: boolean) => unknown) | undefined {
  const [N, C] = shape;
  const HxW = shape.slice(2).reduce((a, b) => a * b, 1);
  const group = groupsFor(C);
  const track = (t: Tensor) => (made.push(t), t);
  const x = track(
    inLayout(Tensor.random(shape, { seed: 1, dtype, distribution: "normal" }), layout),
  );
  const dy = track(
    inLayout(Tensor.random(shape, { seed: 2, dtype, distribution: "normal" }), layout),
  );
  const data = () => track(zerosIn(shape, dtype, layout));
  const perChannel = (seed: number, low = -1, high = 1, d: DType = "float32") =>
    Tensor.random([C], { seed, low, high, dtype: d });
  const mean = perChannel(3, -0.1, 0.1);
  const invstd = perChannel(4, 0.5, 2);
  const weight = perChannel(5, 0.5, 1.5);
  const bias = perChannel(6);
  switch (op) {
    case "batchNormReduceBackward":
      return () => batchNormReduceBackward({ gradOut: dy, input: x, mean, invstd, weight });
    case "batchNormBackward": {
      const out = { gradInput: data() };
      return (withOut) =>
        batchNormBackward({
          gradOut: dy,
          input: x,
          weight,
          saveMean: mean,
          saveInvstd: invstd,
          training: true,
          out: withOut ? out : undefined,
        });
    }
    case "batchNormBackwardDescriptor": {
      if (layout !== "contiguous") return undefined;
      const L = HxW;
      const view = (t: Tensor) => t.reshape([N, C, L]);
      const same = (t: Tensor) => Tensor.fromArray(t.toFloat64Array(), [C], dtype);
      const args = {
        gradInput: view(data()),
        gradWeight: Tensor.zeros([C], dtype),
        gradBias: Tensor.zeros([C], dtype),
        input: view(x),
        gradOutput: view(dy),
        weight: same(weight),
        runningMean: same(mean),
        runningVar: same(perChannel(7, 0.5, 2)),
      };
      const desc = createBatchNormBackwardDescriptor(args);
      const workspace = new Uint8Array(desc.workspaceSize);
      return () => desc.compute({ ...args, workspace });
    }
    case "groupNormBackward": {
      const out = { gradInput: data() };
      const gnMean = Tensor.random([N, group], { seed: 8, low: -0.1, high: 0.1, dtype });
      const rstd = Tensor.random([N, group], { seed: 9, low: 0.5, high: 2, dtype });
      const gamma = perChannel(5, 0.5, 1.5, dtype);
      return (withOut) =>
        groupNormBackward({
          gradOut: dy,
          input: x,
          mean: gnMean,
          rstd,
          gamma,
          group,
          out: withOut ? out : undefined,
        });
    }
    case "batchNormStats":
      return () => batchNormStats({ input: x });
    case "batchNormGatherStatsWithCounts": {
      const W = 8;
      const means = Tensor.random([W, C], { seed: 10, low: -0.1, high: 0.1 });
      const invstds = Tensor.random([W, C], { seed: 11, low: 0.5, high: 2 });
      const counts = Tensor.full([W], N * HxW / W);
      const runningMean = Tensor.zeros([C]);
      const runningVar = Tensor.ones([C]);
      return () =>
        batchNormGatherStatsWithCounts({
          input: x,
          mean: means,
          invstd: invstds,
          runningMean,
          runningVar,
          counts,
        });
    }
    case "batchNormElemt": {
      const out = { output: data() };
      const [w, b, m, s] = [weight, bias, mean, invstd].map((t) =>
        Tensor.fromArray(t.toFloat64Array(), [C], dtype)
      );
      return (withOut) =>
        batchNormElemt({
          input: x,
          weight: w,
          bias: b,
          mean: m,
          invstd: s,
          out: withOut ? out : undefined,
        });
    }
    case "batchNormElemtBackward": {
      const out = { gradInput: data() };
      const sumDy = perChannel(12, -5, 5);
      const sumDyXmu = perChannel(13, -5, 5);
      const counter = Tensor.fromArray([N * HxW], [1], "int32");
      return (withOut) =>
        batchNormElemtBackward({
          gradOut: dy,
          input: x,
          mean,
          invstd,
          weight,
          sumDy,
          sumDyXmu,
          counter,
          out: withOut ? out : undefined,
        });
    }
    case "batchNorm": {
      const out = { output: data() };
      const runningMean = Tensor.zeros([C]);
      const runningVar = Tensor.ones([C]);
      return (withOut) =>
        batchNorm({
          input: x,
          weight,
          bias,
          runningMean,
          runningVar,
          training: true,
          out: withOut ? out : undefined,
        });
    }
    case "groupNorm": {
      const out = { output: data() };
      const gamma = perChannel(5, 0.5, 1.5, dtype);
      const beta = perChannel(6, -1, 1, dtype);
      return (withOut) =>
        groupNorm({ input: x, gamma, beta, group, out: withOut ? out : undefined });
    }
    case "groupNormSilu": {
      const out = { output: data() };
      const gamma = perChannel(5, 0.5, 1.5, dtype);
      const beta = perChannel(6, -1, 1, dtype);
      return (withOut) =>
        groupNormSilu({ self: x, gamma, beta, group, out: withOut ? out : undefined });
    }
  }
}
