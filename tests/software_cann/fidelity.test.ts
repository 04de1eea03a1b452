/**
 * Fidelity of the software CANN (tests/sim/) to real CANN, per SoC family: every behaviour the
 * simulator models after the CANN sources (hicann/ops-nn, hicann/ops-math; see
 * tests/sim/README.md) is checked here through the real FFI path, with `runAclnn` called
 * directly so that the library's own validation does not hide what the native side does.
 *
 * The SoC is chosen per call with ACLSIM_SOC_NAME (read by the simulator on every phase 1).
 * Expectations come from the library's SoC table, src/backends/ascend/soc.ts, while the simulator
 * derives every chip trait from CANN's platform files and operator sources on its own
 * (tests/sim/sim_soc.c, sim_rules.c): these tests check that the two agree. Needs the built
 * simulator (`deno task build:sim`).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  batchNormSavesVariance,
  bf16Allowed,
  groupNormBackwardLimits,
  groupNormBackwardMixedPrecision,
  isRegbase,
  operatorSupported,
  SOC_OPERATORS,
  SOC_SUPPORT,
  socFamily,
  type SocOperator,
  type SocOperatorGroup,
} from "../../src/backends/ascend/soc.ts";
import { arg } from "../../src/ffi/executor.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import type { Tensor } from "../../src/tensor/tensor.ts";
import { openSim, SIM_DIR } from "../helpers/ffi_sim.ts";
import {
  argsFor,
  bf16RefusalText,
  C,
  EPS,
  L,
  M,
  N,
  type Opt,
  out,
  seq,
  t,
  X,
} from "../helpers/sim_args.ts";
import {
  DEFAULT_SOC,
  dev,
  expectAclnn,
  expectOk,
  FAMILIES,
  fresh,
  full,
  onSoc,
  tryAclnn,
  values,
  withSoc,
} from "../helpers/sim_raw.ts";

const NULLPTR = 161001;
const INVALID = 161002;
const ABORT_CHILD = new URL("../fixtures/sim_gather_abort_child.ts", import.meta.url).pathname;

/** Whether `op` is of one of `groups` (soc_operators.ts). */
const inGroup = (op: SocOperator, ...groups: SocOperatorGroup[]) =>
  groups.includes(SOC_SUPPORT[op].group);
/**
 * The groups of the operators on the software CANN's generated-operator framework (sim_ops_norm.c
 * nrm_*): every later operator's, not the seed nine's nor aclnnInstanceNorm's.
 */
const NRM: SocOperatorGroup[] = ["rowNorm", "batchNormFamily", "groupNormAct"];

/** The soc of every family supporting `op`. */
const supporting = (op: SocOperator) => FAMILIES.filter((f) => operatorSupported(op, f.family));
const A2 = "Ascend910B4";
const A3 = "Ascend910_9391";

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

Deno.test("sim fidelity: the default SoC is Ascend950PR_9599", () => {
  withSoc(undefined, () => {
    using npu = openSim();
    assert.equal(npu.socName, DEFAULT_SOC);
    assert.equal(socFamily(DEFAULT_SOC)?.name, "Ascend950");
  });
});

