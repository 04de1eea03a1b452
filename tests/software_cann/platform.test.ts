/**
 * The software CANN knows chips from CANN's platform files (tests/sim/platform_config.txt,
 * written to build/data/platform_config/<SoC_version>.ini): every SoC name of that table is
 * played through the real FFI path and must behave as CANN's sources say for its
 * Short_SoC_version (op::SocVersion) and NpuArch -- bfloat16 per operator, the products the
 * documentation lists as unsupported, the saveInvstd convention. The expectations below are
 * restated from the CANN sources (cited at each), not taken from the simulator or the library;
 * the last test checks that the library's SoC table (src/backends/ascend/soc.ts) agrees.
 * Needs the built simulator (`deno task build:sim`).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  batchNormSavesVariance,
  bf16Allowed,
  operatorSupported,
  SOC_OPERATORS,
  type SocOperator,
} from "../../src/backends/ascend/soc.ts";
import { resolveSocFamily } from "../../src/backends/ascend/device_soc.ts";
import { arg } from "../../src/ffi/executor.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import { parsePlatformConfig, type PlatformEntry } from "../../scripts/sim_platform.ts";
import { SIM_DIR } from "../helpers/ffi_sim.ts";
import { argsFor, bf16RefusalText, C, EPS, L, M, N, seq, X } from "../helpers/sim_args.ts";
import { dev, expectAclnn, expectOk, fresh, onSoc, tryAclnn, values } from "../helpers/sim_raw.ts";

const INVALID = 161002;
const PLATFORM: readonly PlatformEntry[] = parsePlatformConfig(
  Deno.readTextFileSync(new URL("../sim/platform_config.txt", import.meta.url)),
);
const CONFIG_DIR = `${SIM_DIR}/../data/platform_config`;

/** op::SocVersion of a Short_SoC_version: hicann/opbase platform.cpp InitSocVersion. */
const SOC_VERSION: Record<string, number> = {
  Ascend910: 0,
  Ascend910B: 1,
  Ascend910_93: 2,
  Ascend910_95: 3, // == ASCEND950 (opbase include/nnopbase/opdev/platform.h)
  Ascend950: 3,
  Ascend310P: 6,
  Ascend310B: 7,
  Ascend350: 12,
};
const RESERVED = 99999;

interface Chip {
  arch: number;
  sv: number;
}

