/**
 * The software CANN runs aclnnLayerNormBackward (tests/sim/sim_ops_layer_norm_backward.c; rules
 * and sources in tests/sim/README_norm.md), called raw through the library's own symbol table
 * (tests/fixtures/sim_norm_raw.ts): gradients against a float64 replay of the documented
 * formulas and against finite differences of the forward, outputMask, the unused bias, empty
 * input, and the validation codes per SoC. Needs the built simulator (`deno task build:sim`).
 */

import assert from "node:assert/strict";
import type { DType } from "../../src/tensor/dtype.ts";
import { Random } from "../../src/tensor/random.ts";
import { assertClose } from "../helpers/assert.ts";
import {
  dot,
  finiteDifferences,
  layerNorm,
  layerNormBackward,
  rounded,
} from "../oracle/row_norms.ts";
import { SIM_REPLAY, TOLERANCE } from "../helpers/tolerance.ts";
import {
  type CallResult,
  type DevTensor,
  expectFail,
  expectOk,
  type NormSim,
  withSim,
  withSoc,
} from "../fixtures/sim_norm_raw.ts";

const EPS_F = Math.fround(1e-5); // the forward's epsilon attribute is a float

function data(n: number, seed: number, dtype: DType = "float32", shift = 0): number[] {
  const rng = new Random(seed);
  return rounded(Array.from({ length: n }, () => shift + 2 * rng.normal()), dtype);
}

/** aclnnLayerNormBackward with the given mask; outputs are fresh (NaN) tensors of `outType`. */
function backward(
  sim: NormSim,
  t: {
    dy: DevTensor;
    x: DevTensor;
    mean: DevTensor;
    rstd: DevTensor;
    weight?: DevTensor;
    bias?: DevTensor;
  },
  norm: number[],
  mask: boolean[],
  outs: (DevTensor | null)[],
): CallResult {
  return sim.call("aclnnLayerNormBackward", [
    t.dy.handle,
    t.x.handle,
    sim.intArray(norm),
    t.mean.handle,
    t.rstd.handle,
    t.weight?.handle ?? null,
    t.bias?.handle ?? null,
    sim.boolArray(mask),
    ...outs.map((o) => o?.handle ?? null),
  ]);
}

Deno.test("aclnnLayerNormBackward float32: the documented formulas, and finite differences of the forward", () => {
  withSim((sim) => {
    const [rows, cols] = [6, 4];
    const xs = data(24, 13, "float32", 1);
    const ws = data(cols, 14);
    const bs = data(cols, 15);
    const dys = data(24, 16);
    const weight = sim.tensor(ws, [4]);
    const x = sim.tensor(xs, [2, 3, 4]);
    // mean and rstd as aclnnLayerNorm returns them: float32, [2, 3, 1].
    const stats = layerNorm(xs, rows, cols, EPS_F, ws, bs);
    const f = {
      x,
      mean: sim.tensor(rounded(stats.mean, "float32"), [2, 3, 1]),
      rstd: sim.tensor(rounded(stats.rstd, "float32"), [2, 3, 1]),
    };
    const dy = sim.tensor(dys, [2, 3, 4]);
    const gi = sim.tensor(null, [2, 3, 4]);
    const gw = sim.tensor(null, [4]);
    const gb = sim.tensor(null, [4]);
    expectOk(
      backward(sim, { dy, x: f.x, mean: f.mean, rstd: f.rstd, weight }, [4], [true, true, true], [
        gi,
        gw,
        gb,
      ]),
      "bwd",
    );
    const [mean, rstd] = [sim.read(f.mean), sim.read(f.rstd)];
    const ref = layerNormBackward(dys, xs, mean, rstd, rows, cols, ws);
    assertClose(sim.read(gi), rounded(ref.gradInput, "float32"), SIM_REPLAY, "gradInput");
    assertClose(sim.read(gw), rounded(ref.gradWeight, "float32"), SIM_REPLAY, "gradWeight");
    assertClose(sim.read(gb), rounded(ref.gradBias, "float32"), SIM_REPLAY, "gradBias");
    // The same gradients as derivatives of loss = sum(dy * layerNorm(x)) (float64 forward).
    const loss = (x: number[], w: number[]) => dot(dys, layerNorm(x, rows, cols, EPS_F, w, bs).y);
    assertClose(sim.read(gi), finiteDifferences((x) => loss(x, ws), xs), TOLERANCE.float32, "d/dx");
    assertClose(sim.read(gw), finiteDifferences((w) => loss(xs, w), ws), TOLERANCE.float32, "d/dw");
  });
});

