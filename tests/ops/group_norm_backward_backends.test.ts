/**
 * groupNormBackward on every backend (the software CANN as Ascend 950 and Atlas A2 when built):
 * float16 data with float16 or float32 statistics (refused where the chip refuses mixed
 * precision), a channels-last input, masks, gamma absent and a flat input with explicit N, C,
 * HxW, against the float64 oracle; validation before the native call.
 *
 * @module
 */

import assert from "node:assert/strict";
import { groupNormBackward } from "../../src/ops/group_norm_backward.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, chipAccepts, forEachBackend, on } from "../helpers/backends.ts";
import { INVALID } from "../helpers/op_inputs.ts";
import { groupNormBackward64 } from "../oracle/mod.ts";
import { problem, referenceOf } from "../fixtures/group_norm_backward_problem.ts";

forEachBackend(
  "groupNormBackward: mixed precision, layouts, masks and a flat input equal the oracle",
  (ctx) => {
    const d = ctx.device;
    const [N, C, HxW, G] = [2, 6, 5, 3];
    for (const statsDType of ["float32", "float16"] as const) {
      const a = problem(N, C, HxW, G, "float16", statsDType);
      const dev = {
        ...a,
        gradOut: on(a.gradOut, d),
        input: on(a.input.permute([0, 2, 1]).contiguous().permute([0, 2, 1]), d),
        mean: on(a.mean, d),
        rstd: on(a.rstd, d),
        gamma: on(a.gamma, d),
      };
      const mixed = statsDType !== "float16";
      const what = `float16 data, ${statsDType} statistics`;
      if (!chipAccepts(ctx.soc, "aclnnGroupNormBackward", ["float16"], { mixedPrecision: mixed })) {
        assertChipRefuses(ctx, () => groupNormBackward(dev), "mean");
        continue;
      }
      const r = groupNormBackward(dev);
      const e = referenceOf(a, N, C, HxW);
      for (const name of ["gradInput", "gradGamma", "gradBeta"] as const) {
        assert.equal(r[name]!.device, d, `${what}: ${name} device`);
        assert.equal(r[name]!.dtype, name === "gradInput" ? "float16" : statsDType);
        assertClose(r[name]!, e[name], undefined, `${what}: ${name}`);
      }
      // Masks, gamma absent, and a rank-1 input with explicit N/C/HxW.
      const m = groupNormBackward({
        ...dev,
        gamma: undefined,
        input: dev.input.reshape([N * C * HxW]),
        N,
        C,
        HxW,
        outputMask: [true, false, true],
      });
      const em = groupNormBackward64(
        a.gradOut.toFloat64Array(),
        a.input.toFloat64Array(),
        a.mean.toFloat64Array(),
        a.rstd.toFloat64Array(),
        undefined,
        N,
        C,
        HxW,
        G,
      );
      assert.equal(m.gradGamma, null);
      assertClose(m.gradInput!, em.gradInput, undefined, `${what}: flat gradInput`);
      assertClose(m.gradBeta!, em.gradBeta, undefined, `${what}: flat gradBeta`);
      // Validation runs before the native call: same code and argument as on the CPU.
      assertAclnnError(() => groupNormBackward({ ...dev, group: 4 }), INVALID, "group");
    }
  },
);
