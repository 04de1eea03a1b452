/**
 * Every operator on the software CANN equals the CPU backend on the same inputs: BatchNorm
 * backward (training and eval, masks, layouts, mixed dtypes), GroupNorm backward, the InfiniOp
 * descriptor (including in place). Needs the built simulator (`deno task build:sim`).
 */

import assert from "node:assert/strict";
import type { AscendDevice } from "../src/ffi/runtime.ts";
import { batchNormBackward } from "../src/ops/batch_norm_backward.ts";
import { groupNormBackward } from "../src/ops/group_norm_backward.ts";
import { createBatchNormBackwardDescriptor } from "../src/ops/infiniop_batch_norm_backward.ts";
import type { DType } from "../src/tensor/dtype.ts";
import { Tensor } from "../src/tensor/tensor.ts";
import { assertClose, toleranceFor } from "./helpers/assert.ts";
import { liveDelta, openSim, simStats } from "./helpers/ffi_sim.ts";

type Tensors = Record<string, Tensor | undefined>;

function toDevice<T extends Tensors>(xs: T, npu: AscendDevice): T {
  return Object.fromEntries(Object.entries(xs).map(([k, v]) => [k, v?.to(npu)])) as T;
}

function compare(
  actual: Record<string, Tensor | null>,
  expected: Record<string, Tensor | null>,
  npu: AscendDevice,
  what: string,
) {
  for (const [key, e] of Object.entries(expected)) {
    const a = actual[key];
    assert.equal(a === null, e === null, `${what} ${key} presence`);
    if (!a || !e) continue;
    assert.equal(a.device, npu, `${what} ${key} device`);
    assert.equal(a.dtype, e.dtype, `${what} ${key} dtype`);
    assert.deepEqual(a.shape, e.shape, `${what} ${key} shape`);
    const tol = toleranceFor(a.dtype);
    // Both sides accumulate in float64 here; fp32 hardware would need ~1e-4 relative.
    assertClose(
      a,
      e,
      { rtol: Math.max(1e-4, 2 * tol.rtol), atol: Math.max(1e-4, 2 * tol.atol) },
      `${what} ${key}`,
    );
  }
}

const channelsLast = (t: Tensor) => t.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2]);

Deno.test("npu ops: batchNormBackward equals the CPU backend", () => {
  const before = simStats();
  {
    using npu = openSim();
    const cases: {
      name: string;
      shape: number[];
      dtype: DType;
      stats: DType;
      training: boolean;
      mask?: boolean[];
      layout?: (t: Tensor) => Tensor;
      noWeight?: boolean;
    }[] = [
      { name: "train fp32", shape: [4, 3, 5], dtype: "float32", stats: "float32", training: true },
      { name: "eval fp32", shape: [4, 3, 5], dtype: "float32", stats: "float32", training: false },
      {
        name: "train channels-last",
        shape: [2, 3, 4, 5],
        dtype: "float32",
        stats: "float32",
        training: true,
        layout: channelsLast,
      },
      {
        name: "train fp16/fp32",
        shape: [3, 4, 6],
        dtype: "float16",
        stats: "float32",
        training: true,
      },
      {
        name: "eval bf16",
        shape: [3, 2, 2, 3],
        dtype: "bfloat16",
        stats: "bfloat16",
        training: false,
      },
      {
        name: "mask [1,0,1], no weight",
        shape: [5, 2],
        dtype: "float32",
        stats: "float32",
        training: true,
        mask: [true, false, true],
        noWeight: true,
      },
    ];
    for (const c of cases) {
      const C = c.shape[1];
      const layout = c.layout ?? ((t: Tensor) => t);
      const host = {
        gradOut: layout(Tensor.random(c.shape, { seed: 1, dtype: c.dtype })),
        input: layout(Tensor.random(c.shape, { seed: 2, dtype: c.dtype })),
        weight: c.noWeight ? undefined : Tensor.random([C], { seed: 3, dtype: c.stats }),
        runningMean: Tensor.random([C], { seed: 4, dtype: c.stats }),
        runningVar: Tensor.random([C], { seed: 5, dtype: c.stats, low: 0.5, high: 2 }),
        saveMean: Tensor.random([C], { seed: 6, dtype: c.stats }),
        saveInvstd: Tensor.random([C], { seed: 7, dtype: c.stats, low: 0.5, high: 2 }),
      };
      const flags = { training: c.training, eps: 1e-3, outputMask: c.mask };
      const cpu = batchNormBackward({ ...host, ...flags });
      const dev = batchNormBackward({ ...toDevice(host, npu), ...flags });
      compare({ ...dev }, { ...cpu }, npu, `batchNormBackward ${c.name}`);
    }
  }
  assert.deepEqual(liveDelta(before, simStats()), {});
});

