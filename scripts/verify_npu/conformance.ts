/**
 * The conformance and golden cases of the test suite, as `deno task verify:npu` cases: the
 * same case data and inputs (tests/fixtures/conformance/, tests/fixtures/soc_scenarios.ts),
 * each call run on the NPU and on the CPU backend and compared. (The suite itself checks the
 * CPU backend against the known answers and the float64 oracle.) The seed operators' cases are
 * built here; the norm family's in conformance_family_*.ts, one file per fixture file
 * (NORM_FAMILY_CONFORMANCE), gathered here.
 *
 * @module
 */

import {
  batchNorm,
  batchNormBackward,
  batchNormReduceBackward,
  batchNormStats,
  createBatchNormBackwardDescriptor,
  type Device,
  type DType,
  groupNorm,
  groupNormBackward,
  Tensor,
} from "../../mod.ts";
import type { SocOperator } from "../../src/backends/ascend/soc.ts";
import {
  BN_BACKWARD_CASES,
  bnBackwardInputs,
  bnBackwardSeed,
} from "../../tests/fixtures/conformance/batch_norm_backward.ts";
import {
  REDUCE_CASES,
  reduceDocExample,
  type ReduceInputs,
  reduceInputs,
  reduceSeed,
  torchNpuInputs,
} from "../../tests/fixtures/conformance/batch_norm_reduce_backward.ts";
import {
  BN_FORWARD_CASES,
  bnForwardInputs,
  bnStatsInput,
  FORWARD_DTYPES,
  forwardRuns,
  GN_FORWARD_CASES,
  gnForwardExample,
  type GnForwardInputs,
  gnForwardInputs,
} from "../../tests/fixtures/conformance/forward.ts";
import {
  GN_BACKWARD_CASES,
  gnBackwardExample,
  type GnBackwardInputs,
  gnBackwardInputs,
  gnBackwardSeed,
} from "../../tests/fixtures/conformance/group_norm_backward.ts";
import {
  infiniopInputs,
  infiniopRuns,
  infiniopSeed,
} from "../../tests/fixtures/conformance/infiniop_batch_norm_backward.ts";
import { adaFamilyCases } from "./conformance_family_ada.ts";
import { batchFamilyCases } from "./conformance_family_batch.ts";
import { groupFamilyCases } from "./conformance_family_group.ts";
import { rmsFamilyCases } from "./conformance_family_rms.ts";
import { rowsFamilyCases } from "./conformance_family_rows.ts";
import {
  scenarioDType,
  scenarioRefusal,
  SOC_SCENARIOS,
} from "../../tests/fixtures/soc_scenarios.ts";
import {
  type Call,
  conformanceCase as conformance,
  dtypeLabel,
  layoutName,
  numel,
  placeOn,
  placeOpt,
  type VerifyCase,
} from "./model.ts";

/** Options of {@linkcode conformanceCases}. */
export interface ConformanceOptions {
  /** Only cases whose data has at most this many elements (the quick run). */
  maxNumel?: number;
}

function reduceCall(i: ReduceInputs): Call {
  return (d) => {
    const r = batchNormReduceBackward({
      gradOut: placeOn(i.gradOut, d),
      input: placeOn(i.input, d),
      mean: placeOn(i.mean, d),
      invstd: placeOn(i.invstd, d),
      weight: placeOpt(i.weight, d),
      inputG: i.inputG,
      weightG: i.weightG,
      biasG: i.biasG,
    });
    return { sumDy: r.sumDy, sumDyXmu: r.sumDyXmu, gradWeight: r.gradWeight, gradBias: r.gradBias };
  };
}

function gnBackwardCall(i: GnBackwardInputs): Call {
  return (d) => {
    const r = groupNormBackward({
      gradOut: placeOn(i.gradOut, d),
      input: placeOn(i.input, d),
      mean: placeOn(i.mean, d),
      rstd: placeOn(i.rstd, d),
      gamma: placeOpt(i.gamma, d),
      N: i.N,
      C: i.C,
      HxW: i.HxW,
      group: i.group,
      outputMask: i.outputMask,
    });
    return { gradInput: r.gradInput, gradGamma: r.gradGamma, gradBeta: r.gradBeta };
  };
}

function gnForwardCall(i: GnForwardInputs): Call {
  return (d) => {
    const r = groupNorm({
      input: placeOn(i.input, d),
      gamma: placeOpt(i.gamma, d),
      beta: placeOpt(i.beta, d),
      group: i.group,
      eps: i.eps,
    });
    return { output: r.output, mean: r.mean, rstd: r.rstd };
  };
}

const DTYPES: readonly DType[] = ["float32", "float16", "bfloat16"];
const REDUCE: SocOperator[] = ["aclnnBatchNormReduceBackward"];
const BN_BACKWARD: SocOperator[] = ["aclnnBatchNormBackward"];
const GN_BACKWARD: SocOperator[] = ["aclnnGroupNormBackward"];

