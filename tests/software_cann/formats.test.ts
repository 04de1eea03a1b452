/**
 * The storage formats the software CANN's aclnnBatchNorm and aclnnGroupNorm take
 * (tests/sim/sim_ops_batch_norm.c bn_v3_format and sim_ops_group_norm.c's CheckFormat, with their ops-nn sources),
 * called raw through the library's own symbol table (tests/fixtures/sim_norm_raw.ts):
 * - BatchNorm hands 4-D and 5-D inputs to the BatchNormV3 kernel with their own label (fewer
 *   dims are relabelled NCHW, more NCDHW): on the Ascend 950 its tiling takes ND, NCHW with 4
 *   dims, NCDHW with 5 (and NHWC/NDHWC), so a 4-D tensor labelled NCL or NCDHW fails phase 1
 *   with 561103; on Atlas A2 in training an NCHW/NCDHW input with C >= 64 goes to it too.
 * - GroupNorm's kernels take any label but NHWC/HWCN/NDHWC and private formats (161002).
 * Values are checked against the float64 formula where the call succeeds. Needs the built
 * simulator (`deno task build:sim`).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type CallResult,
  expectFail,
  expectOk,
  type NormSim,
  withSim,
  withSoc,
} from "../fixtures/sim_norm_raw.ts";

/** aclFormat values (../shared/reference/cann-abi.md "Enum values"). */
const F = { NCHW: 0, NHWC: 1, ND: 2, NCDHW: 30, NCL: 47 } as const;

/** x[n, c, ...] = c + (n + position) / 8: each channel's values differ, channels differ. */
function values(shape: readonly number[]): number[] {
  const [N, C] = shape;
  const rest = shape.slice(2).reduce((a, b) => a * b, 1);
  const out: number[] = [];
  for (let n = 0; n < N; n++) {
    for (let c = 0; c < C; c++) for (let i = 0; i < rest; i++) out.push(c + (n + i) / 8);
  }
  return out;
}

/** Training-mode aclnnBatchNorm of x (labelled `format`, output too) with C channels. */
function batchNorm(
  sim: NormSim,
  shape: number[],
  format: number,
): { r: CallResult; mean: number[] } {
  const C = shape[1];
  const x = sim.tensor(values(shape), shape, "float32", { format });
  const y = sim.tensor(null, shape, "float32", { format });
  const saveMean = sim.tensor(null, [C]);
  const saveInvstd = sim.tensor(null, [C]);
  const r = sim.call("aclnnBatchNorm", [
    x.handle,
    null,
    null,
    null,
    null,
    true,
    0.1,
    1e-5,
    y.handle,
    saveMean.handle,
    saveInvstd.handle,
  ]);
  return { r, mean: r.status === 0 ? sim.read(saveMean) : [] };
}

/** The per-channel means of values(shape), in float64. */
function means(shape: readonly number[]): number[] {
  const [N, C] = shape;
  const rest = shape.slice(2).reduce((a, b) => a * b, 1);
  const xs = values(shape);
  return Array.from({ length: C }, (_, c) => {
    let s = 0;
    for (let n = 0; n < N; n++) for (let i = 0; i < rest; i++) s += xs[(n * C + c) * rest + i];
    return s / (N * rest);
  });
}

function assertMeans(got: number[], shape: readonly number[], what: string): void {
  means(shape).forEach((m, c) => assert.ok(Math.abs(got[c] - m) < 1e-5, `${what}: channel ${c}`));
}

