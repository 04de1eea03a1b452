/**
 * Golden cases of the channel-family operators through the public API (mod.ts): groupNormSilu,
 * groupNormSiluV2 (SiLU on and off), groupNormSwish (several swishScale values, activation on
 * and off, mixed 16-bit x with float32 gamma), groupNormSwishGrad (dgamma/dbeta required or
 * not), instanceNorm (NCHW and NHWC), batchNormReduce, syncBatchNormGatherStats (the running
 * mean and variance updated in place) and fastBatchNormBackward (training and eval).
 *
 * The cases come from channel_golden.json, written by make_channel_golden.py beside this file:
 * seeded inputs already rounded to their dtype (float32, float16, bfloat16) and float64 outputs
 * computed by PyTorch from each operator's formula in the reference notes (norm_family.md); the
 * backward references are torch autograd through a float64 forward, independent of the
 * library's oracle (tests/oracle). Each output is held to the tolerance table
 * (tests/helpers/tolerance.ts) by its dtype, with the same rule as the operator's own test in
 * tests/ops (named at each rule below).
 *
 * Every case runs on the CPU backend and on the software CANN as Ascend 950 and Atlas A2
 * (Ascend910B4); where the chip does not run the operator or a dtype, the case asserts the
 * refusal instead (chipAccepts / assertChipRefuses). instanceNorm runs only on the Atlas
 * inference series: its cases also run on the software CANN as Ascend310P3.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  batchNormReduce,
  type DType,
  fastBatchNormBackward,
  groupNormSilu,
  groupNormSiluV2,
  groupNormSwish,
  groupNormSwishGrad,
  instanceNorm,
  syncBatchNormGatherStats,
  Tensor,
} from "../../mod.ts";
import { isRegbase, type SocOperator } from "../../src/backends/ascend/soc.ts";
import { assertClose } from "../helpers/assert.ts";
import {
  assertChipRefuses,
  type BackendContext,
  chipAccepts,
  forEachBackend,
  on,
} from "../helpers/backends.ts";
import {
  cancellation,
  F32_ARITHMETIC,
  looser,
  type Tolerance,
  toleranceFor,
} from "../helpers/tolerance.ts";
import golden from "./channel_golden.json" with { type: "json" };

/**
 * Values are one space-separated string: inputs the shortest decimals of their float32 values
 * (float16 and bfloat16 values are float32 ones too), outputs float64 (round-trip decimals).
 */
interface GoldenInput {
  shape: number[];
  dtype: DType;
  values: string;
}
interface GoldenOutput {
  dtype: DType;
  values: string;
}
interface GoldenCase {
  op: string;
  name: string;
  inputs: Record<string, GoldenInput>;
  scalars: Record<string, number | boolean | string>;
  expected: Record<string, GoldenOutput>;
}

const CASES = golden.cases as unknown as GoldenCase[];
const numbers = (s: string) => s.split(" ").map(Number);

/** One output to compare: the tensor the call wrote, its expected values and tolerance. */
interface Check {
  name: string;
  actual: Tensor | null | undefined;
  tol: Tolerance;
}

/** A case prepared for one backend: the call, and the checks once it returned. */
interface Prepared {
  /** The CANN operator, for the chip's rules. */
  aclnn: SocOperator;
  /** The dtypes the chip's rules look at. */
  dtypes: DType[];
  /** Makes the call and returns the outputs to check (in-place ones included). */
  run: () => Check[];
}

/** The input `name` of case `c` as a tensor on `ctx`'s device. */
function input(c: GoldenCase, name: string, ctx: BackendContext): Tensor {
  const i = c.inputs[name];
  const values = numbers(i.values).map(Math.fround);
  // Already rounded to the dtype: the tensor holds exactly the generator's values.
  const t = Tensor.fromArray(values, i.shape, i.dtype);
  assert.deepEqual([...t.toFloat64Array()], values, `${c.name} ${name} is exact in ${i.dtype}`);
  return on(t, ctx.device);
}

const dtypeOf = (c: GoldenCase, name: string) => c.inputs[name].dtype;
const num = (c: GoldenCase, name: string) => c.scalars[name] as number;
const bool = (c: GoldenCase, name: string) => c.scalars[name] as boolean;

/**
 * GroupNorm + activation outputs (tests/ops/group_norm_silu.test.ts, group_norm_swish.test.ts):
 * the activated output gets the table's entry with an absolute floor of 4e-6 (SiLU near 0),
 * the statistics the entry of their own dtype.
 */
function gnActChecks(outDtype: DType, statDtype: DType, out: Tensor, mean: Tensor, rstd: Tensor) {
  return [
    { name: "output", actual: out, tol: looser(toleranceFor(outDtype), { rtol: 0, atol: 4e-6 }) },
    { name: "mean", actual: mean, tol: toleranceFor(statDtype) },
    { name: "rstd", actual: rstd, tol: toleranceFor(statDtype) },
  ];
}