/** The golden cases: the peers' known answers. */
function goldenCases(): VerifyCase[] {
  const cases: VerifyCase[] = [];
  for (const dtype of DTYPES) {
    const common = { dtype, layout: "contiguous", kernels: REDUCE, dtypes: [dtype], numel: 24 };
    cases.push(
      conformance(
        "batchNormReduceBackward",
        "CANN doc example [4,2] (golden)",
        common,
        () => reduceCall(reduceDocExample(dtype)),
      ),
    );
    cases.push(
      conformance("groupNormBackward", "CANN example [2,3,4] group 1 (golden)", {
        ...common,
        kernels: GN_BACKWARD,
      }, () => gnBackwardCall(gnBackwardExample(dtype))),
    );
  }
  for (const dtype of ["float32", "float16"] as const) {
    cases.push(
      conformance(
        "batchNormReduceBackward",
        `torch_npu test_batch_norm_backward_reduce [1,3,9,9] (golden${
          dtype === "float16" ? ", mix precision" : ""
        })`,
        {
          dtype: dtypeLabel(dtype, "float32"),
          layout: "contiguous",
          kernels: REDUCE,
          dtypes: [dtype, "float32"],
          numel: 243,
        },
        () => reduceCall(torchNpuInputs(dtype)),
      ),
    );
  }
  cases.push(
    conformance("groupNorm", "CANN example [2,3,4] group 1 forward (golden)", {
      dtype: "float32",
      layout: "contiguous",
      kernels: ["aclnnGroupNorm"],
      dtypes: ["float32"],
      numel: 24,
    }, () => gnForwardCall(gnForwardExample())),
  );
  return cases;
}

/** The reference cases of the five conformance suites. */
function referenceCases(): VerifyCase[] {
  const cases: VerifyCase[] = [];
  REDUCE_CASES.forEach((c, k) => {
    const stats = c.statsDType ?? c.dtype;
    cases.push(conformance("batchNormReduceBackward", `${c.source} [${c.shape}]`, {
      dtype: dtypeLabel(c.dtype, stats),
      layout: layoutName(c.layout),
      kernels: REDUCE,
      dtypes: [c.dtype, stats],
      numel: numel(c.shape),
    }, () => reduceCall(reduceInputs(c, reduceSeed(k)))));
  });
  BN_BACKWARD_CASES.forEach((c, k) => {
    const param = c.paramDType ?? c.dtype;
    const save = c.saveDType ?? param;
    cases.push(conformance(
      "batchNormBackward",
      `${c.source} [${c.shape}] ${c.training ? "training" : "eval"}`,
      {
        dtype: param === c.dtype && save === c.dtype
          ? c.dtype
          : `${c.dtype} + ${param} params${save === param ? "" : `, ${save} saved stats`}`,
        layout: layoutName(c.layout),
        kernels: BN_BACKWARD,
        dtypes: [c.dtype, param, save],
        numel: numel(c.shape),
      },
      () => {
        const i = bnBackwardInputs(c, bnBackwardSeed(k));
        return (d) => {
          const r = batchNormBackward({
            gradOut: placeOn(i.gradOut, d),
            input: placeOn(i.input, d),
            weight: placeOpt(i.weight, d),
            runningMean: placeOn(i.runningMean, d),
            runningVar: placeOn(i.runningVar, d),
            saveMean: placeOn(i.saveMean, d),
            saveInvstd: placeOn(i.saveInvstd, d),
            training: i.training,
            eps: i.eps,
            outputMask: i.outputMask,
          });
          return { gradInput: r.gradInput, gradWeight: r.gradWeight, gradBias: r.gradBias };
        };
      },
    ));
  });
  GN_BACKWARD_CASES.forEach((c, k) => {
    const stats = c.statsDType ?? c.dtype;
    cases.push(conformance("groupNormBackward", `${c.source} [${c.shape}] group ${c.group}`, {
      dtype: dtypeLabel(c.dtype, stats),
      layout: layoutName(c.layout),
      kernels: GN_BACKWARD,
      dtypes: [c.dtype, stats],
      mixedPrecision: stats !== c.dtype,
      numel: numel(c.shape),
    }, () => gnBackwardCall(gnBackwardInputs(c, gnBackwardSeed(k)))));
  });
  forwardRuns(BN_FORWARD_CASES).forEach(({ c, dtype }, k) => {
    cases.push(conformance(
      "batchNorm",
      `PyTorch OpInfo [${c.shape}] ${c.training ? "training" : "eval"}`,
      {
        dtype,
        layout: "contiguous",
        kernels: ["aclnnBatchNorm"],
        dtypes: [dtype],
        numel: numel(c.shape),
      },
      () => {
        const i = bnForwardInputs(c, dtype, k);
        return (d) => {
          const runningMean = placeOn(i.runningMean, d);
          const runningVar = placeOn(i.runningVar, d);
          const r = batchNorm({
            input: placeOn(i.input, d),
            weight: placeOpt(i.weight, d),
            bias: placeOpt(i.bias, d),
            runningMean,
            runningVar,
            training: i.training,
            momentum: i.momentum,
            eps: i.eps,
          });
          // saveMean/saveInvstd hold values in training mode only.
          return {
            output: r.output,
            ...(i.training ? { saveMean: r.saveMean, saveInvstd: r.saveInvstd } : {}),
            "runningMean (in place)": runningMean,
            "runningVar (in place)": runningVar,
          };
        };
      },
    ));
  });
  BN_FORWARD_CASES.forEach((c, k) => {
    for (const dtype of FORWARD_DTYPES) {
      cases.push(conformance("batchNormStats", `PyTorch OpInfo [${c.shape}]`, {
        dtype,
        layout: "contiguous",
        kernels: ["aclnnBatchNormStats"],
        dtypes: [dtype, "float32"],
        numel: numel(c.shape),
      }, () => {
        const input = bnStatsInput(c, dtype, k);
        return (d) => {
          const r = batchNormStats({ input: placeOn(input, d), eps: c.eps ?? 1e-5 });
          return { mean: r.mean, invstd: r.invstd };
        };
      }));
    }
  });
  forwardRuns(GN_FORWARD_CASES).forEach(({ c, dtype }, k) => {
    cases.push(conformance("groupNorm", `PyTorch OpInfo [${c.shape}] group ${c.group}`, {
      dtype,
      layout: "contiguous",
      kernels: ["aclnnGroupNorm"],
      dtypes: [dtype],
      numel: numel(c.shape),
    }, () => gnForwardCall(gnForwardInputs(c, dtype, k))));
  });
  infiniopRuns().forEach(({ c, dtype, inPlace }, k) => {
    const strided = (c.gradWeightStride ?? 1) > 1 || (c.gradBiasStride ?? 1) > 1;
    cases.push(conformance("createBatchNormBackwardDescriptor", `${c.source} [${c.shape}]`, {
      dtype,
      layout: inPlace ? "in-place" : strided ? "strided per-channel" : "contiguous",
      kernels: BN_BACKWARD,
      dtypes: [dtype],
      numel: numel(c.shape),
    }, () => {
      const i = infiniopInputs(c, dtype, infiniopSeed(k));
      return (d: Device) => {
        const gradOutput = placeOn(i.gradOutput, d);
        const args = {
          gradInput: inPlace ? gradOutput : Tensor.zeros(c.shape, dtype, d),
          gradWeight: placeOn(i.gradWeight, d),
          gradBias: placeOn(i.gradBias, d),
          input: placeOn(i.input, d),
          gradOutput,
          weight: placeOn(i.weight, d),
          runningMean: placeOn(i.runningMean, d),
          runningVar: placeOn(i.runningVar, d),
        };
        using desc = createBatchNormBackwardDescriptor({
          ...args,
          ...(i.eps === undefined ? {} : { eps: i.eps }),
        });
        desc.compute(args);
        return { gradInput: args.gradInput, gradWeight: args.gradWeight, gradBias: args.gradBias };
      };
    }));
  });
  return cases;
}

