/**
 * Allocated outputs keep their input's memory layout (PyTorch's preserve_format): a
 * channels-last input gives channels-last data outputs, on every backend, with the values of
 * the contiguous computation.
 */

import assert from "node:assert/strict";
import { batchNorm } from "../../src/ops/batch_norm.ts";
import { batchNormBackward } from "../../src/ops/batch_norm_backward.ts";
import { batchNormElemt } from "../../src/ops/batch_norm_elemt.ts";
import { batchNormElemtBackward } from "../../src/ops/batch_norm_elemt_backward.ts";
import { groupNorm } from "../../src/ops/group_norm.ts";
import { groupNormBackward } from "../../src/ops/group_norm_backward.ts";
import { stridesLike } from "../../src/tensor/layout.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import type { Device } from "../../src/tensor/device.ts";
import { assertClose } from "../helpers/assert.ts";
import { openSim } from "../helpers/ffi_sim.ts";

const [N, C, H, W] = [2, 4, 3, 5];
const CHANNELS_LAST = [C * H * W, 1, W * C, C];

function channelsLast(seed: number): Tensor {
  return Tensor.random([N, H, W, C], { seed }).permute([0, 3, 1, 2]);
}

Deno.test("layout: stridesLike keeps the dimension order of any dense or strided layout", () => {
  assert.deepEqual(stridesLike([2, 3, 4], [12, 4, 1]), [12, 4, 1]);
  assert.deepEqual(stridesLike([N, C, H, W], CHANNELS_LAST), CHANNELS_LAST);
  // A slice of a channels-last tensor (not dense) still gives compact channels-last strides.
  const sliced = channelsLast(1).slice(1, 0, 2);
  assert.deepEqual(stridesLike(sliced.shape, sliced.strides), [2 * H * W, 1, W * 2, 2]);
  // Size-1 and zero-size dimensions.
  assert.deepEqual(stridesLike([1, 3, 1], [3, 1, 1]), [3, 1, 1]);
  assert.deepEqual(stridesLike([0, 3], [3, 1]), [3, 1]);
});

function check(device: Device): void {
  const x = channelsLast(1).to(device);
  const dy = channelsLast(2).to(device);
  const xc = x.to("cpu").contiguous();
  const dyc = dy.to("cpu").contiguous();
  const mean = Tensor.random([C], { seed: 3 }).to(device);
  const invstd = Tensor.random([C], { seed: 4, low: 0.5, high: 2 }).to(device);
  const cases: [string, Tensor, Tensor][] = [
    [
      "batchNorm",
      batchNorm({ input: x, training: true }).output,
      batchNorm({ input: xc, training: true }).output,
    ],
    [
      "batchNormBackward",
      batchNormBackward({
        gradOut: dy,
        input: x,
        saveMean: mean,
        saveInvstd: invstd,
        training: true,
      })
        .gradInput!,
      batchNormBackward({
        gradOut: dyc,
        input: xc,
        saveMean: mean.to("cpu"),
        saveInvstd: invstd.to("cpu"),
        training: true,
      }).gradInput!,
    ],
    [
      "batchNormElemt",
      batchNormElemt({ input: x, mean, invstd }),
      batchNormElemt({ input: xc, mean: mean.to("cpu"), invstd: invstd.to("cpu") }),
    ],
    [
      "batchNormElemtBackward",
      batchNormElemtBackward({
        gradOut: dy,
        input: x,
        mean,
        invstd,
        sumDy: mean,
        sumDyXmu: invstd,
        counter: Tensor.fromArray([N * H * W], [1], "int32").to(device),
      }),
      batchNormElemtBackward({
        gradOut: dyc,
        input: xc,
        mean: mean.to("cpu"),
        invstd: invstd.to("cpu"),
        sumDy: mean.to("cpu"),
        sumDyXmu: invstd.to("cpu"),
        counter: Tensor.fromArray([N * H * W], [1], "int32"),
      }),
    ],
    [
      "groupNorm",
      groupNorm({ input: x, group: 2 }).output,
      groupNorm({ input: xc, group: 2 }).output,
    ],
  ];
  const gn = groupNorm({ input: xc, group: 2 });
  cases.push([
    "groupNormBackward",
    groupNormBackward({
      gradOut: dy,
      input: x,
      mean: gn.mean.to(device),
      rstd: gn.rstd.to(device),
      group: 2,
    }).gradInput!,
    groupNormBackward({ gradOut: dyc, input: xc, mean: gn.mean, rstd: gn.rstd, group: 2 })
      .gradInput!,
  ]);
  for (const [name, got, want] of cases) {
    assert.deepEqual(got.strides, CHANNELS_LAST, `${name}: the output is channels-last`);
    assert.deepEqual(
      want.strides,
      [C * H * W, H * W, W, 1],
      `${name}: contiguous stays contiguous`,
    );
    assertClose(got, want, { rtol: 1e-5, atol: 1e-6 }, name);
  }
}

Deno.test("layout: outputs keep a channels-last input's layout [cpu]", () => check("cpu"));

Deno.test("layout: outputs keep a channels-last input's layout [sim]", () => {
  using npu = openSim();
  check(npu);
});