/** bfloat16 per operator, as each operator's code decides it (hicann/ops-nn, ops-math). */
function bf16(op: SocOperator, { arch, sv }: Chip): boolean {
  const v2201or3510 = arch === 2201 || arch === 3510;
  switch (op) {
    case "aclnnBatchNorm": // aclnn_batch_norm.cpp GetSupportDtypeList
    case "aclnnBatchNormBackward": // aclnn_batch_norm_backward.cpp GetDtypeSupportList
    case "aclnnBatchNormReduceBackward": // aclnn_batch_norm_backward_reduce.cpp GetDtypeSupportList
    case "aclnnGroupNorm": // aclnn_group_norm.cpp GetDtypeSupportList
    case "aclnnGroupNormBackward": // level2_base.h GetDtypeSupportListV2
      return v2201or3510;
    case "aclnnBatchNormStats": // (ops-math) aclnn_batch_norm_stats.cpp IsRegBase
      return arch === 3510;
    case "aclnnBatchNormGatherStatsWithCounts": // CheckSocVersionGe910B || IsSocVersion950
    case "aclnnBatchNormElemt": // CheckDtypeValid: [ASCEND910B, ASCEND910E] or ASCEND950
      return (sv >= 1 && sv <= 4) || sv === 3;
    case "aclnnBatchNormElemtBackward": // CheckParams: ASCEND910B, ASCEND910_93 or regbase
      return sv === 1 || sv === 2 || arch === 3510;
    case "aclnnLayerNorm": // aclnn_layer_norm.cpp GetDtypeSupportList
      return v2201or3510;
    case "aclnnLayerNormBackward": // DTYPE_SUPPORT_LIST everywhere; the docs refuse 910 and 310P
      return sv !== 0 && sv !== 6;
    case "aclnnRmsNorm": // rms_norm_def.cpp: ascend910b, ascend910_93, ascend950 rows have BF16
    case "aclnnRmsNormGrad": // rms_norm_grad_def.cpp: the same configurations
      return sv === 1 || sv === 2 || sv === 3;
    case "aclnnAddRmsNorm": // aclnn_add_rms_norm.cpp: ASCEND310P_DTYPE_SUPPORT_LIST has no BF16
    case "aclnnAddLayerNorm": // add_layer_norm_def.cpp: ascend310p's rows have no BF16
    case "aclnnDeepNorm": // deep_norm_def.cpp: ascend310p's rows have no BF16
    case "aclnnAddLayerNormGrad": // add_layer_norm_grad_def.cpp:74-139: ascend310p F32/F16 only
    case "aclnnDeepNormGrad": // deep_norm_grad_def.cpp:67-128: ascend310p without BF16
      return sv !== 6;
    case "aclnnInplaceAddRmsNorm": // inplace_add_rms_norm_def.cpp: config310P has no BF16
      return sv !== 6;
    case "aclnnGemmaRmsNorm": // gemma_rms_norm_def.cpp: every configuration has BF16 rows
    case "aclnnAddRmsNormCast": // add_rms_norm_cast_def.cpp: FLOAT16 and BF16 rows only
    case "aclnnAdaLayerNorm": // aclnn_ada_layer_norm.cpp DTYPE_SUPPORT_LIST has BF16
    case "aclnnAdaLayerNormV2":
    case "aclnnAdaLayerNormBackward": // aclnn_ada_layer_norm_backward.cpp:48-49 has BF16
      return true;
    case "aclnnBatchNormReduce": // aclnn_batch_norm_reduce.cpp: one list with BF16
      return true;
    case "aclnnSyncBatchNormGatherStats": // aclnn_sync_batch_norm_gather_stats.cpp: IsRegbase
      return arch === 3510;
    case "aclnnInstanceNorm": // aclnn_instance_norm.cpp: ASCEND310P_DTYPE_SUPPORT_LIST, no BF16
      return false;
    case "aclnnFastBatchNormBackward": // aclnn_fast_batch_norm_backward.cpp GetDtypeSupportList:
      return true; // `>= ASCEND910B || <= ASCEND910E` holds for every SocVersion
    case "aclnnGroupNormSilu": // aclnn_group_norm_silu.cpp:64-71 GetDtypeSupportList
    case "aclnnGroupNormSiluV2":
      return v2201or3510;
    case "aclnnGroupNormSwish": // group_norm_swish_def.cpp:69-104: BF16 rows everywhere
    case "aclnnFastLayerNorm": // aclnn_fast_layer_norm.cpp:50-53: one list with BF16
    case "aclnnGroupNormSwishGrad": // group_norm_swish_grad_def.cpp: BF16 rows everywhere
      return true;
  }
}

/**
 * The "产品支持情况" tables: Ascend310B runs none of the nine BatchNorm/GroupNorm operators,
 * Ascend310P two; the LayerNorm/RMSNorm operators list their own products (and none names
 * Ascend 350).
 */
function documented(op: SocOperator, { sv }: Chip): boolean {
  switch (op) {
    case "aclnnLayerNorm": // 950, A3, A2, 910, 310B
      return [3, 2, 1, 0, 7].includes(sv);
    case "aclnnLayerNormBackward": // 950, A3, A2, 910, 310P
      return [3, 2, 1, 0, 6].includes(sv);
    case "aclnnRmsNorm": // 950, A3, A2, 310P
    case "aclnnRmsNormGrad":
    case "aclnnAddRmsNorm":
    case "aclnnInplaceAddRmsNorm":
    case "aclnnAddLayerNorm":
    case "aclnnDeepNorm":
    case "aclnnAddLayerNormGrad": // aclnnAddLayerNormGrad.md: 950, A3, A2, 310P
    case "aclnnDeepNormGrad": // aclnnDeepNormGrad.md: 950, A3, A2, 310P
      return [3, 2, 1, 6].includes(sv);
    case "aclnnGroupNormSilu": // 950, A3, A2, 310P
    case "aclnnGroupNormSiluV2":
      return [3, 2, 1, 6].includes(sv);
    case "aclnnGemmaRmsNorm": // 950, A3, A2
    case "aclnnAddRmsNormCast":
    case "aclnnAdaLayerNormV2":
    case "aclnnGroupNormSwish": // 950, A3, A2
    case "aclnnGroupNormSwishGrad": // 950, A3, A2
    case "aclnnBatchNormReduce": // 950, A3, A2
    case "aclnnSyncBatchNormGatherStats":
      return [3, 2, 1].includes(sv);
    case "aclnnInstanceNorm": // 310P only (and CheckPlatform refuses every other SocVersion)
      return sv === 6;
    case "aclnnFastBatchNormBackward": // aclnnFastBatchNormBackward.md: Atlas A2 only
      return sv === 1;
    case "aclnnAdaLayerNorm": // A3, A2 (ada_layer_norm_def.cpp:53-54)
    case "aclnnFastLayerNorm": // aclnnFastLayerNorm.md: A3, A2
    case "aclnnAdaLayerNormBackward": // aclnnAdaLayerNormBackward.md: A3, A2
      return [2, 1].includes(sv);
  }
  if (sv === 7) return false;
  if (sv === 6) return op === "aclnnBatchNorm" || op === "aclnnGroupNorm";
  return true;
}

