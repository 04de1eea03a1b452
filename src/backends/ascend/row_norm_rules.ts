/**
 * The chip-dependent rules of the LayerNorm / RMSNorm operators beyond products and bfloat16
 * (which rules.ts checks for every operator): what a chip's CANN refuses although the device-
 * independent validation (src/ops/) accepts it, refused before anything is allocated, with the
 * code CANN returns and a message naming the argument and the SoC.
 *
 * @module
 */

import { AclnnError } from "../../errors.ts";
import type { Tensor } from "../../tensor/tensor.ts";
import { rmsNormGradEmptyRows, rmsNormMixedGamma, type SocFamily } from "./soc.ts";

/** ACLNN_ERR_INNER_TILING_ERROR: a generated operator's tiling refused its shapes. */
const TILING_ERROR = 561002;
const PARAM_INVALID = 161002;

function refuse(code: number, op: string, argument: string, rule: string): never {
  throw new AclnnError(code, `${op}: ${argument} ${rule}`, { argument });
}

/**
 * The rules of `op` on `family` (`where` names the SoC for messages). `scalars.rows` and
 * `scalars.cols` are the call's row geometry.
 */
export function checkRowNormRules(
  op: string,
  family: SocFamily,
  where: string,
  tensors: Readonly<Record<string, Tensor | undefined>>,
  scalars: Readonly<Record<string, number>>,
): void {
  if (op === "aclnnRmsNorm" || op === "aclnnRmsNormGrad") {
    const data = tensors.x;
    const gamma = tensors.gamma;
    if (
      data && gamma && !rmsNormMixedGamma(family) && gamma.dtype === "float32" &&
      data.dtype !== "float32"
    ) {
      refuse(
        PARAM_INVALID,
        op,
        "gamma",
        `dtype float32 with x dtype ${data.dtype} is not supported on ${where}: its OpDef ` +
          `configuration pairs ${data.dtype} data with a ${data.dtype} gamma (a float32 gamma ` +
          "with 16-bit data needs Atlas A2/A3 or Ascend 950)",
      );
    }
  }
  if (op === "aclnnRmsNormGrad" && scalars.rows === 0 && scalars.cols > 0) {
    if (!rmsNormGradEmptyRows(family)) {
      refuse(
        TILING_ERROR,
        op,
        "dy",
        `has no rows, which ${op}'s tiling refuses on ${where} ("Parameter dy does not support ` +
          'empty tensor"; only DAV_3510, e.g. Ascend 950, returns a zero dgamma)',
      );
    }
  }
}
