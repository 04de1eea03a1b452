/**
 * The software CANN runs aclnnFastBatchNormBackward (tests/sim/sim_ops_fast_batch_norm_backward.c),
 * called raw through the library's symbol table: on an Atlas A2 the saveInvstd slot read as the
 * batch variance (against a float64 replay of the documented formula), aclnnBatchNormBackward's
 * results bit for bit, `version` without effect, the empty path (nothing written, nothing else
 * checked), the codes and texts of CheckParams in order, the refusal on other products. Needs the
 * built simulator (`deno task build:sim`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { arg } from "../../src/ffi/executor.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import { argsFor, C, EPS, L, M, N, seq, X } from "../helpers/sim_args.ts";
import { dev, expectAclnn, expectOk, fresh, full, onSoc, values } from "../helpers/sim_raw.ts";

const OP = "aclnnFastBatchNormBackward";
const A2 = "Ascend910B4";
const NULLPTR = 161001;
const INVALID = 161002;
const INNER_NULLPTR = 561103;
/** Position of `version` in the argument list (after outputMask). */
const VERSION = 10;

/** gradInput, gradWeight, gradBias of one raw call with the default data of argsFor. */
function run(npu: AscendDevice, op: string, training: boolean, version?: number) {
  const gi = fresh(npu, X), gw = fresh(npu, [C]), gb = fresh(npu, [C]);
  const args = argsFor(
    npu,
    op as never,
    "float32",
    { gradInput: gi, gradWeight: gw, gradBias: gb },
    {
      training,
    },
  );
  if (version !== undefined) args[VERSION] = arg.i32(version);
  expectOk(npu, op, args);
  return [values(gi), values(gw), values(gb)];
}

Deno.test("aclnnFastBatchNormBackward on A2: saveInvstd read as Var(x), as documented for the chip", () => {
  onSoc(A2, (npu) => {
    const x = seq(N * C * L, 1, 2, 0.5), dy = seq(N * C * L, 2);
    const [gi, gw, gb] = run(npu, OP, true);
    // argsFor: saveMean 0.5, the saveInvstd slot 1.5 -> invstd = 1/sqrt(1.5 + eps); weight 1.
    const mean = 0.5, inv = 1 / Math.sqrt(1.5 + EPS);
    const sdy = new Array(C).fill(0), sdx = new Array(C).fill(0);
    x.forEach((v, i) => {
      const c = Math.floor(i / L) % C;
      sdy[c] += dy[i];
      sdx[c] += dy[i] * (v - mean);
    });
    const near = (a: number, b: number, what: string) =>
      assert.ok(Math.abs(a - b) <= 1e-6 + 1e-5 * Math.abs(b), `${what}: ${a} vs ${b}`);
    for (let c = 0; c < C; c++) {
      near(gb[c], sdy[c], `gradBias[${c}]`);
      near(gw[c], sdx[c] * inv, `gradWeight[${c}]`);
    }
    x.forEach((v, i) => {
      const c = Math.floor(i / L) % C;
      const want = inv * (dy[i] - sdy[c] / M - (v - mean) * inv * inv * sdx[c] / M);
      near(gi[i], want, `gradInput[${i}]`);
    });
  });
});

Deno.test("aclnnFastBatchNormBackward on A2: aclnnBatchNormBackward's bits; version only logged", () => {
  onSoc(A2, (npu) => {
    for (const training of [true, false]) {
      const slow = run(npu, "aclnnBatchNormBackward", training);
      assert.deepEqual(run(npu, OP, training), slow, `training=${training}`);
      assert.deepEqual(run(npu, OP, training, 0), slow, `version 0, training=${training}`);
      assert.deepEqual(run(npu, OP, training, -7), slow, `version -7, training=${training}`);
    }
  });
});

