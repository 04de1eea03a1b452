/**
 * The one place where this package's `saveInvstd` (always 1/sqrt(var + eps), as in PyTorch and
 * on the CPU backend) meets a chip that stores the batch variance in that slot instead. On such
 * SoCs (see {@linkcode batchNormSavesVariance}) aclnnBatchNorm writes Var(x) into saveInvstd
 * and aclnnBatchNormBackward reads that slot as Var(x), adding eps itself; both directions are
 * converted here.
 *
 * The conversion is done on the host: the tensors are per-channel (`[C]`), so the cost is a
 * stream synchronisation and two copies of C values.
 *
 * @module
 */

import type { AscendDevice } from "../../ffi/runtime.ts";
import { Tensor } from "../../tensor/tensor.ts";
import { deviceSocFamily } from "./device_soc.ts";
import { batchNormSavesVariance } from "./soc.ts";

/**
 * After aclnnBatchNorm in training mode: on a SoC that wrote Var(x) into `saveInvstd`,
 * replace it in place by 1/sqrt(Var(x) + eps).
 */
export function savedToInvstd(device: AscendDevice, saveInvstd: Tensor, eps: number): void {
  if (saveInvstd.numel === 0) return;
  if (!batchNormSavesVariance(deviceSocFamily(device, "aclnnBatchNorm"))) return;
  const variance = saveInvstd.toFloat64Array();
  saveInvstd.copy_(variance.map((v) => 1 / Math.sqrt(v + eps)));
}

/** A device tensor made for one call, and how to free it. */
export interface ScratchTensor {
  /** The tensor to pass in the call. */
  readonly tensor: Tensor;
  /** Frees its device memory (after the queued call has used it). */
  release(): void;
}

/**
 * Before aclnnBatchNormBackward or aclnnFastBatchNormBackward (`op`) in training mode: on a SoC
 * that reads the saveInvstd slot as Var(x) (both run BatchNormGradV3 / BNTrainingReduceGrad off
 * DAV_3510, whose `batch_variance` input that slot is), a scratch tensor holding Var(x) = 1/invstd^2 - eps (the chip adds eps back, so the
 * invstd it uses is the caller's). Undefined when the chip reads invstd.
 */
export function invstdToSaved(
  device: AscendDevice,
  saveInvstd: Tensor | undefined,
  channels: number,
  eps: number,
  op: "aclnnBatchNormBackward" | "aclnnFastBatchNormBackward" = "aclnnBatchNormBackward",
): ScratchTensor | undefined {
  if (saveInvstd?.numel === 0) return undefined;
  if (!batchNormSavesVariance(deviceSocFamily(device, op))) return undefined;
  // Absent, saveInvstd means invstd = 1 here; CANN would fill its slot with 1 and read that as
  // a variance (1/sqrt(1 + eps)), so pass the variance of invstd = 1 explicitly.
  const invstd = saveInvstd?.toFloat64Array() ?? new Float64Array(channels).fill(1);
  const variance = invstd.map((v) => 1 / (v * v) - eps);
  const shape = saveInvstd?.shape ?? [channels];
  // Always float32: the variance rounded to a 16-bit saveInvstd dtype would no longer give back
  // the caller's invstd. These chips take any listed dtype for each per-channel tensor and cast
  // it to float (ops-nn aclnn_batch_norm_backward.cpp CheckOtherDtypeValid, ResizeFrom1D; the
  // same-dtype rules are regbase-only, and regbase chips read invstd, not this scratch).
  const tensor = Tensor.fromArray(variance, shape, "float32").to(device);
  return { tensor, release: () => tensor.dispose() };
}