Deno.test("sim fidelity: bf16 and float32 acceptance per SoC family and operator (table-driven)", () => {
  for (const { family, soc } of FAMILIES) {
    onSoc(soc, (npu) => {
      for (const op of SOC_OPERATORS) {
        const what = `${op} on ${soc}`;
        const bf = tryAclnn(npu, op, argsFor(npu, op, "bfloat16"));
        const fp = tryAclnn(npu, op, argsFor(npu, op, "float32"));
        if (op === "aclnnInstanceNorm" && !operatorSupported(op, family)) {
          // CheckParams (bfloat16 refused on every SoC) before CheckPlatform.
          assert.equal(fp?.code, INVALID, what);
          assert.match(fp!.nativeMessage ?? "", /aclnnInstanceNorm only supports Ascend310p/);
          assert.equal(bf?.code, INVALID, what);
          assert.match(bf!.nativeMessage ?? "", bf16RefusalText(op));
          continue;
        }
        if (op === "aclnnAdaLayerNormBackward" && !operatorSupported(op, family)) {
          // aclnn_ada_layer_norm_backward.cpp:436-455: SUCCESS, nothing launched (the library
          // refuses these SoCs itself).
          assert.equal(fp, null, `${what} float32: ${fp?.message}`);
          assert.equal(bf, null, `${what} bfloat16: ${bf?.message}`);
          continue;
        }
        if (!operatorSupported(op, family)) {
          for (const e of [bf, fp]) {
            assert.equal(e?.code, INVALID, `${what} is unsupported: ${e?.message}`);
            const text = e!.nativeMessage ?? "";
            if (op === "aclnnBatchNorm") {
              // aclnn_batch_norm.cpp CheckDtypeValid: GetSupportDtypeList(npuArch) is empty
              assert.ok(
                text.includes(`support for npuArch ${family.npuArch} is not implemented`),
                text,
              );
            } else if (inGroup(op, ...NRM)) {
              // sim_ops_norm.c nrm_product: the SoC, and the product when a document names it.
              assert.ok(text.includes(soc) && text.includes(op), text);
              assert.match(text, /the operator is not supported on SoC/);
            } else {
              assert.ok(
                text.includes(soc) && text.includes(family.product) && text.includes(op),
                text,
              );
            }
          }
          continue;
        }
        assert.equal(fp, null, `${what} float32: ${fp?.message}`);
        if (bf16Allowed(op, family)) {
          assert.equal(bf, null, `${what} bfloat16: ${bf?.message}`);
        } else {
          assert.equal(bf?.code, INVALID, `${what} bfloat16 must be rejected`);
          assert.match(bf!.nativeMessage ?? "", bf16RefusalText(op));
        }
      }
    });
  }
});

Deno.test("sim fidelity: CANN's dtype messages, quirks included", () => {
  onSoc("Ascend910A", (npu) => {
    expectAclnn(
      npu,
      "aclnnBatchNorm",
      argsFor(npu, "aclnnBatchNorm", "bfloat16"),
      INVALID,
      "aclnnBatchNorm: Tensor input not implemented for DT_BF16, should be in dtype support list [DT_FLOAT,DT_FLOAT16,].",
    );
    // BatchNormElemt says "input" for every tensor (CheckDtypeValid<...>), without "Tensor ".
    expectAclnn(
      npu,
      "aclnnBatchNormElemt",
      argsFor(npu, "aclnnBatchNormElemt", "float32", { weight: full(npu, [C], 1, "bfloat16") }),
      INVALID,
      "aclnnBatchNormElemt: input not implemented for DT_BF16, should be in dtype support list [DT_FLOAT,DT_FLOAT16,].",
    );
    // ReduceBackward's own variant: no "Tensor " prefix.
    expectAclnn(
      npu,
      "aclnnBatchNormReduceBackward",
      argsFor(npu, "aclnnBatchNormReduceBackward", "float32", {
        mean: full(npu, [C], 1, "bfloat16"),
      }),
      INVALID,
      "aclnnBatchNormReduceBackward: mean not implemented for DT_BF16, should be in dtype support list [DT_FLOAT,DT_FLOAT16,].",
    );
    // GroupNorm's list order is {FLOAT16, FLOAT}.
    expectAclnn(
      npu,
      "aclnnGroupNorm",
      argsFor(npu, "aclnnGroupNorm", "bfloat16"),
      INVALID,
      "Tensor self not implemented for DT_BF16, should be in dtype support list [DT_FLOAT16,DT_FLOAT,].",
    );
  });
  onSoc(A2, (npu) => {
    // BatchNormStats: mean and invstd must be FLOAT; bf16 input only on DAV_3510.
    expectAclnn(
      npu,
      "aclnnBatchNormStats",
      argsFor(npu, "aclnnBatchNormStats", "float32", { mean: fresh(npu, [C], "float16") }),
      INVALID,
      "Tensor mean not implemented for DT_FLOAT16, should be in dtype support list [DT_FLOAT,].",
    );
    // GatherStats: counts must be a float dtype.
    expectAclnn(
      npu,
      "aclnnBatchNormGatherStatsWithCounts",
      argsFor(npu, "aclnnBatchNormGatherStatsWithCounts", "float32", {
        counts: dev(npu, [8, 12], [2], "int32"),
      }),
      INVALID,
      "Tensor counts not implemented for DT_INT32, should be in dtype support list [DT_FLOAT,DT_FLOAT16,DT_BF16,].",
    );
    // ElemtBackward: counter may be INT32, FLOAT16 or FLOAT, not BF16.
    expectAclnn(
      npu,
      "aclnnBatchNormElemtBackward",
      argsFor(npu, "aclnnBatchNormElemtBackward", "float32", {
        counter: full(npu, [1], M, "bfloat16"),
      }),
      INVALID,
      "Tensor counter not implemented for DT_BF16, should be in dtype support list [DT_FLOAT,DT_FLOAT16,DT_INT32,].",
    );
    // BatchNorm: no same-dtype rule in the checks (fp32 input, fp16 save tensors) ...
    expectOk(
      npu,
      "aclnnBatchNorm",
      argsFor(npu, "aclnnBatchNorm", "float32", { saveMean: fresh(npu, [C], "float16") }),
    );
    // ... but the result, in input's dtype, is copied into out with l0op::ViewCopy, which refuses
    // another dtype (ops-math contiguous.cpp CheckViewCopyParams): 561103.
    expectAclnn(
      npu,
      "aclnnBatchNorm",
      argsFor(npu, "aclnnBatchNorm", "float32", { output: fresh(npu, X, "float16") }),
      561103,
      "Input tensor's dtype[DT_FLOAT] should be same with output's dtype[DT_FLOAT16].",
    );
  });
  // A SoC without a platform file: CANN's checks run with SocVersion RESERVED_VERSION and NpuArch
  // DAV_RESV, then no kernel binary is found (561103); aclnnBatchNorm has no dtype list for that
  // NpuArch. (The device opens on a known SoC: the library reads the name once per device.)
  using npu = openSim();
  withSoc("AscendSim", () => {
    for (const op of SOC_OPERATORS) {
      if (op === "aclnnBatchNorm") {
        expectAclnn(
          npu,
          op,
          argsFor(npu, op, "float32"),
          INVALID,
          "support for npuArch 65535 is not implemented",
        );
      } else if (op === "aclnnInstanceNorm") {
        // RESERVED_VERSION is not ASCEND310P: CheckPlatform refuses it.
        expectAclnn(npu, op, argsFor(npu, op, "float32"), INVALID, "only supports Ascend310p", op);
      } else if (inGroup(op, "rowNorm", "batchNormFamily")) {
        // sim_ops_norm.c nrm_soc: the LayerNorm/RMSNorm operators refuse a SoC of no family.
      } else if (inGroup(op, ...NRM)) {
        // sim_ops_norm.c nrm_soc: the operators on its framework refuse a SoC of no family.
        expectAclnn(npu, op, argsFor(npu, op, "float32"), INVALID, "is in no SoC family", op);
      } else {
        expectAclnn(npu, op, argsFor(npu, op, "float32"), 561103, "no kernel binary for SoC", op);
      }
    }
  });
});

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

