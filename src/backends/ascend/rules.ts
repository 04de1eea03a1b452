/**
 * The Ascend backend's argument rules that depend on the chip: checked before anything is
 * allocated, with 161002 and a message that names the argument, the SoC and the rule, so that
 * a call the chip would refuse fails the same way on every path (and before any device work).
 * The rules themselves live in {@linkcode ./soc.ts}, shared with the software CANN.
 *
 * @module
 */

import { ACLNN_ERR_PARAM_INVALID, AclnnError } from "../../ffi/errors.ts";
import { AscendDevice } from "../../ffi/runtime.ts";
import type { Device } from "../../tensor/device.ts";
import type { Tensor } from "../../tensor/tensor.ts";
import type { DeviceRules } from "../types.ts";
import {
  bf16Allowed,
  describeSoc,
  groupNormBackwardLimits,
  groupNormBackwardMixedPrecision,
  operatorSupported,
  SOC_OPERATORS,
  socFamily,
  type SocOperator,
} from "./soc.ts";

function refuse(op: string, argument: string, rule: string): never {
  throw new AclnnError(ACLNN_ERR_PARAM_INVALID, `${op}: ${argument} ${rule}`, { argument });
}

function isSocOperator(op: string): op is SocOperator {
  return (SOC_OPERATORS as readonly string[]).includes(op);
}

/** The arguments of aclnnGroupNormBackward whose dtype must equal gradOut's off DAV_3510. */
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
    if (!(device instanceof AscendDevice) || !isSocOperator(op)) return;
    const socName = device.socName;
    const family = socFamily(socName);
    // An SoC this package does not know: its own library decides (and its message reaches
    // the caller as the AclnnError's nativeMessage).
    if (!family || socName === null) return;
    const where = describeSoc(socName, family);
    if (!operatorSupported(op, family)) {
      refuse(op, "device", `${device.name} is an ${where}, which ${op} does not support`);
    }
    if (!bf16Allowed(op, family)) {
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
  },
};
