/**
 * GroupNorm with float16/bfloat16 data and float32 gamma, beta, mean or rstd (issue 30). CANN's
 * aclnnGroupNorm takes no mixed precision on any chip (hicann/ops-nn
 * `norm/group_norm/op_host/op_api/aclnn_group_norm.cpp` CheckDtypeValid 69-87: gamma, beta, out,
 * meanOut and rstdOut each in self's dtype, no chip branch; tests/software_cann/chip_dtypes.test.ts checks
 * the software CANN on every SoC), so the library refuses such a call on every backend, the CPU
 * included, with 161002 naming the argument and the rule, and the same text everywhere. Calls in
 * one dtype equal the float64 oracle wherever the chip runs them. Runs on the CPU backend and on
 * the software CANN as Atlas training, A2, A3, inference (310P), Ascend 950 (both names) and
 * Ascend 350.
 *
 * @module
 */

import assert from "node:assert/strict";
import { AclnnError } from "../../src/errors.ts";
import { groupNorm, type GroupNormArgs } from "../../src/ops/group_norm.ts";
import type { Device } from "../../src/tensor/device.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import {
  assertChipRefuses,
  type BackendContext,
  chipAccepts,
  forEachBackend,
  on,
} from "../helpers/backends.ts";
import { groupNorm64 } from "../oracle/mod.ts";

const SOCS = [
  "Ascend910A",
  "Ascend910B4",
  "Ascend910_9391",
  "Ascend310P3",
  "Ascend950PR_9599",
  "Ascend350_354f",
  "Ascend910_9599", // the 950 under its pre-2026 name, placed by its platform file
];
const SHAPE = [2, 6, 5];
const [N, C, HxW] = SHAPE;
const G = 3;

const rnd = (shape: number[], seed: number, dtype: DType, low = -1, high = 1) =>
  Tensor.random(shape, { seed, dtype, low, high });

/** groupNorm with data in `data`; `mixed` names the tensors given in `other` instead. */
function mixedCall(
  device: Device,
  data: DType,
  other: DType,
  mixed: readonly ("gamma" | "beta" | "output" | "mean" | "rstd")[],
): () => unknown {
  const dt = (name: string) => (mixed.includes(name as never) ? other : data);
  const args: GroupNormArgs = {
    input: on(rnd(SHAPE, 1, data), device),
    gamma: on(rnd([C], 2, dt("gamma"), 0.5, 1.5), device),
    beta: on(rnd([C], 3, dt("beta")), device),
    group: G,
    out: {
      output: mixed.includes("output") ? Tensor.zeros(SHAPE, other, device) : undefined,
      mean: mixed.includes("mean") ? Tensor.zeros([N, G], other, device) : undefined,
      rstd: mixed.includes("rstd") ? Tensor.zeros([N, G], other, device) : undefined,
    },
  };
  return () => groupNorm(args);
}

function refusal(fn: () => unknown): AclnnError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof AclnnError, `expected an AclnnError, got ${e}`);
    return e;
  }
  assert.fail("expected a refusal, the call ran");
}

forEachBackend(
  "groupNorm mixed precision: refused on every backend, naming the argument and the rule",
  (ctx) => {
    const cases: [DType, DType, ("gamma" | "beta" | "output" | "mean" | "rstd")[], string][] = [
      ["float16", "float32", ["gamma"], "gamma"],
      ["bfloat16", "float32", ["gamma"], "gamma"],
      ["float16", "float32", ["beta"], "beta"],
      ["float16", "float32", ["mean"], "mean"],
      ["bfloat16", "float32", ["rstd"], "rstd"],
      ["float16", "float32", ["output"], "output"],
      // what a mixed-precision recipe passes: float32 parameters and statistics; gamma comes first
      ["float16", "float32", ["gamma", "beta", "mean", "rstd"], "gamma"],
      ["bfloat16", "float32", ["gamma", "beta", "mean", "rstd"], "gamma"],
      ["float32", "float16", ["gamma"], "gamma"],
    ];
    for (const [data, other, mixed, argument] of cases) {
      const what = `${data} data, ${other} ${mixed.join("/")} on ${ctx.label}`;
      const e = refusal(mixedCall(ctx.device, data, other, mixed));
      assert.equal(e.code, 161002, `${what}: ${e.message}`);
      assert.equal(e.argument, argument, `${what}: ${e.message}`);
      assert.ok(
        e.message.includes(`${argument} dtype ${other} must equal input dtype ${data}`) &&
          e.message.includes("aclnnGroupNorm takes no mixed precision on any chip"),
        `${what}: ${e.message}`,
      );
      // The NPU path refuses exactly as the CPU backend does: it is the operator's rule, no chip's.
      if (ctx.device !== "cpu") {
        assert.equal(e.message, refusal(mixedCall("cpu", data, other, mixed)).message, what);
      }
    }
  },
  { socs: SOCS },
);

/** Whether the backend runs groupNorm on `dtype` data (Atlas training refuses float16). */
function runs(ctx: BackendContext, dtype: DType): boolean {
  if (!chipAccepts(ctx.soc, "aclnnGroupNorm", [dtype])) return false;
  return !(ctx.soc?.npuArch === 1001 && dtype === "float16");
}

forEachBackend("groupNorm in one dtype: the float64 oracle, statistics in input's dtype", (ctx) => {
  for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
    const x = rnd(SHAPE, 4, dtype, -1, 2);
    const gamma = rnd([C], 5, dtype, 0.5, 1.5);
    const beta = rnd([C], 6, dtype);
    const call = () =>
      groupNorm({
        input: on(x, ctx.device),
        gamma: on(gamma, ctx.device),
        beta: on(beta, ctx.device),
        group: G,
        eps: 1e-4,
      });
    if (!runs(ctx, dtype)) {
      assertChipRefuses(ctx, call, "input");
      continue;
    }
    const r = call();
    const e = groupNorm64(
      x.toFloat64Array(),
      N,
      C,
      HxW,
      G,
      gamma.toFloat64Array(),
      beta.toFloat64Array(),
      1e-4,
    );
    for (
      const [name, got, want, shape] of [
        ["output", r.output, e.output, SHAPE],
        ["mean", r.mean, e.mean, [N, G]],
        ["rstd", r.rstd, e.rstd, [N, G]],
      ] as const
    ) {
      const what = `${name} ${dtype} on ${ctx.label}`;
      assert.equal(got.device, ctx.device, what);
      assert.equal(got.dtype, dtype, what);
      assert.deepEqual(got.shape, shape, what);
      assertClose(got, want, undefined, what);
    }
  }
}, { socs: SOCS });