Deno.test("sim fidelity: per-channel shapes are exact where CANN checks them, [1, C] is 161002", () => {
  const row = (npu: AscendDevice) => full(npu, [1, C], 1);
  const cases: { soc: string; op: SocOperator; o: (npu: AscendDevice) => Opt; text: string }[] = [
    {
      soc: A2,
      op: "aclnnBatchNorm",
      o: (npu) => ({ weight: row(npu) }),
      text: "Dim of weight should be one and shape is channel num of input.",
    },
    {
      soc: A2,
      op: "aclnnBatchNorm",
      o: (npu) => ({ saveMean: row(npu) }),
      text: "Expected tensor for saveMean to have same size as [3], but got [1, 3].",
    },
    {
      soc: A2,
      op: "aclnnBatchNormBackward",
      o: (npu) => ({ runningVar: row(npu) }),
      text:
        "Dim of runningVar should be one and shape is channel num of input[3], but got [[1, 3]].",
    },
    {
      soc: DEFAULT_SOC,
      op: "aclnnBatchNormBackward",
      o: (npu) => ({ gradWeight: row(npu) }),
      text:
        "Dim of gradWeight should be one and shape is channel num of input[3], but got [[1, 3]].",
    },
    {
      soc: DEFAULT_SOC,
      op: "aclnnBatchNormBackward",
      o: (npu) => ({ saveInvstd: row(npu) }),
      text:
        "Dim of saveInvstd should be one and shape is channel num of input[3], but got [[1, 3]].",
    },
    {
      soc: A2,
      op: "aclnnBatchNormReduceBackward",
      o: (npu) => ({ sumDy: row(npu) }),
      text: "expected tensor for sumDy to have same size as [3], but got [1, 3].",
    },
    {
      soc: A2,
      op: "aclnnBatchNormStats",
      o: (npu) => ({ invstd: row(npu) }),
      text: "Expected 1 dimension input, but got invstd with sizes [1, 3].",
    },
    {
      soc: A2,
      op: "aclnnBatchNormGatherStatsWithCounts",
      o: (npu) => ({ runningMean: row(npu), runningVar: full(npu, [C], 1) }),
      text: "Expected tensor for runningMean to have same size as [3], but got [1, 3].",
    },
    {
      soc: A2,
      op: "aclnnBatchNormGatherStatsWithCounts",
      o: (npu) => ({ meanAll: row(npu) }),
      text: "Expected tensor for meanAll to have same size as [3], but got [1, 3].",
    },
    {
      soc: A2,
      op: "aclnnBatchNormElemt",
      o: (npu) => ({ invstd: row(npu) }),
      text: "Weight/bias/mean/invstd dim size should be one.",
    },
    {
      soc: A2,
      op: "aclnnBatchNormElemtBackward",
      o: (npu) => ({ sumDyXmu: row(npu) }),
      text: "Expected tensor for sumDyXmu to have same size as [3], but got [1, 3].",
    },
    {
      soc: A2,
      op: "aclnnGroupNorm",
      o: (npu) => ({ gamma: row(npu) }),
      text:
        "Expected gamma to be a vector of size equal to the number of channels in input, but got gamma of shape [1, 3] and input of shape [4, 3, 5].",
    },
    {
      soc: A2,
      op: "aclnnGroupNorm",
      o: (npu) => ({ meanOut: fresh(npu, [N]) }),
      text: "Expected tensor for meanOut to have same size as [4, 1], but got [4].",
    },
  ];
  for (const c of cases) {
    onSoc(
      c.soc,
      (npu) =>
        expectAclnn(
          npu,
          c.op,
          argsFor(npu, c.op, "float32", c.o(npu)),
          INVALID,
          c.text,
          `${c.op} ${c.soc}`,
        ),
    );
  }
  // Where CANN compares element counts only (or nothing), [1, C] is fine.
  onSoc(A2, (npu) => {
    const row1 = () => row(npu);
    // GroupNormBackward: numel(gamma) == C; gradGamma/gradBeta must have gamma's shape.
    expectOk(
      npu,
      "aclnnGroupNormBackward",
      argsFor(npu, "aclnnGroupNormBackward", "float32", {
        gamma: row1(),
        gradGammaOut: fresh(npu, [1, C]),
        gradBetaOut: fresh(npu, [1, C]),
      }),
    );
    expectAclnn(
      npu,
      "aclnnGroupNormBackward",
      argsFor(npu, "aclnnGroupNormBackward", "float32", { gamma: row1() }),
      INVALID,
      "Expected tensor for gradGammaOut to have same size as [1, 3], but got [3].",
    );
    // Non-regbase BatchNormBackward never checks saveMean/saveInvstd/gradWeight/gradBias shapes.
    const gradWeight = fresh(npu, [1, C]);
    expectOk(
      npu,
      "aclnnBatchNormBackward",
      argsFor(npu, "aclnnBatchNormBackward", "float32", { gradWeight }),
    );
    assert.ok(values(gradWeight).every(Number.isFinite));
    // ReduceBackward never checks mean/invstd/weight shapes.
    expectOk(
      npu,
      "aclnnBatchNormReduceBackward",
      argsFor(npu, "aclnnBatchNormReduceBackward", "float32", {
        mean: row1(),
        weight: full(npu, [7], 1),
      }),
    );
    // ...but the simulator's kernel will not read past C values: a documented deviation.
    expectAclnn(
      npu,
      "aclnnBatchNormReduceBackward",
      argsFor(npu, "aclnnBatchNormReduceBackward", "float32", { invstd: full(npu, [C - 1], 1) }),
      INVALID,
      "[aclsim] invstd has 2 elements",
    );
  });
});

