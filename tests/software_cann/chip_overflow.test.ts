/**
 * The software CANN rounds the intermediates CANN's op_api decompositions form in a narrow dtype
 * the way the chip does, in the chip's overflow mode (issue 27, items 1, 3 and 4):
 * - aclnnBatchNormElemt rebuilds the variance as 1/invstd^2 - eps in invstd's dtype on every SoC
 *   (ops-nn batch_norm_elemt/op_host/op_api/aclnn_batch_norm_elemt.cpp 171-187);
 * - aclnnGroupNorm on NpuArch DAV_1001 casts a float16 self's variance to float16 before
 *   Rsqrt(var + eps) (group_norm/op_host/op_api/aclnn_group_norm.cpp 250-253, 268-281);
 * - aclnnGroupNormBackward off DAV_2201/DAV_3510 is a BatchNorm backward whose variance is
 *   1/rstd^2 - 1e-5 in rstd's dtype (group_norm_grad/op_host/op_api/aclnn_group_norm_backward.cpp
 *   449-503, 781-787).
 * The chip's mode: Inf/NaN where its platform file says support_inf_nan=1 (Atlas A2/A3, 950,
 * 350), saturation elsewhere (Atlas training and inference); ACLSIM_OVERFLOW_MODE selects the
 * other where the runtime lets the chip be set so (A2/A3 only). Expected values are float64
 * oracles (tests/helpers/chip_round.ts). Needs the built simulator.
 *
 * @module
 */

import assert from "node:assert/strict";
import { arg } from "../../src/ffi/executor.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { SIM_DIR } from "../helpers/ffi_sim.ts";
import { type OverflowMode, rebuiltVariance, roundTo } from "../helpers/chip_round.ts";
import { dev, expectOk, fresh, onSoc, values } from "../helpers/sim_raw.ts";

const EPS = 1e-5;

/** Runs `fn` with ACLSIM_OVERFLOW_MODE = `mode` (undefined: unset), then restores it. */
function withMode<T>(mode: OverflowMode | undefined, fn: () => T): T {
  const saved = Deno.env.get("ACLSIM_OVERFLOW_MODE");
  if (mode === undefined) Deno.env.delete("ACLSIM_OVERFLOW_MODE");
  else Deno.env.set("ACLSIM_OVERFLOW_MODE", mode);
  try {
    return fn();
  } finally {
    if (saved === undefined) Deno.env.delete("ACLSIM_OVERFLOW_MODE");
    else Deno.env.set("ACLSIM_OVERFLOW_MODE", saved);
  }
}

/** A fresh device on `soc` in `mode` (a device per mode: the library reuses executors). */
function onChip<T>(soc: string, mode: OverflowMode | undefined, fn: (npu: AscendDevice) => T): T {
  return withMode(mode, () => onSoc(soc, fn));
}

// ---- aclnnBatchNormElemt ----------------------------------------------------------------------
// x [2, 2, 4] float16: channel 0 has invstd 300 (var + eps < 1.53e-5), channel 1 invstd 2.
const XS = [0.25, 0.5, 0.75, 1, 0, 1, 2, 3, 0.5, 0.5, 0.5, 0.5, 1.5, 1, 0.5, 0];
const MEAN = [0.5, 1];
const ch = (i: number) => Math.floor(i / 4) % 2;

function elemt(npu: AscendDevice, invstd: number[], statDtype: DType): number[] {
  const y = fresh(npu, [2, 2, 4], "float16");
  expectOk(npu, "aclnnBatchNormElemt", [
    arg.tensor(dev(npu, XS, [2, 2, 4], "float16")),
    arg.tensor(undefined),
    arg.tensor(undefined),
    arg.tensor(dev(npu, MEAN, [2], statDtype)),
    arg.tensor(dev(npu, invstd, [2], statDtype)),
    arg.f64(EPS),
    arg.output(y),
  ]);
  return values(y);
}

/** BNInfer after the rebuilt variance: y = (x - mean) / sqrt(var + (float)eps), stored as float16. */
function elemtOracle(
  invstd: number[],
  statDtype: "float32" | "float16" | "bfloat16",
  mode: OverflowMode,
) {
  const v = invstd.map((s) => rebuiltVariance(roundTo(s, statDtype), EPS, statDtype, mode));
  return XS.map((x, i) =>
    Math.f16round((x - MEAN[ch(i)]) / Math.sqrt(v[ch(i)] + Math.fround(EPS)))
  );
}

