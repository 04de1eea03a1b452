/**
 * Unknown argument names (src/ops/known_names.ts): every operator refuses a field its
 * declaration does not list, in its argument object and in `out`, with 161002 naming the field
 * and the closest valid name, on every call (a call that meets the validation memo too), before
 * any other check; a misspelt name never falls back to the default silently.
 */

import assert from "node:assert/strict";
import { SOC_OPERATORS } from "../../src/backends/ascend/soc.ts";
import * as ops from "../../src/ops/mod.ts";
import { closestName } from "../../src/ops/known_names.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError } from "../helpers/assert.ts";
import { plainDescriptors } from "../fixtures/infiniop.ts";

const INVALID = 161002;

Deno.test("argument names: layerNorm({ epsilon }) and rmsNorm({ eps }) are refused, naming the valid name", () => {
  const input = Tensor.fromArray([1, 2, 3, 4, 2, 2, 2, 9], [2, 4]);
  const layer = { input, normalizedShape: [4] };
  using plain = ops.layerNorm(layer); // the memo now holds this call's validation
  let e = assertAclnnError(
    () => ops.layerNorm({ ...layer, epsilon: 1 } as ops.LayerNormArgs),
    INVALID,
    "epsilon",
  );
  assert.equal(
    e.message,
    'unknown option "epsilon" for aclnnLayerNorm; did you mean "eps"? (its options: input, ' +
      "normalizedShape, weight, bias, eps, out) [ACLNN_ERR_PARAM_INVALID 161002]",
  );
  // eps itself is taken: rstd of the first row is 1/sqrt(1.25 + 1).
  using withEps = ops.layerNorm({ ...layer, eps: 1 });
  assert.equal(withEps.rstd.toArray()[0], Math.fround(1 / Math.sqrt(2.25)));
  assert.notEqual(plain.rstd.toArray()[0], withEps.rstd.toArray()[0]);

  const gamma = Tensor.ones([4]);
  using _ = ops.rmsNorm({ x: input, gamma });
  e = assertAclnnError(
    () => ops.rmsNorm({ x: input, gamma, eps: 1 } as ops.RmsNormArgs),
    INVALID,
    "eps",
  );
  assert.equal(
    e.message,
    'unknown option "eps" for aclnnRmsNorm; did you mean "epsilon"? (its options: x, gamma, ' +
      "epsilon, out) [ACLNN_ERR_PARAM_INVALID 161002]",
  );
});

Deno.test("argument names: gemmaRmsNorm takes CANN's names (x, gamma, epsilon; out y, rstd)", () => {
  const x = Tensor.fromArray([1, 2, 3, 4], [2, 2]);
  const gamma = Tensor.zeros([2]);
  const e = assertAclnnError(
    () => ops.gemmaRmsNorm({ x, gamma, eps: 1 } as ops.GemmaRmsNormArgs),
    INVALID,
    "eps",
  );
  assert.equal(
    e.message,
    'unknown option "eps" for aclnnGemmaRmsNorm; did you mean "epsilon"? (its options: x, ' +
      "gamma, epsilon, out) [ACLNN_ERR_PARAM_INVALID 161002]",
  );
  const out = { yOut: Tensor.zeros([2, 2]) } as ops.GemmaRmsNormOut;
  const o = assertAclnnError(() => ops.gemmaRmsNorm({ x, gamma, out }), INVALID, "yOut");
  assert.match(o.message, /^unknown output "yOut" for aclnnGemmaRmsNorm; did you mean "y"\?/);
  // The right names: epsilon is taken (rstd of row 0 is 1/sqrt(2.5 + 1)).
  using r = ops.gemmaRmsNorm({ x, gamma, epsilon: 1 });
  assert.equal(r.rstd.toArray()[0], Math.fround(1 / Math.sqrt(3.5)));
});