Deno.test("sim fidelity: empty batches per operator, regbase (950) and not (A2/A3)", () => {
  const X0 = [0, C, L];
  const nan = (x: Tensor) => values(x).every(Number.isNaN);
  const zeros = (x: Tensor) => values(x).every((v) => v === 0);
  for (const soc of [DEFAULT_SOC, A2, A3]) {
    const regbase = isRegbase(socFamily(soc)!);
    onSoc(soc, (npu) => {
      // BatchNorm: SUCCESS before any dtype/shape check; saveMean 0, saveInvstd NaN (also in eval).
      for (const training of [true, false]) {
        const saveMean = fresh(npu, [C]);
        const saveInvstd = full(npu, [C], 1);
        const runningMean = full(npu, [C], 7);
        expectOk(
          npu,
          "aclnnBatchNorm",
          argsFor(npu, "aclnnBatchNorm", "float32", {
            input: fresh(npu, X0),
            weight: full(npu, [C + 2], 1, "int32"), // wrong dtype and size: not checked
            runningMean,
            output: fresh(npu, [2, 2]),
            saveMean,
            saveInvstd,
          }, { training }),
          `${soc} empty BatchNorm training=${training}`,
        );
        assert.ok(zeros(saveMean) && nan(saveInvstd), `${soc} BatchNorm fills`);
        assert.deepEqual(values(runningMean), [7, 7, 7], `${soc} running stats untouched`);
      }
      // BatchNormStats: mean 0, invstd NaN.
      const mean = fresh(npu, [C]);
      const invstd = full(npu, [C], 1);
      expectOk(
        npu,
        "aclnnBatchNormStats",
        argsFor(npu, "aclnnBatchNormStats", "float32", { input: fresh(npu, X0), mean, invstd }),
      );
      assert.ok(zeros(mean) && nan(invstd), `${soc} Stats fills`);
      // GatherStats: only an empty `mean` (no ranks) short-circuits; running stats untouched.
      const meanAll = fresh(npu, [C]);
      const invstdAll = full(npu, [C], 1);
      const runningVar = full(npu, [C], 3);
      expectOk(
        npu,
        "aclnnBatchNormGatherStatsWithCounts",
        argsFor(npu, "aclnnBatchNormGatherStatsWithCounts", "float32", {
          mean: fresh(npu, [0, C]),
          invstd: fresh(npu, [0, C]),
          counts: fresh(npu, [0]),
          runningMean: full(npu, [C], 3),
          runningVar,
          meanAll,
          invstdAll,
        }),
      );
      assert.ok(zeros(meanAll) && nan(invstdAll), `${soc} GatherStats fills`);
      assert.deepEqual(values(runningVar), [3, 3, 3]);
      // GroupNorm with HxW = 0: meanOut 0, rstdOut NaN.
      const meanOut = fresh(npu, [2, 1]);
      const rstdOut = full(npu, [2, 1], 1);
      expectOk(npu, "aclnnGroupNorm", [
        t(fresh(npu, [2, C, 0])),
        t(undefined),
        t(undefined),
        arg.i64(2),
        arg.i64(C),
        arg.i64(0),
        arg.i64(1),
        arg.f64(EPS),
        out(fresh(npu, [2, C, 0])),
        out(meanOut),
        out(rstdOut),
      ]);
      assert.ok(zeros(meanOut) && nan(rstdOut), `${soc} GroupNorm fills`);
      // BatchNormBackward: SUCCESS right after the gradOut/input NULL checks, nothing written
      // (even the outputMask is not looked at).
      const gw = fresh(npu, [C]);
      expectOk(
        npu,
        "aclnnBatchNormBackward",
        argsFor(npu, "aclnnBatchNormBackward", "float32", {
          gradOut: fresh(npu, X0),
          input: fresh(npu, X0),
          outputMask: undefined,
          gradInput: undefined,
          gradWeight: gw,
        }),
      );
      assert.ok(nan(gw), `${soc} BatchNormBackward wrote nothing`);
      // ReduceBackward: zeros on DAV_3510, nothing elsewhere.
      const outs = [fresh(npu, [C]), fresh(npu, [C]), fresh(npu, [C]), fresh(npu, [C])];
      expectOk(
        npu,
        "aclnnBatchNormReduceBackward",
        argsFor(npu, "aclnnBatchNormReduceBackward", "float32", {
          gradOut: fresh(npu, X0),
          input: fresh(npu, X0),
          sumDy: outs[0],
          sumDyXmu: outs[1],
          gradWeight: outs[2],
          gradBias: outs[3],
        }),
      );
      for (const o of outs) assert.ok(regbase ? zeros(o) : nan(o), `${soc} ReduceBackward empty`);
      // GroupNormBackward with HxW = 0: DAV_3510 zero-fills gradGamma/gradBeta, others write nothing.
      const gg = fresh(npu, [C]);
      const gb = fresh(npu, [C]);
      expectOk(npu, "aclnnGroupNormBackward", [
        t(fresh(npu, [2, C, 0])),
        t(fresh(npu, [2, C, 0])),
        t(full(npu, [2, 1], 0.5)),
        t(full(npu, [2, 1], 2)),
        t(undefined),
        arg.i64(2),
        arg.i64(C),
        arg.i64(0),
        arg.i64(1),
        arg.boolArray([true, true, true]),
        out(fresh(npu, [2, C, 0])),
        out(gg),
        out(gb),
      ]);
      assert.ok(
        regbase ? zeros(gg) && zeros(gb) : nan(gg) && nan(gb),
        `${soc} GroupNormBackward empty`,
      );
      // Elemt and ElemtBackward: SUCCESS, nothing written (their outputs are empty as well).
      expectOk(
        npu,
        "aclnnBatchNormElemt",
        argsFor(npu, "aclnnBatchNormElemt", "float32", {
          input: fresh(npu, X0),
          output: fresh(npu, X0),
        }),
      );
      expectOk(
        npu,
        "aclnnBatchNormElemtBackward",
        argsFor(npu, "aclnnBatchNormElemtBackward", "float32", {
          gradOut: fresh(npu, X0),
          input: fresh(npu, X0),
          gradInput: fresh(npu, X0),
        }),
      );
      // ...but C == 0 is still an error there (checked before the empty short-circuit).
      expectAclnn(
        npu,
        "aclnnBatchNormElemt",
        argsFor(npu, "aclnnBatchNormElemt", "float32", {
          input: fresh(npu, [2, 0]),
          output: fresh(npu, [2, 0]),
          mean: fresh(npu, [0]),
          invstd: fresh(npu, [0]),
        }),
        INVALID,
        "Input channel size should not be zero.",
      );
    });
  }
});

