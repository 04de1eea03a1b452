/**
 * groupNormSwishGrad (aclnnGroupNormSwishGrad) on every backend: dx, dgamma, dbeta against the
 * float64 oracle (tests/oracle/group_norm_swish_grad.ts, itself checked against finite
 * differences of the GroupNormSwish forward) per OpDef dtype, scales of both signs; dgamma/dbeta
 * left alone when not required; the generated operator's codes (161001, 161002, the tiling's
 * 561002); the products (not the Atlas inference series), refused naming the SoC.
 *
 * @module
 */

import assert from "node:assert/strict";
import { groupNormSwishGrad } from "../../src/ops/group_norm_swish_grad.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, chipAccepts, forEachBackend, on } from "../helpers/backends.ts";
import { groupNormSwishGrad64 } from "../oracle/group_norm_swish_grad.ts";
import { groupStats64 } from "../oracle/mod.ts";
import { looser, toleranceFor } from "../helpers/tolerance.ts";

const OP = "aclnnGroupNormSwishGrad";
const ALL_SOCS = { socs: ["Ascend950PR_9599", "Ascend910B4", "Ascend310P3"] };
const values = (t: Tensor) => [...t.toFloat64Array()];
const rnd = (shape: number[], seed: number, dtype: DType, low = -2, high = 3) =>
  Tensor.random(shape, { seed, dtype, low, high });

/** A case's inputs in `dt`: mean/rstd the forward's (float64, rounded to dt). */
function inputs(shape: number[], G: number, seed: number, dt: DType) {
  const [N, C] = shape;
  const HxW = shape.slice(2).reduce((a, b) => a * b, 1);
  const x = rnd(shape, seed, dt);
  const st = groupStats64(x.toFloat64Array(), N, C, HxW, G);
  return {
    dy: rnd(shape, seed + 1, dt, -1, 1),
    x,
    mean: Tensor.fromArray(st.mean, [N, G], dt),
    rstd: Tensor.fromArray(st.variance.map((v) => 1 / Math.sqrt(v + 1e-5)), [N, G], dt),
    gamma: rnd([C], seed + 2, dt, 0.5, 1.5),
    beta: rnd([C], seed + 3, dt, -1, 1),
  };
}

forEachBackend(
  "groupNormSwishGrad: dx, dgamma, dbeta against the float64 oracle, per dtype and scale",
  (ctx) => {
    const d = ctx.device;
    let seed = 0;
    for (const dt of ["float32", "float16", "bfloat16"] as const) {
      if (!chipAccepts(ctx.soc, OP, [dt])) continue;
      for (const [shape, G] of [[[2, 6, 4, 5], 3], [[3, 4, 7], 2], [[2, 8, 1], 4]] as const) {
        for (const s of [1, 0.35, -1.5]) {
          const a = inputs([...shape], G, seed += 10, dt);
          const r = groupNormSwishGrad({
            dy: on(a.dy, d),
            mean: on(a.mean, d),
            rstd: on(a.rstd, d),
            x: on(a.x, d),
            gamma: on(a.gamma, d),
            beta: on(a.beta, d),
            numGroups: G,
            swishScale: s,
          });
          const label = `${ctx.label} ${dt} [${shape}] s=${s}`;
          assert.equal(r.dx.dtype, dt, label);
          assert.deepEqual(r.dgamma.shape, [shape[1]], label);
          const [N, C] = shape;
          const HxW = shape.slice(2).reduce((p: number, q: number) => p * q, 1);
          const e = groupNormSwishGrad64(
            values(a.dy),
            values(a.mean),
            values(a.rstd),
            values(a.x),
            values(a.gamma),
            values(a.beta),
            N,
            C,
            HxW,
            G,
            Math.fround(s),
          );
          // dx cancels (its group sums are zero): an absolute floor of the dtype's epsilon.
          const tol = looser(toleranceFor(dt), { rtol: 0, atol: dt === "float32" ? 2e-6 : 2e-2 });
          assertClose(r.dx, e.dx, tol, `${label} dx`);
          assertClose(r.dgamma, e.dgamma, tol, `${label} dgamma`);
          assertClose(r.dbeta, e.dbeta, tol, `${label} dbeta`);
        }
      }
    }
  },
  ALL_SOCS,
);

