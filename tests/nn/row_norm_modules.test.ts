/**
 * LayerNorm and RMSNorm against torch.nn (the committed fixture of
 * tests/nn/make_torch_row_fixtures.py; RMSNorm there is torch >= 2.4's nn.RMSNorm composed in
 * torch 1.13): each case's training steps with SGD updates (outputs, gradients, updated
 * parameters), eval mode, the state dict and a fresh module that loads it, on every backend,
 * with contiguous and transposed-storage inputs. Then the modules' own rules: options,
 * lifecycle, mixed precision and the parameter gradients' dtype.
 *
 * @module
 */

import assert from "node:assert/strict";
import { LayerNorm, RMSNorm, type StateDict } from "../../src/nn/mod.ts";
import type { Device } from "../../src/tensor/device.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { forEachBackend, on } from "../helpers/backends.ts";
import { rmsNorm as rmsNorm64 } from "../oracle/row_norms.ts";
import { PYTORCH_FLOAT32, toleranceFor } from "../helpers/tolerance.ts";

interface Step {
  x: number[];
  dy: number[];
  output: number[];
  gradInput: number[];
  gradWeight?: number[];
  gradBias?: number[];
  after: { weight?: number[]; bias?: number[] };
}

interface Case {
  name: string;
  module: "LayerNorm" | "RMSNorm";
  shape: number[];
  options: {
    normalizedShape: number[];
    eps?: number;
    elementwiseAffine?: boolean;
  };
  lr: number;
  steps: Step[];
  eval: Step;
  stateDict: Record<string, number[]>;
  loaded: { eval: Step };
}

const ARRAYS = new Set([
  "x",
  "dy",
  "output",
  "gradInput",
  "gradWeight",
  "gradBias",
  "weight",
  "bias",
]);

const CASES: readonly Case[] = JSON.parse(
  Deno.readTextFileSync(new URL("./fixtures/torch_row_norms.json", import.meta.url)),
  (key, value) =>
    ARRAYS.has(key) && typeof value === "string" ? value.split(" ").map(Number) : value,
).cases;

type Module = LayerNorm | RMSNorm;

function make(c: Case, device: Device): Module {
  return c.module === "LayerNorm"
    ? new LayerNorm({ ...c.options, device })
    : new RMSNorm({ ...c.options, device });
}

/** The same values with the last two dims stored transposed (a non-contiguous view). */
function transposed(values: number[], shape: number[]): Tensor {
  const r = shape.length;
  const swapped = [...shape.slice(0, r - 2), shape[r - 1], shape[r - 2]];
  const t = Tensor.fromArray(values, shape).transpose(r - 2, r - 1).contiguous();
  assert.deepEqual(t.shape, swapped);
  return t.transpose(r - 2, r - 1);
}

const LAYOUTS = {
  contiguous: (v: number[], s: number[]) => Tensor.fromArray(v, s),
  transposed,
};

function replayStep(
  where: string,
  m: Module,
  c: Case,
  step: Step,
  layout: keyof typeof LAYOUTS,
  device: Device,
) {
  const x = on(LAYOUTS[layout](step.x, c.shape), device);
  const dy = on(LAYOUTS[layout](step.dy, c.shape), device);
  using y = m.forward(x);
  assert.deepEqual(y.strides, x.strides, `${where}: the output keeps the input's layout`);
  using grads = m.backward(dy);
  assertClose(y, step.output, PYTORCH_FLOAT32, `${where} output`);
  assertClose(grads.gradInput, step.gradInput, PYTORCH_FLOAT32, `${where} gradInput`);
  if (step.gradWeight) {
    assertClose(grads.gradWeight, step.gradWeight, PYTORCH_FLOAT32, `${where} gradWeight`);
  } else assert.equal(grads.gradWeight, null, `${where}: no gradWeight`);
  const gradBias: Tensor | null = "gradBias" in grads ? grads.gradBias as Tensor | null : null;
  if (step.gradBias) assertClose(gradBias, step.gradBias, PYTORCH_FLOAT32, `${where} gradBias`);
  else assert.equal(gradBias, null, `${where}: no gradBias`);
  if (m.training) {
    // torch.optim.SGD(lr): p <- p - lr * grad.
    for (const [p, g] of [[m.weight, grads.gradWeight], [m.bias, gradBias]] as const) {
      if (!p || !g) continue;
      const gv = g.toFloat64Array();
      p.copy_(p.toFloat64Array().map((v, i) => v - c.lr * gv[i]));
    }
  }
  for (const [name, p] of [["weight", m.weight], ["bias", m.bias]] as const) {
    const want = step.after[name];
    if (want) assertClose(p, want, PYTORCH_FLOAT32, `${where} ${name} after the step`);
    else assert.equal(p, null, `${where}: no ${name}`);
  }
}

