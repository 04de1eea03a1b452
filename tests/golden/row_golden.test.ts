/**
 * Golden cases of the fused row norms (issue 39's acceptance): addLayerNorm (with and without
 * bias, additionalOutput), addLayerNormGrad (with and without dsum), deepNorm, deepNormGrad,
 * gemmaRmsNorm, inplaceAddRmsNorm (x1Ref/x2Ref checked after the call), addRmsNormCast
 * (float16/bfloat16), adaLayerNorm, adaLayerNormV2, adaLayerNormBackward and fastLayerNorm.
 *
 * The cases come from `make_row_golden.py` beside this file (seeded; PyTorch in float64 on each
 * operator's formula in the issue-39 reference notes; the backward operators' references are
 * autograd gradients of the float64 forward, independent of tests/oracle/). Their inputs are
 * already rounded to their dtypes (float32, float16, bfloat16), so the public API receives
 * exactly the values the references were computed from. Each output is asserted within the
 * tolerance table's entry for its dtype (tests/helpers/tolerance.ts), on the CPU backend and on
 * the software CANN as an Ascend 950 and an Atlas A2; where the chip does not run the operator
 * or dtype, the test asserts the chip's refusal instead.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  adaLayerNorm,
  adaLayerNormBackward,
  adaLayerNormV2,
  addLayerNorm,
  addLayerNormGrad,
  addRmsNormCast,
  deepNorm,
  deepNormGrad,
  type DType,
  fastLayerNorm,
  gemmaRmsNorm,
  inplaceAddRmsNorm,
  Tensor,
} from "../../mod.ts";
import type { SocOperator } from "../../src/backends/ascend/soc.ts";
import { assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, chipAccepts, forEachBackend, on } from "../helpers/backends.ts";
import { looser, type Tolerance, toleranceFor } from "../helpers/tolerance.ts";

/** A tensor of a case: its values already rounded to its dtype (expected outputs: float64). */
interface GoldenTensor {
  shape: number[];
  dtype: DType;
  values: number[];
}

/** One golden case, as make_row_golden.py writes it. */
interface GoldenCase {
  op: string;
  name: string;
  dtype: DType;
  args: Record<string, GoldenTensor>;
  scalars: Record<string, number | boolean | number[]>;
  expected: Record<string, GoldenTensor>;
}

type Call = (args: Record<string, unknown>) => Record<string, unknown>;

/** How each operator is called, its chip-table name and the arguments it writes in place. */
const OPS: Record<string, { call: Call; soc: SocOperator; inPlace?: readonly string[] }> = {
  addLayerNorm: { call: addLayerNorm as unknown as Call, soc: "aclnnAddLayerNorm" },
  addLayerNormGrad: { call: addLayerNormGrad as unknown as Call, soc: "aclnnAddLayerNormGrad" },
  deepNorm: { call: deepNorm as unknown as Call, soc: "aclnnDeepNorm" },
  deepNormGrad: { call: deepNormGrad as unknown as Call, soc: "aclnnDeepNormGrad" },
  fastLayerNorm: { call: fastLayerNorm as unknown as Call, soc: "aclnnFastLayerNorm" },
  gemmaRmsNorm: { call: gemmaRmsNorm as unknown as Call, soc: "aclnnGemmaRmsNorm" },
  inplaceAddRmsNorm: {
    call: inplaceAddRmsNorm as unknown as Call,
    soc: "aclnnInplaceAddRmsNorm",
    inPlace: ["x1Ref", "x2Ref"],
  },
  addRmsNormCast: { call: addRmsNormCast as unknown as Call, soc: "aclnnAddRmsNormCast" },
  adaLayerNorm: { call: adaLayerNorm as unknown as Call, soc: "aclnnAdaLayerNorm" },
  adaLayerNormV2: { call: adaLayerNormV2 as unknown as Call, soc: "aclnnAdaLayerNormV2" },
  adaLayerNormBackward: {
    call: adaLayerNormBackward as unknown as Call,
    soc: "aclnnAdaLayerNormBackward",
  },
};

