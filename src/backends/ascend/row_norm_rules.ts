/**
 * The chip-dependent rules of the LayerNorm / RMSNorm operators beyond products and bfloat16
 * (which rules.ts checks for every operator): what a chip's CANN refuses although the device-
 * independent validation (src/ops/) accepts it, refused before anything is allocated, with the
 * code CANN returns and a message naming the argument and the SoC: LayerNorm's statistics
 * shapes on DAV_3510, RmsNorm's and GemmaRmsNorm's mixed gamma, RmsNormGrad without rows,
 * AddLayerNorm's mixed dtypes and rows of no element.
 *
 * @module
 */

import { AclnnError } from "../../errors.ts";
import { formatShape } from "../../tensor/layout.ts";
import type { Tensor } from "../../tensor/tensor.ts";
import {
  gemmaRmsNormMixedGamma,
  isRegbase,
  rmsNormGradEmptyRows,
  rmsNormMixedGamma,
  type SocFamily,
} from "./soc.ts";
import { addLayerNormEmptyRows, addLayerNormMixedDtypes } from "./soc_fused.ts";

/** ACLNN_ERR_INNER_TILING_ERROR: a generated operator's tiling refused its shapes. */
const TILING_ERROR = 561002;
const PARAM_INVALID = 161002;

function refuse(code: number, op: string, argument: string, rule: string): never {
  throw new AclnnError(code, `${op}: ${argument} ${rule}`, { argument });
}

/**
 * aclnnLayerNorm on DAV_3510 (CheckMeanRstdOutputShape, ops-nn `norm/layer_norm_v4/op_host/
 * op_api/aclnn_layer_norm.cpp:77-121`, called at :312-325): a non-empty mean / rstd must have
 * input's rank, input's dims before the normalized ones and 1 for each normalized dim; given
 * both, their shapes must be equal. Elsewhere CANN checks neither shape (its l0op::ViewCopy
 * does, later: src/ops/layer_norm.ts).
 */
function checkRegbaseStatistics(
  op: string,
  where: string,
  tensors: Readonly<Record<string, Tensor | undefined>>,
  axis: number,
): void {
  const input = tensors.input;
  if (!input) return;
  const want = input.shape.map((d, i) => (i < axis ? d : 1));
  for (const name of ["mean", "rstd"]) {
    const t = tensors[name];
    if (!t || t.numel === 0) continue;
    if (t.rank !== want.length || t.shape.some((d, i) => d !== want[i])) {
      refuse(
        PARAM_INVALID,
        op,
        name,
        `shape ${formatShape(t.shape)} must be ${formatShape(want)} on ${where} (input's dims ` +
          "before the normalized ones, then 1 for each normalized dim)",
      );
    }
  }
  const { mean, rstd } = tensors;
  if (mean && rstd && (mean.rank !== rstd.rank || mean.shape.some((d, i) => d !== rstd.shape[i]))) {
    refuse(
      PARAM_INVALID,
      op,
      "rstd",
      `shape ${formatShape(rstd.shape)} must equal mean's ${formatShape(mean.shape)} on ${where}`,
    );
  }
}

/**
 * The rules of `op` on `family` (`where` names the SoC for messages). `scalars.rows`,
 * `scalars.cols` and `scalars.axis` are the call's row geometry.
 */
export function checkRowNormRules(
  op: string,
  family: SocFamily,
  where: string,
  tensors: Readonly<Record<string, Tensor | undefined>>,
  scalars: Readonly<Record<string, number>>,
): void {
  if (op === "aclnnLayerNorm" && isRegbase(family) && scalars.axis !== undefined) {
    checkRegbaseStatistics(op, where, tensors, scalars.axis);
  }
  const gemma = op === "aclnnGemmaRmsNorm";
  if (op === "aclnnRmsNorm" || op === "aclnnRmsNormGrad" || gemma) {
    const data = tensors.x;
    const gamma = tensors.gamma;
    const mixed = gemma ? gemmaRmsNormMixedGamma(family) : rmsNormMixedGamma(family);
    if (data && gamma && !mixed && gamma.dtype === "float32" && data.dtype !== "float32") {
      refuse(
        PARAM_INVALID,
        op,
        "gamma",
        `dtype float32 with x dtype ${data.dtype} is not supported on ${where}: its OpDef ` +
          `configuration pairs ${data.dtype} data with a ${data.dtype} gamma (a float32 gamma ` +
          `with 16-bit data needs ${gemma ? "Ascend 950" : "Atlas A2/A3 or Ascend 950"})`,
      );
    }
  }
  if (op === "aclnnAddLayerNorm") checkAddLayerNorm(op, family, where, tensors, scalars);
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

/**
 * aclnnAddLayerNorm off Ascend 950: the Atlas inference series' OpDef rows are all FLOAT16 or
 * all FLOAT (161002); the A2/310P tiling refuses rows of no element (561002).
 */
function checkAddLayerNorm(
  op: string,
  family: SocFamily,
  where: string,
  tensors: Readonly<Record<string, Tensor | undefined>>,
  scalars: Readonly<Record<string, number>>,
): void {
  const x1 = tensors.x1;
  if (x1 && !addLayerNormMixedDtypes(family)) {
    for (const name of ["x2", "gamma", "beta", "bias", "y", "x"]) {
      const t = tensors[name];
      if (t && t.dtype !== x1.dtype) {
        refuse(
          PARAM_INVALID,
          op,
          name,
          `dtype ${t.dtype} with x1 dtype ${x1.dtype} is not supported on ${where}: its OpDef ` +
            "rows are all float16 or all float32",
        );
      }
    }
  }
  if (scalars.rows > 0 && scalars.cols === 0 && !addLayerNormEmptyRows(family)) {
    refuse(
      TILING_ERROR,
      op,
      "gamma",
      `is empty (rows of no element), which ${op}'s tiling refuses on ${where} (only DAV_3510, ` +
        "e.g. Ascend 950, fills mean and rstd with NaN)",
    );
  }
}
