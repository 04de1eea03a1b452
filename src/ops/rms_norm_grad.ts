/**
 * aclnnRmsNormGrad: the gradients of RMSNorm with respect to x and gamma, from the forward's
 * per-row rstd. Per row of N = numel(gamma) elements:
 *
 * ```
 * dx     = rstd * (dy * gamma - x * rstd * sum(dy * gamma * x * rstd) / N)
 * dgamma = sum over rows of dy * x * rstd
 * ```
 *
 * @example
 * ```ts
 * import { rmsNorm, rmsNormGrad, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([4, 8], { seed: 1 });
 * const gamma = Tensor.ones([8]);
 * const { rstd } = rmsNorm({ x, gamma });
 * const { dx, dgamma } = rmsNormGrad({ dy: Tensor.ones([4, 8]), x, rstd, gamma });
 * console.log(dx.shape, dgamma.dtype); // [4, 8] float32
 * ```
 *
 * @module
 */

import type { RmsNormGradPlan, RmsNormGradTensors } from "../backends/mod.ts";
import { rowGeometry } from "../backends/mod.ts";
import { formatShape } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import {
  checkTrailingGamma,
  isTrailing,
  MAX_RANK,
  placeRowNorm,
  TILING_ERROR,
  tilingFailure,
} from "./row_norm_checks.ts";
import { checkRmsDTypes } from "./rms_norm.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnRmsNormGrad";

/** Preallocated outputs of {@linkcode rmsNormGrad} (CANN dxOut, dgammaOut). */
export interface RmsNormGradOut {
  /** Receives dL/dx: x's shape and dtype, any strides. */
  dx?: Tensor | null;
  /** Receives dL/dgamma: gamma's shape, float32. */
  dgamma?: Tensor | null;
}

/** Arguments of {@linkcode rmsNormGrad} (names as in CANN). */
export interface RmsNormGradArgs {
  /** dL/dy: x's shape and dtype. */
  dy: check.MaybeTensor;
  /** x of the forward, rank 1-8 (the docs say 2-8; the tiling, and this package, take 1-D). */
  x: check.MaybeTensor;
  /** Per-row rstd of the forward, float32: x's leading dims (trailing 1s allowed). */
  rstd: check.MaybeTensor;
  /** Scale of the forward: x's trailing dims, x's dtype or float32. */
  gamma: check.MaybeTensor;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: RmsNormGradOut;
}

/** Results of {@linkcode rmsNormGrad}; `using` frees the outputs the call allocated. */
export interface RmsNormGradResult extends Disposable {
  /** dL/dx, x's shape and dtype. */
  dx: Tensor;
  /** dL/dgamma, gamma's shape, float32. */
  dgamma: Tensor;
}

/**
 * Computes the RMSNorm gradients as aclnnRmsNormGrad does, on the CPU or on the NPU the tensors
 * live on.
 *
 * Validation, in the order of CANN's generated operator (opbase individual-op framework, then
 * ops-nn `norm/rms_norm_grad/op_host/rms_norm_grad_tiling.cpp` CheckInputShape4RmsNormGrad and
 * Tiling4RmsNormGrad): 161001 when dy, x, rstd or gamma is missing or `out.dx`/`out.dgamma` is
 * `null`; 161002 when the dtypes are not a row of `rms_norm_grad_def.cpp` (dy, x and dx one of
 * float32/float16/bfloat16, gamma theirs or float32, rstd and dgamma float32); then 561002: x and
 * gamma of 1 to 8 dims, gamma no more dims than x, dy's and dx's dims x's, dgamma's dims
 * gamma's, dy's last dim non-zero (unless every output is empty), rstd x's leading dims (a
 * shorter rstd leaves 1s in x), gamma and dgamma dy's trailing dims, and one rstd value per
 * row. On an NPU the chip's rules apply too (not on Atlas training or Atlas 200I/500 A2; no
 * bfloat16 or float32 gamma with 16-bit data on the Atlas inference series; inputs of no row
 * only on DAV_3510, elsewhere 561002).
 *
 * Without `out`, dx takes x's dtype, shape and memory layout and dgamma is float32 of gamma's
 * shape. No rows give a zero dgamma.
 *
 * @example
 * ```ts
 * import { rmsNormGrad, Tensor } from "@aclnn/norm";
 * // CANN's example (norm/rms_norm_grad/examples): dy = x = 1..32 as [2, 1, 16], rstd [2]
 * const v = Array.from({ length: 32 }, (_, i) => i + 1);
 * const x = Tensor.fromArray(v, [2, 1, 16]);
 * const r = rmsNormGrad({
 *   dy: x, x, rstd: Tensor.fromArray([1, 2], [2]),
 *   gamma: Tensor.fromArray(v.slice(0, 16), [16]),
 * });
 * console.log(r.dx.shape, r.dgamma.toArray()[0]); // [2, 1, 16] 579
 * ```
 */
export function rmsNormGrad(args: RmsNormGradArgs): RmsNormGradResult {
  return call(args);
}

type Output = "dx" | "dgamma";

/** What validation established for one set of argument values. */
type Validated = PlannedCall<Output, RmsNormGradPlan, RmsNormGradTensors>;

