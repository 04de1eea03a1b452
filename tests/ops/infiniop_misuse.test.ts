/**
 * The InfiniOp descriptor API used wrongly, on every backend (issue 38 B11): a missing
 * argument is 161001 naming it, including the descriptor itself when `compute`/`destroy` are
 * called off it (InfiniOp's C API takes the descriptor as an argument, so code ported from it
 * passes the method around: was `TypeError: Cannot read properties of undefined`); a disposed
 * tensor is 161002 naming it (it was computed over, a silent wrong answer).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type BatchNormBackwardDescriptor,
  createBatchNormBackwardDescriptor,
} from "../../src/ops/infiniop_batch_norm_backward.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import type { Device } from "../../src/tensor/device.ts";
import { assertAclnnError } from "../helpers/assert.ts";
import { forEachBackend, on } from "../helpers/backends.ts";
import { INFINIOP_TENSOR_NAMES } from "../fixtures/infiniop.ts";

const NULLPTR = 161001;
const INVALID = 161002;
const NAMES = INFINIOP_TENSOR_NAMES;

/** The tensors of a [2, 3, 4] problem on `device`. */
function tensors(device: Device) {
  const data = (seed: number) => on(Tensor.random([2, 3, 4], { seed }), device);
  const perChannel = (value: number) => on(Tensor.full([3], value), device);
  return {
    gradInput: on(Tensor.zeros([2, 3, 4]), device),
    gradWeight: perChannel(0),
    gradBias: perChannel(0),
    input: data(1),
    gradOutput: data(2),
    weight: perChannel(1),
    runningMean: perChannel(0.5),
    runningVar: perChannel(1),
  };
}

forEachBackend(
  "infiniop: a missing argument is NULL_POINTER naming it, the descriptor too",
  (ctx) => {
    const t = tensors(ctx.device);
    using desc = createBatchNormBackwardDescriptor(t);
    for (const name of NAMES) {
      for (const value of [undefined, null]) {
        assertAclnnError(
          () => createBatchNormBackwardDescriptor({ ...t, [name]: value }),
          NULLPTR,
          name,
          "NULL_POINTER",
        );
        assertAclnnError(
          () => desc.compute({ ...t, [name]: value }),
          NULLPTR,
          name,
          "NULL_POINTER",
        );
      }
    }
    // The methods called off the descriptor, as InfiniOp's C functions are called.
    const { compute, destroy } = desc;
    const e = assertAclnnError(() => compute(t), NULLPTR, "descriptor", "NULL_POINTER");
    assert.equal(
      e.message,
      "infiniopBatchNormBackward: descriptor is required but is missing: call compute on the " +
        "descriptor (desc.compute(args)), not on undefined (NULL_POINTER) " +
        "[ACLNN_ERR_PARAM_NULLPTR 161001]",
    );
    assertAclnnError(() => compute.call(null as never, t), NULLPTR, "descriptor", "NULL_POINTER");
    const d = assertAclnnError(() => destroy(), NULLPTR, "descriptor", "NULL_POINTER");
    assert.match(d.message, /^infiniopDestroyBatchNormBackwardDescriptor: descriptor is required/);
    assert.equal(desc.destroyed, false);
    const other = {} as BatchNormBackwardDescriptor;
    assertAclnnError(() => compute.call(other, t), INVALID, "descriptor", "BAD_PARAM");
    for (const x of Object.values(t)) x.dispose();
  },
);

forEachBackend("infiniop: a disposed tensor is BAD_PARAM naming it; nothing is written", (ctx) => {
  for (const name of NAMES) {
    const t = tensors(ctx.device);
    using desc = createBatchNormBackwardDescriptor(t);
    t[name].dispose();
    const e = assertAclnnError(() => desc.compute(t), INVALID, name, "BAD_PARAM");
    assert.match(e.message, new RegExp(`^infiniopBatchNormBackward: ${name} was disposed`));
    if (name !== "gradBias") assert.deepEqual(t.gradBias.toArray(), [0, 0, 0]);
    for (const x of Object.values(t)) x.dispose();
  }
});