Deno.test("sim fidelity: GatherStatsWithCounts aborts on runningMean without runningVar, skips a lone runningVar", async () => {
  const children = [DEFAULT_SOC, A2].map((soc) =>
    new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        "--quiet",
        "--allow-ffi",
        "--allow-env",
        "--allow-read",
        ABORT_CHILD,
      ],
      env: { ACLSIM_DIR: SIM_DIR, ASCEND_OPP_PATH: SIM_DIR, ACLSIM_SOC_NAME: soc },
      stdout: "piped",
      stderr: "piped",
    }).output()
  );
  onSoc(A2, (npu) => {
    const runningVar = full(npu, [C], 3);
    const meanAll = fresh(npu, [C]);
    expectOk(
      npu,
      "aclnnBatchNormGatherStatsWithCounts",
      argsFor(npu, "aclnnBatchNormGatherStatsWithCounts", "float32", { runningVar, meanAll }),
    );
    assert.ok(values(meanAll).every(Number.isFinite));
    assert.deepEqual(values(runningVar), [3, 3, 3], "runningVar is silently not updated");
    // With both, both are updated.
    const rm = full(npu, [C], 0);
    const rv = full(npu, [C], 3);
    expectOk(
      npu,
      "aclnnBatchNormGatherStatsWithCounts",
      argsFor(npu, "aclnnBatchNormGatherStatsWithCounts", "float32", {
        runningMean: rm,
        runningVar: rv,
      }),
    );
    assert.ok(values(rv).every((v) => v !== 3) && values(rm).some((v) => v !== 0));
  });
  for (const out of await Promise.all(children)) {
    const stdout = new TextDecoder().decode(out.stdout);
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(
      out.signal,
      "SIGABRT",
      `the child must die of SIGABRT: code ${out.code}\n${stderr}`,
    );
    assert.ok(!stdout.includes("survived"));
    const line = stderr.split("\n").find((l) => l.startsWith("aclsim: "));
    assert.ok(line, stderr);
    assert.match(line, /runningMean is given but runningVar is NULL/);
    assert.match(line, /aclnn_batch_norm_gather_stats_with_counts\.cpp:326/);
  }
});