Deno.test("argument names: refused on a call that meets the memo, and in out", () => {
  const shape = [2, 3, 4];
  const args = {
    gradOut: Tensor.random(shape, { seed: 1 }),
    input: Tensor.random(shape, { seed: 2 }),
    saveMean: Tensor.zeros([3]),
    saveInvstd: Tensor.ones([3]),
    training: true,
  };
  using _first = ops.batchNormBackward(args);
  using _second = ops.batchNormBackward(args); // meets the memo
  // The same tensors with a misspelt mask: the memo's keys are equal, the call is refused.
  const typo = { ...args, output_mask: [true, false, false] } as ops.BatchNormBackwardArgs;
  let e = assertAclnnError(() => ops.batchNormBackward(typo), INVALID, "output_mask");
  assert.match(
    e.message,
    /^unknown option "output_mask" for aclnnBatchNormBackward; did you mean "outputMask"\?/,
  );
  const out = { grad_input: Tensor.zeros(shape) } as ops.BatchNormBackwardOut;
  e = assertAclnnError(() => ops.batchNormBackward({ ...args, out }), INVALID, "grad_input");
  assert.equal(
    e.message,
    'unknown output "grad_input" for aclnnBatchNormBackward; did you mean "gradInput"? (its ' +
      "outputs: gradInput, gradWeight, gradBias) [ACLNN_ERR_PARAM_INVALID 161002]",
  );
  // Before any other check: a missing required tensor is reported after the unknown name.
  assertAclnnError(
    () => ops.batchNormStats({ inptu: args.input } as unknown as ops.BatchNormStatsArgs),
    INVALID,
    "inptu",
  );
});

Deno.test("argument names: instanceNorm({ data_format, epsilon }) and out.var are refused, naming the valid name", () => {
  const x = Tensor.fromArray([1, 2, 3, 4, 5, 6, 7, 9], [1, 2, 2, 2]);
  const args = { x, gamma: Tensor.ones([2]), beta: Tensor.zeros([2]), dataFormat: "NCHW" };
  using _ = ops.instanceNorm(args); // the memo holds this call's validation
  let e = assertAclnnError(
    () => ops.instanceNorm({ ...args, data_format: "NHWC" } as ops.InstanceNormArgs),
    INVALID,
    "data_format",
  );
  assert.equal(
    e.message,
    'unknown option "data_format" for aclnnInstanceNorm; did you mean "dataFormat"? (its ' +
      "options: x, gamma, beta, dataFormat, eps, out) [ACLNN_ERR_PARAM_INVALID 161002]",
  );
  e = assertAclnnError(
    () => ops.instanceNorm({ ...args, epsilon: 1 } as ops.InstanceNormArgs),
    INVALID,
    "epsilon",
  );
  assert.ok(e.message.includes('did you mean "eps"?'), e.message);
  e = assertAclnnError(
    () => ops.instanceNorm({ ...args, out: { var: Tensor.zeros([1, 2, 1, 1]) } } as never),
    INVALID,
    "var",
  );
  assert.ok(e.message.includes('did you mean "variance"?'), e.message);
  // eps itself is taken: the variance of the first plane is 1.25, y[0] = -1.5 / sqrt(1.25 + 1).
  using withEps = ops.instanceNorm({ ...args, eps: 1 });
  assert.equal(withEps.y.toArray()[0], Math.fround(-1.5 / Math.sqrt(2.25)));
});

Deno.test("argument names: every operator refuses an unknown field", async () => {
  // Every operator the SoC table declares (soc_operators.ts), by its function in mod.ts (its
  // aclnn name without `aclnn`, lower case first), and the InfiniOp descriptor.
  const exported: Record<string, unknown> = ops;
  const calls: [string, (a: Record<string, unknown>) => unknown][] = [
    ...SOC_OPERATORS.map((op): [string, (a: Record<string, unknown>) => unknown] => {
      const call = exported[op[5].toLowerCase() + op.slice(6)];
      assert.ok(typeof call === "function", `the function of ${op}`);
      return [op, (a) => call(a)];
    }),
    [
      "infiniopCreateBatchNormBackwardDescriptor",
      (a) => ops.createBatchNormBackwardDescriptor(a as never),
    ],
  ];
  for (const [op, call] of calls) {
    const e = assertAclnnError(() => call({ Eps: 1 }), INVALID, "Eps");
    assert.ok(e.message.startsWith(`unknown option "Eps" for ${op}; did you mean "`), e.message);
  }
  for (
    const [op, call] of [
      ["syncBatchNormForward", ops.syncBatchNormForward],
      ["syncBatchNormBackward", ops.syncBatchNormBackward],
    ] as const
  ) {
    await assert.rejects(
      () => call({ input: Tensor.zeros([2, 3]), time_out_ms: 5 } as never),
      (e) => {
        assert.ok(e instanceof Error && "code" in e && e.code === INVALID, String(e));
        assert.ok(
          e.message.startsWith(`unknown option "time_out_ms" for ${op}; did you mean "timeoutMs"?`),
          e.message,
        );
        return true;
      },
    );
  }
  // The descriptor's compute: InfiniOp's BAD_PARAM.
  using desc = ops.createBatchNormBackwardDescriptor(plainDescriptors(2, 3, 4));
  assertAclnnError(
    () => desc.compute({ work_space: new Uint8Array(128) } as never),
    INVALID,
    "work_space",
    "BAD_PARAM",
  );
});

