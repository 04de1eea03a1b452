/**
 * State dicts: PyTorch's keys in PyTorch's order for every configuration, snapshots that later
 * training does not change, loadStateDict's checks (strict missing and unexpected keys, shapes,
 * dtypes, the int32 batch counter), refusals that leave the module unchanged, strict: false,
 * conversion to the module's dtype, and dicts moved between the CPU and a (simulated) NPU.
 */

import assert from "node:assert/strict";
import {
  BatchNorm,
  GroupNorm,
  InstanceNorm,
  type StateDict,
  SyncBatchNorm,
} from "../../src/nn/mod.ts";
import { createLocalProcessGroup } from "../../src/distributed/local_process_group.ts";
import { roundToDType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError } from "../helpers/assert.ts";
import { forEachBackend, on } from "../helpers/backends.ts";

const NULLPTR = 161001;
const INVALID = 161002;

/** A trained BatchNorm: non-trivial parameters, running statistics and count. */
function trained(options: Partial<ConstructorParameters<typeof BatchNorm>[0]> = {}): BatchNorm {
  const bn = new BatchNorm({ numFeatures: 3, ...options });
  bn.weight?.copy_([0.5, 1.5, -2]);
  bn.bias?.copy_([0.25, -0.5, 1]);
  for (let seed = 1; seed <= 3; seed++) {
    const x = Tensor.random([4, 3, 5], { seed, dtype: options.dtype, device: options.device });
    bn.forward(x).dispose();
  }
  return bn;
}

Deno.test("stateDict: PyTorch's keys and order for every BatchNorm, SyncBatchNorm, GroupNorm and InstanceNorm", () => {
  const expected = {
    "true,true": ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"],
    "true,false": ["weight", "bias"],
    "false,true": ["running_mean", "running_var", "num_batches_tracked"],
    "false,false": [],
  };
  const [group] = createLocalProcessGroup(1);
  for (const [key, keys] of Object.entries(expected)) {
    const [affine, trackRunningStats] = key.split(",").map((v) => v === "true");
    using bn = new BatchNorm({ numFeatures: 3, affine, trackRunningStats });
    using sbn = new SyncBatchNorm({
      numFeatures: 3,
      affine,
      trackRunningStats,
      processGroup: group,
    });
    using inorm = new InstanceNorm({ numFeatures: 3, affine, trackRunningStats });
    assert.deepEqual(Object.keys(bn.stateDict()), keys, `BatchNorm ${key}`);
    assert.deepEqual(Object.keys(sbn.stateDict()), keys, `SyncBatchNorm ${key}`);
    assert.deepEqual(Object.keys(inorm.stateDict()), keys, `InstanceNorm ${key}`);
  }
  // PyTorch's InstanceNorm defaults: no affine parameters, no running statistics.
  using defaults = new InstanceNorm({ numFeatures: 3 });
  assert.deepEqual(Object.keys(defaults.stateDict()), []);
  using gn = new GroupNorm({ numGroups: 1, numChannels: 3 });
  using plain = new GroupNorm({ numGroups: 1, numChannels: 3, affine: false });
  assert.deepEqual(Object.keys(gn.stateDict()), ["weight", "bias"]);
  assert.deepEqual(Object.keys(plain.stateDict()), []);
});

Deno.test("stateDict: values, dtypes and shapes; a snapshot later training leaves alone", () => {
  using bn = trained({ dtype: "float16" });
  const dict = bn.stateDict();
  for (const key of ["weight", "bias", "running_mean", "running_var"]) {
    assert.equal(dict[key].dtype, "float16", key);
    assert.deepEqual(dict[key].shape, [3], key);
  }
  assert.deepEqual(dict.weight.toArray(), bn.weight!.toArray());
  assert.deepEqual(dict.running_var.toArray(), bn.runningVar!.toArray());
  assert.equal(dict.num_batches_tracked.dtype, "int32");
  assert.deepEqual(dict.num_batches_tracked.shape, []);
  assert.equal(dict.num_batches_tracked.item(), 3);
  const before = dict.running_mean.toArray();
  bn.forward(Tensor.random([4, 3, 5], { seed: 9, dtype: "float16" })).dispose();
  assert.notDeepEqual(bn.runningMean!.toArray(), before);
  assert.deepEqual(dict.running_mean.toArray(), before, "the snapshot did not move");
  assert.notEqual(dict.weight, bn.weight, "a copy, not the parameter");
});