Deno.test("sim fidelity: NULL arguments get the codes CANN returns", () => {
  onSoc(DEFAULT_SOC, (npu) => {
    // BatchNormElemt: a NULL input, mean, invstd or out is 161002 (CHECK_RET(..., PARAM_INVALID)).
    for (const k of ["input", "mean", "invstd", "output"]) {
      const shown = k === "output" ? "out" : k;
      expectAclnn(
        npu,
        "aclnnBatchNormElemt",
        argsFor(npu, "aclnnBatchNormElemt", "float32", { [k]: undefined }),
        INVALID,
        `Expected a value of type [aclTensor] for argument [${shown}] but instead found nullptr.`,
        `Elemt NULL ${k}`,
      );
    }
    // GroupNormBackward: CheckMaskNotNull failures are 161002.
    expectAclnn(
      npu,
      "aclnnGroupNormBackward",
      argsFor(npu, "aclnnGroupNormBackward", "float32", { outputMask: undefined }),
      INVALID,
      "argument [outputMask]",
    );
    expectAclnn(
      npu,
      "aclnnGroupNormBackward",
      argsFor(npu, "aclnnGroupNormBackward", "float32", {}, { mask: [true, true] }),
      INVALID,
      "Expected aclnnGroupNormBackward outputMask len to be 3, but got 2.",
    );
    expectAclnn(
      npu,
      "aclnnGroupNormBackward",
      argsFor(npu, "aclnnGroupNormBackward", "float32", { gradBetaOut: undefined }),
      INVALID,
      "argument [gradBetaOut]",
    );
    // ...but a NULL input of it is 161001.
    expectAclnn(
      npu,
      "aclnnGroupNormBackward",
      argsFor(npu, "aclnnGroupNormBackward", "float32", { rstd: undefined }),
      NULLPTR,
      "argument [rstd]",
    );
    // BatchNormBackward: every outputMask failure is 161001.
    expectAclnn(
      npu,
      "aclnnBatchNormBackward",
      argsFor(npu, "aclnnBatchNormBackward", "float32", { outputMask: undefined }),
      NULLPTR,
      "argument [outputMask]",
    );
    expectAclnn(
      npu,
      "aclnnBatchNormBackward",
      argsFor(npu, "aclnnBatchNormBackward", "float32", {}, { mask: [true, true] }),
      NULLPTR,
      "outputMask size should be 3, but got 2.",
    );
    expectAclnn(
      npu,
      "aclnnBatchNormBackward",
      argsFor(npu, "aclnnBatchNormBackward", "float32", {}, { mask: [] }),
      NULLPTR,
      "outputMask size should not less than 1.",
    );
    expectAclnn(
      npu,
      "aclnnBatchNormBackward",
      argsFor(npu, "aclnnBatchNormBackward", "float32", { gradBias: undefined }),
      NULLPTR,
      "argument [gradBias]",
    );
    // ReduceBackward: masked outputs NULL -> 161001 with its own text.
    expectAclnn(
      npu,
      "aclnnBatchNormReduceBackward",
      argsFor(npu, "aclnnBatchNormReduceBackward", "float32", { sumDyXmu: undefined }),
      NULLPTR,
      "expected a proper Tensor but got null for argument sumDyXmu.",
    );
    // GroupNorm: CheckNotNull4Tensor's parameters are t0..t3.
    expectAclnn(
      npu,
      "aclnnGroupNorm",
      argsFor(npu, "aclnnGroupNorm", "float32", { meanOut: undefined }),
      NULLPTR,
      "argument [t2]",
    );
  });
  onSoc(A2, (npu) => {
    // Non-regbase CANN reads outputMask[1] and [2] regardless: the simulator refuses (161001).
    expectAclnn(
      npu,
      "aclnnBatchNormBackward",
      argsFor(npu, "aclnnBatchNormBackward", "float32", {}, { mask: [true, true] }),
      NULLPTR,
      "[aclsim] outputMask has 2 element(s)",
    );
    // A masked-off NULL output is fine, and a mask of all false computes nothing useful but succeeds.
    expectOk(
      npu,
      "aclnnBatchNormBackward",
      argsFor(npu, "aclnnBatchNormBackward", "float32", { gradWeight: undefined }, {
        mask: [true, false, true],
      }),
    );
  });
});

