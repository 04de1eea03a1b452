/**
 * The software CANN's aclnnInstanceNorm (tests/sim/sim_ops_instance_norm.c) through raw calls,
 * below the library's own validation: its results against a float64 replay of the documented
 * formula (double arithmetic, eps as a float, one rounding per output: bit for bit), NCHW and
 * NHWC; CheckNotNull with a NULL dataFormat (161001), the 4-character prefix rule, CheckPlatform
 * after CheckParams and before CheckInputAndWeightShape, the early SUCCESS of an empty tensor,
 * the results' ViewCopy and the 310P kernel's 32-byte rule (561103).
 *
 * @module
 */

import assert from "node:assert/strict";
import { type AclnnArg, arg } from "../../src/ffi/executor.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import type { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { SIM_AVAILABLE } from "../helpers/backends.ts";
import { seq } from "../helpers/sim_args.ts";
import { dev, expectAclnn, expectOk, fresh, full, onSoc, values } from "../helpers/sim_raw.ts";
import { SIM_REPLAY } from "../helpers/tolerance.ts";
import { instanceNorm64 } from "../oracle/instance_norm.ts";
import { rounded } from "../oracle/row_norms.ts";

const OP = "aclnnInstanceNorm";
const NULLPTR = 161001;
const INVALID = 161002;
const INNER_NULLPTR = 561103;
const P310 = "Ascend310P3";
const A2 = "Ascend910B4";
const EPS = 1e-5;

/** The call's tensors: x in `format`'s layout, C from it, every other tensor derived. */
interface Call {
  x: Tensor;
  gamma: Tensor | undefined;
  beta: Tensor | undefined;
  y: Tensor | undefined;
  mean: Tensor | undefined;
  variance: Tensor | undefined;
}

function make(npu: AscendDevice, shape: number[], nhwc: boolean, dtype: DType = "float32"): Call {
  const C = nhwc ? shape[3] : shape[1];
  const stat = nhwc ? [shape[0], 1, 1, C] : [shape[0], C, 1, 1];
  const n = shape.reduce((a, b) => a * b, 1);
  return {
    x: dev(npu, seq(n, 1, 2, 0.5), shape, dtype),
    gamma: dev(npu, seq(C, 2, 0.5, 1), [C], dtype),
    beta: dev(npu, seq(C, 3), [C], dtype),
    y: fresh(npu, shape, dtype),
    mean: fresh(npu, stat, dtype),
    variance: fresh(npu, stat, dtype),
  };
}

/** The argument list in the C prototype's order; `format` null passes a NULL char pointer. */
function argsOf(c: Call, format: string | null, eps = EPS): AclnnArg[] {
  return [
    arg.tensor(c.x),
    arg.tensor(c.gamma),
    arg.tensor(c.beta),
    format === null ? arg.tensor(undefined) : arg.string(format),
    arg.f64(eps),
    arg.output(c.y),
    arg.output(c.mean),
    arg.output(c.variance),
  ];
}

function simTest(name: string, fn: () => void): void {
  Deno.test({ name: `software CANN aclnnInstanceNorm: ${name}`, ignore: !SIM_AVAILABLE, fn });
}

simTest("y, mean and the biased variance replay the documented formula bit for bit", () => {
  const cases: [number[], boolean, DType][] = [
    [[2, 8, 2, 4], false, "float32"],
    [[2, 2, 4, 8], true, "float32"],
    [[1, 16, 4, 4], false, "float16"],
    [[2, 4, 4, 16], true, "float16"],
  ];
  onSoc(P310, (npu) => {
    for (const [shape, nhwc, dtype] of cases) {
      const c = make(npu, shape, nhwc, dtype);
      expectOk(npu, OP, argsOf(c, nhwc ? "NHWC" : "NCHW", 0.1));
      // The l0 operator's eps is a float attribute (op_api/instance_norm_v3.cpp:56-57).
      const e = instanceNorm64(
        values(c.x),
        shape,
        nhwc,
        values(c.gamma!),
        values(c.beta!),
        Math.fround(0.1),
      );
      const what = `${shape} ${nhwc ? "NHWC" : "NCHW"} ${dtype}`;
      assertClose(values(c.y!), rounded([...e.y], dtype), SIM_REPLAY, `${what} y`);
      assertClose(values(c.mean!), rounded([...e.mean], dtype), SIM_REPLAY, `${what} mean`);
      assertClose(values(c.variance!), rounded([...e.variance], dtype), SIM_REPLAY, `${what} var`);
    }
  });
});