function chipOf(e: PlatformEntry): Chip {
  return { arch: Number(e.npuArch ?? 0xffff), sv: SOC_VERSION[e.shortSocVersion] ?? RESERVED };
}

/** Per-channel batch mean and biased variance of x [N, C, L] in float64. */
function batchStats(x: number[]): { mean: number[]; variance: number[] } {
  const mean = new Array(C).fill(0);
  const variance = new Array(C).fill(0);
  x.forEach((v, i) => mean[Math.floor(i / L) % C] += v / M);
  x.forEach((v, i) =>
    variance[Math.floor(i / L) % C] += (v - mean[Math.floor(i / L) % C]) ** 2 / M
  );
  return { mean, variance };
}

/** saveInvstd of a training aclnnBatchNorm on `npu` (float32, the default data). */
function saveInvstd(npu: AscendDevice): number[] {
  const si = fresh(npu, [C]);
  expectOk(npu, "aclnnBatchNorm", argsFor(npu, "aclnnBatchNorm", "float32", { saveInvstd: si }));
  return values(si);
}

function assertNear(got: number[], want: number[], what: string, rtol = 1e-5): void {
  assert.equal(got.length, want.length, what);
  got.forEach((g, i) =>
    assert.ok(
      Math.abs(g - want[i]) <= 1e-6 + rtol * Math.abs(want[i]),
      `${what}[${i}]: ${g} vs ${want[i]}`,
    )
  );
}

Deno.test("sim platform: one .ini per SoC of platform_config.txt, with its [version] fields", () => {
  const files = [...Deno.readDirSync(CONFIG_DIR)].map((f) => f.name).filter((f) =>
    f.endsWith(".ini")
  );
  assert.deepEqual(files.sort(), PLATFORM.map((e) => `${e.socVersion}.ini`).sort());
  for (const e of PLATFORM) {
    const text = Deno.readTextFileSync(`${CONFIG_DIR}/${e.socVersion}.ini`);
    assert.match(
      text,
      new RegExp(`^\\[version\\]\nSoC_version=${e.socVersion}\nShort_SoC_version=`, "m"),
    );
  }
  // The pre-2026 name of the 950 (hicann/runtime 494dda3 cann-dev/Ascend910_9599.ini).
  const old = PLATFORM.find((e) => e.socVersion === "Ascend910_9599");
  assert.deepEqual([old?.shortSocVersion, old?.npuArch, old?.commit], [
    "Ascend910_95",
    "3510",
    "494dda3",
  ]);
});

