/**
 * The GroupNorm module against the float64 oracle (tests/oracle/), on every backend: ranks
 * 2-8, float32/float16/bfloat16, contiguous, channels-last and strided inputs, affine or not,
 * train and eval mode (the same computation), and its constructor rules.
 */

import assert from "node:assert/strict";
import { GroupNorm } from "../../src/nn/mod.ts";
import type { Device } from "../../src/tensor/device.ts";
import { type DType, roundToDType } from "../../src/tensor/dtype.ts";
import type { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { chipAccepts, forEachBackend, on } from "../helpers/backends.ts";
import { toleranceFor } from "../helpers/tolerance.ts";
import { groupNorm64, groupNormBackward64 } from "../oracle/mod.ts";
import { data, LAYOUTS, RANK_SHAPES } from "./module_inputs.ts";

const DTYPES: readonly DType[] = ["float32", "float16", "bfloat16"];

/** One forward + backward against the oracle. */
function checkStep(where: string, gn: GroupNorm, x: Tensor, dy: Tensor): void {
  const [N, C] = x.shape;
  const HxW = x.numel / (N * C);
  const gamma = gn.weight?.toFloat64Array();
  const beta = gn.bias?.toFloat64Array();
  const xv = x.toFloat64Array();
  const e = groupNorm64(xv, N, C, HxW, gn.numGroups, gamma, beta, gn.eps);
  using y = gn.forward(x);
  const tol = toleranceFor(x.dtype);
  assertClose(y, e.output, tol, `${where} output`);
  using grads = gn.backward(dy);
  // The module keeps mean and rstd as groupNorm writes them, in input's dtype: the backward
  // starts from those roundings.
  const saved = (v: Float64Array) => v.map((s) => roundToDType(s, x.dtype));
  const g = groupNormBackward64(
    dy.toFloat64Array(),
    xv,
    saved(e.mean),
    saved(e.rstd),
    gamma,
    N,
    C,
    HxW,
    gn.numGroups,
  );
  assertClose(grads.gradInput, g.gradInput, tol, `${where} gradInput`);
  if (gn.affine) {
    assertClose(grads.gradWeight, g.gradGamma, tol, `${where} gradWeight`);
    assertClose(grads.gradBias, g.gradBeta, tol, `${where} gradBias`);
  } else {
    assert.equal(grads.gradWeight, null);
    assert.equal(grads.gradBias, null);
  }
}

function sweep(device: Device, dtype: DType, affine: boolean): void {
  RANK_SHAPES.forEach((base, i) => {
    const shape = [base[0], 4, ...base.slice(2)]; // 4 channels in 2 groups
    const layout = LAYOUTS[i % LAYOUTS.length];
    const where = `${shape} ${dtype} ${layout} affine ${affine}`;
    using gn = new GroupNorm({ numGroups: 2, numChannels: 4, affine, dtype, device, eps: 1e-3 });
    gn.weight?.copy_([0.5, -1.25, 2, 1]);
    gn.bias?.copy_([0.25, 0, -0.75, 1]);
    for (const training of [true, false]) {
      gn.train(training);
      const x = on(data(shape, 10 + i, dtype, layout), device);
      const dy = on(data(shape, 20 + i, dtype, layout, -1, 1), device);
      checkStep(`${where} training ${training}`, gn, x, dy);
    }
  });
}

forEachBackend("GroupNorm module: ranks 2-8, dtypes, layouts against the oracle", (ctx) => {
  for (const dtype of DTYPES) {
    if (!chipAccepts(ctx.soc, "aclnnGroupNorm", [dtype])) continue;
    if (!chipAccepts(ctx.soc, "aclnnGroupNormBackward", [dtype])) continue;
    for (const affine of [true, false]) sweep(ctx.device, dtype, affine);
  }
});

Deno.test("GroupNorm module: options, defaults and PyTorch's divisibility rule", () => {
  using gn = new GroupNorm({ numGroups: 3, numChannels: 6 });
  assert.deepEqual(
    [gn.numGroups, gn.numChannels, gn.eps, gn.affine, gn.dtype, gn.device, gn.training],
    [3, 6, 1e-5, true, "float32", "cpu", true],
  );
  assert.deepEqual([gn.weight!.toArray(), gn.bias!.toArray()], [[1, 1, 1, 1, 1, 1], [
    0,
    0,
    0,
    0,
    0,
    0,
  ]]);
  assert.equal(gn.eval().training, false);
  const e = assertAclnnError(() => new GroupNorm({ numGroups: 4, numChannels: 6 }), 161002);
  assert.equal(e.argument, "numChannels");
  assert.match(e.message, /divisible by numGroups \(4\)/);
  assertAclnnError(() => new GroupNorm({ numGroups: 0, numChannels: 6 }), 161002, "numGroups");
  assertAclnnError(
    () => new GroupNorm({ numGroups: 2 } as unknown as { numGroups: 2; numChannels: 2 }),
    161002,
    "numChannels",
  );
});

Deno.test("GroupNorm module: the input's channels must be numChannels, its dtype the module's", () => {
  using gn = new GroupNorm({ numGroups: 2, numChannels: 4 });
  const e = assertAclnnError(
    () => gn.forward(data([2, 6, 3], 1, "float32", "contiguous")),
    161002,
    "input",
  );
  assert.match(e.message, /dim 1 of shape \[2, 6, 3\] must be numChannels \(4\)/);
  assertAclnnError(() => gn.forward(data([4], 1, "float32", "contiguous")), 161002, "input");
  // The operator's rule (gamma shares input's dtype), named by the module's dtype option.
  const half = assertAclnnError(
    () => gn.forward(data([2, 4, 3], 1, "float16", "contiguous")),
    161002,
    "input",
  );
  assert.match(half.message, /make the module with \{ dtype: "float16" \}/);
});