Deno.test("loadStateDict: a round trip restores every value and the batch count", () => {
  using a = trained({ momentum: null });
  using b = new BatchNorm({ numFeatures: 3, momentum: null });
  assert.deepEqual(b.loadStateDict(a.stateDict()), { missingKeys: [], unexpectedKeys: [] });
  for (const k of ["weight", "bias", "runningMean", "runningVar"] as const) {
    assert.deepEqual(b[k]!.toArray(), a[k]!.toArray(), k);
  }
  assert.equal(b.numBatchesTracked, 3);
  // momentum null continues the cumulative average from the loaded count.
  const x = Tensor.random([4, 3, 5], { seed: 7 });
  a.forward(x).dispose();
  b.forward(x).dispose();
  assert.deepEqual(b.runningMean!.toArray(), a.runningMean!.toArray());
  assert.equal(b.numBatchesTracked, 4);
});

Deno.test("loadStateDict: strict refusals name the key; a refused dict changes nothing", () => {
  using source = trained();
  using bn = new BatchNorm({ numFeatures: 3 });
  const fresh = JSON.stringify(bn.stateDict(), (_, v) => v instanceof Tensor ? v.toArray() : v);
  const unchanged = () =>
    assert.equal(
      JSON.stringify(bn.stateDict(), (_, v) => v instanceof Tensor ? v.toArray() : v),
      fresh,
      "the module is unchanged",
    );
  const full = source.stateDict();
  const without = (key: string): StateDict => {
    const d = { ...full };
    delete d[key];
    return d;
  };

  let e = assertAclnnError(() => bn.loadStateDict(without("running_var")), NULLPTR, "running_var");
  assert.match(e.message, /missing key\(s\): running_var\) is required with strict: true/);
  unchanged();
  e = assertAclnnError(
    () => bn.loadStateDict({ ...full, extra: Tensor.zeros([3]) }),
    INVALID,
    "extra",
  );
  assert.match(e.message, /is not a key of this module .*strict: false/);
  unchanged();
  e = assertAclnnError(
    () => bn.loadStateDict({ ...full, running_mean: Tensor.zeros([4]) }),
    INVALID,
    "running_mean",
  );
  assert.match(e.message, /size mismatch: shape \[4\] in the state dict, \[3\] in the module/);
  unchanged();
  assertAclnnError(
    () => bn.loadStateDict({ ...full, weight: Tensor.zeros([1, 3]) }),
    INVALID,
    "weight",
  );
  assertAclnnError(
    () => bn.loadStateDict({ ...full, bias: [0, 0, 0] as unknown as Tensor }),
    INVALID,
    "bias",
  );
  for (
    const counter of [Tensor.fromArray([3], [], "float32"), Tensor.fromArray([3], [1], "int32")]
  ) {
    e = assertAclnnError(
      () => bn.loadStateDict({ ...full, num_batches_tracked: counter }),
      INVALID,
      "num_batches_tracked",
    );
    assert.match(e.message, /must be an int32 scalar \(shape \[\]\)/);
  }
  assertAclnnError(
    () => bn.loadStateDict({ ...full, num_batches_tracked: Tensor.fromArray([-1], [], "int32") }),
    INVALID,
    "num_batches_tracked",
  );
  assertAclnnError(
    () => bn.loadStateDict({ ...full, running_var: Tensor.zeros([3], "int32") }),
    INVALID,
    "running_var",
  );
  assertAclnnError(() => bn.loadStateDict(null as unknown as StateDict), NULLPTR, "stateDict");
  assertAclnnError(() => bn.loadStateDict([] as unknown as StateDict), INVALID, "stateDict");
  assertAclnnError(
    () => bn.loadStateDict(full, { strict: "no" as unknown as boolean }),
    INVALID,
    "strict",
  );
  unchanged();
});

Deno.test("loadStateDict: strict false loads what matches and reports the rest", () => {
  using source = trained();
  using bn = new BatchNorm({ numFeatures: 3 });
  const { weight, running_mean } = source.stateDict();
  const result = bn.loadStateDict({ weight, running_mean, other: Tensor.zeros([2]) }, {
    strict: false,
  });
  assert.deepEqual(result, {
    missingKeys: ["bias", "running_var", "num_batches_tracked"],
    unexpectedKeys: ["other"],
  });
  assert.deepEqual(bn.weight!.toArray(), source.weight!.toArray());
  assert.deepEqual(bn.runningMean!.toArray(), source.runningMean!.toArray());
  assert.deepEqual(bn.bias!.toArray(), [0, 0, 0]);
  assert.equal(bn.numBatchesTracked, 0);
  // Shapes are checked whatever strict says (as PyTorch does).
  assertAclnnError(
    () => bn.loadStateDict({ weight: Tensor.zeros([2]) }, { strict: false }),
    INVALID,
    "weight",
  );
});

