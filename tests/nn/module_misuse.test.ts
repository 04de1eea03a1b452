/**
 * Modules used wrongly answer with one AclnnError naming what is wrong (issue 38 B9, D22): a
 * disposed module refuses `train()`/`eval()` as it refuses forward; `stateDict()` after one of
 * the module's own tensors was disposed from outside names that tensor's key (was a TypeError
 * on the CPU, AclError 100000 on an NPU); a GroupNorm fed another dtype than its own names the
 * module's `dtype` option (a module user passes no gamma).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  BatchNorm,
  GroupNorm,
  InstanceNorm,
  LayerNorm,
  type NormModule,
  RMSNorm,
  SyncBatchNorm,
} from "../../src/nn/mod.ts";
import { createLocalProcessGroup } from "../../src/distributed/local_process_group.ts";
import type { Device } from "../../src/tensor/device.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError } from "../helpers/assert.ts";
import { forEachBackend, on } from "../helpers/backends.ts";

const INVALID = 161002;

/** One module of each kind on `device`, with their names. */
function modules(device: Device): [string, NormModule][] {
  const [group] = createLocalProcessGroup(1);
  return [
    ["BatchNorm", new BatchNorm({ numFeatures: 4, device })],
    ["SyncBatchNorm", new SyncBatchNorm({ numFeatures: 4, processGroup: group, device })],
    ["GroupNorm", new GroupNorm({ numGroups: 2, numChannels: 4, device })],
    ["InstanceNorm", new InstanceNorm({ numFeatures: 4, affine: true, device })],
    ["LayerNorm", new LayerNorm({ normalizedShape: [4], device })],
    ["RMSNorm", new RMSNorm({ normalizedShape: [4], device })],
  ];
}

forEachBackend("modules: a disposed module refuses train() and eval(), naming it", (ctx) => {
  for (const [name, m] of modules(ctx.device)) {
    m.eval();
    m.dispose();
    const train = assertAclnnError(() => m.train(), INVALID, "module");
    assert.equal(
      train.message,
      `${name}.train: the module was disposed (its parameters and statistics were freed) ` +
        "[ACLNN_ERR_PARAM_INVALID 161002]",
    );
    const evalError = assertAclnnError(() => m.eval(), INVALID, "module");
    assert.match(evalError.message, new RegExp(`^${name}\\.eval: the module was disposed`));
    assert.equal(m.training, false, "the refused train() changed nothing");
  }
});

forEachBackend(
  "modules: stateDict() after a tensor of the module was disposed names its key",
  (ctx) => {
    for (const [name, m] of modules(ctx.device)) {
      m.weight!.dispose();
      const e = assertAclnnError(() => m.stateDict(), INVALID, "weight");
      assert.match(
        e.message,
        new RegExp(`^${name}\\.stateDict: weight was disposed \\(its memory was freed`),
      );
      assert.equal(e.message.split("\n").length, 1);
      m.dispose();
    }
    using bn = new BatchNorm({ numFeatures: 3, device: ctx.device });
    bn.runningVar!.dispose();
    assertAclnnError(() => bn.stateDict(), INVALID, "running_var");
  },
);

forEachBackend(
  "modules: GroupNorm given another dtype than its own names its dtype option",
  (ctx) => {
    using gn = new GroupNorm({ numGroups: 2, numChannels: 4, device: ctx.device });
    const x = on(Tensor.random([2, 4, 3], { seed: 1, dtype: "float16" }), ctx.device);
    const e = assertAclnnError(() => gn.forward(x), INVALID, "input");
    assert.equal(
      e.message,
      "GroupNorm.forward: input dtype float16 differs from the module's dtype float32 (its " +
        'weight and bias): make the module with { dtype: "float16" }, or pass input in float32 ' +
        "[ACLNN_ERR_PARAM_INVALID 161002]",
    );
    // The module's own dtype runs (the check refuses a mismatch only).
    using half = new GroupNorm({
      numGroups: 2,
      numChannels: 4,
      device: ctx.device,
      dtype: "float16",
    });
    using y = half.forward(x);
    assert.equal(y.dtype, "float16");
  },
);