Deno.test("argument names: the closest name (case and underscores, prefixes, then edits)", () => {
  const names = ["gradOut", "input", "weight", "eps", "outputMask"];
  assert.equal(closestName("grad_out", names), "gradOut");
  assert.equal(closestName("GRADOUT", names), "gradOut");
  assert.equal(closestName("epsilon", names), "eps");
  assert.equal(closestName("wieght", names), "weight");
  assert.equal(closestName("mask", names), "outputMask");
  assert.equal(closestName("eps", ["x", "gamma", "epsilon"]), "epsilon");
  assert.equal(closestName("anything", []), undefined);
});

Deno.test("argument names: fastBatchNormBackward takes CANN's names, version included", () => {
  const x = Tensor.ones([2, 3, 4]);
  const base = { gradOut: x, input: x, training: true };
  const e = assertAclnnError(
    () => ops.fastBatchNormBackward({ ...base, versoin: 1 } as never),
    INVALID,
    "versoin",
  );
  assert.match(e.message, /did you mean "version"\?/);
  const o = assertAclnnError(
    () => ops.fastBatchNormBackward({ ...base, out: { gradInputOut: x } } as never),
    INVALID,
    "gradInputOut",
  );
  assert.match(o.message, /did you mean "gradInput"\?/);
  const r = ops.fastBatchNormBackward({
    ...base,
    version: 1,
    eps: 1e-3,
    outputMask: [1, 1, 1].map(Boolean),
  });
  assert.deepEqual(Object.keys(r), ["gradInput", "gradWeight", "gradBias"]);
});

Deno.test("argument names: groupNormSilu takes no activateSilu (a V2 argument), V2 does", () => {
  const self = Tensor.ones([1, 2, 2]);
  const e = assertAclnnError(
    () => ops.groupNormSilu({ self, group: 1, activateSilu: false } as never),
    INVALID,
    "activateSilu",
  );
  assert.ok(e.message.includes("aclnnGroupNormSilu"), e.message);
  assert.deepEqual(
    ops.groupNormSiluV2({ self, group: 1, activateSilu: false }).output.shape,
    [1, 2, 2],
  );
  // CANN's names: self (not input), numGroups and x for Swish; outputs output / y.
  assertAclnnError(() => ops.groupNormSilu({ input: self, group: 1 } as never), INVALID, "input");
  const r = ops.groupNormSwish({
    x: self,
    gamma: Tensor.ones([2]),
    beta: Tensor.zeros([2]),
    numGroups: 1,
  });
  assert.deepEqual(Object.keys(r), ["y", "mean", "rstd"]);
});

Deno.test("argument names: fastLayerNorm takes layerNorm's names", () => {
  const x = Tensor.ones([2, 4]);
  const base = { input: x, normalizedShape: [4] };
  const e = assertAclnnError(
    () => ops.fastLayerNorm({ ...base, weightOptional: Tensor.ones([4]) } as never),
    INVALID,
    "weightOptional",
  );
  assert.match(e.message, /did you mean "weight"\?/);
  const o = assertAclnnError(
    () => ops.fastLayerNorm({ ...base, out: { meanOut: Tensor.ones([2, 1]) } } as never),
    INVALID,
    "meanOut",
  );
  assert.match(o.message, /did you mean "mean"\?/);
  const r = ops.fastLayerNorm({ ...base, weight: Tensor.ones([4]), bias: Tensor.zeros([4]) });
  assert.deepEqual(Object.keys(r), ["output", "mean", "rstd"]);
});

Deno.test("argument names: groupNormSwishGrad takes CANN's names, results dx, dgamma, dbeta", () => {
  const x = Tensor.ones([1, 2, 2]);
  const stats = Tensor.ones([1, 1]);
  const args = { dy: x, mean: stats, rstd: stats, x, gamma: Tensor.ones([2]), numGroups: 1 };
  const r = ops.groupNormSwishGrad({ ...args, beta: Tensor.zeros([2]) });
  assert.deepEqual(Object.keys(r), ["dx", "dgamma", "dbeta"]);
  // dgammaIsRequire, not dgammaRequire; gradOut is not CANN's name here.
  assertAclnnError(
    () => ops.groupNormSwishGrad({ ...args, beta: x, dgammaRequire: false } as never),
    INVALID,
    "dgammaRequire",
  );
  assertAclnnError(
    () => ops.groupNormSwishGrad({ ...args, gradOut: x } as never),
    INVALID,
    "gradOut",
  );
});
