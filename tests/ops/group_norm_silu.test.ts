/**
 * groupNormSilu (aclnnGroupNormSilu) and groupNormSiluV2 (aclnnGroupNormSiluV2) on every backend:
 * output, mean and rstd against the float64 oracle (tests/oracle/group_norm_silu.ts) per dtype,
 * with and without gamma/beta, with float32 gamma/beta and 16-bit self; A2/A3's rounding of
 * 16-bit outputs half away from zero (nearest even elsewhere and on the CPU); CANN's codes per
 * check in its order; empty inputs; the chips' rules (bfloat16 and products, the statistics'
 * dtype with mixed gamma, N > 0 off Ascend 950), refused naming the SoC.
 *
 * @module
 */

import assert from "node:assert/strict";
import { groupNormSilu, groupNormSiluV2 } from "../../src/ops/group_norm_silu.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, chipAccepts, forEachBackend, on } from "../helpers/backends.ts";
import { groupNormSwish64 } from "../oracle/group_norm_silu.ts";
import { looser, toleranceFor } from "../helpers/tolerance.ts";
import { isRegbase } from "../../src/backends/ascend/soc.ts";

const ALL_SOCS = { socs: ["Ascend950PR_9599", "Ascend910B4", "Ascend310P3"] };

function rnd(shape: number[], seed: number, dtype: DType = "float32", low = -2, high = 3) {
  return Tensor.random(shape, { seed, dtype, low, high });
}

const values = (t: Tensor) => [...t.toFloat64Array()];

/** (self, gamma/beta) dtype pairs CANN's CheckDtypeValid takes on some chip. */
const PAIRS: [DType, DType][] = [
  ["float32", "float32"],
  ["float16", "float16"],
  ["bfloat16", "bfloat16"],
  ["float16", "float32"],
  ["bfloat16", "float32"],
];

forEachBackend(
  "groupNormSilu / V2: output, mean, rstd against the float64 oracle",
  (ctx) => {
    const d = ctx.device;
    let i = 0;
    for (const [xt, gt] of PAIRS) {
      if (!chipAccepts(ctx.soc, "aclnnGroupNormSilu", [xt, gt])) continue;
      for (
        const [shape, group] of [[[2, 6, 5, 3], 3], [[3, 4], 2], [[1, 8, 37], 1]] as [
          number[],
          number,
        ][]
      ) {
        i++;
        const [N, C] = shape;
        const HxW = shape.slice(2).reduce((a, b) => a * b, 1);
        const x = rnd([...shape], i, xt);
        const affine = i % 3 !== 0;
        const gamma = affine ? rnd([C], 10 + i, gt, 0.5, 1.5) : undefined;
        const beta = affine ? rnd([C], 20 + i, gt, -1, 1) : undefined;
        // Ascend 950 keeps mixed statistics in float32 (CheckDtypeValid, regbase branch).
        const stats = affine && gt !== xt && ctx.soc && isRegbase(ctx.soc) ? "float32" : xt;
        const out = {
          mean: Tensor.empty([N, group], stats, d),
          rstd: Tensor.empty([N, group], stats, d),
        };
        for (const activateSilu of [true, false]) {
          const args = {
            self: on(x, d),
            gamma: gamma && on(gamma, d),
            beta: beta && on(beta, d),
            group,
            out,
          };
          const r = activateSilu && i % 2
            ? groupNormSilu(args)
            : groupNormSiluV2({ ...args, activateSilu });
          const label = `${ctx.label} ${xt}/${gt} ${shape} g${group} silu=${activateSilu}`;
          const e = groupNormSwish64(
            values(x),
            N,
            C,
            HxW,
            group,
            gamma && values(gamma),
            beta && values(beta),
            1e-5,
            activateSilu ? 1 : undefined,
          );
          assert.equal(r.output.dtype, xt, label);
          assertClose(r.output, e.output, looser(toleranceFor(xt), { rtol: 0, atol: 4e-6 }), label);
          assertClose(r.mean, e.mean, toleranceFor(stats), `${label} mean`);
          assertClose(r.rstd, e.rstd, toleranceFor(stats), `${label} rstd`);
        }
      }
    }
  },
  ALL_SOCS,
);

forEachBackend(
  "groupNormSiluV2: 16-bit ties round half away from zero on A2/A3, to even elsewhere",
  (ctx) => {
    const d = ctx.device;
    // self [1, 2] (N 1, C 2, HxW 1), group 1: mean = (1 + (1 + 2u)) / 2 = 1 + u, the tie between
    // 1 and 1 + 2u (u = half an ulp at 1). gamma 0 and beta +-(1 + u) in float32 make gn = beta
    // exactly: the output is the tie too, of both signs.
    for (const [dt, u] of [["float16", 2 ** -11], ["bfloat16", 2 ** -8]] as const) {
      if (!chipAccepts(ctx.soc, "aclnnGroupNormSiluV2", [dt])) continue;
      const x = Tensor.fromArray([1, 1 + 2 * u], [1, 2], dt);
      const gamma = Tensor.fromArray([0, 0], [2], "float32");
      const beta = Tensor.fromArray([1 + u, -(1 + u)], [2], "float32");
      const stats = ctx.soc && isRegbase(ctx.soc) ? "float32" : dt;
      const r = groupNormSiluV2({
        self: on(x, d),
        gamma: on(gamma, d),
        beta: on(beta, d),
        group: 1,
        activateSilu: false,
        out: { mean: Tensor.empty([1, 1], stats, d), rstd: Tensor.empty([1, 1], stats, d) },
      });
      const away = ctx.soc?.name === "Ascend910B" || ctx.soc?.name === "Ascend910_93";
      const label = `${ctx.label} ${dt}`;
      assert.deepEqual(values(r.output), away ? [1 + 2 * u, -(1 + 2 * u)] : [1, -1], label);
      assert.deepEqual(values(r.mean), [stats === "float32" ? 1 + u : away ? 1 + 2 * u : 1], label);
    }
  },
  ALL_SOCS,
);