Deno.test("aclnnLayerNormBackward: outputMask, the unused bias, empty input, products", () => {
  withSim((sim) => {
    const xs = data(8, 17);
    const x = sim.tensor(xs, [2, 4]);
    const dy = sim.tensor(data(8, 18), [2, 4]);
    const ref = layerNorm(xs, 2, 4, EPS_F);
    const mean = sim.tensor(rounded(ref.mean, "float32"), [2, 1]);
    const rstd = sim.tensor(rounded(ref.rstd, "float32"), [2, 1]);
    const t = { dy, x, mean, rstd };
    const expected = layerNormBackward(sim.read(dy), xs, sim.read(mean), sim.read(rstd), 2, 4);
    // A masked-off output is left untouched (here: 7s), even when non-NULL.
    const gi = sim.tensor(null, [2, 4]);
    const gw = sim.tensor([7, 7, 7, 7], [4]);
    const gb = sim.tensor(null, [4]);
    // biasOptional is validated but never read: NaN there changes nothing.
    const nanBias = sim.tensor([NaN, NaN, NaN, NaN], [4]);
    expectOk(
      backward(sim, { ...t, bias: nanBias }, [4], [true, false, true], [gi, gw, gb]),
      "mask 101",
    );
    assert.deepEqual(sim.read(gw), [7, 7, 7, 7]);
    assertClose(sim.read(gi), rounded(expected.gradInput, "float32"), SIM_REPLAY, "gi");
    assertClose(sim.read(gb), rounded(expected.gradBias, "float32"), SIM_REPLAY, "gb");
    const intBias = sim.tensor([1, 1, 1, 1], [4], "int32");
    expectFail(
      backward(sim, { ...t, bias: intBias }, [4], [true, true, true], [gi, gw, gb]),
      161002,
      "Tensor biasOptional not implemented for DT_INT32",
    );
    expectFail(
      backward(sim, t, [4], [true, false], [gi, gw, gb]),
      161002,
      "Expected aclnnLayerNormBackward outputMask len to be 3, but got 2.",
    );
    expectFail(
      backward(sim, t, [4], [true, true, true], [gi, null, gb]),
      161001,
      "Expected a value of type [aclTensor] for argument [gradWeightOut] but instead found nullptr.",
    );
    const none = backward(sim, t, [4], [false, false, false], [null, null, null]);
    expectOk(none, "all masked off");
    assert.equal(none.workspaceSize, 0n);
    // Shapes: the mean must hold one value per row; the weight must match normalizedShape.
    expectFail(
      backward(sim, { ...t, mean: sim.tensor(null, [4]), rstd: sim.tensor(null, [4]) }, [4], [
        true,
        true,
        true,
      ], [gi, gw, gb]),
      161002,
      "mean shape size [4] to be equal to 2",
    );
    expectFail(
      backward(sim, { ...t, weight: sim.tensor(data(4, 19), [4]) }, [5], [true, true, true], [
        gi,
        gw,
        gb,
      ]),
      161002,
      "Expected normalized index [0] shape [5] be equal to tensor index [0] shape [4]",
    );
    expectFail(
      backward(sim, t, [2, 4, 1], [true, true, true], [gi, gw, gb]),
      161002,
      "The input tensor must have at least 3 dimensions.",
    );
    // M == 0: the masked gradWeight and gradBias are zero-filled.
    const e = {
      dy: sim.tensor([], [0, 4]),
      x: sim.tensor([], [0, 4]),
      mean: sim.tensor([], [0, 1]),
      rstd: sim.tensor([], [0, 1]),
    };
    const [ew, eb] = [sim.tensor([7, 7, 7, 7], [4]), sim.tensor([7, 7, 7, 7], [4])];
    expectOk(backward(sim, e, [4], [true, true, true], [sim.tensor([], [0, 4]), ew, eb]), "M == 0");
    assert.deepEqual([...sim.read(ew), ...sim.read(eb)], new Array(8).fill(0));
    // Products: not the Atlas 200I/500 A2; no bfloat16 on the Atlas training and inference series.
    withSoc(
      "Ascend310B1",
      () =>
        expectFail(
          backward(sim, t, [4], [true, true, true], [gi, gw, gb]),
          161002,
          "not supported on SoC Ascend310B1",
        ),
    );
    const b16 = (v: DevTensor) => sim.tensor(rounded(sim.read(v), "bfloat16"), v.shape, "bfloat16");
    const tb = { dy: b16(dy), x: b16(x), mean, rstd };
    const gib = sim.tensor(null, [2, 4], "bfloat16");
    for (const soc of ["Ascend910A", "Ascend310P1"]) {
      withSoc(
        soc,
        () =>
          expectFail(
            backward(sim, tb, [4], [true, false, false], [gib, null, null]),
            161002,
            "gradOut is DT_BF16",
          ),
      );
    }
    withSoc(
      "Ascend910B4",
      () => expectOk(backward(sim, tb, [4], [true, false, false], [gib, null, null]), "bf16 on A2"),
    );
    withSoc(
      "Ascend310P1",
      () => expectOk(backward(sim, t, [4], [true, true, true], [gi, gw, gb]), "float32 on 310P"),
    );
  });
});