Deno.test("aclnnFastBatchNormBackward: an empty input or gradOut succeeds before every other check, writing nothing", () => {
  onSoc(A2, (npu) => {
    const empty = fresh(npu, [0, C, L]);
    const gw = fresh(npu, [C]);
    // NULL outputMask, an int32 weight of the wrong length, float16 gradOut: none of it checked.
    for (const o of [{ input: empty }, { gradOut: fresh(npu, [N, 0, L], "float16") }]) {
      expectOk(
        npu,
        OP,
        argsFor(npu, OP, "float32", {
          ...o,
          outputMask: undefined,
          weight: dev(npu, [1, 2], [2], "int32" as never),
          gradWeight: gw,
        }),
      );
    }
    assert.ok(values(gw).every(Number.isNaN), "gradWeight untouched (fresh memory reads NaN)");
  });
});

Deno.test("aclnnFastBatchNormBackward: CheckParams' codes and texts in order", () => {
  onSoc(A2, (npu) => {
    const f16 = (shape: readonly number[]) => full(npu, shape, 1, "float16");
    const i32 = dev(npu, [1, 1, 1], [C], "int32" as never);
    const call = (o: Record<string, unknown>, mask?: boolean[]) =>
      argsFor(npu, OP, "float32", o as never, mask ? { mask } : {});
    const no = (o: Record<string, unknown>, code: number, text: string, mask?: boolean[]) =>
      expectAclnn(npu, OP, call(o, mask), code, text);
    no({ gradOut: undefined }, NULLPTR, "for argument [gradOut] but instead found nullptr");
    no({ input: undefined }, NULLPTR, "for argument [input]");
    // CheckMaskNotNull before any dtype: an int32 weight is not reached.
    no({ outputMask: undefined, weight: i32 }, NULLPTR, "for argument [outputMask]");
    no({ weight: i32 }, NULLPTR, "outputMask size should not be less than 1.", []);
    no({ weight: i32 }, NULLPTR, "reads outputMask[1] and outputMask[2] regardless", [true, true]);
    no({ gradBias: undefined, weight: i32 }, NULLPTR, "for argument [gradBias]");
    // A masked-off NULL output is fine; entries beyond the third are not read.
    expectOk(npu, OP, call({ gradBias: undefined }, [true, true, false]));
    expectOk(npu, OP, call({}, [true, true, true, false]));
    // CheckDtypeValid, CheckGradDtypeValid, CheckOtherDtypeValid (list membership only).
    no({ input: f16(X) }, INVALID, "input");
    no({ gradWeight: i32, weight: i32 }, INVALID, "gradWeight");
    no({ saveInvstd: i32 }, INVALID, "saveInvstd");
    expectOk(npu, OP, call({ weight: f16([C]), saveMean: full(npu, [C], 0.5, "bfloat16") }));
    // CheckShape, CheckOtherShape.
    no({ gradOut: dev(npu, seq(N * C * (L + 1), 3), [N, C, L + 1]) }, INVALID, "gradOut");
    no({ gradInput: fresh(npu, [N, C * L]) }, INVALID, "gradInput");
    no({ runningVar: full(npu, [1, C], 1) }, INVALID, "Dim of runningVar should be one");
    // [aclsim] the kernel reads C saved statistics in training.
    no({ saveMean: full(npu, [C + 1], 0) }, INVALID, "[aclsim] saveMean");
    // The ViewCopy of the results (561103).
    no(
      { gradInput: fresh(npu, X, "float16") },
      INNER_NULLPTR,
      "l0op::ViewCopy of the result into gradInput",
    );
    no({ gradWeight: fresh(npu, [C + 1]) }, INNER_NULLPTR, "");
  });
});

Deno.test("aclnnFastBatchNormBackward: refused off Atlas A2, naming the SoC", () => {
  for (const soc of ["Ascend950PR_9599", "Ascend910_9391", "Ascend310P3"]) {
    onSoc(soc, (npu) => {
      expectAclnn(npu, OP, argsFor(npu, OP, "float32"), INVALID, `is not supported on SoC ${soc}`);
    });
  }
});
