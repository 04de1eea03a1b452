/**
 * Fidelity of the software CANN (tests/sim/) to real CANN in dtypes, per SoC family: the default
 * SoC, bfloat16 and float32 acceptance per family and operator (table-driven), CANN's dtype
 * messages with their quirks, GroupNormBackward's mixed precision and limits, and
 * BatchNormBackward's dtype rules (list membership off DAV_3510, RegbaseCheckDtypeSame on it).
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
import {
  bf16Allowed,
  groupNormBackwardLimits,
  groupNormBackwardMixedPrecision,
  operatorSupported,
  SOC_OPERATORS,
  SOC_SUPPORT,
  socFamily,
  type SocOperator,
  type SocOperatorGroup,
} from "../../src/backends/ascend/soc.ts";
import { arg } from "../../src/ffi/executor.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import { openSim } from "../helpers/ffi_sim.ts";
import { argsFor, bf16RefusalText, C, M, N, out, t, X } from "../helpers/sim_args.ts";
import {
  A2,
  DEFAULT_SOC,
  dev,
  expectAclnn,
  expectOk,
  FAMILIES,
  fresh,
  full,
  onSoc,
  supporting,
  tryAclnn,
  withSoc,
} from "../helpers/sim_raw.ts";
import { INVALID } from "../helpers/op_inputs.ts";

/** Whether `op` is of one of `groups` (soc_operators.ts). */
const inGroup = (op: SocOperator, ...groups: SocOperatorGroup[]) =>
  groups.includes(SOC_SUPPORT[op].group);
/**
 * The groups of the operators on the software CANN's generated-operator framework (sim_ops_norm.c
 * nrm_*): every later operator's, not the seed nine's nor aclnnInstanceNorm's.
 */
const NRM: SocOperatorGroup[] = ["rowNorm", "batchNormFamily", "groupNormAct"];

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
