/**
 * The conformance cases of the channel-group operators of the norm family (instanceNorm,
 * groupNormSilu, groupNormSiluV2, groupNormSwish, groupNormSwishGrad) as `deno task verify:npu`
 * cases: the peer cases of tests/fixtures/conformance/norm_family_group.ts and CANN's examples
 * (norm_family_examples.ts), on the inputs and seeds tests/conformance/norm_family_group.test.ts
 * gives them, each call run on the NPU and on the CPU backend and compared.
 *
 * GroupNormSilu's mean and rstd with a float32 gamma or beta and 16-bit self are float32 on
 * Ascend 950 and self's dtype on the other chips (src/backends/ascend/soc_group_norm_act.ts):
 * each run passes the dtype its device takes (the CPU backend float32), compared at the data's
 * precision (atDataPrecision). Of an empty x, the chips write a mean of NaN (Ascend 950) or 0
 * (the others, and the CPU backend; tests/conformance/norm_family_group.test.ts cites CANN):
 * that mean is compared with NaN read as 0, and N = 0 or C = 0 is refused off Ascend 950.
 *
 * @module
 */

import {
  AscendDevice,
  type Device,
  type DType,
  groupNormSilu,
  groupNormSiluV2,
  groupNormSwish,
  groupNormSwishGrad,
  instanceNorm,
  Tensor,
} from "../../mod.ts";
import { deviceSocFamily } from "../../src/backends/ascend/device_soc.ts";
import { isRegbase, type SocFamily } from "../../src/backends/ascend/soc.ts";
import {
  groupNormActExample,
  groupNormSwishGradExample,
  instanceNormExample,
} from "../../tests/fixtures/conformance/norm_family_examples.ts";
import {
  GROUP_SILU_CASES,
  GROUP_SILU_EMPTY_CASES,
  GROUP_SILU_V2_CASES,
  GROUP_SWISH_CASES,
  type GroupActCase,
  groupActInputs,
  SWISH_GRAD_CASES,
  swishGradInputs,
} from "../../tests/fixtures/conformance/norm_family_group.ts";
import {
  INSTANCE_NORM_CASES,
  instanceNormInputs,
} from "../../tests/fixtures/conformance/norm_family_instance.ts";
import type { OutputValues } from "./compare.ts";
import {
  type Call,
  conformanceCase,
  dtypesLabel,
  numel,
  placeOn,
  placeOpt,
  type VerifyCase,
} from "./model.ts";
import { atDataPrecision } from "./sweep_row_ops.ts";

/** ops-nn's example of `op` (hicann/ops-nn e5c3fa9 `norm/<dir>/examples/`). */
const example = (dir: string, op = dir) => `ops-nn ${dir}/examples/test_aclnn_${op}.cpp`;

/** The fields of a case of `kernel` on `dtypes` (the first is the data's) over `shape`. */
function fields(
  kernel: VerifyCase["kernels"][number],
  dtypes: Record<string, DType | null | undefined>,
  shape: readonly number[],
) {
  const [data, ...rest] = Object.entries(dtypes);
  return {
    dtype: dtypesLabel(data[1]!, Object.fromEntries(rest)),
    layout: "contiguous",
    kernels: [kernel],
    dtypes: Object.values(dtypes).filter((t): t is DType => !!t),
    numel: numel(shape),
  };
}

/**
 * The Atlas inference kernel of aclnnInstanceNorm needs x's C axis and H * W to span at least 32
 * bytes each (aclnnInstanceNorm.md, 561103; src/ops/instance_norm.ts leaves it to CANN, the CPU
 * backend computes any size; the sweep takes such shapes only): a case below that is one the chip
 * does not run.
 */
function instanceNormLimit(shape: readonly number[], dtype: DType, dataFormat: string) {
  const bytes = dtype === "float32" ? 4 : 2;
  const [, d1, d2, d3] = shape;
  const [C, hw] = dataFormat === "NHWC" ? [d3, d1 * d2] : [d1, d2 * d3];
  return (family: SocFamily) =>
    C * bytes < 32 || hw * bytes < 32
      ? `aclnnInstanceNorm needs C (${C}) and H*W (${hw}) of >= 32 bytes each on ${family.name}`
      : undefined;
}

