/**
 * The two-phase call through the software CANN: batchNormReduceBackward on every backend
 * equals the float64 oracle (contiguous, non-contiguous, channels-last, mixed dtypes, masks,
 * an empty batch; the NPU path as Ascend 950 and as Atlas A2), native
 * validation errors reach the caller with their code and text, and a long run returns every
 * counter to zero. Needs the built simulator (`deno task build:sim`).
 */

import assert from "node:assert/strict";
import { AclnnError } from "../../src/errors.ts";
import { type AclnnArg, arg, runAclnn } from "../../src/ffi/executor.ts";
import { batchNormReduceBackward } from "../../src/ops/batch_norm_reduce_backward.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { childJson } from "../helpers/child_json.ts";
import { forEachBackend, on, onOpt } from "../helpers/backends.ts";
import { LIVE_STATS, openSim, SIM_DIR } from "../helpers/ffi_sim.ts";
import { batchNormReduceBackward64 } from "../oracle/mod.ts";

const CHILD = new URL("../fixtures/ffi_many_ops_child.ts", import.meta.url).pathname;

interface Case {
  name: string;
  shape: number[];
  dtype: DType;
  statsDType: DType;
  layout?: (t: Tensor) => Tensor;
  masks?: [boolean, boolean, boolean];
  weight?: boolean;
}

/** NHWC storage viewed as NCHW. */
const channelsLast = (t: Tensor) => t.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2]);

const CASES: Case[] = [
  { name: "fp32 2-D", shape: [16, 5], dtype: "float32", statsDType: "float32" },
  { name: "fp32 4-D", shape: [3, 4, 5, 6], dtype: "float32", statsDType: "float32", weight: true },
  {
    name: "fp32 channels-last",
    shape: [2, 3, 4, 5],
    dtype: "float32",
    statsDType: "float32",
    layout: channelsLast,
  },
  {
    name: "fp32 non-contiguous (transposed view)",
    shape: [6, 4, 5],
    dtype: "float32",
    statsDType: "float32",
    layout: (t) => t.transpose(0, 2).contiguous().transpose(0, 2),
  },
  { name: "fp16 with fp32 stats", shape: [4, 3, 7], dtype: "float16", statsDType: "float32" },
  { name: "bf16 with fp32 stats", shape: [4, 3, 7], dtype: "bfloat16", statsDType: "float32" },
  { name: "fp16 everywhere", shape: [5, 2, 3], dtype: "float16", statsDType: "float16" },
  { name: "5-D bf16", shape: [2, 3, 2, 2, 3], dtype: "bfloat16", statsDType: "bfloat16" },
  {
    name: "masks off",
    shape: [4, 3, 2],
    dtype: "float32",
    statsDType: "float32",
    masks: [false, true, false],
  },
  { name: "empty batch", shape: [0, 3, 4], dtype: "float32", statsDType: "float32" },
];

function inputs(c: Case) {
  const C = c.shape[1];
  const layout = c.layout ?? ((t: Tensor) => t);
  return {
    gradOut: layout(Tensor.random(c.shape, { seed: 11, dtype: c.dtype })),
    input: layout(Tensor.random(c.shape, { seed: 12, dtype: c.dtype, low: -2, high: 3 })),
    mean: Tensor.random([C], { seed: 13, dtype: c.statsDType }),
    invstd: Tensor.random([C], { seed: 14, dtype: c.statsDType, low: 0.5, high: 2 }),
    weight: c.weight ? Tensor.random([C], { seed: 15, dtype: c.statsDType }) : undefined,
  };
}

forEachBackend("executor: batchNormReduceBackward equals the oracle", ({ device }) => {
  for (const c of CASES) {
    const host = inputs(c);
    const [inputG, weightG, biasG] = c.masks ?? [true, true, true];
    const dev = {
      gradOut: on(host.gradOut, device),
      input: on(host.input, device),
      mean: on(host.mean, device),
      invstd: on(host.invstd, device),
      weight: onOpt(host.weight, device),
    };
    if (c.layout) assert.deepEqual(dev.input.strides, host.input.strides, "layout kept on device");
    const out = batchNormReduceBackward({ ...dev, inputG, weightG, biasG });
    const e = batchNormReduceBackward64(
      host.gradOut.toFloat64Array(),
      host.input.toFloat64Array(),
      c.shape,
      host.mean.toFloat64Array(),
      host.invstd.toFloat64Array(),
    );
    const wanted = { sumDy: inputG, sumDyXmu: inputG, gradWeight: weightG, gradBias: biasG };
    for (const key of ["sumDy", "sumDyXmu", "gradWeight", "gradBias"] as const) {
      const a = out[key];
      assert.equal(a !== null, wanted[key], `${c.name} ${key} presence`);
      if (!a) continue;
      assert.equal(a.device, device);
      // Per-channel sums in mean's dtype, weight gradients in weight's (else mean's).
      const dtype = key.startsWith("sum") ? c.statsDType : host.weight?.dtype ?? c.statsDType;
      assert.equal(a.dtype, dtype, `${c.name} ${key} dtype`);
      assertClose(a, e[key], undefined, `${c.name} ${key}`);
    }
  }
});

/** The raw argument list of aclnnBatchNormReduceBackward, all masks off. */
function reduceArgs(gradOut: Tensor, input: Tensor, stat: Tensor, out?: Tensor): AclnnArg[] {
  return [
    arg.tensor(gradOut),
    arg.tensor(input),
    arg.tensor(stat),
    arg.tensor(stat),
    arg.tensor(undefined),
    arg.bool(out !== undefined),
    arg.bool(false),
    arg.bool(false),
    arg.output(out),
    arg.output(out),
    arg.output(undefined),
    arg.output(undefined),
  ];
}