Deno.test("loadStateDict: values are converted to the module's dtype", () => {
  using gn = new GroupNorm({ numGroups: 1, numChannels: 2, dtype: "bfloat16" });
  gn.loadStateDict({ weight: Tensor.fromArray([0.1, 3.3], [2]), bias: Tensor.zeros([2]) });
  assert.deepEqual(gn.weight!.toArray(), [
    roundToDType(0.1, "bfloat16"),
    roundToDType(3.3, "bfloat16"),
  ]);
  assert.equal(gn.weight!.dtype, "bfloat16");
});

forEachBackend("stateDict on the module's device; dicts load across devices", (ctx) => {
  using bn = trained({ device: ctx.device });
  const dict = bn.stateDict();
  for (const t of Object.values(dict)) assert.equal(t.device, ctx.device);
  // A dict on the host loads into a module on the device and back.
  const host = Object.fromEntries(Object.entries(dict).map(([k, t]) => [k, t.to("cpu")]));
  using here = new BatchNorm({ numFeatures: 3, device: ctx.device });
  here.loadStateDict(host);
  using cpu = new BatchNorm({ numFeatures: 3 });
  cpu.loadStateDict(dict);
  for (const k of ["weight", "bias", "runningMean", "runningVar"] as const) {
    assert.deepEqual(here[k]!.toArray(), bn[k]!.toArray(), k);
    assert.deepEqual(cpu[k]!.toArray(), bn[k]!.toArray(), k);
  }
  assert.equal(cpu.numBatchesTracked, 3);
  const x = on(Tensor.random([4, 3, 5], { seed: 5 }), ctx.device);
  bn.eval();
  here.eval();
  using a = bn.forward(x);
  using b = here.forward(x);
  assert.deepEqual(b.toArray(), a.toArray(), "same state, same eval output");
  for (const t of Object.values(dict)) t.dispose();
});

forEachBackend(
  "loadStateDict: a disposed tensor anywhere in the dict is refused before any copy",
  (ctx) => {
    using source = trained({ device: ctx.device });
    using bn = new BatchNorm({ numFeatures: 3, device: ctx.device });
    using gn = new GroupNorm({ numGroups: 1, numChannels: 3, device: ctx.device });
    const values = (m: BatchNorm | GroupNorm) =>
      JSON.stringify(m.stateDict(), (_, v) => v instanceof Tensor ? v.toArray() : v);
    const fresh = values(bn);
    // The last tensor entry, the batch counter, and (GroupNorm) the entry after weight; the dict
    // on the module's device and on the host.
    for (const key of ["running_var", "num_batches_tracked"]) {
      for (const where of [ctx.device, "cpu"] as const) {
        const dict = Object.fromEntries(
          Object.entries(source.stateDict()).map(([k, t]) => [k, t.to(where)]),
        );
        dict[key].dispose();
        const e = assertAclnnError(() => bn.loadStateDict(dict), INVALID, key);
        assert.equal(
          e.message,
          `BatchNorm.loadStateDict: ${key} was disposed: its memory was freed (dispose(), tidy, ` +
            "or its device closed) before the state dict was loaded [ACLNN_ERR_PARAM_INVALID 161002]",
        );
        assert.equal(values(bn), fresh, `${key} on ${where === "cpu" ? "cpu" : ctx.label}`);
        assert.equal(bn.numBatchesTracked, 0);
      }
    }
    const dict = {
      weight: on(Tensor.fromArray([2, 3, 4], [3]), ctx.device),
      bias: on(Tensor.fromArray([5, 6, 7], [3]), ctx.device),
    };
    dict.bias.dispose();
    assertAclnnError(() => gn.loadStateDict(dict), INVALID, "bias");
    assert.deepEqual(gn.weight!.toArray(), [1, 1, 1], "weight was not overwritten");
    assert.deepEqual(gn.bias!.toArray(), [0, 0, 0]);
    // The same dicts, whole, load.
    gn.loadStateDict({ ...dict, bias: on(Tensor.fromArray([5, 6, 7], [3]), ctx.device) });
    assert.deepEqual(gn.weight!.toArray(), [2, 3, 4]);
    assert.deepEqual(gn.bias!.toArray(), [5, 6, 7]);
    bn.loadStateDict(source.stateDict());
    assert.equal(bn.numBatchesTracked, 3);
    dict.weight.dispose();
  },
);