function instanceNormAll(): VerifyCase[] {
  const call =
    (i: ReturnType<typeof instanceNormInputs>, dataFormat: string, eps: number) => (d: Device) => {
      const r = instanceNorm({
        x: placeOn(i.x, d),
        gamma: placeOn(i.gamma, d),
        beta: placeOn(i.beta, d),
        dataFormat,
        eps,
      });
      return { y: r.y, mean: r.mean, variance: r.variance };
    };
  const e = instanceNormExample();
  return [
    conformanceCase(
      "instanceNorm",
      `${example("instance_norm_v3", "instance_norm").replace("examples", "examples/arch20")} ` +
        "[1,8,4,4] (golden)",
      {
        ...fields("aclnnInstanceNorm", { x: "float32" }, e.x.shape),
        alsoRefused: instanceNormLimit(e.x.shape, "float32", e.dataFormat),
      },
      () => call(instanceNormExample(), e.dataFormat, e.eps),
    ),
    ...INSTANCE_NORM_CASES.map((c, k) =>
      conformanceCase(
        "instanceNorm",
        `${c.source} [${c.shape}] ${c.dataFormat}`,
        {
          ...fields("aclnnInstanceNorm", { x: c.dtype }, c.shape),
          alsoRefused: instanceNormLimit(c.shape, c.dtype, c.dataFormat),
        },
        () => call(instanceNormInputs(c, 30000 + 10 * k), c.dataFormat, c.eps),
      )
    ),
  ];
}

/** The dtype of GroupNormSilu's mean and rstd on `d` with a gamma/beta of another dtype. */
function mixedStatsDType(d: Device, op: string, self: DType): DType {
  if (!(d instanceof AscendDevice)) return "float32";
  return isRegbase(deviceSocFamily(d, op)) ? "float32" : self;
}

/** A GroupNormSilu (V2) case of fixture case `c` (seed `seed`). */
function siluCase(c: GroupActCase, seed: number, v2: boolean): VerifyCase {
  const op = v2 ? "aclnnGroupNormSiluV2" : "aclnnGroupNormSilu";
  const gamma = c.gamma === undefined ? c.dtype : c.gamma;
  const beta = c.beta === undefined ? (gamma ?? c.dtype) : c.beta;
  const mixed = [gamma, beta].some((t) => t && t !== c.dtype);
  return conformanceCase(
    v2 ? "groupNormSiluV2" : "groupNormSilu",
    `${c.source} [${c.shape}] group ${c.group}${v2 && c.activate === false ? " no SiLU" : ""}`,
    fields(op, { self: c.dtype, gamma, beta }, c.shape),
    () => {
      const i = groupActInputs(c, seed);
      return (d) => {
        const stats = mixedStatsDType(d, op, c.dtype);
        const out = () => Tensor.empty([c.shape[0], c.group], stats, d);
        const args = {
          self: placeOn(i.x, d),
          gamma: placeOpt(i.gamma, d),
          beta: placeOpt(i.beta, d),
          group: c.group,
          eps: c.eps,
          ...(mixed ? { out: { mean: out(), rstd: out() } } : {}),
        };
        const r = v2
          ? groupNormSiluV2({ ...args, activateSilu: c.activate ?? true })
          : groupNormSilu(args);
        return mixed
          ? {
            output: r.output,
            "mean (data's precision)": atDataPrecision(r.mean, c.dtype),
            "rstd (data's precision)": atDataPrecision(r.rstd, c.dtype),
          }
          : { output: r.output, mean: r.mean, rstd: r.rstd };
      };
    },
  );
}

/** `t`'s values with NaN read as 0. */
function nanAsZero(t: Tensor): OutputValues {
  const values = t.toFloat64Array().map((v) => Number.isNaN(v) ? 0 : v);
  return { dtype: t.dtype, shape: [...t.shape], values };
}

/** The ST's empty x (module doc). */
function siluEmptyCase(c: GroupActCase): VerifyCase {
  const [N, C] = c.shape;
  return conformanceCase("groupNormSilu", `${c.source} [${c.shape}] group ${c.group} (empty)`, {
    ...fields("aclnnGroupNormSilu", { self: c.dtype }, c.shape),
    alsoRefused: (family) =>
      !isRegbase(family) && (N === 0 || C === 0)
        ? `aclnnGroupNormSilu takes no empty N or C on ${family.name}`
        : undefined,
  }, () => {
    const self = Tensor.zeros(c.shape, c.dtype);
    return (d) => {
      const r = groupNormSilu({ self: placeOn(self, d), group: c.group, eps: c.eps });
      return { output: r.output, "mean (NaN as 0)": nanAsZero(r.mean), rstd: r.rstd };
    };
  });
}

