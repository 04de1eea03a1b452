/**
 * Fidelity of the software CANN (tests/sim/) to real CANN in missing arguments, per SoC family:
 * the codes CANN returns for NULL arguments, and aclnnBatchNormGatherStatsWithCounts, which
 * aborts on a runningMean without runningVar (in a child process) and skips a lone runningVar.
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
import { SIM_DIR } from "../helpers/ffi_sim.ts";
import { argsFor, C } from "../helpers/sim_args.ts";
import {
  A2,
  DEFAULT_SOC,
  expectAclnn,
  expectOk,
  fresh,
  full,
  onSoc,
  values,
} from "../helpers/sim_raw.ts";
import { INVALID, NULLPTR } from "../helpers/op_inputs.ts";

const ABORT_CHILD = new URL("../fixtures/sim_gather_abort_child.ts", import.meta.url).pathname;

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