Deno.test("sim platform: every SoC name accepts bfloat16 and runs each operator as CANN's code says", () => {
  for (const e of PLATFORM) {
    const chip = chipOf(e);
    onSoc(e.socVersion, (npu) => {
      assert.equal(npu.socName, e.socVersion);
      for (const op of SOC_OPERATORS) {
        const what = `${op} on ${e.socVersion}`;
        const fp = tryAclnn(npu, op, argsFor(npu, op, "float32"));
        const bf = tryAclnn(npu, op, argsFor(npu, op, "bfloat16"));
        if (op === "aclnnBatchNorm" && ![1001, 2002, 2201, 3510].includes(chip.arch)) {
          for (const err of [fp, bf]) {
            assert.equal(err?.code, INVALID, what);
            assert.ok(
              err!.nativeMessage?.includes(`support for npuArch ${chip.arch} is not implemented`),
            );
          }
          continue;
        }
        if (op === "aclnnInstanceNorm" && !documented(op, chip)) {
          // CheckDtypeValid (bfloat16 refused on every SoC) runs before CheckPlatform.
          assert.equal(fp?.code, INVALID, what);
          assert.match(fp!.nativeMessage ?? "", /aclnnInstanceNorm only supports Ascend310p/);
          assert.ok(fp!.nativeMessage?.includes(`the SoC is ${e.socVersion}`), what);
          assert.equal(bf?.code, INVALID, what);
          assert.match(bf!.nativeMessage ?? "", bf16RefusalText(op));
          continue;
        }
        if (op === "aclnnAdaLayerNormBackward" && !documented(op, chip)) {
          // aclnn_ada_layer_norm_backward.cpp:436-455: only ASCEND910B / ASCEND910_93 launch the
          // kernel; any other SoC returns SUCCESS with nothing queued.
          assert.equal(fp, null, `${what} float32: ${fp?.message}`);
          assert.equal(bf, null, `${what} bfloat16: ${bf?.message}`);
          continue;
        }
        if (!documented(op, chip)) {
          for (const err of [fp, bf]) {
            assert.equal(err?.code, INVALID, what);
            assert.ok(
              err!.nativeMessage?.includes(`is not supported on SoC ${e.socVersion}`),
              what,
            );
          }
          continue;
        }
        assert.equal(fp, null, `${what} float32: ${fp?.message}`);
        if (bf16(op, chip)) assert.equal(bf, null, `${what} bfloat16: ${bf?.message}`);
        else {
          assert.equal(bf?.code, INVALID, `${what} bfloat16 must be refused`);
          assert.match(bf!.nativeMessage ?? "", bf16RefusalText(op));
        }
      }
    });
  }
});

Deno.test("sim platform: saveInvstd is Var(x) off DAV_3510 and 1/sqrt(var + eps) on it, for every SoC name", () => {
  const { variance } = batchStats(seq(N * C * L, 1, 2, 0.5));
  const invstd = variance.map((v) => 1 / Math.sqrt(v + EPS));
  for (const e of PLATFORM) {
    const chip = chipOf(e);
    if (![1001, 2002, 2201, 3510].includes(chip.arch)) continue; // no BatchNorm there
    onSoc(e.socVersion, (npu) => {
      // aclnn_batch_norm.cpp BatchNorm(): regbase -> BatchNormV3's batch_rstd, else a variance
      assertNear(
        saveInvstd(npu),
        chip.arch === 3510 ? invstd : variance,
        `${e.socVersion} saveInvstd`,
      );
    });
  }
});

Deno.test("sim platform: Ascend910_9599 (Short_SoC_version Ascend910_95) behaves as Ascend950PR_9599", () => {
  const runs = ["Ascend950PR_9599", "Ascend910_9599"].map((soc) =>
    onSoc(soc, (npu) => {
      const xs = seq(N * C * L, 1, 2, 0.5);
      const gi = fresh(npu, X);
      // BatchNormBackward reads saveInvstd as invstd on DAV_3510 (BatchNormGradV3 save_rstd)
      expectOk(
        npu,
        "aclnnBatchNormBackward",
        argsFor(npu, "aclnnBatchNormBackward", "float32", {
          input: dev(npu, xs, X),
          saveMean: dev(npu, [0.1, 0.2, 0.3], [C]),
          saveInvstd: dev(npu, [0.7, 1.3, 2.1], [C]),
          gradInput: gi,
        }),
      );
      return { saveInvstd: saveInvstd(npu), gradInput: values(gi) };
    })
  );
  assert.deepEqual(runs[1], runs[0]);
  const { variance } = batchStats(seq(N * C * L, 1, 2, 0.5));
  assertNear(
    runs[1].saveInvstd,
    variance.map((v) => 1 / Math.sqrt(v + EPS)),
    "Ascend910_9599 saveInvstd",
  );
});

