/**
 * Fidelity of the software CANN (tests/sim/) to real CANN in what the BatchNorm statistics hold,
 * per SoC family: aclnnBatchNorm saves Var(x) in saveInvstd and aclnnBatchNormBackward reads it
 * as Var(x), except on DAV_3510, which saves and reads invstd (against float64 formulas).
 *
 * The SoC is chosen per call with ACLSIM_SOC_NAME (read by the simulator on every phase 1);
 * expectations come from the library's SoC table (src/backends/ascend/soc.ts), while the
 * simulator derives every chip trait from CANN's platform files and operator sources on its own
 * (tests/sim/sim_soc.c, sim_rules.c): these tests check that the two agree, through the real FFI
 * path with `runAclnn` called directly (the library's own validation does not hide what the
 * native side does). Needs the built simulator (`deno task build:sim`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNormSavesVariance, isRegbase } from "../../src/backends/ascend/soc.ts";
import { argsFor, C, EPS, L, M, N, type Opt, seq, X } from "../helpers/sim_args.ts";
import { dev, expectOk, fresh, onSoc, supporting, values } from "../helpers/sim_raw.ts";

function assertNear(got: number[], want: number[], what: string, rtol = 1e-5, atol = 1e-6): void {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < got.length; i++) {
    assert.ok(
      Math.abs(got[i] - want[i]) <= atol + rtol * Math.abs(want[i]),
      `${what}[${i}]: got ${got[i]}, want ${want[i]}`,
    );
  }
}

/** Per-channel batch mean and biased variance of x [N, C, L] in float64. */
function batchStats(x: number[]): { mean: number[]; variance: number[] } {
  const mean = new Array(C).fill(0);
  const variance = new Array(C).fill(0);
  for (let i = 0; i < x.length; i++) mean[Math.floor(i / L) % C] += x[i] / M;
  for (let i = 0; i < x.length; i++) {
    variance[Math.floor(i / L) % C] += (x[i] - mean[Math.floor(i / L) % C]) ** 2 / M;
  }
  return { mean, variance };
}

Deno.test("sim fidelity: aclnnBatchNorm saves Var(x) in saveInvstd except on DAV_3510, which saves invstd", () => {
  const xs = seq(N * C * L, 1, 2, 0.5);
  const { mean, variance } = batchStats(xs);
  const invstd = variance.map((v) => 1 / Math.sqrt(v + EPS));
  for (const { family, soc } of supporting("aclnnBatchNorm")) {
    onSoc(soc, (npu) => {
      const saveMean = fresh(npu, [C]);
      const saveInvstd = fresh(npu, [C]);
      expectOk(
        npu,
        "aclnnBatchNorm",
        argsFor(npu, "aclnnBatchNorm", "float32", { saveMean, saveInvstd }),
      );
      assertNear(values(saveMean), mean, `${soc} saveMean`);
      const variance_ = batchNormSavesVariance(soc);
      assert.equal(variance_, !isRegbase(family));
      assertNear(values(saveInvstd), variance_ ? variance : invstd, `${soc} saveInvstd`);
      // eval mode writes neither save tensor
      const sm = fresh(npu, [C]);
      const si = fresh(npu, [C]);
      expectOk(
        npu,
        "aclnnBatchNorm",
        argsFor(npu, "aclnnBatchNorm", "float32", { saveMean: sm, saveInvstd: si }, {
          training: false,
        }),
      );
      assert.ok(values(sm).every(Number.isNaN) && values(si).every(Number.isNaN), `${soc} eval`);
    });
  }
});

Deno.test("sim fidelity: aclnnBatchNormBackward reads saveInvstd as Var(x) except on DAV_3510 (float64 formula)", () => {
  const xs = seq(N * C * L, 1, 2, 0.5);
  const dys = seq(N * C * L, 2);
  const w = [0.5, 2, -1];
  const sm = [0.25, -0.5, 1];
  const saved = [0.7, 1.3, 2.1];
  /** gradInput, gradWeight, gradBias for the effective mean and invstd (training mode). */
  const reference = (invstd: number[], mean: number[]) => {
    const sumDy = new Array(C).fill(0);
    const sumDyXmu = new Array(C).fill(0);
    for (let i = 0; i < xs.length; i++) {
      const c = Math.floor(i / L) % C;
      sumDy[c] += dys[i];
      sumDyXmu[c] += dys[i] * (xs[i] - mean[c]);
    }
    const gi = xs.map((x, i) => {
      const c = Math.floor(i / L) % C;
      return w[c] * invstd[c] *
        (dys[i] - sumDy[c] / M - (x - mean[c]) * invstd[c] ** 2 * sumDyXmu[c] / M);
    });
    return { gi, gw: sumDyXmu.map((s, c) => s * invstd[c]), gb: sumDy };
  };
  for (const { family, soc } of supporting("aclnnBatchNormBackward")) {
    onSoc(soc, (npu) => {
      const asVariance = batchNormSavesVariance(soc);
      assert.equal(asVariance, !isRegbase(family));
      const eff = (s: number[]) => asVariance ? s.map((v) => 1 / Math.sqrt(v + EPS)) : s;
      const run = (o: Opt) => {
        const gradInput = fresh(npu, X);
        const gradWeight = fresh(npu, [C]);
        const gradBias = fresh(npu, [C]);
        expectOk(
          npu,
          "aclnnBatchNormBackward",
          argsFor(npu, "aclnnBatchNormBackward", "float32", {
            input: dev(npu, xs, X),
            gradOut: dev(npu, dys, X),
            weight: dev(npu, w, [C]),
            gradInput,
            gradWeight,
            gradBias,
            ...o,
          }),
          `${soc} backward`,
        );
        return { gi: values(gradInput), gw: values(gradWeight), gb: values(gradBias) };
      };
      const got = run({ saveMean: dev(npu, sm, [C]), saveInvstd: dev(npu, saved, [C]) });
      const want = reference(eff(saved), sm);
      assertNear(got.gi, want.gi, `${soc} gradInput`);
      assertNear(got.gw, want.gw, `${soc} gradWeight`);
      assertNear(got.gb, want.gb, `${soc} gradBias`);
      // NULL saveMean / saveInvstd are filled with 0 and 1 (a variance of 1 off DAV_3510).
      const nul = run({ saveMean: undefined, saveInvstd: undefined });
      const wantNull = reference(eff([1, 1, 1]), [0, 0, 0]);
      assertNear(nul.gi, wantNull.gi, `${soc} gradInput (NULL saveInvstd)`);
      assertNear(nul.gw, wantNull.gw, `${soc} gradWeight (NULL saveInvstd)`);
    });
  }
});