function prepare(c: GoldenCase, ctx: BackendContext): Prepared {
  const t = (name: string) => input(c, name, ctx);
  const d = ctx.device;
  switch (c.op) {
    case "groupNormSilu":
    case "groupNormSiluV2": {
      const [xt, gt] = [dtypeOf(c, "self"), dtypeOf(c, "gamma")];
      // Ascend 950 keeps the statistics of a 16-bit self with float32 gamma in float32.
      const stats = gt !== xt && ctx.soc && isRegbase(ctx.soc) ? "float32" : xt;
      const shape = [c.inputs.self.shape[0], num(c, "group")];
      const v2 = c.op === "groupNormSiluV2";
      return {
        aclnn: v2 ? "aclnnGroupNormSiluV2" : "aclnnGroupNormSilu",
        dtypes: [xt, gt],
        run: () => {
          const args = {
            self: t("self"),
            gamma: t("gamma"),
            beta: t("beta"),
            group: num(c, "group"),
            eps: num(c, "eps"),
            out: { mean: Tensor.empty(shape, stats, d), rstd: Tensor.empty(shape, stats, d) },
          };
          const r = v2
            ? groupNormSiluV2({ ...args, activateSilu: bool(c, "activateSilu") })
            : groupNormSilu(args);
          assert.equal(r.output.dtype, xt);
          return gnActChecks(xt, stats, r.output, r.mean, r.rstd);
        },
      };
    }
    case "groupNormSwish": {
      const [xt, gt] = [dtypeOf(c, "x"), dtypeOf(c, "gamma")];
      return {
        aclnn: "aclnnGroupNormSwish",
        dtypes: [xt, gt],
        run: () => {
          const r = groupNormSwish({
            x: t("x"),
            gamma: t("gamma"),
            beta: t("beta"),
            numGroups: num(c, "numGroups"),
            eps: num(c, "eps"),
            swishScale: num(c, "swishScale"),
            activateSwish: bool(c, "activateSwish"),
          });
          assert.deepEqual([r.y.dtype, r.mean.dtype], [xt, gt], "y in x's, mean in gamma's dtype");
          return gnActChecks(xt, gt, r.y, r.mean, r.rstd).map((k) =>
            k.name === "output" ? { ...k, name: "y" } : k
          );
        },
      };
    }
    case "groupNormSwishGrad": {
      const dt = dtypeOf(c, "x");
      const C = c.inputs.x.shape[1];
      return {
        aclnn: "aclnnGroupNormSwishGrad",
        dtypes: [dt],
        run: () => {
          const [dgReq, dbReq] = [bool(c, "dgammaIsRequire"), bool(c, "dbetaIsRequire")];
          // A gradient not required leaves the given output as it is.
          const marker = () => on(Tensor.fromArray(new Array(C).fill(7), [C], dt), d);
          const out = { dgamma: dgReq ? undefined : marker(), dbeta: dbReq ? undefined : marker() };
          const r = groupNormSwishGrad({
            dy: t("dy"),
            mean: t("mean"),
            rstd: t("rstd"),
            x: t("x"),
            gamma: t("gamma"),
            beta: t("beta"),
            numGroups: num(c, "numGroups"),
            swishScale: num(c, "swishScale"),
            dgammaIsRequire: dgReq,
            dbetaIsRequire: dbReq,
            out,
          });
          for (const k of [out.dgamma, out.dbeta]) {
            if (k) assert.deepEqual([...k.toFloat64Array()], new Array(C).fill(7), "left as given");
          }
          // tests/ops/group_norm_swish_grad.test.ts: dx cancels (its group sums are zero), so
          // an absolute floor of the dtype's epsilon on all three.
          const tol = looser(toleranceFor(dt), { rtol: 0, atol: dt === "float32" ? 2e-6 : 2e-2 });
          return [
            { name: "dx", actual: r.dx, tol },
            { name: "dgamma", actual: r.dgamma, tol },
            { name: "dbeta", actual: r.dbeta, tol },
          ];
        },
      };
    }
    case "instanceNorm": {
      const dt = dtypeOf(c, "x");
      return {
        aclnn: "aclnnInstanceNorm",
        dtypes: [dt],
        run: () => {
          const r = instanceNorm({
            x: t("x"),
            gamma: t("gamma"),
            beta: t("beta"),
            dataFormat: c.scalars.dataFormat as string,
            eps: num(c, "eps"),
          });
          const [N, d1, , d3] = c.inputs.x.shape;
          const stat = c.scalars.dataFormat === "NHWC" ? [N, 1, 1, d3] : [N, d1, 1, 1];
          assert.deepEqual([r.mean.shape, r.variance.shape], [stat, stat]);
          // tests/ops/instance_norm.test.ts: the table's entry of x's dtype.
          return (["y", "mean", "variance"] as const).map((name) => ({
            name,
            actual: r[name],
            tol: toleranceFor(dt),
          }));
        },
      };
    }
    case "batchNormReduce": {
      const x = c.inputs.x;
      return {
        aclnn: "aclnnBatchNormReduce",
        dtypes: [x.dtype],
        run: () => {
          const r = batchNormReduce({ x: t("x") });
          assert.deepEqual([r.sum.dtype, r.squareSum.dtype], ["float32", "float32"]);
          // tests/ops/batch_norm_reduce.test.ts: float32 squares and runs, a bound growing with
          // the terms summed per channel.
          const terms = x.shape.reduce((a, b) => a * b, 1) / x.shape[1];
          const tol = cancellation(F32_ARITHMETIC.float32, terms, 1);
          return [
            { name: "sum", actual: r.sum, tol },
            { name: "squareSum", actual: r.squareSum, tol },
          ];
        },
      };
    }
    case "syncBatchNormGatherStats": {
      const dt = dtypeOf(c, "totalSum");
      return {
        aclnn: "aclnnSyncBatchNormGatherStats",
        dtypes: [dt],
        run: () => {
          const mean = t("mean");
          const variance = t("variance");
          const r = syncBatchNormGatherStats({
            totalSum: t("totalSum"),
            totalSquareSum: t("totalSquareSum"),
            sampleCount: t("sampleCount"),
            mean,
            variance,
            momentum: num(c, "momentum"),
            eps: num(c, "eps"),
          });
          // tests/ops/sync_batch_norm_gather_stats.test.ts: batchVar = Q/n - mean² cancels
          // float32 terms of size Q/n, at most 4 for the data in [-1, 2) behind the sums.
          const tol = dt === "float32"
            ? cancellation(F32_ARITHMETIC.float32, 4, 1)
            : toleranceFor(dt);
          return [
            { name: "batchMean", actual: r.batchMean, tol },
            { name: "batchInvstd", actual: r.batchInvstd, tol },
            // In place: the very tensors passed as mean and variance, read after the call.
            { name: "mean", actual: mean, tol },
            { name: "variance", actual: variance, tol },
          ];
        },
      };
    }
    case "fastBatchNormBackward": {
      const [dt, st] = [dtypeOf(c, "gradOut"), dtypeOf(c, "weight")];
      return {
        aclnn: "aclnnFastBatchNormBackward",
        dtypes: [dt, st],
        run: () => {
          const r = fastBatchNormBackward({
            gradOut: t("gradOut"),
            input: t("input"),
            weight: t("weight"),
            runningMean: t("runningMean"),
            runningVar: t("runningVar"),
            saveMean: t("saveMean"),
            saveInvstd: t("saveInvstd"),
            training: bool(c, "training"),
            eps: num(c, "eps"),
          });
          assert.deepEqual([r.gradInput?.dtype, r.gradWeight?.dtype], [dt, st]);
          // tests/ops/fast_batch_norm_backward.test.ts: the looser of the two dtypes' entries.
          const tol = looser(toleranceFor(dt), toleranceFor(st));
          return (["gradInput", "gradWeight", "gradBias"] as const).map((name) => ({
            name,
            actual: r[name],
            tol,
          }));
        },
      };
    }
  }
  throw new Error(`no runner for ${c.op}`);
}

