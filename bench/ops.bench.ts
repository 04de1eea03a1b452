/**
 * `deno task bench`: the seed operators on the CPU backend at a training-sized shape, per
 * dtype, and the same calls through the NPU code path when a CANN (or the software CANN in
 * build/sim, via ACLNN_NORM_LIB_DIR) can be opened. Compare groups side by side in one run.
 *
 * @module
 */

import { batchNormBackward, batchNormReduceBackward, groupNormBackward, Tensor } from "../mod.ts";
import type { Device, DType } from "../mod.ts";
import { benchDevices } from "./devices.ts";

const shape = [8, 64, 16, 16];
const [N, C] = shape;
const group = 32;

function inputs(dtype: DType, device: Device) {
  const put = (t: Tensor) => t.to(device);
  return {
    x: put(Tensor.random(shape, { seed: 1, dtype })),
    dy: put(Tensor.random(shape, { seed: 2, dtype })),
    mean: put(Tensor.random([C], { seed: 3 })),
    invstd: put(Tensor.random([C], { seed: 4, low: 0.5, high: 2 })),
    weight: put(Tensor.random([C], { seed: 5 })),
    gnMean: put(Tensor.random([N, group], { seed: 6 })),
    gnRstd: put(Tensor.random([N, group], { seed: 7, low: 0.5, high: 2 })),
  };
}

for (const { name, device } of benchDevices()) {
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    const t = inputs(dtype, device);
    // Reading one element forces the device to finish (downloads synchronise the stream).
    const settle = (r: Tensor | null) => r?.slice(0, 0, 1).toFloat64Array();
    Deno.bench({
      name: `batchNormReduceBackward ${dtype} ${name}`,
      group: `reduce-${dtype}`,
      baseline: device === "cpu",
      fn() {
        settle(
          batchNormReduceBackward({
            gradOut: t.dy,
            input: t.x,
            mean: t.mean,
            invstd: t.invstd,
            weight: t.weight,
          }).gradBias,
        );
      },
    });
    Deno.bench({
      name: `batchNormBackward ${dtype} ${name}`,
      group: `bn-backward-${dtype}`,
      baseline: device === "cpu",
      fn() {
        settle(
          batchNormBackward({
            gradOut: t.dy,
            input: t.x,
            weight: t.weight,
            saveMean: t.mean,
            saveInvstd: t.invstd,
            training: true,
          }).gradInput,
        );
      },
    });
    Deno.bench({
      name: `groupNormBackward ${dtype} ${name}`,
      group: `gn-backward-${dtype}`,
      baseline: device === "cpu",
      fn() {
        settle(
          groupNormBackward({
            gradOut: t.dy,
            input: t.x,
            mean: t.gnMean,
            rstd: t.gnRstd,
            gamma: t.weight,
            group,
          }).gradInput,
        );
      },
    });
  }
}