simTest("CheckNotNull and the dataFormat prefix (strncmp over 4 characters)", () => {
  onSoc(P310, (npu) => {
    const c = make(npu, [2, 8, 2, 4], false);
    expectAclnn(npu, OP, argsOf({ ...c, beta: undefined }, "NCHW"), NULLPTR, "argument [beta]");
    expectAclnn(npu, OP, argsOf(c, null), NULLPTR, "dataFormat is NULL");
    // A NULL tensor is reported before a NULL dataFormat.
    expectAclnn(npu, OP, argsOf({ ...c, variance: undefined }, null), NULLPTR, "[variance]");
    for (const f of ["NCH", "nchw", "HWCN", ""]) {
      expectAclnn(npu, OP, argsOf(c, f), INVALID, "starts with neither", f);
    }
    // Before the dtype checks: a bfloat16 x with a bad format is the format's refusal.
    const bf = { ...c, x: dev(npu, seq(128, 1), [2, 8, 2, 4], "bfloat16") };
    expectAclnn(npu, OP, argsOf(bf, "NC"), INVALID, "starts with neither");
    for (const f of ["NCHWxyz", "NCHW\u00e9"]) {
      const ok = make(npu, [2, 8, 2, 4], false);
      expectOk(npu, OP, argsOf(ok, f), f);
      assert.ok(values(ok.variance!).every(Number.isFinite), `${f}: variance written`);
    }
  });
});

simTest("CheckPlatform: after CheckParams, before CheckInputAndWeightShape", () => {
  onSoc(A2, (npu) => {
    const c = make(npu, [2, 8, 2, 4], false);
    const e = expectAclnn(npu, OP, argsOf(c, "NCHW"), INVALID, "only supports Ascend310p");
    assert.ok(e.nativeMessage?.includes(A2), e.nativeMessage);
    // CheckDtypeValid first: a bfloat16 x is the dtype's refusal.
    const bf = { ...c, x: dev(npu, seq(128, 1), [2, 8, 2, 4], "bfloat16") };
    expectAclnn(npu, OP, argsOf(bf, "NCHW"), INVALID, "not implemented for DT_BF16");
    const f16 = { ...c, mean: fresh(npu, [2, 8, 1, 1], "float16") };
    expectAclnn(npu, OP, argsOf(f16, "NCHW"), INVALID, "mean expected dtype is DT_FLOAT");
    // A 3-D x (CheckInputAndWeightShape) meets CheckPlatform first.
    const x3 = { ...c, x: dev(npu, seq(128, 1), [2, 8, 8]) };
    expectAclnn(npu, OP, argsOf(x3, "NCHW"), INVALID, "only supports Ascend310p");
  });
  onSoc(P310, (npu) => {
    const c = make(npu, [2, 8, 2, 4], false);
    const x3 = { ...c, x: dev(npu, seq(128, 1), [2, 8, 8]) };
    expectAclnn(npu, OP, argsOf(x3, "NCHW"), INVALID, "x dim should be 4");
    const g = { ...c, gamma: full(npu, [4], 1) };
    expectAclnn(npu, OP, argsOf(g, "NCHW"), INVALID, "gamma.shape[0] must be equal to x's C axis");
    // NHWC: C is dim 3.
    expectAclnn(npu, OP, argsOf(c, "NHWC"), INVALID, "gamma.shape[0] must be equal");
  });
});

simTest("an empty tensor is SUCCESS, nothing written; ViewCopy and the kernel's limits", () => {
  onSoc(P310, (npu) => {
    const c = make(npu, [2, 8, 0, 4], false);
    const mean = full(npu, [2, 8, 1, 1], 7);
    expectOk(npu, OP, argsOf({ ...c, mean, variance: fresh(npu, [0]) }, "NCHW"));
    assert.deepEqual(values(mean), new Array(16).fill(7), "mean untouched");
    const d = make(npu, [2, 8, 2, 4], false);
    expectAclnn(
      npu,
      OP,
      argsOf({ ...d, mean: fresh(npu, [2, 8]) }, "NCHW"),
      INNER_NULLPTR,
      "should be same with output's shape",
    );
    // NHWC results are reshaped to [N, 1, 1, C]: an [N, C, 1, 1] variance is refused.
    const h = make(npu, [2, 2, 4, 8], true);
    const vh = { ...h, variance: fresh(npu, [2, 8, 1, 1]) };
    expectAclnn(npu, OP, argsOf(vh, "NHWC"), INNER_NULLPTR, "Input tensor's shape[[2, 1, 1, 8]]");
    // C of 4 float32 values spans 16 bytes (aclnnInstanceNorm.md: at least 32).
    const small = make(npu, [2, 4, 2, 4], false);
    expectAclnn(npu, OP, argsOf(small, "NCHW"), INNER_NULLPTR, "at least 32 bytes");
    const b9 = { ...d, beta: full(npu, [9], 0) };
    expectAclnn(npu, OP, argsOf(b9, "NCHW"), INNER_NULLPTR, "beta has 9 elements");
  });
});
