/**
 * The software CANN runs aclnnAddLayerNormGrad and aclnnDeepNormGrad (tests/sim/
 * sim_ops_add_layer_norm_grad.c, sim_ops_deep_norm_grad.c; rules and sources in
 * tests/sim/README_norm.md), called raw (no library validation): values against the float64
 * oracle, the generated phase 1's codes and the tilings' texts, the no-launch of all-empty
 * outputs, and the OpDef rows of the Atlas inference series. Needs the built simulator.
 *
 * @module
 */

import assert from "node:assert/strict";
import { arg } from "../../src/ffi/executor.ts";
import { assertClose } from "../helpers/assert.ts";
import { argsFor, L, N, ROWS, seq, X } from "../helpers/sim_args.ts";
import { dev, expectAclnn, expectOk, fresh, full, onSoc, values } from "../helpers/sim_raw.ts";
import { toleranceFor } from "../helpers/tolerance.ts";
import { addLayerNormGrad64, deepNormGrad64 } from "../oracle/mod.ts";

const C = X[1];
const ROW_COUNT = N * C;
const OPDEF = /inconsistent with that defined in the operator prototype OpDef/;

Deno.test("sim aclnnAddLayerNormGrad: dx (+ dsum), dgamma, dbeta against the oracle; tiling texts", () => {
  onSoc("Ascend910B4", (npu) => {
    const dx = fresh(npu, X);
    const dgamma = fresh(npu, [L]);
    const dbeta = fresh(npu, [L]);
    const dsum = dev(npu, seq(N * C * L, 7), X);
    expectOk(
      npu,
      "aclnnAddLayerNormGrad",
      argsFor(npu, "aclnnAddLayerNormGrad", "float32", {
        dsum,
        dx,
        dgamma,
        dbeta,
      }),
    );
    const e = addLayerNormGrad64(
      seq(N * C * L, 2),
      seq(N * C * L, 1, 2, 0.5),
      seq(N * C * L, 2),
      new Array(ROW_COUNT).fill(1.25),
      new Array(ROW_COUNT).fill(0.5),
      new Array(L).fill(1.5),
      ROW_COUNT,
      L,
      values(dsum),
    );
    assertClose(dx, e.dx, toleranceFor("float32"), "dx");
    assertClose(dgamma, e.dgamma, toleranceFor("float32"), "dgamma");
    assertClose(dbeta, e.dbeta, toleranceFor("float32"), "dbeta");
    const op = "aclnnAddLayerNormGrad";
    const f = (o: Record<string, ReturnType<typeof fresh>>) => argsFor(npu, op, "float32", o);
    expectAclnn(npu, op, f({ gamma: full(npu, [0], 1) }), 561002, "numLastDim is 0");
    expectAclnn(npu, op, f({ rstd: full(npu, [N, C], 1) }), 561002, "dy/mean/rstd not same");
    expectAclnn(npu, op, f({ x2: full(npu, [C, N, L], 1) }), 561002, "should have same shape");
    expectAclnn(npu, op, f({ dsum: full(npu, [C, N, L], 1) }), 561002, "[aclsim] dsum");
    // The dtype rows: gamma of dy's dtype, statistics float32.
    expectAclnn(npu, op, f({ gamma: full(npu, [L], 1, "float16") }), 161002, OPDEF);
    // Every output empty: no launch, SUCCESS (nothing checked beyond the rows).
    const none = argsFor(npu, op, "float32", {
      dy: fresh(npu, [0, C, L]),
      gamma: full(npu, [0], 1),
      dx: fresh(npu, [0, C, L]),
      dgamma: fresh(npu, [0]),
      dbeta: fresh(npu, [0]),
    });
    expectOk(npu, op, none, "all outputs empty");
  });
});

Deno.test("sim aclnnDeepNormGrad: dx = alpha * dgx, dgamma, dbeta against the oracle; tiling texts", () => {
  onSoc("Ascend950PR_9599", (npu) => {
    const [dx, dgx] = [fresh(npu, X, "float16"), fresh(npu, X, "float16")];
    const [dbeta, dgamma] = [fresh(npu, [L]), fresh(npu, [L])];
    const op = "aclnnDeepNormGrad";
    const args = argsFor(npu, op, "float16", { dx, dgx, dbeta, dgamma });
    args[6] = arg.f64(0.87);
    expectOk(npu, op, args);
    const e = deepNormGrad64(
      values(dev(npu, seq(N * C * L, 2), X, "float16")),
      values(dev(npu, seq(N * C * L, 1, 2, 0.5), X, "float16")),
      values(dev(npu, seq(N * C * L, 2), X, "float16")),
      new Array(L).fill(1.5),
      new Array(ROW_COUNT).fill(0.5),
      new Array(ROW_COUNT).fill(1.25),
      Math.fround(0.87),
      ROW_COUNT,
      L,
    );
    assertClose(dgx, e.dgx, toleranceFor("float16"), "dgx");
    assertClose(dx, e.dx, toleranceFor("float16"), "dx");
    assertClose(dgamma, e.dgamma, toleranceFor("float32"), "dgamma");
    assertClose(dbeta, e.dbeta, toleranceFor("float32"), "dbeta");
    const f = (o: Record<string, ReturnType<typeof fresh>>) => argsFor(npu, op, "float32", o);
    expectAclnn(npu, op, f({ gamma: full(npu, [L + 1], 1) }), 561002, "Input gamma shape invaild");
    expectAclnn(npu, op, f({ gx: full(npu, [N, C, L + 1], 1) }), 561002, "Input x/gx shape");
    // The tiling checks mean's leading dims only; the simulator asks one value per row.
    expectAclnn(npu, op, f({ mean: full(npu, [N, C, 2], 0.5) }), 561002, "[aclsim] mean");
  });
});

Deno.test("sim: the Atlas inference series' OpDef rows have no bfloat16 for either", () => {
  onSoc("Ascend310P3", (npu) => {
    for (const op of ["aclnnAddLayerNormGrad", "aclnnDeepNormGrad"] as const) {
      expectAclnn(npu, op, argsFor(npu, op, "bfloat16"), 161002, OPDEF);
      expectOk(npu, op, argsFor(npu, op, "float16"));
    }
    assert.deepEqual(ROWS, [N, C, 1]);
  });
});