forEachBackend(
  "groupNormSwishGrad: dgamma/dbeta not required are left as given; dx unchanged",
  (ctx) => {
    const d = ctx.device;
    if (!chipAccepts(ctx.soc, OP, ["float32"])) return;
    const a = inputs([2, 4, 3], 2, 5, "float32");
    const args = {
      dy: on(a.dy, d),
      mean: on(a.mean, d),
      rstd: on(a.rstd, d),
      x: on(a.x, d),
      gamma: on(a.gamma, d),
      beta: on(a.beta, d),
      numGroups: 2,
    };
    const all = groupNormSwishGrad(args);
    for (const [g, b] of [[false, true], [true, false], [false, false]]) {
      const out = { dgamma: on(Tensor.full([4], 7), d), dbeta: on(Tensor.full([4], 7), d) };
      const r = groupNormSwishGrad({ ...args, dgammaIsRequire: g, dbetaIsRequire: b, out });
      assert.deepEqual(values(r.dx), values(all.dx), `${ctx.label} ${g} ${b} dx`);
      const want = (req: boolean, t: Tensor) => (req ? values(t) : [7, 7, 7, 7]);
      assert.deepEqual(values(r.dgamma), want(g, all.dgamma), `${ctx.label} dgamma`);
      assert.deepEqual(values(r.dbeta), want(b, all.dbeta), `${ctx.label} dbeta`);
    }
  },
  ALL_SOCS,
);

forEachBackend(
  "groupNormSwishGrad: the generated operator's codes per check",
  (ctx) => {
    const d = ctx.device;
    if (!chipAccepts(ctx.soc, OP, ["float32"])) return;
    const x = on(rnd([2, 4, 3], 1, "float32"), d);
    const g = on(rnd([4], 2, "float32"), d);
    const st = on(rnd([2, 2], 3, "float32", 0.5, 1.5), d);
    const call = (o: Record<string, unknown>) => () =>
      groupNormSwishGrad(
        { dy: x, mean: st, rstd: st, x, gamma: g, beta: g, numGroups: 2, ...o } as never,
      );
    assertAclnnError(call({ mean: undefined }), 161001, "mean");
    assertAclnnError(call({ out: { dx: null } }), 161001, "dx");
    assertAclnnError(call({ gamma: on(rnd([4], 2, "float16"), d), numGroups: 0 }), 161002, "gamma");
    assertAclnnError(call({ out: { dbeta: Tensor.empty([4], "float16", d) } }), 161002, "dbeta");
    assertAclnnError(call({ dy: on(rnd([2, 4, 2], 1, "float32"), d) }), 561002, "dy");
    assertAclnnError(call({ rstd: on(rnd([3], 1, "float32"), d) }), 561002, "rstd");
    assertAclnnError(call({ gamma: on(rnd([5], 2, "float32"), d) }), 561002, "gamma");
    assertAclnnError(call({ numGroups: 3 }), 561002, "mean");
    assertAclnnError(call({ dataFormat: "NHWC" }), 561002, "dataFormat");
    assertAclnnError(call({ out: { dgamma: Tensor.empty([3], "float32", d) } }), 561002, "dgamma");
    const r = groupNormSwishGrad({ dy: x, mean: st, rstd: st, x, gamma: g, beta: g, numGroups: 2 });
    assert.deepEqual(r.dx.shape, [2, 4, 3]);
  },
  ALL_SOCS,
);

forEachBackend(
  "groupNormSwishGrad: empty x gives zero dgamma and dbeta",
  (ctx) => {
    const d = ctx.device;
    if (!chipAccepts(ctx.soc, OP, ["float32"])) return;
    const x = on(Tensor.empty([2, 4, 0], "float32"), d);
    const st = on(Tensor.ones([2, 2]), d);
    const g = on(Tensor.ones([4]), d);
    const out = { dgamma: on(Tensor.full([4], 7), d), dbeta: on(Tensor.full([4], 7), d) };
    const r = groupNormSwishGrad({
      dy: x,
      mean: st,
      rstd: st,
      x,
      gamma: g,
      beta: g,
      numGroups: 2,
      out,
    });
    assert.deepEqual(values(r.dgamma), [0, 0, 0, 0], ctx.label);
    assert.deepEqual(values(r.dbeta), [0, 0, 0, 0], ctx.label);
  },
  ALL_SOCS,
);

forEachBackend(
  "groupNormSwishGrad: not on the Atlas inference series",
  (ctx) => {
    const d = ctx.device;
    const x = on(rnd([2, 4, 3], 1, "float16"), d);
    const g = on(rnd([4], 2, "float16"), d);
    const st = on(rnd([2, 2], 3, "float16", 0.5, 1.5), d);
    const run = () =>
      groupNormSwishGrad({ dy: x, mean: st, rstd: st, x, gamma: g, beta: g, numGroups: 2 });
    if (ctx.soc!.name === "Ascend310P") assertChipRefuses(ctx, run, "device");
    else run();
  },
  { ...ALL_SOCS, cpu: false },
);