function expectNative(fn: () => void, code: number, text: RegExp): AclnnError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof AclnnError, String(e));
    assert.equal(e.code, code, e.message);
    assert.ok(e.nativeMessage, `no native message in: ${e.message}`);
    assert.match(e.nativeMessage, text);
    assert.ok(e.message.includes(e.nativeMessage), "the message carries the native text");
    return e;
  }
  assert.fail("nothing was thrown");
}

Deno.test("executor: native validation errors reach the caller with code and native text", () => {
  using npu = openSim();
  const x2 = Tensor.random([4, 3], { seed: 1, device: npu });
  const x1 = Tensor.random([12], { seed: 1, device: npu });
  const h2 = Tensor.random([4, 3], { seed: 1, dtype: "float16", device: npu });
  const stat = Tensor.ones([3], "float32", npu);
  const stat12 = Tensor.ones([12], "float32", npu);

  const e1 = expectNative(
    () => runAclnn(npu, "aclnnBatchNormReduceBackward", reduceArgs(x1, x1, stat12)),
    161002,
    // CANN's own text (OP_CHECK_MIN_DIM in aclnn_batch_norm_backward_reduce.cpp CheckShape).
    /The gradOut tensor must have at least 2 dimensions\./,
  );
  assert.match(e1.message, /^aclnnBatchNormReduceBackwardGetWorkspaceSize failed: /);
  expectNative(
    () => runAclnn(npu, "aclnnBatchNormReduceBackward", reduceArgs(h2, x2, stat)),
    161002,
    /Tensor inputParamTensorList\[0\]\.param expected dtype is DT_FLOAT but found DT_FLOAT16\./,
  );
  // A masked-on output that is missing: 161001.
  expectNative(
    () =>
      runAclnn(npu, "aclnnBatchNormReduceBackward", [
        ...reduceArgs(x2, x2, stat).slice(0, 5),
        arg.bool(true),
        ...reduceArgs(x2, x2, stat).slice(6),
      ]),
    161001,
    /expected a proper Tensor but got null for argument sumDy\./,
  );
  // The error text was consumed: the next good call succeeds and leaves no stale message.
  const out = Tensor.zeros([3], "float32", npu);
  runAclnn(npu, "aclnnBatchNormReduceBackward", reduceArgs(x2, x2, stat, out));
  npu.synchronize();
});

Deno.test("executor: without ASCEND_OPP_PATH phase 1 fails with 561107 and the native hint", () => {
  using npu = openSim();
  const x = Tensor.random([4, 3], { seed: 1, device: npu });
  const stat = Tensor.ones([3], "float32", npu);
  const saved = Deno.env.get("ASCEND_OPP_PATH");
  Deno.env.delete("ASCEND_OPP_PATH");
  try {
    expectNative(
      () => runAclnn(npu, "aclnnBatchNormReduceBackward", reduceArgs(x, x, stat)),
      561107,
      /ASCEND_OPP_PATH/,
    );
  } finally {
    if (saved !== undefined) Deno.env.set("ASCEND_OPP_PATH", saved);
  }
});

Deno.test("executor: programming errors (arity, kinds, unknown operator) are caught in TypeScript", () => {
  using npu = openSim();
  const x = Tensor.random([4, 3], { seed: 1, device: npu });
  assert.throws(() => runAclnn(npu, "aclnnBatchNormReduceBackward", [arg.tensor(x)]), TypeError);
  assert.throws(
    () =>
      runAclnn(npu, "aclnnBatchNormStats", [
        arg.tensor(x),
        arg.bool(true),
        arg.tensor(x),
        arg.tensor(x),
      ]),
    /argument 1 is a bool, the C parameter is f64/,
  );
  assert.throws(
    () => runAclnn(npu, "aclnnNoSuchOp", []),
    (e: unknown) => e instanceof AclnnError && e.code === 561003,
  );
  assert.throws(
    () => runAclnn("cpu" as never, "aclnnBatchNormStats", []),
    (e: unknown) => e instanceof AclnnError && e.code === 161002,
  );
});

Deno.test("executor: thousands of operations, then dispose + close: every live counter is zero", async () => {
  const r = await childJson(
    ["run", "--no-prompt", "--quiet", "--allow-ffi", "--allow-env", "--allow-read", CHILD, "3000"],
    { ACLSIM_DIR: SIM_DIR, ASCEND_OPP_PATH: SIM_DIR },
  );
  for (const name of LIVE_STATS) {
    assert.equal(r.initial[name], 0, `${name} before`);
    assert.equal(r.final[name], 0, `${name} after close`);
  }
  assert.equal(r.final.tasksFailed, 0, "no task failed");
  assert.equal(r.final.tasksDone, 3000, "every operation ran");
  // Deferred releases stay bounded (a synchronisation after 256 of them): 4 inputs, the
  // workspace(s), one step of results and at most 256 released buffers awaiting the stream.
  assert.ok(r.peak <= 4 + 2 + 5 + 256, `peak blocks in use ${r.peak}`);
  assert.equal(r.beforeClose.blocksInUse, 5, "4 inputs + 1 workspace before close");
  // The caching allocator reuses blocks: aclrtMalloc ran a few hundred times for 3000 calls
  // (at most the 256 releases awaiting a synchronisation, plus the live set), not thousands.
  assert.equal(r.beforeClose.deviceAllocations, r.beforeClose.nativeAllocations);
  assert.ok(
    r.beforeClose.nativeMallocCalls <= 256 + 16,
    `aclrtMalloc calls ${r.beforeClose.nativeMallocCalls}`,
  );
  assert.ok(Number.isFinite(r.checksum));
});
