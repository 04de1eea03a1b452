/**
 * Mixed dtypes as CANN's op_api code accepts, refuses and computes them (issue 27, items 5 and 6):
 * - aclnnBatchNormElemt checks each tensor against the dtype list on its own
 *   (batch_norm_elemt/op_host/op_api/aclnn_batch_norm_elemt.cpp 47-68), but copies BatchNorm's
 *   result, in input's dtype, into out with l0op::ViewCopy, which refuses another dtype (ops-math
 *   contiguous.cpp CheckViewCopyParams): 561103;
 * - aclnnBatchNormElemtBackward casts everything to FLOAT16 when all its inputs are FLOAT16, else
 *   to FLOAT, and casts the result to gradInput's dtype
 *   (sync_batch_norm_backward_elemt/op_api/aclnn_batch_norm_elemt_backward.cpp 191-202, 346-405);
 * - on DAV_3510 aclnnBatchNormBackward requires gradWeight and gradBias to share a dtype whenever
 *   both are non-NULL, whatever outputMask says (aclnn_batch_norm_backward.cpp 355-357);
 *   elsewhere gradInput must be input's dtype (ViewCopy in BatchNormPost);
 * - aclnnGroupNorm takes no mixed precision on any SoC: gamma, beta, out, meanOut and rstdOut
 *   must each have self's dtype, with no chip branch (group_norm/op_host/op_api/
 *   aclnn_group_norm.cpp CheckDtypeValid 69-87; its BF16 list on DAV_2201/regbase only, 59-67).
 * Expected values are float64 oracles (tests/helpers/chip_round.ts). Needs the built simulator.
 *
 * @module
 */

import assert from "node:assert/strict";
import { arg } from "../../src/ffi/executor.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { type NarrowDType, roundTo } from "../helpers/chip_round.ts";
import { argsFor, C, N, X } from "../helpers/sim_args.ts";
import { dev, expectAclnn, expectOk, fresh, onSoc, values } from "../helpers/sim_raw.ts";

const INVALID = 161002;
const INNER_NULLPTR = 561103;
const DTYPE_MISMATCH =
  /Input tensor's dtype\[DT_FLOAT16\] should be same with output's dtype\[DT_FLOAT\]\./;

// ---- aclnnBatchNormElemt --------------------------------------------------------------------
const EX = [0.25, 0.5, 0.75, 1, 0, 1, 2, 3, 0.5, 0.5, 0.5, 0.5, 1.5, 1, 0.5, 0];
const ch = (i: number) => Math.floor(i / 4) % 2;

function elemt(npu: AscendDevice, dt: { x: DType; stats: DType; w?: DType; out?: DType }) {
  const y = fresh(npu, [2, 2, 4], dt.out ?? dt.x);
  const args = [
    arg.tensor(dev(npu, EX, [2, 2, 4], dt.x)),
    arg.tensor(dt.w ? dev(npu, [2, 0.5], [2], dt.w) : undefined),
    arg.tensor(dt.w ? dev(npu, [0.25, -1], [2], "float32") : undefined),
    arg.tensor(dev(npu, [0.5, 1], [2], dt.stats)),
    arg.tensor(dev(npu, [3, 2], [2], dt.stats)),
    arg.f64(1e-5),
    arg.output(y),
  ];
  return { args, y };
}

