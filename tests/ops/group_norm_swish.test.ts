/**
 * groupNormSwish (aclnnGroupNormSwish) on every backend: y, mean, rstd against the float64 oracle
 * (tests/oracle/group_norm_silu.ts) per OpDef row, with scales of both signs and the activation
 * off; mean/rstd in gamma's dtype; the generated operator's codes (161001, 161002 per row, the
 * tiling's 561002); the products (not the Atlas inference series), refused naming the SoC.
 *
 * @module
 */

import assert from "node:assert/strict";
import { groupNormSwish } from "../../src/ops/group_norm_swish.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, chipAccepts, forEachBackend, on } from "../helpers/backends.ts";
import { groupNormSwish64 } from "../oracle/group_norm_silu.ts";
import { looser, toleranceFor } from "../helpers/tolerance.ts";

const ALL_SOCS = { socs: ["Ascend950PR_9599", "Ascend910B4", "Ascend310P3"] };
const values = (t: Tensor) => [...t.toFloat64Array()];
const rnd = (shape: number[], seed: number, dtype: DType, low = -2, high = 3) =>
  Tensor.random(shape, { seed, dtype, low, high });

/** (x, gamma) dtypes of the OpDef's rows (group_norm_swish_def.cpp:69-104). */
const ROWS: [DType, DType][] = [
  ["float16", "float16"],
  ["float32", "float32"],
  ["bfloat16", "bfloat16"],
  ["float16", "float32"],
  ["bfloat16", "float32"],
];

forEachBackend(
  "groupNormSwish: y, mean, rstd against the float64 oracle, per OpDef row",
  (ctx) => {
    const d = ctx.device;
    if (!chipAccepts(ctx.soc, "aclnnGroupNormSwish", ["float32"])) return;
    let i = 0;
    for (const [xt, gt] of ROWS) {
      if (!chipAccepts(ctx.soc, "aclnnGroupNormSwish", [xt, gt])) continue;
      for (const [s, on_] of [[1, true], [0.35, true], [-1.5, true], [2, false]] as const) {
        i++;
        const shape = [2, 6, 4, 5];
        const x = rnd(shape, i, xt);
        const gamma = rnd([6], 10 + i, gt, 0.5, 1.5);
        const beta = rnd([6], 20 + i, gt, -1, 1);
        const r = groupNormSwish({
          x: on(x, d),
          gamma: on(gamma, d),
          beta: on(beta, d),
          numGroups: 3,
          swishScale: s,
          activateSwish: on_,
        });
        const label = `${ctx.label} ${xt}/${gt} s=${s} ${on_}`;
        assert.equal(r.y.dtype, xt, label);
        assert.equal(r.mean.dtype, gt, label);
        assert.deepEqual(r.mean.shape, [2, 3]);
        const e = groupNormSwish64(
          values(x),
          2,
          6,
          20,
          3,
          values(gamma),
          values(beta),
          1e-5,
          on_ ? Math.fround(s) : undefined,
        );
        assertClose(r.y, e.output, looser(toleranceFor(xt), { rtol: 0, atol: 4e-6 }), label);
        assertClose(r.mean, e.mean, toleranceFor(gt), `${label} mean`);
        assertClose(r.rstd, e.rstd, toleranceFor(gt), `${label} rstd`);
      }
    }
  },
  ALL_SOCS,
);

forEachBackend(
  "groupNormSwish: the generated operator's codes per check",
  (ctx) => {
    const d = ctx.device;
    if (!chipAccepts(ctx.soc, "aclnnGroupNormSwish", ["float32"])) return;
    const x = on(rnd([2, 4, 3], 1, "float32"), d);
    const g = on(rnd([4], 2, "float32"), d);
    const call = (o: Record<string, unknown>) => () =>
      groupNormSwish({ x, gamma: g, beta: g, numGroups: 2, ...o } as never);
    assertAclnnError(call({ beta: undefined }), 161001, "beta");
    assertAclnnError(call({ out: { y: null } }), 161001, "y");
    assertAclnnError(call({ gamma: on(rnd([4], 2, "float16"), d), numGroups: 0 }), 161002, "gamma");
    assertAclnnError(call({ out: { mean: Tensor.empty([2, 2], "float16", d) } }), 161002, "mean");
    assertAclnnError(call({ gamma: on(rnd([5], 2, "float32"), d) }), 561002, "gamma");
    assertAclnnError(call({ numGroups: 0 }), 561002, "numGroups");
    assertAclnnError(call({ numGroups: 3 }), 561002, "numGroups");
    assertAclnnError(call({ dataFormat: "NHWC" }), 561002, "dataFormat");
    assertAclnnError(call({ out: { rstd: Tensor.empty([3], "float32", d) } }), 561002, "rstd");
    const r = groupNormSwish({ x, gamma: g, beta: g, numGroups: 2, dataFormat: "NCHW" });
    assert.deepEqual(r.rstd.shape, [2, 2]);
  },
  ALL_SOCS,
);

forEachBackend(
  "groupNormSwish: not on the Atlas inference series",
  (ctx) => {
    const d = ctx.device;
    const x = on(rnd([2, 4, 3], 1, "float16"), d);
    const g = on(rnd([4], 2, "float16"), d);
    const run = () => groupNormSwish({ x, gamma: g, beta: g, numGroups: 2 });
    if (ctx.soc!.name === "Ascend310P") assertChipRefuses(ctx, run, "device");
    else run();
  },
  { ...ALL_SOCS, cpu: false },
);