Deno.test("npu ops: groupNormBackward equals the CPU backend", () => {
  using npu = openSim();
  const cases: {
    name: string;
    shape: number[];
    group: number;
    dtype: DType;
    stats: DType;
    gamma?: boolean;
  }[] = [
    {
      name: "fp32 4-D",
      shape: [2, 6, 3, 2],
      group: 3,
      dtype: "float32",
      stats: "float32",
      gamma: true,
    },
    { name: "fp32 3-D no gamma", shape: [3, 4, 5], group: 2, dtype: "float32", stats: "float32" },
    {
      name: "fp16/fp32",
      shape: [2, 4, 6],
      group: 4,
      dtype: "float16",
      stats: "float32",
      gamma: true,
    },
    { name: "bf16", shape: [2, 4, 3], group: 1, dtype: "bfloat16", stats: "bfloat16", gamma: true },
  ];
  for (const c of cases) {
    const [N, C] = c.shape;
    const host = {
      gradOut: Tensor.random(c.shape, { seed: 1, dtype: c.dtype }),
      input: Tensor.random(c.shape, { seed: 2, dtype: c.dtype }),
      mean: Tensor.random([N, c.group], { seed: 3, dtype: c.stats }),
      rstd: Tensor.random([N, c.group], { seed: 4, dtype: c.stats, low: 0.5, high: 2 }),
      gamma: c.gamma ? Tensor.random([C], { seed: 5, dtype: c.stats }) : undefined,
    };
    const cpu = groupNormBackward({ ...host, group: c.group });
    const dev = groupNormBackward({ ...toDevice(host, npu), group: c.group });
    compare({ ...dev }, { ...cpu }, npu, `groupNormBackward ${c.name}`);
  }
});

Deno.test("npu ops: the InfiniOp descriptor computes on the NPU, also in place", () => {
  using npu = openSim();
  for (const dtype of ["float32", "float16"] as DType[]) {
    const [N, C, L] = [3, 4, 5];
    const x = Tensor.random([N, C, L], { seed: 1, dtype });
    const dy = Tensor.random([N, C, L], { seed: 2, dtype });
    const w = Tensor.random([C], { seed: 3, dtype });
    const xs = x.toFloat64Array();
    const mean = new Float64Array(C);
    const variance = new Float64Array(C);
    for (let i = 0; i < xs.length; i++) mean[Math.floor(i / L) % C] += xs[i] / (N * L);
    for (let i = 0; i < xs.length; i++) {
      const c = Math.floor(i / L) % C;
      variance[c] += (xs[i] - mean[c]) ** 2 / (N * L);
    }
    const host = {
      input: x,
      gradOutput: dy,
      weight: w,
      runningMean: Tensor.fromArray(mean, [C], dtype),
      runningVar: Tensor.fromArray(variance, [C], dtype),
    };
    const outs = (device: "cpu" | AscendDevice) => ({
      gradInput: Tensor.zeros([N, C, L], dtype, device),
      gradWeight: Tensor.zeros([C], dtype, device),
      gradBias: Tensor.zeros([C], dtype, device),
    });
    using desc = createBatchNormBackwardDescriptor({ ...host, ...outs("cpu"), eps: 1e-5 });
    const cpuOut = outs("cpu");
    desc.compute({ ...host, ...cpuOut });
    const dev = toDevice(host, npu);
    const devOut = outs(npu);
    desc.compute({ ...dev, ...devOut });
    compare({ ...devOut }, { ...cpuOut }, npu, `descriptor ${dtype}`);
    // In place: gradInput is gradOutput's storage.
    const inPlace = dy.to(npu);
    desc.compute({ ...dev, ...devOut, gradOutput: inPlace, gradInput: inPlace });
    compare({ gradInput: inPlace }, { gradInput: cpuOut.gradInput }, npu, `in place ${dtype}`);
    // Eval reading (training: false): fixed running statistics, eps added by the kernel.
    using evalDesc = createBatchNormBackwardDescriptor({
      ...host,
      ...outs("cpu"),
      eps: 1e-3,
      training: false,
    });
    const cpuEval = outs("cpu");
    evalDesc.compute({ ...host, ...cpuEval });
    const devEval = outs(npu);
    evalDesc.compute({ ...dev, ...devEval });
    compare({ ...devEval }, { ...cpuEval }, npu, `eval descriptor ${dtype}`);
  }
});