/** The library's name of a scenario's first operator. */
function scenarioOp(name: string): string {
  const first = name.replace(/^empty batch: /, "").split(" ")[0];
  return first === "gatherStats" ? "batchNormGatherStatsWithCounts" : first;
}

/**
 * The chip scenarios of tests/fixtures/soc_scenarios.ts: their outputs are the values each
 * scenario returns, numbered; which chips refuse one is the fixture's reading of the library's
 * rules (scenarioRefusal).
 */
function scenarioCases(): VerifyCase[] {
  return Object.keys(SOC_SCENARIOS).map((name) => {
    const dtype = scenarioDType(name);
    return conformance(scenarioOp(name), `SoC scenario: ${name}`, {
      dtype,
      layout: "contiguous",
      kernels: [],
      dtypes: [dtype],
      numel: 0,
      refusal: (family) => {
        const argument = scenarioRefusal(family, name);
        return argument === undefined
          ? undefined
          : `the library refuses it on ${family.name} (argument ${argument})`;
      },
    }, () => (d) => {
      const outcome = SOC_SCENARIOS[name](d);
      if (!("values" in outcome)) throw new Error(`${outcome.message} (code ${outcome.code})`);
      return Object.fromEntries(outcome.values.map((v, i) => [`#${i}`, {
        dtype,
        shape: [v.length],
        values: Float64Array.from(v),
      }]));
    });
  });
}

/**
 * The norm family's conformance cases (its 19 operators' peer cases and CANN's examples), by
 * the fixture file of tests/fixtures/conformance/ that holds their peer cases.
 */
export const NORM_FAMILY_CONFORMANCE: Readonly<Record<string, () => VerifyCase[]>> = {
  "norm_family_rows.ts": rowsFamilyCases,
  "norm_family_rms.ts": rmsFamilyCases,
  "norm_family_group.ts": groupFamilyCases,
  "norm_family_ada.ts": adaFamilyCases,
  "norm_family_batch.ts": batchFamilyCases,
};

/** Every conformance and golden case; with `maxNumel`, those whose data is that small. */
export function conformanceCases(options: ConformanceOptions = {}): VerifyCase[] {
  const all = [
    ...goldenCases(),
    ...referenceCases(),
    ...scenarioCases(),
    ...Object.values(NORM_FAMILY_CONFORMANCE).flatMap((cases) => cases()),
  ];
  const max = options.maxNumel;
  return max === undefined ? all : all.filter((c) => c.numel <= max);
}
