/**
 * The software CANN runs aclnnFastLayerNorm (tests/sim/sim_ops_fast_layer_norm.c), called raw
 * through the library's symbol table: on Atlas A2 and A3 aclnnLayerNorm's float32 results bit
 * for bit, statistics cast to the outputs' dtypes, the empty paths (N = 0 fills before M = 0),
 * the codes and texts of aclnn_fast_layer_norm.cpp in order, the refusal on other products.
 * Needs the built simulator (`deno task build:sim`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { arg } from "../../src/ffi/executor.ts";
import { argsFor, ROWS, X } from "../helpers/sim_args.ts";
import { dev, expectAclnn, expectOk, fresh, full, onSoc, values } from "../helpers/sim_raw.ts";

const OP = "aclnnFastLayerNorm";
const NULLPTR = 161001;
const INVALID = 161002;
const INNER_NULLPTR = 561103;

Deno.test("aclnnFastLayerNorm on A2 and A3: aclnnLayerNorm's float32 bits; statistics cast to their outputs", () => {
  for (const soc of ["Ascend910B4", "Ascend910_9391"]) {
    onSoc(soc, (npu) => {
      const run = (op: string, meanDType: "float32" | "float16" = "float32") => {
        const y = fresh(npu, X), mean = fresh(npu, ROWS, meanDType), rstd = fresh(npu, ROWS);
        expectOk(
          npu,
          op,
          argsFor(npu, op as never, "float32", { out: y, meanOut: mean, rstdOut: rstd }),
        );
        return [values(y), values(mean), values(rstd)];
      };
      const slow = run("aclnnLayerNorm");
      assert.deepEqual(run(OP), slow, soc);
      const [y, mean16] = run(OP, "float16");
      assert.deepEqual(y, slow[0]);
      mean16.forEach((m, i) => assert.ok(Math.abs(m - slow[1][i]) <= 1e-3 * Math.abs(slow[1][i])));
    });
  }
});

Deno.test("aclnnFastLayerNorm: N = 0 fills mean 0 and rstd NaN (even without rows); M = 0 writes nothing", () => {
  onSoc("Ascend910B4", (npu) => {
    const mean = full(npu, [3], 7, "float16"), rstd = full(npu, [2], 7);
    const a = argsFor(npu, OP, "float32", {
      input: fresh(npu, [0, 0]),
      out: fresh(npu, [0, 0]),
      meanOut: mean,
      rstdOut: rstd,
    });
    a[1] = arg.intArray([0]);
    expectOk(npu, OP, a);
    assert.deepEqual(values(mean), [0, 0, 0]);
    assert.ok(values(rstd).every(Number.isNaN));
    const untouched = full(npu, [5], 7);
    const b = argsFor(npu, OP, "float32", {
      input: fresh(npu, [0, 4]),
      out: fresh(npu, [0, 4]),
      meanOut: untouched,
    });
    b[1] = arg.intArray([4]);
    expectOk(npu, OP, b);
    assert.deepEqual(values(untouched), [7, 7, 7, 7, 7]);
  });
});

Deno.test("aclnnFastLayerNorm: codes and texts in CANN's order", () => {
  onSoc("Ascend910B4", (npu) => {
    const L = X[2];
    const i32 = dev(npu, new Array(L).fill(1), [L], "int32" as never);
    const no = (o: Record<string, unknown>, code: number, text: string) =>
      expectAclnn(npu, OP, argsFor(npu, OP, "float32", o as never), code, text);
    no({ input: undefined, weight: i32 }, NULLPTR, "for argument [input]");
    no({ out: undefined, weight: i32 }, NULLPTR, "for argument [out]");
    no({ weight: i32 }, INVALID, "weightOptional");
    no({ weight: full(npu, [L], 1, "float16") }, INVALID, "same dtype");
    no({ rstdOut: fresh(npu, ROWS, "int32" as never), meanOut: i32 }, INVALID, "rstdOutOptional");
    no(
      { weight: full(npu, [1, L], 1) },
      INVALID,
      "Expected 1 dimension input, but got weightOptional",
    );
    no({ bias: full(npu, [L + 1], 1) }, INVALID, "be equal to bias index [0]");
    no({ out: fresh(npu, [X[0], X[1] * L]) }, INVALID, "out");
    no({ out: fresh(npu, X, "float16") }, INNER_NULLPTR, "l0op::ViewCopy of the result into out");
    no({ rstdOut: fresh(npu, [X[0] * X[1]]) }, INNER_NULLPTR, "should be same with output's shape");
    // Statistics of any listed dtype, no further shape rule than ViewCopy's.
    expectOk(npu, OP, argsFor(npu, OP, "float32", { meanOut: fresh(npu, ROWS, "bfloat16") }));
  });
});

Deno.test("aclnnFastLayerNorm: refused off Atlas A2/A3, naming the SoC", () => {
  for (const soc of ["Ascend950PR_9599", "Ascend310P3", "Ascend910A"]) {
    onSoc(soc, (npu) => {
      expectAclnn(npu, OP, argsFor(npu, OP, "float32"), INVALID, `is not supported on SoC ${soc}`);
    });
  }
});