Deno.test("chip overflow: Elemt's float16 variance round trip, Inf/NaN mode (A2, A3, 950, 910_9599): NaN channel", () => {
  for (const soc of ["Ascend910B4", "Ascend910_9391", "Ascend950PR_9599", "Ascend910_9599"]) {
    const y = onChip(soc, undefined, (npu) => elemt(npu, [300, 2], "float16"));
    assert.deepEqual(y, elemtOracle([300, 2], "float16", "inf_nan"), soc);
    XS.forEach((x, i) => {
      if (ch(i) === 0) {
        assert.ok(Number.isNaN(y[i]), `${soc} y[${i}] = ${y[i]}: 300^2 > 65504 -> Inf -> var < 0`);
      } else assert.ok(Math.abs(y[i] - (x - 1) * 2) <= 2e-3, `${soc} y[${i}] = ${y[i]}`);
    });
  }
  // The 950 computes in Inf/NaN mode only: asking for saturation changes nothing.
  const y950 = onChip("Ascend950PR_9599", "saturation", (npu) => elemt(npu, [300, 2], "float16"));
  assert.ok(y950.slice(0, 4).every(Number.isNaN), "950 stays in Inf/NaN mode");
});

Deno.test("chip overflow: Elemt's float16 variance round trip, saturation mode: ~15% off, not NaN", () => {
  const want = elemtOracle([300, 2], "float16", "saturation");
  // invstd 300 squares to 90000 -> 65504; 1/65504 -> 2^-16; - eps (168 * 2^-24) -> 88 * 2^-24.
  assert.equal(rebuiltVariance(300, EPS, "float16", "saturation"), 88 * 2 ** -24);
  const rstd = 1 / Math.sqrt(88 * 2 ** -24 + Math.fround(EPS));
  assert.ok(Math.abs(rstd / 300 - 1) > 0.14 && Math.abs(rstd / 300 - 1) < 0.15, `${rstd}`);
  const runs: [string, OverflowMode | undefined][] = [
    ["Ascend910B4", "saturation"], // A2 can be set to saturation mode
    ["Ascend910A", undefined], // the Atlas training series computes in saturation mode only
    ["Ascend910A", "inf_nan"], // ... and cannot be set to Inf/NaN
  ];
  for (const [soc, mode] of runs) {
    const y = onChip(soc, mode, (npu) => elemt(npu, [300, 2], "float16"));
    assert.deepEqual(y, want, `${soc} ${mode ?? "default"}`);
    assert.ok(Math.abs(y[0] / Math.f16round(-0.25 * 300) - 1) > 0.13, `${soc}: y[0] = ${y[0]}`);
  }
});

Deno.test("chip overflow: Elemt with float32 statistics (float16 input) gives the exact answer", () => {
  for (const soc of ["Ascend910B4", "Ascend910A", "Ascend950PR_9599"]) {
    const y = onChip(soc, undefined, (npu) => elemt(npu, [300, 2], "float32"));
    assert.deepEqual(y, elemtOracle([300, 2], "float32", "inf_nan"), soc);
    XS.forEach((x, i) => {
      const exact = (x - MEAN[ch(i)]) * [300, 2][ch(i)];
      assert.ok(
        Math.abs(y[i] - exact) <= Math.abs(exact) * 1e-3,
        `${soc} y[${i}] = ${y[i]}, want ${exact}`,
      );
    });
  }
});

Deno.test("chip overflow: Elemt's round trip in a bfloat16 invstd", () => {
  // 300 is bfloat16-exact; its square rounds to 90112 in bfloat16 and 1/90112 - eps leaves
  // 18 * 2^-24 instead of 1.11e-6: rstd 300.5, 0.17% off (float32 would be ~1e-7 off).
  const invstd = [300, 3];
  const y = onChip("Ascend910B4", undefined, (npu) => {
    const out = fresh(npu, [2, 2, 4], "float16");
    expectOk(npu, "aclnnBatchNormElemt", [
      arg.tensor(dev(npu, XS, [2, 2, 4], "float16")),
      arg.tensor(undefined),
      arg.tensor(undefined),
      arg.tensor(dev(npu, MEAN, [2], "float32")),
      arg.tensor(dev(npu, invstd, [2], "bfloat16")),
      arg.f64(EPS),
      arg.output(out),
    ]);
    return values(out);
  });
  const v = invstd.map((s) => rebuiltVariance(s, EPS, "bfloat16", "inf_nan"));
  const want = XS.map((x, i) =>
    Math.f16round((x - MEAN[ch(i)]) / Math.sqrt(v[ch(i)] + Math.fround(EPS)))
  );
  assert.deepEqual(y, want);
  assert.ok(
    Math.abs(y[0] / Math.f16round(-0.25 * 300) - 1) > 1e-3,
    `bfloat16 round trip: y[0] = ${y[0]}`,
  );
});