function swishCall(
  i: ReturnType<typeof groupActInputs>,
  c: Pick<GroupActCase, "group" | "eps" | "activate" | "scale">,
): Call {
  return (d) => {
    const r = groupNormSwish({
      x: placeOn(i.x, d),
      gamma: placeOn(i.gamma!, d),
      beta: placeOn(i.beta!, d),
      numGroups: c.group,
      eps: c.eps,
      activateSwish: c.activate ?? true,
      swishScale: c.scale ?? 1,
    });
    return { y: r.y, mean: r.mean, rstd: r.rstd };
  };
}

/** The GroupNormSilu / V2 / Swish example (x 1..24 as [2,3,4], one group), and their cases. */
function groupNormActAll(): VerifyCase[] {
  type Example = ReturnType<typeof groupNormActExample>;
  const golden = (
    op: string,
    source: string,
    kernel: VerifyCase["kernels"][number],
    call: (i: Example) => Call,
  ) =>
    conformanceCase(
      op,
      `${source} [2,3,4] group 1 (golden)`,
      fields(kernel, { x: "float32" }, [2, 3, 4]),
      () => call(groupNormActExample()),
    );
  const silu = (v2: boolean) => (i: Example): Call => (d) => {
    const args = {
      self: placeOn(i.x, d),
      gamma: placeOn(i.gamma, d),
      beta: placeOn(i.beta, d),
      group: i.group,
      eps: i.eps,
    };
    const r = v2 ? groupNormSiluV2({ ...args, activateSilu: true }) : groupNormSilu(args);
    return { output: r.output, mean: r.mean, rstd: r.rstd };
  };
  return [
    golden("groupNormSilu", example("group_norm_silu"), "aclnnGroupNormSilu", silu(false)),
    ...GROUP_SILU_CASES.map((c, k) => siluCase(c, 31000 + 10 * k, false)),
    ...GROUP_SILU_EMPTY_CASES.map(siluEmptyCase),
    golden(
      "groupNormSiluV2",
      example("group_norm_silu", "group_norm_silu_v2"),
      "aclnnGroupNormSiluV2",
      silu(true),
    ),
    ...GROUP_SILU_V2_CASES.map((c, k) => siluCase(c, 32000 + 10 * k, true)),
    golden(
      "groupNormSwish",
      example("group_norm_swish"),
      "aclnnGroupNormSwish",
      (i) => swishCall(i, i),
    ),
    ...GROUP_SWISH_CASES.map((c, k) =>
      conformanceCase(
        "groupNormSwish",
        `${c.source} [${c.shape}] group ${c.group} ${
          c.activate ?? true ? `swishScale ${c.scale ?? 1}` : "no swish"
        }`,
        fields("aclnnGroupNormSwish", { x: c.dtype }, c.shape),
        () => swishCall(groupActInputs(c, 33000 + 10 * k), c),
      )
    ),
  ];
}

function swishGradAll(): VerifyCase[] {
  const call = (
    i: Record<"dy" | "mean" | "rstd" | "x" | "gamma" | "beta", Tensor>,
    numGroups: number,
    swishScale: number,
  ): Call =>
  (d) => {
    const r = groupNormSwishGrad({
      dy: placeOn(i.dy, d),
      mean: placeOn(i.mean, d),
      rstd: placeOn(i.rstd, d),
      x: placeOn(i.x, d),
      gamma: placeOn(i.gamma, d),
      beta: placeOn(i.beta, d),
      numGroups,
      swishScale,
    });
    return { dx: r.dx, dgamma: r.dgamma, dbeta: r.dbeta };
  };
  const e = groupNormSwishGradExample();
  return [
    conformanceCase(
      "groupNormSwishGrad",
      `${example("group_norm_swish_grad")} [2,3,4] group 1 (golden)`,
      fields("aclnnGroupNormSwishGrad", { x: "float32" }, e.x.shape),
      () => call(groupNormSwishGradExample(), e.numGroups, e.swishScale),
    ),
    ...SWISH_GRAD_CASES.map((c, k) =>
      conformanceCase(
        "groupNormSwishGrad",
        `${c.source} [${c.shape}] group ${c.group}`,
        fields("aclnnGroupNormSwishGrad", { x: c.dtype }, c.shape),
        () => call(swishGradInputs(c, 34000 + 10 * k), c.group, c.scale),
      )
    ),
  ];
}

/** Every case of norm_family_group.ts and of these operators' examples. */
export function groupFamilyCases(): VerifyCase[] {
  return [...instanceNormAll(), ...groupNormActAll(), ...swishGradAll()];
}