Deno.test("chip dtypes: Elemt takes statistics, weight and bias of any listed dtype; out must be input's", () => {
  onSoc("Ascend910B4", (npu) => {
    // float16 input, float32 statistics, bfloat16 weight, float32 bias
    const e = elemt(npu, { x: "float16", stats: "float32", w: "bfloat16" });
    expectOk(npu, "aclnnBatchNormElemt", e.args);
    values(e.y).forEach((v, i) => {
      const want = (EX[i] - [0.5, 1][ch(i)]) * [3, 2][ch(i)] * [2, 0.5][ch(i)] + [0.25, -1][ch(i)];
      assert.ok(Math.abs(v - want) <= 2e-3 * Math.abs(want) + 1e-3, `y[${i}] = ${v}, want ${want}`);
    });
    expectOk(npu, "aclnnBatchNormElemt", elemt(npu, { x: "bfloat16", stats: "float32" }).args);
    expectAclnn(
      npu,
      "aclnnBatchNormElemt",
      elemt(npu, { x: "float16", stats: "float32", out: "float32" }).args,
      INNER_NULLPTR,
      DTYPE_MISMATCH,
    );
  });
  onSoc("Ascend910A", (npu) => {
    expectAclnn(
      npu,
      "aclnnBatchNormElemt",
      elemt(npu, { x: "float16", stats: "bfloat16" }).args,
      INVALID,
      "input not implemented for DT_BF16, should be in dtype support list [DT_FLOAT,DT_FLOAT16,].",
    );
  });
});

// ---- aclnnBatchNormElemtBackward ----------------------------------------------------------
const BX = [0.5, 1.25, -0.75, 2, 0.5, 1.5, 1, -1, 0.25, 3, 0.5, 0.75];
const BDY = [0.5, -1, 0.25, 1, 2, -0.5, 0.75, 0.5, -0.25, 1.5, 1, -2];
const MEAN = [0.4, 1.1];
const INVSTD = [1.3, 0.7];
const W = [0.9, 1.7];
const SUM_DY = [2.2, -0.6];
const SUM_DY_XMU = [0.35, -1.45];
const COUNTER = [4, 2];
const bch = (i: number) => Math.floor(i / 3) % 2;

interface EbDtypes {
  dy: DType;
  x: DType;
  stats: DType;
  w: DType | undefined;
  gi: DType;
}

function elemtBackward(npu: AscendDevice, d: EbDtypes): number[] {
  const gi = fresh(npu, [2, 2, 3], d.gi);
  expectOk(npu, "aclnnBatchNormElemtBackward", [
    arg.tensor(dev(npu, BDY, [2, 2, 3], d.dy)),
    arg.tensor(dev(npu, BX, [2, 2, 3], d.x)),
    arg.tensor(dev(npu, MEAN, [2], d.stats)),
    arg.tensor(dev(npu, INVSTD, [2], d.stats)),
    arg.tensor(d.w ? dev(npu, W, [2], d.w) : undefined),
    arg.tensor(dev(npu, SUM_DY, [2], d.stats)),
    arg.tensor(dev(npu, SUM_DY_XMU, [2], d.stats)),
    arg.tensor(dev(npu, COUNTER, [2], "int32")),
    arg.output(gi),
  ]);
  return values(gi);
}

/** The kernel in `p` (its promote dtype), each input first rounded to its own dtype. */
function ebOracle(d: EbDtypes, p: NarrowDType): number[] {
  const r = (v: number, t: DType) => roundTo(v, t as NarrowDType);
  const total = COUNTER[0] + COUNTER[1];
  const mdy = SUM_DY.map((s) => roundTo(Math.fround(r(s, d.stats) / total), p));
  const mdx = SUM_DY_XMU.map((s) => roundTo(Math.fround(r(s, d.stats) / total), p));
  return BX.map((x0, i) => {
    const c = bch(i);
    const is = r(INVSTD[c], d.stats), w = d.w ? r(W[c], d.w) : 1;
    const x = r(x0, d.x), dy = r(BDY[i], d.dy), mean = r(MEAN[c], d.stats);
    const g = roundTo((dy - mdy[c] - (x - mean) * (mdx[c] * is * is)) * (is * w), p);
    return r(g, d.gi);
  });
}

