/**
 * aclnnBatchNormElemtBackward computed in float16 when CANN's promoted type is float16 (ops-nn
 * norm/sync_batch_norm_backward_elemt/op_api/aclnn_batch_norm_elemt_backward.cpp): every input
 * float16 and a weight given. meanDy and meanDyXmu are float32 quotients cast to float16, and
 * gradInput holds float16 values whatever its dtype.
 */
import assert from "node:assert/strict";
import { batchNormElemtBackward, Tensor } from "../../mod.ts";
import { batchNormElemtBackward64 } from "../oracle/batch_norm_elemt_backward.ts";
import { openSim } from "../helpers/ffi_sim.ts";

const SHAPE = [3, 4, 5, 6];
const C = SHAPE[1];

function inputs(dtype: "float16" | "float32") {
  const r = (shape: number[], seed: number, low = -2, high = 2) =>
    Tensor.random(shape, { seed, low, high, dtype });
  return {
    gradOut: r(SHAPE, 1),
    input: r(SHAPE, 2),
    mean: r([C], 3, -0.5, 0.5),
    invstd: r([C], 4, 0.5, 3),
    weight: r([C], 5, 0.5, 1.5),
    // Sums whose quotients by M = 90 are not float16 values.
    sumDy: r([C], 6, -40, 40),
    sumDyXmu: r([C], 7, -40, 40),
    counter: Tensor.fromArray([30, 60], [2], "int32"),
  };
}

const values = (t: Record<string, Tensor>) => ({
  dy: t.gradOut.toArray(),
  x: t.input.toArray(),
  shape: SHAPE,
  mean: t.mean.toArray(),
  invstd: t.invstd.toArray(),
  weight: t.weight?.toArray(),
  sumDy: t.sumDy.toArray(),
  sumDyXmu: t.sumDyXmu.toArray(),
  counter: t.counter.toArray(),
});

/** |got - want| within `ulps` float16 ulps of want (subnormal spacing at least). */
function assertNearFloat16(got: number[], want: Float64Array, ulps: number, what: string) {
  for (let i = 0; i < got.length; i++) {
    const ulp = Math.max(2 ** -24, 2 ** (Math.floor(Math.log2(Math.abs(want[i]) || 1)) - 10));
    assert.ok(
      Math.abs(got[i] - want[i]) <= ulps * ulp,
      `${what}[${i}]: ${got[i]} against ${want[i]}`,
    );
  }
}

Deno.test("batchNormElemtBackward: all-float16 inputs give a float32 gradInput float16 values (CANN's promoted type)", () => {
  const t = inputs("float16");
  const gradInput = Tensor.empty(SHAPE, "float32");
  batchNormElemtBackward({ ...t, out: { gradInput } });
  const got = gradInput.toArray();
  assert.ok(got.every((v) => v === Math.f16round(v)), "every element a float16 value");
  const want = batchNormElemtBackward64({ ...values(t), promotedFloat16: true });
  assertNearFloat16(got, want, 1, "gradInput");
});

Deno.test("batchNormElemtBackward: the float16 and float32 gradInput of all-float16 inputs hold the same values", () => {
  const t = inputs("float16");
  const wide = Tensor.empty(SHAPE, "float32");
  batchNormElemtBackward({ ...t, out: { gradInput: wide } });
  const half = batchNormElemtBackward(t);
  assert.equal(half.dtype, "float16");
  assert.deepEqual(half.toArray(), wide.toArray());
});

Deno.test("batchNormElemtBackward: without a weight (a float32 fill in CANN) the float32 gradInput is not rounded to float16", () => {
  const { weight: _weight, ...t } = inputs("float16");
  const gradInput = Tensor.empty(SHAPE, "float32");
  batchNormElemtBackward({ ...t, out: { gradInput } });
  const got = gradInput.toArray();
  assert.ok(got.some((v) => v !== Math.f16round(v)), "float32 values, not only float16 ones");
  const want = batchNormElemtBackward64(values(t));
  for (let i = 0; i < got.length; i++) {
    const bound = 1e-5 * (1 + Math.abs(want[i]));
    assert.ok(Math.abs(got[i] - want[i]) <= bound, `gradInput[${i}]: ${got[i]} against ${want[i]}`);
  }
});

Deno.test("batchNormElemtBackward: meanDy is a float32 quotient rounded to float16 on the all-float16 path", () => {
  // One element per channel with dy = x - mean = 0: gradInput = -w * invstd * meanDy exactly,
  // so the float16 rounding of sumDy / M shows alone.
  const dy = Tensor.zeros([1, 1], "float16");
  const x = Tensor.zeros([1, 1], "float16");
  const args = {
    gradOut: dy,
    input: x,
    mean: Tensor.zeros([1], "float16"),
    invstd: Tensor.ones([1], "float16"),
    weight: Tensor.ones([1], "float16"),
    sumDy: Tensor.fromArray([1], [1], "float16"),
    sumDyXmu: Tensor.zeros([1], "float16"),
    counter: Tensor.fromArray([3], [1], "int32"),
  };
  const gradInput = Tensor.empty([1, 1], "float32");
  batchNormElemtBackward({ ...args, out: { gradInput } });
  assert.equal(gradInput.toArray()[0], -Math.f16round(Math.fround(1 / 3)));
  assert.notEqual(Math.f16round(1 / 3), Math.fround(1 / 3), "the case tells the roundings apart");
});

Deno.test("batchNormElemtBackward: the CPU and the software CANN agree on the all-float16 path (float32 gradInput)", () => {
  using npu = openSim();
  const t = inputs("float16");
  const onCpu = Tensor.empty(SHAPE, "float32");
  batchNormElemtBackward({ ...t, out: { gradInput: onCpu } });
  const onNpu = Tensor.empty(SHAPE, "float32", npu);
  const m = (x: Tensor) => x.to(npu);
  batchNormElemtBackward({
    gradOut: m(t.gradOut),
    input: m(t.input),
    mean: m(t.mean),
    invstd: m(t.invstd),
    weight: m(t.weight),
    sumDy: m(t.sumDy),
    sumDyXmu: m(t.sumDyXmu),
    counter: m(t.counter),
    out: { gradInput: onNpu },
  });
  const sim = onNpu.toArray();
  assert.ok(sim.every((v) => v === Math.f16round(v)), "the simulator's values are float16 ones");
  // Both round once to float16 from float32 arithmetic (their orders of operations differ).
  const cpu = onCpu.toArray();
  assertNearFloat16(cpu, Float64Array.from(sim), 1, "CPU against the software CANN");
});
