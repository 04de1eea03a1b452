/**
 * Fidelity of the software CANN (tests/sim/) to real CANN in shapes, per SoC family: per-channel
 * shapes are exact where CANN checks them ([1, C] is 161002), and empty batches per operator, on
 * regbase chips (the 950) and off them (Atlas A2/A3).
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
import { isRegbase, socFamily, type SocOperator } from "../../src/backends/ascend/soc.ts";
import { arg } from "../../src/ffi/executor.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import type { Tensor } from "../../src/tensor/tensor.ts";
import { argsFor, C, EPS, L, N, type Opt, out, t } from "../helpers/sim_args.ts";
import {
  A2,
  A3,
  DEFAULT_SOC,
  expectAclnn,
  expectOk,
  fresh,
  full,
  onSoc,
  values,
} from "../helpers/sim_raw.ts";
import { INVALID } from "../helpers/op_inputs.ts";

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