Deno.test("chip dtypes: ElemtBackward accepts mixed gradOut/input dtypes and computes in float32", () => {
  const cases: EbDtypes[] = [
    { dy: "float16", x: "float32", stats: "float32", w: "float32", gi: "float32" },
    { dy: "bfloat16", x: "float16", stats: "float32", w: undefined, gi: "float16" },
    { dy: "float32", x: "float16", stats: "float16", w: "float16", gi: "float16" },
    // every input float16 but the weight a NULL (a float32 fill): FLOAT
    { dy: "float16", x: "float16", stats: "float16", w: undefined, gi: "float32" },
  ];
  onSoc("Ascend910B4", (npu) => {
    for (const d of cases) {
      assert.deepEqual(elemtBackward(npu, d), ebOracle(d, "float32"), JSON.stringify(d));
    }
  });
  onSoc("Ascend910A", (npu) => {
    // mixed float16/float32 is fine on every SoC; bfloat16 only where the list has it
    const d = cases[0];
    assert.deepEqual(elemtBackward(npu, d), ebOracle(d, "float32"));
    expectAclnn(
      npu,
      "aclnnBatchNormElemtBackward",
      [
        arg.tensor(dev(npu, BDY, [2, 2, 3], "bfloat16")),
        ...argsFor(npu, "aclnnBatchNormElemtBackward", "float16").slice(1),
      ],
      INVALID,
      "Tensor gradOut not implemented for DT_BF16, should be in dtype support list [DT_FLOAT,DT_FLOAT16,].",
    );
  });
});

Deno.test("chip dtypes: ElemtBackward with every input float16 computes in float16, whatever gradInput is", () => {
  const d: EbDtypes = {
    dy: "float16",
    x: "float16",
    stats: "float16",
    w: "float16",
    gi: "float32",
  };
  const got = onSoc("Ascend910B4", (npu) => elemtBackward(npu, d));
  assert.deepEqual(got, ebOracle(d, "float16"));
  assert.ok(
    got.every((v) => Math.f16round(v) === v),
    `float16 values in a float32 gradInput: ${got}`,
  );
  const asFloat = ebOracle(d, "float32");
  assert.ok(got.some((v, i) => v !== asFloat[i]), "the float16 promote type is visible");
});

// ---- aclnnBatchNormBackward ------------------------------------------------------------------
Deno.test("chip dtypes: DAV_3510 BatchNormBackward: gradWeight and gradBias share a dtype when both are given", () => {
  const bb = (npu: AscendDevice, mask: boolean[], gw: DType | null, gb: DType | null) =>
    argsFor(npu, "aclnnBatchNormBackward", "float32", {
      gradWeight: gw ? fresh(npu, [C], gw) : undefined,
      gradBias: gb ? fresh(npu, [C], gb) : undefined,
    }, { mask });
  for (const soc of ["Ascend950PR_9599", "Ascend910_9599", "Ascend350_354f"]) {
    onSoc(soc, (npu) => {
      for (const mask of [[true, false, false], [false, true, false], [true, true, true]]) {
        expectAclnn(
          npu,
          "aclnnBatchNormBackward",
          bb(npu, mask, "float16", "float32"),
          INVALID,
          "Expected both tensors to have same dtype, but found gradWeight DT_FLOAT16 and gradBias DT_FLOAT.",
          `${soc} mask ${mask}`,
        );
      }
      expectOk(npu, "aclnnBatchNormBackward", bb(npu, [true, true, false], "float16", null), soc);
      expectOk(
        npu,
        "aclnnBatchNormBackward",
        bb(npu, [true, false, false], "float32", "float32"),
        soc,
      );
    });
  }
  onSoc("Ascend910B4", (npu) => {
    expectOk(npu, "aclnnBatchNormBackward", bb(npu, [true, false, false], "float16", "float32"));
  });
});