function checkStateDict(where: string, dict: StateDict, c: Case): void {
  assert.deepEqual(Object.keys(dict), Object.keys(c.stateDict), `${where}: torch's keys`);
  for (const [key, want] of Object.entries(c.stateDict)) {
    assertClose(dict[key], want, PYTORCH_FLOAT32, `${where}: ${key}`);
  }
}

for (const layout of ["contiguous", "transposed"] as const) {
  forEachBackend(
    `row norm modules: torch.nn's training steps, eval and state dict (${layout})`,
    (ctx) => {
      for (const c of CASES) {
        const where = `${ctx.label} ${c.name} ${layout}`;
        using m = make(c, ctx.device);
        c.steps.forEach((s, i) => replayStep(`${where} step ${i}`, m, c, s, layout, ctx.device));
        m.eval();
        replayStep(`${where} eval`, m, c, c.eval, layout, ctx.device);
        const dict = m.stateDict();
        checkStateDict(where, dict, c);
        using fresh = make(c, ctx.device);
        assert.deepEqual(fresh.loadStateDict(dict), { missingKeys: [], unexpectedKeys: [] });
        fresh.eval();
        replayStep(`${where} loaded eval`, fresh, c, c.loaded.eval, layout, ctx.device);
        for (const t of Object.values(dict)) t.dispose();
      }
    },
  );
}

// ---------------------------------------------------------------------------------------
// The modules' own rules.

Deno.test("row norm modules: options are checked at construction", () => {
  assertAclnnError(() => new LayerNorm({ normalizedShape: -1 }), 161002, "normalizedShape");
  assertAclnnError(() => new LayerNorm({ normalizedShape: [] }), 161002, "normalizedShape");
  assertAclnnError(() => new LayerNorm({ normalizedShape: [1.5] }), 161002, "normalizedShape.0");
  assertAclnnError(() => new LayerNorm({ normalizedShape: 4, eps: NaN }), 161002, "eps");
  assertAclnnError(
    () => new LayerNorm({ normalizedShape: 4, elementwiseAffine: 1 as unknown as boolean }),
    161002,
    "elementwiseAffine",
  );
  assertAclnnError(() => new RMSNorm({ normalizedShape: 4, eps: -1 }), 161002, "eps");
  assertAclnnError(() => new RMSNorm(undefined as unknown as { normalizedShape: number }), 161001);
  const ln = new LayerNorm({ normalizedShape: 4, bias: false });
  assert.deepEqual(Object.keys(ln.stateDict()), ["weight"], "bias: false (torch >= 2.1)");
  assert.deepEqual(ln.normalizedShape, [4]);
  ln.dispose();
});

Deno.test("row norm modules: an input must end in normalizedShape; one backward per forward", () => {
  using ln = new LayerNorm({ normalizedShape: [3, 4] });
  assertAclnnError(() => ln.forward(Tensor.zeros([2, 4, 3])), 161002, "input");
  assertAclnnError(() => ln.backward(Tensor.zeros([2, 3, 4])), 161002, "forward");
  const x = Tensor.random([2, 3, 4], { seed: 1 });
  ln.forward(x).dispose();
  assertAclnnError(() => ln.backward(Tensor.zeros([2, 3, 5])), 161002, "gradOut");
  ln.backward(Tensor.ones([2, 3, 4]))[Symbol.dispose]();
  assertAclnnError(() => ln.backward(Tensor.ones([2, 3, 4])), 161002, "forward");
  using rms = new RMSNorm({ normalizedShape: 4 });
  assertAclnnError(() => rms.forward(Tensor.zeros([4, 3])), 161002, "input");
  rms.dispose();
  assertAclnnError(() => rms.forward(Tensor.zeros([3, 4])), 161002, "module");
});

forEachBackend(
  "row norm modules: float32 parameters with bfloat16 data; gradients in the parameters' dtype",
  (ctx) => {
    const d = ctx.device;
    const x = on(Tensor.random([3, 16], { seed: 2, dtype: "bfloat16" }), d);
    using ln = new LayerNorm({ normalizedShape: 16, device: d });
    using y = ln.forward(x);
    assert.equal(y.dtype, "bfloat16");
    using g = ln.backward(on(Tensor.ones([3, 16], "bfloat16"), d));
    assert.deepEqual([g.gradWeight?.dtype, g.gradBias?.toArray()], [
      "float32",
      new Array(16).fill(3),
    ]);
    // A bfloat16 module: gradients converted to bfloat16.
    using half = new RMSNorm({ normalizedShape: 16, dtype: "bfloat16", device: d });
    using hy = half.forward(x);
    using hg = half.backward(on(Tensor.ones([3, 16], "bfloat16"), d));
    assert.equal(hg.gradWeight?.dtype, "bfloat16");
    // eps = finfo(bfloat16).eps = 2^-7 by default.
    const e = rmsNorm64([...x.toFloat64Array()], 3, 16, 2 ** -7, new Array(16).fill(1));
    assertClose(hy, e.y, toleranceFor("bfloat16"), `${ctx.label} RMSNorm bfloat16 y`);
  },
);