Deno.test("sim fidelity: GroupNormBackward mixed precision and limits per family", () => {
  for (const { family, soc } of supporting("aclnnGroupNormBackward")) {
    onSoc(soc, (npu) => {
      // fp16 data with fp32 statistics (mean, rstd, gradGamma, gradBeta)
      const mixed = tryAclnn(
        npu,
        "aclnnGroupNormBackward",
        argsFor(npu, "aclnnGroupNormBackward", "float16", {
          mean: full(npu, [N, 1], 0.5),
          rstd: full(npu, [N, 1], 1.5),
          gradGammaOut: fresh(npu, [C]),
          gradBetaOut: fresh(npu, [C]),
        }),
      );
      if (groupNormBackwardMixedPrecision(family)) {
        assert.equal(mixed, null, `${soc}: ${mixed?.message}`);
        // bf16 data needs FLOAT or BF16 statistics
        expectAclnn(
          npu,
          "aclnnGroupNormBackward",
          argsFor(npu, "aclnnGroupNormBackward", "bfloat16", {
            mean: full(npu, [N, 1], 0.5, "float16"),
            rstd: full(npu, [N, 1], 1.5, "float16"),
          }),
          INVALID,
          "Tensor mean not implemented for DT_FLOAT16, should be in dtype support list [DT_FLOAT,DT_BF16,].",
        );
      } else {
        assert.equal(mixed?.code, INVALID, soc);
        assert.ok(
          mixed!.nativeMessage?.includes(
            "Tensor mean expected dtype is DT_FLOAT16 but found DT_FLOAT.",
          ),
          mixed!.nativeMessage,
        );
      }
      // C / group = 8001 (N = 1, HxW = 1, group = 1) and C = 240040 (group = 40)
      const limits = groupNormBackwardLimits(family);
      for (const [Cn, G] of [[8001, 1], [240040, 40]]) {
        const e = tryAclnn(npu, "aclnnGroupNormBackward", [
          t(full(npu, [1, Cn, 1], 1)),
          t(full(npu, [1, Cn, 1], 1)),
          t(full(npu, [1, G], 1)),
          t(full(npu, [1, G], 1)),
          t(undefined),
          arg.i64(1),
          arg.i64(Cn),
          arg.i64(1),
          arg.i64(G),
          arg.boolArray([false, true, false]),
          out(undefined),
          out(fresh(npu, [Cn])),
          out(undefined),
        ]);
        const over = limits !== undefined &&
          (Cn / G > limits.maxChannelsPerGroup || Cn > limits.maxChannels);
        if (!over) {
          assert.equal(e, null, `${soc} C=${Cn}: ${e?.message}`);
          continue;
        }
        assert.equal(e?.code, INVALID, `${soc} C=${Cn}`);
        assert.equal(
          e!.nativeMessage?.replace(/^aclnnGroupNormBackward: /, ""),
          Cn / G > limits!.maxChannelsPerGroup
            ? "Expected C / group <= 8000 to be true, but got false."
            : "Expecting C to not exceed 240000, got 240040.",
        );
      }
    });
  }
});