function load(file: string): GoldenCase[] {
  const json = JSON.parse(Deno.readTextFileSync(new URL(file, import.meta.url)));
  return json.cases as GoldenCase[];
}

const CASES: GoldenCase[] = [
  ...load("./row_golden_layer.json"),
  ...load("./row_golden_rms_ada.json"),
];

/**
 * The tolerance of an output: the table's entry for the output's dtype, except where CANN feeds
 * a float32 output from values it has rounded to the case's 16-bit dtype on the way (the rule of
 * the operator's own test in tests/ops/, `looser` of the two entries):
 * - addRmsNormCast's y1 and rstd (add_rms_norm_cast.test.ts): the A2 float16 kernel adds and
 *   squares in half and stores y1 = float(y2) (docs/norm_family_kernels.md section 7);
 * - inplaceAddRmsNorm's rstd (inplace_add_rms_norm.test.ts): AddRmsNorm's A2 kernels take rstd
 *   from the stored x, x1Ref + x2Ref rounded to the dtype, for float16 and for bfloat16 rows of
 *   the SINGLE_N template (tests/sim/README_norm.md, aclnnAddRmsNorm "Numerics").
 */
function toleranceOf(c: GoldenCase, key: string, output: GoldenTensor): Tolerance {
  const own = toleranceFor(output.dtype);
  const roundedOnTheWay = c.op === "addRmsNormCast" ||
    (c.op === "inplaceAddRmsNorm" && key === "rstd");
  return roundedOnTheWay ? looser(own, toleranceFor(c.dtype)) : own;
}

Deno.test("row golden: the golden files hold every operator of the brief", () => {
  const count = new Map<string, number>();
  for (const c of CASES) count.set(c.op, (count.get(c.op) ?? 0) + 1);
  assert.deepEqual([...count.keys()].sort(), Object.keys(OPS).sort());
  for (const [op, n] of count) assert.ok(n >= 6, `${op}: ${n} cases`);
  // 16-bit cases are included for every operator.
  for (const op of Object.keys(OPS)) {
    const dtypes = new Set(CASES.filter((c) => c.op === op).map((c) => c.dtype));
    assert.ok(dtypes.has("float16") && dtypes.has("bfloat16"), `${op}: ${[...dtypes]}`);
  }
});

for (const op of Object.keys(OPS)) {
  const spec = OPS[op];
  forEachBackend(`row golden: ${op} against the float64 PyTorch references`, (ctx) => {
    for (const c of CASES.filter((k) => k.op === op)) {
      const label = `${ctx.label} ${op} ${c.name}`;
      const tensors: Record<string, Tensor> = {};
      for (const [key, t] of Object.entries(c.args)) {
        tensors[key] = on(Tensor.fromArray(t.values, t.shape, t.dtype), ctx.device);
      }
      const args = { ...tensors, ...c.scalars };
      const dtypes = Object.values(c.args).map((t) => t.dtype);
      if (!chipAccepts(ctx.soc, spec.soc, dtypes)) {
        assertChipRefuses(ctx, () => spec.call(args));
        continue;
      }
      const r = spec.call(args);
      if (op === "addLayerNorm" && !c.scalars.additionalOutput) {
        assert.equal(r.x, null, `${label}: x without additionalOutput`);
      }
      for (const [key, e] of Object.entries(c.expected)) {
        const actual = (spec.inPlace?.includes(key) ? tensors[key] : r[key]) as Tensor | null;
        assert.ok(actual instanceof Tensor, `${label}: ${key} is ${actual}`);
        assert.equal(actual.dtype, e.dtype, `${label}: ${key}'s dtype`);
        assert.deepEqual(actual.shape, e.shape, `${label}: ${key}'s shape`);
        assertClose(actual, e.values, toleranceOf(c, key, e), `${label}: ${key}`);
      }
    }
  });
}