// ---- aclnnGroupNorm on DAV_1001 -----------------------------------------------------------------
// self [1, 2, 4] float16, two groups: group 0 has variance 90000 (> 65504), group 1 is constant.
const GX = [-300, 300, -300, 300, 2, 2, 2, 2];

function groupNorm(
  npu: AscendDevice,
  dtype: DType,
): { y: number[]; mean: number[]; rstd: number[] } {
  const y = fresh(npu, [1, 2, 4], dtype);
  const mean = fresh(npu, [1, 2], dtype);
  const rstd = fresh(npu, [1, 2], dtype);
  expectOk(npu, "aclnnGroupNorm", [
    arg.tensor(dev(npu, GX, [1, 2, 4], dtype)),
    arg.tensor(undefined),
    arg.tensor(undefined),
    arg.i64(1),
    arg.i64(2),
    arg.i64(4),
    arg.i64(2),
    arg.f64(EPS),
    arg.output(y),
    arg.output(mean),
    arg.output(rstd),
  ]);
  return { y: values(y), mean: values(mean), rstd: values(rstd) };
}

/** rstd = Rsqrt(Add(Cast(var, float16), eps in float16)), each step in float16 (RstdProcess). */
const rstd16 = (variance: number, mode: OverflowMode) => {
  const r = (x: number) => roundTo(x, "float16", mode);
  return r(1 / Math.sqrt(r(r(variance) + r(Math.fround(EPS)))));
};

Deno.test("chip overflow: DAV_1001 float16 GroupNorm forms rstd from the float16 variance", () => {
  const want = [rstd16(90000, "saturation"), rstd16(0, "saturation")];
  assert.deepEqual(want, [Math.f16round(1 / Math.sqrt(65504)), 316]);
  for (const mode of [undefined, "inf_nan"] as const) { // 910A: saturation mode only
    const got = onChip("Ascend910A", mode, (npu) => groupNorm(npu, "float16"));
    assert.deepEqual(got.rstd, want, `Ascend910A ${mode ?? "default"}`);
    assert.deepEqual(got.mean, [0, 2]);
    // y comes from the float32 kernel's own rstd, then Cast to float16
    assert.deepEqual(
      got.y,
      GX.map((x, i) => Math.f16round(i < 4 ? x / Math.sqrt(90000 + EPS) : 0)),
    );
  }
  // GroupNormSilu on DAV_2201 (A2) writes rstd = 1/sqrt(var + eps) rounded once.
  const a2 = onChip("Ascend910B4", undefined, (npu) => groupNorm(npu, "float16"));
  assert.deepEqual(a2.rstd, [
    Math.f16round(1 / Math.sqrt(90000 + EPS)),
    Math.f16round(1 / Math.sqrt(EPS)),
  ]);
  // float32 on DAV_1001: no float16 step.
  const f32 = onChip("Ascend910A", undefined, (npu) => groupNorm(npu, "float32"));
  assert.deepEqual(f32.rstd, [
    Math.fround(1 / Math.sqrt(90000 + EPS)),
    Math.fround(1 / Math.sqrt(EPS)),
  ]);
});

/** A platform file for an NpuArch 1001 chip in Inf/NaN mode (no such product: exercises the mode). */
function withInfNan1001<T>(fn: (soc: string) => T): T {
  const soc = `AscendTest1001_${Deno.pid}_${Date.now()}`;
  const path = `${SIM_DIR}/../data/platform_config/${soc}.ini`;
  Deno.writeTextFileSync(
    path,
    `[version]\nSoC_version=${soc}\nShort_SoC_version=AscendTest\nNpuArch=1001\n[SoCInfo]\nsupport_inf_nan=1\n`,
  );
  try {
    return fn(soc);
  } finally {
    Deno.removeSync(path);
  }
}

Deno.test("chip overflow: the DAV_1001 GroupNorm float16 steps in Inf/NaN mode give rstdOut 0", () => {
  withInfNan1001((soc) => {
    const got = onChip(soc, undefined, (npu) => groupNorm(npu, "float16"));
    assert.deepEqual(got.rstd, [0, 316]);
  });
});