const call = defineOperator<RmsNormGradArgs, Output, Validated, RmsNormGradResult>({
  op: OP,
  args: ["dy", "x", "rstd", "gamma"],
  outputs: {
    dx: (v) => Tensor.emptyLike(v.tensors.x, v.tensors.x.dtype, v.device),
    dgamma: (v) => Tensor.empty(v.tensors.gamma.shape, "float32", v.device),
  },
  validate,
  run: (v, o) => v.backend.rmsNormGrad(v.plan, { ...v.tensors, dx: o.dx!, dgamma: o.dgamma! }),
});

function shapes(name: string, t: Tensor, other: string, o: Tensor): void {
  tilingFailure(
    OP,
    TILING_ERROR,
    name,
    `shape ${formatShape(t.shape)} must equal ${other} shape ${formatShape(o.shape)}`,
  );
}

/** CheckInputShape4RmsNormGrad, in its order; `empty`: every output is empty. */
function checkShapes(
  t: { dy: Tensor; x: Tensor; rstd: Tensor; gamma: Tensor; dx?: Tensor; dgamma?: Tensor },
  empty: boolean,
): void {
  const { dy, x, rstd, gamma } = t;
  const dx = t.dx ?? x;
  const dgamma = t.dgamma ?? gamma;
  for (const [name, v] of Object.entries({ x, gamma })) {
    if (v.rank < 1 || v.rank > MAX_RANK) {
      tilingFailure(OP, TILING_ERROR, name, `rank ${v.rank} must be in 1..${MAX_RANK}`);
    }
  }
  const rank = (name: string, v: Tensor, other: string, o: Tensor) => {
    if (v.rank !== o.rank) {
      tilingFailure(OP, TILING_ERROR, name, `rank ${v.rank} must equal ${other} rank ${o.rank}`);
    }
  };
  if (gamma.rank > x.rank) {
    tilingFailure(OP, TILING_ERROR, "gamma", `rank ${gamma.rank} must not exceed x rank ${x.rank}`);
  }
  rank("dy", dy, "x", x);
  rank("dx", dx, "dy", dy);
  rank("dgamma", dgamma, "gamma", gamma);
  if (x.shape.some((d, i) => d !== dy.shape[i])) shapes("dy", dy, "x", x);
  if (dx.shape.some((d, i) => d !== dy.shape[i])) shapes("dx", dx, "dy", dy);
  if (!empty && dy.shape[dy.rank - 1] === 0) {
    tilingFailure(
      OP,
      TILING_ERROR,
      "dy",
      `shape ${formatShape(dy.shape)}: its last dim must not be 0`,
    );
  }
  // CheckRstdShape: rstd is x's leading dims; a shorter rstd leaves dims of 1 in x.
  const lead = x.rank - gamma.rank;
  const compared = Math.min(rstd.rank, lead);
  for (let i = 0; i < compared; i++) {
    if (rstd.shape[i] !== x.shape[i]) {
      tilingFailure(
        OP,
        TILING_ERROR,
        "rstd",
        `shape ${formatShape(rstd.shape)} must equal the first ${compared} dims of x ` +
          formatShape(x.shape),
      );
    }
  }
  for (let i = rstd.rank; i < lead; i++) {
    if (x.shape[i] !== 1) {
      tilingFailure(
        OP,
        TILING_ERROR,
        "x",
        `shape ${formatShape(x.shape)}: dim ${i} must be 1 where rstd ${formatShape(rstd.shape)} ` +
          "has no dim",
      );
    }
  }
  checkTrailingGamma(OP, TILING_ERROR, gamma, "dy", dy);
  if (!isTrailing(dy.shape, dgamma.shape) || dgamma.rank !== gamma.rank) {
    shapes("dgamma", dgamma, "gamma", gamma);
  }
}

function validate(args: RmsNormGradArgs): Validated {
  const dy = check.requireTensor(OP, "dy", args.dy);
  const x = check.requireTensor(OP, "x", args.x);
  const rstd = check.requireTensor(OP, "rstd", args.rstd);
  const gamma = check.requireTensor(OP, "gamma", args.gamma);
  const dx = check.requestedOutput(OP, "dx", args.out, true);
  const dgamma = check.requestedOutput(OP, "dgamma", args.out, true);

  checkRmsDTypes(OP, { dy, dx }, x, gamma, { rstd, dgamma });
  const axis = x.rank - gamma.rank;
  const geometry = rowGeometry(x.shape, Math.max(axis, 0));
  const empty = (dx ? dx.numel : x.numel) === 0 && (dgamma ? dgamma.numel : gamma.numel) === 0;
  checkShapes({ dy, x, rstd, gamma, dx, dgamma }, empty);
  if (!empty && rstd.numel !== geometry.rows) {
    tilingFailure(
      OP,
      TILING_ERROR,
      "rstd",
      `shape ${formatShape(rstd.shape)} must hold one value per row (${geometry.rows} rows)`,
    );
  }

  const scalars = { rows: geometry.rows, cols: empty ? 0 : geometry.cols, axis: geometry.axis };
  const { device, backend } = placeRowNorm(OP, { dx, dgamma }, { dy, x, rstd, gamma }, scalars);
  return {
    device,
    backend,
    plan: { geometry },
    tensors: { dy, x, rstd, gamma },
    given: { dx, dgamma },
  };
}
