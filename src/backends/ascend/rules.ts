/**
 * The Ascend backend's argument rules that depend on the chip: checked before anything is
 * allocated, with 161002 and a message that names the argument, the SoC and the rule, so that
 * a call the chip would refuse fails the same way on every path (and before any device work).
 * The chip facts live in {@linkcode ./soc.ts}; the device's family comes from `device_soc.ts`
 * (a SoC no source places is refused there, never guessed).
 *
 * @module
 */

import { ACLNN_ERR_PARAM_INVALID, AclnnError } from "../../errors.ts";
import { AscendDevice } from "../../ffi/runtime.ts";
import type { Device } from "../../tensor/device.ts";
import type { Tensor } from "../../tensor/tensor.ts";
import type { DeviceRules } from "../types.ts";
import { deviceSocFamily } from "./device_soc.ts";
import { checkRowNormRules } from "./row_norm_rules.ts";
import { checkGroupNormActRules } from "./soc_group_norm_act.ts";
import {
  describeSoc,
  groupNormBackwardLimits,
  groupNormBackwardMixedPrecision,
  type SocFamily,
  socSupport,
} from "./soc.ts";

function refuse(op: string, argument: string, rule: string): never {
  throw new AclnnError(ACLNN_ERR_PARAM_INVALID, `${op}: ${argument} ${rule}`, { argument });
}

/**
 * The arguments of aclnnGroupNormBackward whose dtype must equal gradOut's off DAV_3510
 * (hicann/ops-nn `aclnn_group_norm_backward.cpp` CheckDtypeValid 156-170). aclnnGroupNorm needs
 * no rule here: it takes no mixed precision on any chip, and its own validation refuses it on
 * every backend (`src/ops/group_norm.ts`).
 */
const GROUP_NORM_BACKWARD_SAME_DTYPE = [
  "input",
  "mean",
  "rstd",
  "gamma",
  "gradInput",
  "gradGamma",
  "gradBeta",
];

/** The SoC-dependent rules of the Ascend backend. */
export const ascendRules: DeviceRules = {
  check(op, device: Device, tensors: Readonly<Record<string, Tensor | undefined>>, scalars = {}) {
    if (!(device instanceof AscendDevice)) return;
    const support = socSupport(op);
    if (!support) return;
    const family = deviceSocFamily(device, op);
    const where = describeSoc(device.socName ?? "(unnamed SoC)", family);
    if (!support.products.has(family.name)) {
      refuse(op, "device", `${device.name} is an ${where}, which ${op} does not support`);
    }
    if (!support.bf16(family)) {
      for (const [name, t] of Object.entries(tensors)) {
        if (t?.dtype === "bfloat16") {
          refuse(
            op,
            name,
            `dtype bfloat16 is not supported by ${op} on ${where} (supported there: float32, ` +
              `float16)`,
          );
        }
      }
    }
    // The rules of the operator's group beyond products and bfloat16 (soc_operators.ts).
    if (support.group === "rowNorm") checkRowNormRules(op, family, where, tensors, scalars);
    if (support.group === "groupNormAct") {
      checkGroupNormActRules(op, family, where, tensors, scalars);
    }
    if (op === "aclnnGroupNormBackward") {
      const gradOut = tensors.gradOut;
      if (gradOut && !groupNormBackwardMixedPrecision(family)) {
        for (const name of GROUP_NORM_BACKWARD_SAME_DTYPE) {
          const t = tensors[name];
          if (t && t.dtype !== gradOut.dtype) {
            refuse(
              op,
              name,
              `dtype ${t.dtype} must equal gradOut dtype ${gradOut.dtype} on ${where} (mixed ` +
                `precision needs the DAV_3510 architecture, e.g. Ascend 950)`,
            );
          }
        }
      }
      const limits = groupNormBackwardLimits(family);
      const { C, group } = scalars;
      if (limits && C !== undefined && group !== undefined && group > 0) {
        if (C / group > limits.maxChannelsPerGroup) {
          refuse(
            op,
            "group",
            `(${group}): C / group = ${
              C / group
            } exceeds ${limits.maxChannelsPerGroup} on ${where}`,
          );
        }
        if (C > limits.maxChannels) {
          refuse(op, "C", `(${C}) exceeds ${limits.maxChannels} on ${where}`);
        }
      }
    }
    // After CANN's own checks: CANN accepts these calls and computes them wrongly.
    if (op === "aclnnGroupNorm" || op === "aclnnGroupNormBackward") {
      checkAtlasTrainingFloat16(op, family, where, tensors);
    }
  },
};

/**
 * Whether aclnnGroupNorm and aclnnGroupNormBackward take float16 data on `family`: not on the
 * Atlas training chips (NpuArch 1001), where the library refuses it (see below). verify:npu
 * reads it too, so that its cases expect the refusal there.
 *
 * @example
 * ```ts
 * import { groupNormTakesFloat16, socFamily } from "@aclnn/norm/ascend";
 * console.log(groupNormTakesFloat16(socFamily("Ascend910A")!)); // false
 * console.log(groupNormTakesFloat16(socFamily("Ascend910B4")!)); // true
 * ```
 */
export function groupNormTakesFloat16(family: SocFamily): boolean {
  return family.npuArch !== 1001;
}

/**
 * Atlas training chips (NpuArch 1001) run float16 GroupNorm through float16 intermediates that
 * overflow on ordinary data, so both operators refuse float16 there:
 * - aclnnGroupNorm casts the group variance to float16 before Rsqrt(var + eps)
 *   (ops-nn `norm/group_norm/op_host/op_api/aclnn_group_norm.cpp` GroupNormOutCastProcess,
 *   RstdProcess): a variance above 65504 gives rstd 0 or 1/sqrt(65504);
 * - aclnnGroupNormBackward takes gradInput from a decomposed BatchNorm backward whose variance is
 *   1/rstd^2 - 1e-5 formed in rstd's dtype (`norm/group_norm_grad/op_host/op_api/
 *   aclnn_group_norm_backward.cpp`; only DAV_2201 and regbase run the GroupNormGrad kernel):
 *   rstd above 256 (a constant group) overflows to NaN.
 */
function checkAtlasTrainingFloat16(
  op: string,
  family: SocFamily,
  where: string,
  tensors: Readonly<Record<string, Tensor | undefined>>,
): void {
  if (groupNormTakesFloat16(family)) return;
  const data = op === "aclnnGroupNorm" ? "input" : "gradOut";
  for (const name of [data, "input", "mean", "rstd"]) {
    if (tensors[name]?.dtype !== "float16") continue;
    refuse(
      op,
      name,
      `dtype float16 is refused on ${where}: CANN forms ${
        op === "aclnnGroupNorm" ? "the group variance" : "1/rstd^2 - 1e-5"
      } in float16 there, which overflows (rstd 0 or NaN) on ordinary data. Fix: pass float32 ` +
        "tensors on this chip (float16 runs as is on the CPU backend and on Atlas A2/A3/950)",
    );
  }
}