// ---- aclnnGroupNormBackward on DAV_1001 ----------------------------------------------------------
// [1, 2, 3] float16, one group per channel; group 0's rstd is 300 (> 256), group 1's is 2.
const BX = [0.25, 0.5, 1, 2, 2.5, 4];
const BDY = [1, -0.5, 0.25, 0.5, 1, -1];
// means that are not dyadic: gradGamma's float16 steps round (x - mean) * rstd
const BMEAN = [0.45, 2.9].map(Math.f16round);
const BRSTD = [300, 2];

function groupNormBackward(npu: AscendDevice, dtype: DType) {
  const gi = fresh(npu, [1, 2, 3], dtype);
  const gg = fresh(npu, [2], dtype);
  const gb = fresh(npu, [2], dtype);
  expectOk(npu, "aclnnGroupNormBackward", [
    arg.tensor(dev(npu, BDY, [1, 2, 3], dtype)),
    arg.tensor(dev(npu, BX, [1, 2, 3], dtype)),
    arg.tensor(dev(npu, BMEAN, [1, 2], dtype)),
    arg.tensor(dev(npu, BRSTD, [1, 2], dtype)),
    arg.tensor(undefined),
    arg.i64(1),
    arg.i64(2),
    arg.i64(3),
    arg.i64(2),
    arg.boolArray([true, true, true]),
    arg.output(gi),
    arg.output(gg),
    arg.output(gb),
  ]);
  return { gi: values(gi), gg: values(gg), gb: values(gb) };
}

/** The GroupNorm backward gradInput for per-group inverse deviations `inv`. */
function gradInput(inv: number[]): number[] {
  const out: number[] = [];
  for (let g = 0; g < 2; g++) {
    const idx = [0, 1, 2].map((k) => g * 3 + k);
    const xh = idx.map((i) => (BX[i] - BMEAN[g]) * inv[g]);
    const s1 = idx.reduce((a, i) => a + BDY[i], 0);
    const s2 = idx.reduce((a, i, k) => a + BDY[i] * xh[k], 0);
    idx.forEach((i, k) => out.push(inv[g] * (BDY[i] - s1 / 3 - xh[k] * s2 / 3)));
  }
  return out;
}

Deno.test("chip overflow: DAV_1001 GroupNormBackward's rebuilt variance (rstd > 256 in float16)", () => {
  const inv = (mode: OverflowMode) =>
    BRSTD.map((r) => 1 / Math.sqrt(rebuiltVariance(r, 1e-5, "float16", mode) + Math.fround(1e-5)));
  const sat = onChip("Ascend910A", undefined, (npu) => groupNormBackward(npu, "float16"));
  assert.deepEqual(sat.gi, gradInput(inv("saturation")).map(Math.f16round));
  const exact = gradInput(BRSTD);
  assert.ok(Math.abs(sat.gi[0] / exact[0] - 1) > 0.1, `gradInput[0] ${sat.gi[0]} vs ${exact[0]}`);
  // gradBeta = sum dy; gradGamma = sum dy * f16(f16(x - mean) * rstd), each step in float16
  assert.deepEqual(sat.gb, [0.75, 0.5]);
  const gg = [0, 1].map((g) =>
    Math.f16round(
      [0, 1, 2].reduce((a, k) => {
        const i = g * 3 + k;
        return a +
          Math.f16round(BDY[i] * Math.f16round(Math.f16round(BX[i] - BMEAN[g]) * BRSTD[g]));
      }, 0),
    )
  );
  assert.deepEqual(sat.gg, gg);
  // A2 launches GroupNormGrad, which uses rstd as given.
  const a2 = onChip("Ascend910B4", undefined, (npu) => groupNormBackward(npu, "float16"));
  assert.deepEqual(a2.gi, exact.map(Math.f16round));
  // Inf/NaN mode: 300^2 -> Inf, variance -eps, NaN for group 0.
  withInfNan1001((soc) => {
    const nan = onChip(soc, undefined, (npu) => groupNormBackward(npu, "float16"));
    assert.ok(nan.gi.slice(0, 3).every(Number.isNaN), `${nan.gi}`);
    assert.deepEqual(nan.gi.slice(3), gradInput(inv("inf_nan")).slice(3).map(Math.f16round));
  });
  // float32 on DAV_1001: the float32 round trip stays within float32 rounding.
  const f32 = onChip("Ascend910A", undefined, (npu) => groupNormBackward(npu, "float32"));
  f32.gi.forEach((v, i) =>
    assert.ok(Math.abs(v - exact[i]) <= 1e-4 * Math.abs(exact[i]) + 1e-6, `${v} ${exact[i]}`)
  );
});