Deno.test("sim fidelity: BatchNormBackward dtype rules: list membership off DAV_3510, RegbaseCheckDtypeSame on it", () => {
  // bf16 data with an fp16 weight and fp16 gradWeight/gradBias: accepted on A2 (list only) ...
  const o = (npu: AscendDevice) => ({
    weight: full(npu, [C], 1, "float16"),
    gradWeight: fresh(npu, [C], "float16"),
    gradBias: fresh(npu, [C], "float16"),
  });
  onSoc(
    A2,
    (npu) =>
      expectOk(
        npu,
        "aclnnBatchNormBackward",
        argsFor(npu, "aclnnBatchNormBackward", "bfloat16", o(npu)),
      ),
  );
  // ... rejected on 950: "float or same as gradOut"
  onSoc(DEFAULT_SOC, (npu) => {
    expectAclnn(
      npu,
      "aclnnBatchNormBackward",
      argsFor(npu, "aclnnBatchNormBackward", "bfloat16", o(npu)),
      INVALID,
      "Dtype of weight:[DT_FLOAT16] should be float or same as gradOut, gradOut dtype: [DT_BF16].",
    );
    expectAclnn(
      npu,
      "aclnnBatchNormBackward",
      argsFor(npu, "aclnnBatchNormBackward", "float32", {
        saveMean: full(npu, [C], 0),
        saveInvstd: full(npu, [C], 1, "float16"),
      }),
      INVALID,
      "Dtype of saveInvstd:[DT_FLOAT16] should be float or same as gradOut, gradOut dtype: [DT_FLOAT].",
    );
  });
});