Deno.test("BatchNorm on the Ascend 950: BatchNormV3's tiling takes ND, NCHW (4-D), NCDHW (5-D) and no other label", () => {
  withSoc("Ascend950PR_9599", () =>
    withSim((sim) => {
      for (
        const [shape, format] of [[[2, 3, 4, 5], F.NCHW], [[2, 3, 4, 5], F.ND], [
          [2, 3, 2, 2, 3],
          F.NCDHW,
        ]] as const
      ) {
        const { r, mean } = batchNorm(sim, [...shape], format);
        expectOk(r, `[${shape}] format ${format}`);
        assertMeans(mean, shape, `[${shape}] format ${format}`);
      }
      // Fewer than 4 dims are relabelled NCHW before the kernel: any base label works.
      for (const format of [F.NCL, F.ND, F.NCHW]) {
        const { r, mean } = batchNorm(sim, [2, 3, 4], format);
        expectOk(r, `3-D format ${format}`);
        assertMeans(mean, [2, 3, 4], `3-D format ${format}`);
      }
      expectFail(batchNorm(sim, [2, 3, 4, 5], F.NCL).r, 561103, "x's format NCL is not supported");
      expectFail(
        batchNorm(sim, [2, 3, 4, 5], F.NCDHW).r,
        561103,
        "x has 4 dims, expected 5D with NCDHW format",
      );
      expectFail(
        batchNorm(sim, [2, 3, 4, 5], F.NCL).r,
        561103,
        "BatchNormV3 ADD_TO_LAUNCHER_LIST_AICORE failed.",
      );
      // A 5-D tensor not labelled NCDHW/NDHWC is refused earlier, by CheckFormat (161002).
      expectFail(
        batchNorm(sim, [2, 3, 2, 2, 3], F.NCHW).r,
        161002,
        "Format of input should be NCDHW or NDHWC",
      );
    }));
});

Deno.test("BatchNorm on Atlas A2: an NCHW/NCDHW input with C >= 64 goes to BatchNormV3, whose tiling checks the dims", () => {
  withSoc("Ascend910B4", () =>
    withSim((sim) => {
      const wide = [2, 64, 2, 2];
      const { r, mean } = batchNorm(sim, wide, F.NCHW);
      expectOk(r, "NCHW, C = 64");
      assertMeans(mean, wide, "NCHW, C = 64");
      expectFail(
        batchNorm(sim, wide, F.NCDHW).r,
        561103,
        "x has 4 dims, expected 5D with NCDHW format",
      );
      // Another label, or fewer channels, takes the BNTrainingReduce/Update path instead.
      expectOk(batchNorm(sim, wide, F.ND).r, "ND, C = 64");
      expectOk(batchNorm(sim, [2, 3, 2, 2], F.NCDHW).r, "NCDHW, C = 3");
    }));
});

Deno.test("GroupNorm takes any base label but NHWC, HWCN and NDHWC, on every SoC", () => {
  for (const soc of ["Ascend950PR_9599", "Ascend910B4"]) {
    withSoc(soc, () =>
      withSim((sim) => {
        const run = (shape: number[], format: number) => {
          const [N, C] = shape;
          const HxW = shape.slice(2).reduce((a, b) => a * b, 1);
          const x = sim.tensor(values(shape), shape, "float32", { format });
          const y = sim.tensor(null, shape, "float32", { format });
          const mean = sim.tensor(null, [N, 1]);
          const rstd = sim.tensor(null, [N, 1]);
          const r = sim.call("aclnnGroupNorm", [
            x.handle,
            null,
            null,
            BigInt(N),
            BigInt(C),
            BigInt(HxW),
            1n,
            1e-5,
            y.handle,
            mean.handle,
            rstd.handle,
          ]);
          return { r, mean: r.status === 0 ? sim.read(mean) : [] };
        };
        for (
          const [shape, format] of [
            [[2, 3, 4, 5], F.NCHW],
            [[2, 3, 4, 5], F.ND],
            [[2, 3, 4, 5], F.NCL],
            [[2, 3, 5], F.NCL],
            [[2, 3, 5], F.NCHW],
          ] as const
        ) {
          const { r, mean } = run([...shape], format);
          expectOk(r, `${soc} [${shape}] format ${format}`);
          // One group: the mean of each sample.
          const all = values(shape);
          const per = all.length / shape[0];
          for (let n = 0; n < shape[0]; n++) {
            const m = all.slice(n * per, (n + 1) * per).reduce((a, b) => a + b, 0) / per;
            assert.ok(
              Math.abs(mean[n] - m) < 1e-5,
              `${soc} [${shape}] format ${format}: sample ${n}`,
            );
          }
        }
        expectFail(
          run([2, 3, 4, 5], F.NHWC).r,
          161002,
          "Format only support ND、NCL、NCHW、NCDHW.",
        );
      }));
  }
});
