/**
 * SoC-dependent outputs: on Atlas A2/A3 (SoC names Ascend910B*, Ascend910_93*) aclnnBatchNorm
 * writes Var(x) into saveInvstd; batchNorm() must still return invstd there. The software
 * CANN models both families through ACLSIM_SOC_NAME (forEachBackend plays Ascend 950 and
 * Atlas A2).
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNormSavesVariance } from "../../src/backends/ascend/soc.ts";
import { arg, runAclnn } from "../../src/ffi/executor.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import { batchNorm } from "../../src/ops/batch_norm.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { forEachBackend } from "../helpers/backends.ts";
import { batchNorm64, batchStats64 } from "../oracle/mod.ts";

Deno.test("soc: every family but DAV_3510 stores the variance in saveInvstd", () => {
  for (const name of ["Ascend910B4", "Ascend910_9391", "Ascend910A", "Ascend910B", "Ascend310P3"]) {
    assert.equal(batchNormSavesVariance(name), true, name);
  }
  for (const name of ["Ascend950PR_9599", "Ascend950DT_9591", "Ascend350_354f"]) {
    assert.equal(batchNormSavesVariance(name), false, name);
  }
  // Unknown names are never guessed (the backend places them by their platform file).
  for (const name of ["Ascend910Z9", "Ascend950XX_1", "Ascend910_9599"]) {
    assert.throws(() => batchNormSavesVariance(name), RangeError, name);
  }
});

// The NPU path on each SoC the simulator plays (Ascend 950, Atlas A2): batchNorm's saveInvstd
// is 1/sqrt(var + eps) everywhere, while the native output slot (run raw, without the library)
// holds what the chip stores there: Var(x) on A2, invstd on 950.
forEachBackend("soc: batchNorm returns invstd on every chip; the native slot holds the chip's", ({
  device,
  socName,
}) => {
  const x = Tensor.random([4, 3, 5], { seed: 7, distribution: "normal", low: 1, high: 2 });
  const e = batchNorm64({
    x: x.toFloat64Array(),
    shape: x.shape,
    training: true,
    momentum: 0.1,
    eps: 1e-5,
  });
  const variance = batchStats64(x.toFloat64Array(), x.shape).variance;
  const dev = batchNorm({ input: x.to(device), training: true, momentum: 0.1, eps: 1e-5 });
  assertClose(dev.saveInvstd, e.saveInvstd, undefined, "saveInvstd");
  const raw = Tensor.zeros([3], "float32", device as AscendDevice);
  runAclnn(device as AscendDevice, "aclnnBatchNorm", [
    arg.tensor(x.to(device)),
    arg.tensor(undefined),
    arg.tensor(undefined),
    arg.tensor(undefined),
    arg.tensor(undefined),
    arg.bool(true),
    arg.f64(0.1),
    arg.f64(1e-5),
    arg.tensor(Tensor.zeros([4, 3, 5], "float32", device)),
    arg.tensor(Tensor.zeros([3], "float32", device)),
    arg.tensor(raw),
  ]);
  const storesVariance = batchNormSavesVariance(socName!);
  assertClose(raw, storesVariance ? variance : e.saveInvstd, undefined, "native saveInvstd slot");
}, { cpu: false });