/** Runs (or, where the chip does not take it, asserts the refusal of) each case of `op`. */
function runCases(ctx: BackendContext, op: string): void {
  const cases = CASES.filter((c) => c.op === op);
  assert.ok(cases.length >= 3, `${op}: ${cases.length} golden cases`);
  let ran = 0;
  for (const c of cases) {
    const p = prepare(c, ctx);
    const label = `${ctx.label} ${op} ${c.name}`;
    if (!chipAccepts(ctx.soc, p.aclnn, p.dtypes)) {
      assertChipRefuses(ctx, p.run);
      continue;
    }
    const checks = p.run();
    const names = checks.filter((k) => c.expected[k.name]).map((k) => k.name);
    assert.deepEqual(names.sort(), Object.keys(c.expected).sort(), `${label}: outputs checked`);
    for (const k of checks) {
      const e = c.expected[k.name];
      if (!e) continue;
      assertClose(k.actual, numbers(e.values), k.tol, `${label} ${k.name}`);
    }
    ran++;
  }
  // The CPU backend runs every case; a chip that runs the operator at least its float32 ones,
  // and one that does not runs none.
  const runs = chipAccepts(ctx.soc, prepare(cases[0], ctx).aclnn, []);
  const f32 = cases.filter((c) => prepare(c, ctx).dtypes.every((t) => t === "float32")).length;
  const least = !ctx.soc ? cases.length : runs ? f32 : 0;
  assert.ok(ran >= least && (runs || ran === 0), `${ctx.label} ${op}: ${ran} cases ran`);
}

const OPS = [
  "groupNormSilu",
  "groupNormSiluV2",
  "groupNormSwish",
  "groupNormSwishGrad",
  "instanceNorm",
  "batchNormReduce",
  "syncBatchNormGatherStats",
  "fastBatchNormBackward",
];

for (const op of OPS) {
  forEachBackend(`golden ${op}: PyTorch float64 references`, (ctx) => runCases(ctx, op));
}

// aclnnInstanceNorm runs on the Atlas inference series only (refused above on 950 and A2).
forEachBackend(
  "golden instanceNorm: PyTorch float64 references",
  (ctx) => runCases(ctx, "instanceNorm"),
  { cpu: false, socs: ["Ascend310P3"] },
);
