/**
 * A Tensor used wrongly answers with one line naming the argument and the rule (issue 38 B8,
 * D21, D22): a host buffer too large to make is AclError 207001 with the shape and the bytes
 * (was V8's bare "Array buffer allocation failed"); a device that is not one (`"npu"`) says how
 * to get one; nested arrays are refused with the advice to flatten them (four pairs filled a
 * [2, 2] tensor with NaN); `copy_` names itself; a disposed tensor is AclnnError 161002 from
 * every method, as from the operators.
 *
 * @module
 */

import assert from "node:assert/strict";
import { AclError } from "../../src/errors.ts";
import { LayerNorm } from "../../src/nn/mod.ts";
import { batchNorm } from "../../src/ops/mod.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError } from "../helpers/assert.ts";
import { forEachBackend, on } from "../helpers/backends.ts";

const HUGE = [2 ** 20, 2 ** 20];

/** The error `fn` throws. */
function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  assert.fail("nothing was thrown");
}

Deno.test("tensor: a host buffer too large to make is AclError 207001 naming shape and bytes", () => {
  const cases: [() => unknown, string][] = [
    [() => Tensor.empty(HUGE), "4096.00 GiB for a tensor [1048576, 1048576] float32"],
    [() => Tensor.zeros(HUGE, "float16"), "2048.00 GiB for a tensor [1048576, 1048576] float16"],
    [() => Tensor.ones(HUGE, "bfloat16"), "2048.00 GiB for a tensor [1048576, 1048576] bfloat16"],
    [() => Tensor.random(HUGE), "4096.00 GiB for a tensor [1048576, 1048576] float32"],
    [
      () => new LayerNorm({ normalizedShape: HUGE }),
      "4096.00 GiB for a tensor [1048576, 1048576] float32",
    ],
  ];
  for (const [fn, what] of cases) {
    const e = thrown(fn);
    assert.ok(e instanceof AclError, `${e}`);
    assert.equal(e.code, 207001);
    assert.equal(
      e.message,
      `out of host memory: cannot allocate ${what} [ACL_ERROR_RT_MEMORY_ALLOCATION 207001]`,
    );
  }
});

Deno.test("tensor: a device that is not one says how to open one", () => {
  const x = Tensor.random([2, 3], { seed: 1 });
  const cases: [() => unknown, string][] = [
    [() => x.to("npu" as never), '"npu"'],
    [() => x.to(undefined as never), "undefined"],
    [() => x.to({} as never), "{}"],
    [() => Tensor.zeros([2], "float32", "npu" as never), '"npu"'],
    [() => Tensor.random([2], { device: "gpu" as never }), '"gpu"'],
  ];
  for (const [fn, shown] of cases) {
    const e = thrown(fn);
    assert.ok(e instanceof TypeError, `${e}`);
    assert.equal(
      e.message,
      `device ${shown} is not a device: pass "cpu" or a device opened with openAscend() ` +
        `(import { openAscend } from "@aclnn/norm"; const npu = openAscend(); x.to(npu))`,
    );
  }
});

Deno.test("tensor: nested arrays are refused with the advice to flatten them", () => {
  for (const values of [[[1, 2], [3, 4]], [[1, 2], [3, 4], [5, 6], [7, 8]]]) {
    const e = thrown(() => Tensor.fromArray(values as never, [2, 2]));
    assert.ok(e instanceof TypeError, `${e}`);
    assert.equal(
      e.message,
      "Tensor.fromArray: values is a nested array; pass the numbers flat in row-major order " +
        "(values.flat(Infinity)) and the dimensions as the shape",
    );
  }
  const copied = thrown(() => Tensor.zeros([2, 2]).copy_([[1, 2], [3, 4]] as never));
  assert.ok(copied instanceof TypeError);
  assert.match(copied.message, /^copy_: values is a nested array; pass the numbers flat/);
});

Deno.test("tensor: copy_ errors name copy_", () => {
  const x = Tensor.zeros([2, 3]);
  const short = thrown(() => x.copy_([1, 2]));
  assert.ok(short instanceof RangeError);
  assert.equal(short.message, "copy_: 2 values do not fill shape [2, 3] (6 elements)");
  const other = thrown(() => x.copy_(Tensor.zeros([3, 2])));
  assert.equal(other.message, "copy_: source shape [3, 2] differs from [2, 3]");
  assert.deepEqual(x.copy_([1, 2, 3, 4, 5, 6]).toArray(), [1, 2, 3, 4, 5, 6]);
});

forEachBackend("tensor: a disposed tensor is AclnnError 161002 from every method", (ctx) => {
  for (const shape of [[4], [64, 64]]) { // a slab tensor, a heap block
    const t = on(Tensor.random(shape, { seed: 1 }), ctx.device);
    t.dispose();
    const described = `Tensor<float32>[${shape.join(", ")}] on ${
      ctx.device === "cpu" ? "cpu" : ctx.device.name
    }`;
    const uses: [string, () => unknown][] = [
      ["toArray", () => t.toArray()],
      ["toFloat64Array", () => t.toFloat64Array()],
      ["clone", () => t.clone()],
      ["to", () => t.to("cpu")],
      ["copy_", () => t.copy_(new Float32Array(t.numel))],
    ];
    for (const [method, use] of uses) {
      if (method === "to" && ctx.device === "cpu") continue; // to its own device: no copy
      const e = assertAclnnError(use, 161002, "tensor");
      assert.equal(
        e.message,
        `${method}: the tensor (${described}) was disposed (dispose() or tidy freed its ` +
          "memory) [ACLNN_ERR_PARAM_INVALID 161002]",
      );
    }
    const live = on(Tensor.zeros(shape), ctx.device);
    const source = assertAclnnError(() => live.copy_(t), 161002, "values");
    assert.match(source.message, /^copy_: values \(Tensor<float32>.*\) was disposed/);
    // As the operators say it.
    const op = assertAclnnError(
      () => batchNorm({ input: t.reshape([2, -1]), training: true }),
      161002,
    );
    assert.match(op.message, /^aclnnBatchNorm: input was disposed/);
    live.dispose();
  }
});