Deno.test("sim platform: a platform file the simulator reads as CANN does (SocVersion and NpuArch apart)", () => {
  const tag = `${Deno.pid}_${Date.now()}`;
  const files: string[] = [];
  const ini = (name: string, body: string) => {
    const path = `${CONFIG_DIR}/${name}.ini`;
    Deno.writeTextFileSync(path, body);
    files.push(path);
    return name;
  };
  try {
    // An unknown Short_SoC_version is RESERVED_VERSION; NpuArch 2201 still rules the NpuArch branches.
    const odd = ini(
      `AscendTest_${tag}`,
      `# comment\nstray=ignored\n[version]\n SoC_version = AscendTest_${tag} \nShort_SoC_version=AscendZZZ\n` +
        `NpuArch=2201\nNpuArch=3510\n[version]\nNpuArch=1001\n`,
    );
    onSoc(odd, (npu) => {
      expectOk(npu, "aclnnBatchNorm", argsFor(npu, "aclnnBatchNorm", "bfloat16")); // NpuArch 2201
      expectAclnn(
        npu,
        "aclnnBatchNormElemt",
        argsFor(npu, "aclnnBatchNormElemt", "bfloat16"),
        INVALID,
        "DT_BF16",
      );
      assertNear(
        saveInvstd(npu),
        batchStats(seq(N * C * L, 1, 2, 0.5)).variance,
        `${odd}: not regbase`,
      );
      // GroupNormBackward's DAV_2201 limit C / group <= 8000 (aclnn_group_norm_backward.cpp CheckAttr)
      const big = 8001;
      const ones = (shape: number[]) =>
        dev(npu, new Array(shape.reduce((p, q) => p * q)).fill(1), shape);
      expectAclnn(
        npu,
        "aclnnGroupNormBackward",
        [
          arg.tensor(ones([1, big, 1])),
          arg.tensor(ones([1, big, 1])),
          arg.tensor(dev(npu, [0], [1, 1])),
          arg.tensor(dev(npu, [1], [1, 1])),
          arg.tensor(undefined),
          arg.i64(1),
          arg.i64(big),
          arg.i64(1),
          arg.i64(1),
          arg.boolArray([true, true, true]),
          arg.output(fresh(npu, [1, big, 1])),
          arg.output(fresh(npu, [big])),
          arg.output(fresh(npu, [big])),
        ],
        INVALID,
        "Expected C / group <= 8000",
      );
    });
    // No NpuArch key: InitNpuArch leaves DAV_RESV.
    const noArch = ini(
      `AscendTest2_${tag}`,
      `[version]\nSoC_version=AscendTest2_${tag}\nShort_SoC_version=Ascend910B\n`,
    );
    onSoc(noArch, (npu) => {
      expectAclnn(
        npu,
        "aclnnBatchNorm",
        argsFor(npu, "aclnnBatchNorm", "float32"),
        INVALID,
        "npuArch 65535",
      );
      // ... while SocVersion ASCEND910B (Short_SoC_version) allows bfloat16 Elemt
      expectOk(npu, "aclnnBatchNormElemt", argsFor(npu, "aclnnBatchNormElemt", "bfloat16"));
    });
    // A file whose SoC_version names another SoC does not describe this one.
    const other = ini(
      `AscendTest3_${tag}`,
      `[version]\nSoC_version=Ascend910B4\nShort_SoC_version=Ascend910B\nNpuArch=2201\n`,
    );
    onSoc(other, (npu) => {
      expectAclnn(
        npu,
        "aclnnBatchNormStats",
        argsFor(npu, "aclnnBatchNormStats", "float32"),
        561103,
        "no kernel binary",
      );
    });
  } finally {
    for (const f of files) Deno.removeSync(f);
  }
});

Deno.test("sim platform: the library's SoC table agrees with the simulator on every SoC name", () => {
  const problems: string[] = [];
  const expect = (got: unknown, want: unknown, what: string) => {
    if (got !== want) problems.push(`${what}: soc.ts says ${got}, CANN ${want}`);
  };
  for (const e of PLATFORM) {
    // The library's own resolution: its table, else the platform file beside the libraries (how
    // Ascend910_9599, the 950's pre-2026 name, is placed).
    const family = resolveSocFamily(e.socVersion, SIM_DIR).family;
    const chip = chipOf(e);
    if (!family) {
      problems.push(`${e.socVersion}: the library places it in no family`);
      continue;
    }
    expect(
      batchNormSavesVariance(family),
      chip.arch !== 3510,
      `${e.socVersion} saveInvstd is Var(x)`,
    );
    expect(family.npuArch, chip.arch, `${e.socVersion} NpuArch`);
    for (const op of SOC_OPERATORS) {
      expect(bf16Allowed(op, family), bf16(op, chip), `${e.socVersion} ${op} bfloat16`);
      expect(operatorSupported(op, family), documented(op, chip), `${e.socVersion} ${op} runs`);
    }
  }
  assert.deepEqual(problems, []);
});
