/**
 * `deno task bench` (with an NPU or the software CANN: ACLNN_NORM_LIB_DIR=<absolute build/sim>):
 * what dispatching one small operator costs when its signature was seen before (the prepared
 * call and its repeatable executor are reused) against the first call of a signature (200
 * shapes in turn, more than the 64 prepared calls kept, so every call prepares anew). The
 * small shape keeps the kernel's own time out of the way. `bench/dispatch.ts` sets the same
 * calls against C.
 *
 * @module
 */

import { batchNormReduceBackward, Tensor } from "../mod.ts";
import { benchDevices } from "./devices.ts";

const npu = benchDevices().find((d) => d.device !== "cpu");
if (npu && npu.device !== "cpu") {
  const device = npu.device;
  const C = 4;
  const put = (t: Tensor) => t.to(device);
  const params = {
    mean: put(Tensor.zeros([C])),
    invstd: put(Tensor.ones([C])),
    weight: put(Tensor.ones([C])),
  };
  const out = {
    sumDy: put(Tensor.zeros([C])),
    sumDyXmu: put(Tensor.zeros([C])),
    gradWeight: put(Tensor.zeros([C])),
    gradBias: put(Tensor.zeros([C])),
  };
  const problems = Array.from({ length: 200 }, (_, i) => {
    const shape = [2, C, 3 + i];
    return {
      gradOut: put(Tensor.random(shape, { seed: 2 * i + 1 })),
      input: put(Tensor.random(shape, { seed: 2 * i + 2 })),
    };
  });
  let next = 0;
  Deno.bench({
    name: `repeated call of one signature ${npu.name}`,
    group: "dispatch",
    baseline: true,
    fn() {
      batchNormReduceBackward({ ...problems[0], ...params, out });
    },
  });
  Deno.bench({
    name: `first call of a signature ${npu.name}`,
    group: "dispatch",
    fn() {
      next = (next + 1) % problems.length;
      batchNormReduceBackward({ ...problems[next], ...params, out });
    },
  });
}