Deno.test("aclnnLayerNormBackward: gradWeight/gradBias of N elements but not normalizedShape's shape stay unwritten, status 0", () => {
  withSim((sim) => {
    const xs = data(24, 20);
    const x = sim.tensor(xs, [2, 3, 4]);
    const dy = sim.tensor(data(24, 21), [2, 3, 4]);
    const ref = layerNorm(xs, 2, 12, EPS_F);
    const mean = sim.tensor(rounded(ref.mean, "float32"), [2, 1, 1]);
    const rstd = sim.tensor(rounded(ref.rstd, "float32"), [2, 1, 1]);
    const t = { dy, x, mean, rstd };
    const expected = layerNormBackward(sim.read(dy), xs, sim.read(mean), sim.read(rstd), 2, 12);
    // The regbase and DAV_2201 LayerNormGradV3 path, and the split path of the Atlas training and
    // inference series: each result is [3, 4], and a failed ViewCopy is ignored.
    for (const soc of ["Ascend950PR_9599", "Ascend910B4", "Ascend910A", "Ascend310P1"]) {
      withSoc(soc, () => {
        const gi = sim.tensor(null, [2, 3, 4]);
        const gw = sim.tensor(new Array(12).fill(7), [12]);
        const gb = sim.tensor(new Array(12).fill(7), [4, 3]);
        expectOk(backward(sim, t, [3, 4], [true, true, true], [gi, gw, gb]), `${soc}: status 0`);
        assertClose(sim.read(gi), rounded(expected.gradInput, "float32"), SIM_REPLAY, soc);
        assert.deepEqual(sim.read(gw), new Array(12).fill(7), `${soc}: gradWeight [12] unwritten`);
        assert.deepEqual(sim.read(gb), new Array(12).fill(7), `${soc}: gradBias [4, 3] unwritten`);
        const good = sim.tensor(null, [3, 4]);
        expectOk(backward(sim, t, [3, 4], [false, false, true], [null, null, good]), soc);
        assertClose(sim.read(good), rounded(expected.gradBias, "float32"), SIM_REPLAY, soc);
      });
    }
    // One normalized element: any one-element gradWeight receives it.
    const x1 = sim.tensor(data(2, 22), [2, 1]);
    const dy1 = sim.tensor(data(2, 23), [2, 1]);
    const s1 = layerNorm(sim.read(x1), 2, 1, EPS_F);
    const m1 = sim.tensor(rounded(s1.mean, "float32"), [2, 1]);
    const r1 = sim.tensor(rounded(s1.rstd, "float32"), [2, 1]);
    const gw1 = sim.tensor([7], [1, 1]);
    expectOk(
      backward(sim, { dy: dy1, x: x1, mean: m1, rstd: r1 }, [1], [false, true, false], [
        null,
        gw1,
        null,
      ]),
      "gradWeight [1, 1]",
    );
    const e1 = layerNormBackward(sim.read(dy1), sim.read(x1), sim.read(m1), sim.read(r1), 2, 1);
    assertClose(sim.read(gw1), rounded(e1.gradWeight, "float32"), SIM_REPLAY, "gradWeight [1, 1]");
  });
});