Deno.test("chip dtypes: BatchNormBackward's gradInput in another dtype than input: 561103 off DAV_3510", () => {
  const args = (npu: AscendDevice) =>
    argsFor(npu, "aclnnBatchNormBackward", "float16", { gradInput: fresh(npu, X, "float32") });
  onSoc("Ascend910B4", (npu) => {
    expectAclnn(npu, "aclnnBatchNormBackward", args(npu), INNER_NULLPTR, DTYPE_MISMATCH);
  });
  onSoc("Ascend950PR_9599", (npu) => {
    expectAclnn(
      npu,
      "aclnnBatchNormBackward",
      args(npu),
      INVALID,
      "Expected both tensors to have same dtype, but found gradInput DT_FLOAT and gradOut DT_FLOAT16.",
    );
  });
  onSoc("Ascend910B4", (npu) => {
    expectOk(npu, "aclnnBatchNormBackward", argsFor(npu, "aclnnBatchNormBackward", "float16"));
  });
});

// ---- aclnnGroupNorm --------------------------------------------------------------------------
/**
 * Every SoC the simulator plays that runs aclnnGroupNorm, and whether self may be BF16 there
 * (aclnn_group_norm.cpp 59-67: NpuArch 2201 or 3510). Written from the source, not soc.ts.
 */
const GROUP_NORM_SOCS: readonly { soc: string; bf16: boolean }[] = [
  { soc: "Ascend910A", bf16: false }, // DAV_1001
  { soc: "Ascend310P3", bf16: false }, // DAV_2002
  { soc: "Ascend910B4", bf16: true }, // Atlas A2, DAV_2201
  { soc: "Ascend910_9391", bf16: true }, // Atlas A3, DAV_2201
  { soc: "Ascend950PR_9599", bf16: true }, // DAV_3510
  { soc: "Ascend910_9599", bf16: true }, // the 950 under its pre-2026 name
  { soc: "Ascend350_354f", bf16: true }, // DAV_3510
];

const CANN_DT: Record<string, string> = {
  float32: "DT_FLOAT",
  float16: "DT_FLOAT16",
  bfloat16: "DT_BF16",
};

Deno.test("chip dtypes: aclnnGroupNorm takes no mixed precision on any SoC", () => {
  const gn = (npu: AscendDevice, self: DType, other: DType, names: readonly string[]) =>
    argsFor(npu, "aclnnGroupNorm", self, {
      ...Object.fromEntries(names.map((name) => [
        name,
        name === "gamma" || name === "beta"
          ? dev(npu, [1.5, 0.5, 2], [C], other)
          : fresh(npu, name === "out" ? X : [N, 1], other),
      ])),
    });
  for (const { soc, bf16 } of GROUP_NORM_SOCS) {
    onSoc(soc, (npu) => {
      // the same dtype everywhere runs (float16 and float32)
      for (const dt of ["float16", "float32"] as const) {
        expectOk(npu, "aclnnGroupNorm", gn(npu, dt, dt, ["gamma", "beta"]), `${soc} ${dt}`);
      }
      for (const [self, other] of [["float16", "float32"], ["float32", "float16"]] as const) {
        // each tensor alone in the other dtype, in CheckDtypeValid's order
        for (const name of ["gamma", "beta", "out", "meanOut", "rstdOut"]) {
          expectAclnn(
            npu,
            "aclnnGroupNorm",
            gn(npu, self, other, [name]),
            INVALID,
            `Tensor ${name} expected dtype is ${CANN_DT[self]} but found ${CANN_DT[other]}.`,
            `${soc} ${self} self, ${other} ${name}`,
          );
        }
      }
      // float16/bfloat16 data with float32 gamma, beta, meanOut and rstdOut together (what
      // aclnnGroupNormSilu takes on DAV_3510): gamma is refused first, or self where BF16 is
      // not in the list
      for (const self of ["float16", "bfloat16"] as const) {
        const args = gn(npu, self, "float32", ["gamma", "beta", "meanOut", "rstdOut"]);
        const text = self === "bfloat16" && !bf16
          ? "Tensor self not implemented for DT_BF16, should be in dtype support list " +
            "[DT_FLOAT16,DT_FLOAT,]."
          : `Tensor gamma expected dtype is ${CANN_DT[self]} but found DT_FLOAT.`;
        expectAclnn(npu, "aclnnGroupNorm", args, INVALID, text, `${soc} ${self} mixed`);
      }
    });
  }
});