// Off Ascend 950 (and on the CPU) CANN's FillScalar writes mean 0, rstd NaN; Ascend 950 runs its
// empty-tensor kernel, which writes NaN to both (op_kernel/arch35/
// group_norm_silu_regbase_empty_tensor.h:44-67).
forEachBackend(
  "groupNormSilu: an empty self gives mean 0 (NaN on Ascend 950) and rstd NaN",
  (ctx) => {
    const d = ctx.device;
    const r = groupNormSilu({ self: on(Tensor.zeros([2, 4, 0]), d), group: 2 });
    assert.deepEqual(r.output.shape, [2, 4, 0]);
    const mean = ctx.soc && isRegbase(ctx.soc) ? NaN : 0;
    assert.deepEqual(values(r.mean), [mean, mean, mean, mean], ctx.label);
    assert.ok(values(r.rstd).every(Number.isNaN), ctx.label);
  },
  ALL_SOCS,
);

forEachBackend(
  "groupNormSilu: CANN's codes per check, in its order",
  (ctx) => {
    const d = ctx.device;
    const x = on(rnd([2, 4, 3], 1), d);
    const f16 = on(rnd([4], 2, "float16"), d);
    const g = on(rnd([4], 3), d);
    const call = (o: Record<string, unknown>) => () =>
      groupNormSilu({ self: x, group: 2, ...o } as never);
    assertAclnnError(call({ self: undefined }), 161001, "self");
    assertAclnnError(call({ out: { mean: null } }), 161001, "mean");
    // dtype checks come before shape and attribute checks.
    assertAclnnError(call({ gamma: g, beta: f16, group: 0 }), 161002, "beta");
    const xh = on(rnd([2, 4, 3], 1, "float16"), d);
    const bf = on(rnd([4], 4, "bfloat16"), d);
    assertAclnnError(
      () => groupNormSilu({ self: xh, gamma: bf, beta: bf, group: 2 }),
      161002,
      "gamma",
    );
    assertAclnnError(
      call({ out: { output: Tensor.empty([2, 4, 3], "float16", d) } }),
      161002,
      "output",
    );
    assertAclnnError(call({ out: { mean: Tensor.empty([2, 2], "float16", d) } }), 161002, "mean");
    // shapes before attributes.
    assertAclnnError(() => groupNormSilu({ self: on(rnd([4], 1), d), group: 0 }), 161002, "self");
    assertAclnnError(
      call({ out: { output: Tensor.empty([2, 4, 2], "float32", d) } }),
      161002,
      "output",
    );
    assertAclnnError(call({ out: { rstd: Tensor.empty([2, 3], "float32", d) } }), 161002, "rstd");
    assertAclnnError(call({ gamma: on(rnd([3], 5), d) }), 161002, "gamma");
    assertAclnnError(call({ group: 0 }), 161002, "group");
    assertAclnnError(call({ eps: 0 }), 161002, "eps");
    assertAclnnError(call({ group: 3 }), 161002, "group");
    // mean/rstd are checked by element count only: (N * group) as [4] is taken.
    const r = groupNormSilu({ self: x, group: 2, out: { mean: Tensor.empty([4], "float32", d) } });
    assert.deepEqual(r.mean.shape, [4]);
  },
  ALL_SOCS,
);

forEachBackend(
  "groupNormSilu: the chips' rules, refused naming the SoC",
  (ctx) => {
    const d = ctx.device;
    const soc = ctx.soc!;
    const x16 = on(rnd([2, 4, 3], 1, "float16"), d);
    const g32 = on(rnd([4], 2), d);
    const mixed = (stats: DType) => () =>
      groupNormSilu({
        self: x16,
        gamma: g32,
        beta: g32,
        group: 2,
        out: { mean: Tensor.empty([2, 2], stats, d), rstd: Tensor.empty([2, 2], stats, d) },
      });
    if (isRegbase(soc)) {
      assertChipRefuses(ctx, mixed("float16"), "mean");
      mixed("float32")();
      // N = 0: SUCCESS on Ascend 950.
      const r = groupNormSilu({ self: on(Tensor.zeros([0, 4, 3]), d), group: 2 });
      assert.deepEqual(r.mean.shape, [0, 2]);
    } else {
      assertChipRefuses(ctx, mixed("float32"), "mean");
      mixed("float16")();
      assertChipRefuses(
        ctx,
        () => groupNormSilu({ self: on(Tensor.zeros([0, 4, 3]), d), group: 2 }),
        "N",
      );
    }
    if (soc.name === "Ascend310P") {
      const bf = on(rnd([2, 4, 3], 1, "bfloat16"), d);
      assertChipRefuses(ctx, () => groupNormSilu({ self: bf, group: 2 }), "self");
    }
  },
  { ...ALL_SOCS, cpu: false },
);
