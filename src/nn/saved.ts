/**
 * What a module's forward keeps for its backward, and the module lifecycle errors.
 *
 * A forward replaces what the previous forward kept (its saved statistics are freed then); a
 * backward uses it once and frees it, as PyTorch frees the graph after `backward()`. A
 * backward with nothing saved is an error that names the rule: a module never falls back to
 * mean 0 and invstd 1, which is what aclnnBatchNormBackward substitutes for missing saved
 * statistics (hicann/ops-nn e5c3fa9,
 * norm/batch_norm_grad_v3/op_host/op_api/aclnn_batch_norm_backward.cpp 498-504: FillScalar(0)
 * for saveMean, FillScalar(1) for saveInvstd).
 *
 * A forward that failed leaves nothing saved, and the next backward names the failure: one that
 * threw (not one its checks refused: that one ran nothing and leaves the previous forward), or
 * one whose kernels failed on the device after it returned (a fault that surfaced when its
 * output was read, AclError 507015), which a module learns from its device.
 *
 * Saved tensors are the module's: they are kept out of `tidy` scopes (a forward inside
 * `tidy` can be followed by a backward outside it) and freed by the module.
 *
 * @module
 */

import { ACLNN_ERR_PARAM_INVALID, AclnnError } from "../errors.ts";
import { checkShape, requireTensor } from "../ops/validate.ts";
import { keep } from "../tensor/scope.ts";
import type { Tensor } from "../tensor/tensor.ts";

/** What a mean-and-rstd norm's forward keeps for its backward: its input and its statistics. */
export interface MeanRstdSaved {
  /** The forward's input (by reference). */
  readonly input: Tensor;
  /** The statistics' mean. */
  readonly mean: Tensor;
  /** The statistics' 1 / sqrt(var + eps). */
  readonly rstd: Tensor;
}

/**
 * The gradients a module's `backward` returns. `using` (or `[Symbol.dispose]()`) frees them.
 * gradWeight and gradBias are null when the module has no affine parameters.
 */
export interface NormGradients extends Disposable {
  /** dL/dinput: the input's shape and dtype. */
  gradInput: Tensor;
  /** dL/dweight, `[C]` in the module's dtype; null without affine parameters. */
  gradWeight: Tensor | null;
  /** dL/dbias, `[C]` in the module's dtype; null without affine parameters. */
  gradBias: Tensor | null;
}

/** Why nothing is saved now. */
type Empty = "never" | "used" | "reset" | "failed";

/** The state one forward hands to its backward (module doc). */
export class SavedForward<T> {
  #value: T | undefined;
  #owned: readonly Tensor[] = [];
  #empty: Empty = "never";
  /** What failed, when the last forward did (e.g. `AclError 507015`). */
  #failure = "";

  /** Replaces what the last forward kept (freeing its tensors); `owned` become the module's. */
  save(value: T, owned: readonly Tensor[]): void {
    for (const t of owned) keep(t);
    this.#release();
    this.#value = value;
    this.#owned = owned;
  }

  /** What the last forward kept; an AclnnError 161002 naming the rule when nothing is. */
  use(op: string): T {
    if (this.#value !== undefined) return this.#value;
    const why = {
      never: "backward needs a forward first: call forward(input), then backward(gradOut)",
      used: "the last forward was already used by a backward (one backward per forward, as " +
        "PyTorch frees the graph): call forward(input) again",
      reset: "loadStateDict replaced the module's state after the last forward (PyTorch's " +
        "backward would fail there too): call forward(input) again",
      failed: `the last forward failed (${this.#failure}), so nothing it computed can be ` +
        "differentiated: call forward(input) again",
    }[this.#empty];
    throw new AclnnError(
      ACLNN_ERR_PARAM_INVALID,
      `${op}: ${why}. A module never runs backward without its forward's statistics (CANN ` +
        "would take mean 0 and invstd 1)",
      { argument: "forward" },
    );
  }

  /**
   * Frees what the last forward kept: after its backward ("used"), on a state change
   * ("reset"), or when that forward failed ("failed", with what failed: a later backward names
   * it, even when the forward's work was used before its failure was known).
   */
  clear(why: Exclude<Empty, "never">, failure = ""): void {
    if (why === "failed") {
      this.#release();
      this.#empty = why;
      this.#failure = failure;
      return;
    }
    if (this.#value === undefined) return;
    this.#release();
    this.#empty = why;
  }

  #release(): void {
    for (const t of this.#owned) t.dispose();
    this.#owned = [];
    this.#value = undefined;
  }
}

/** Throws the error of a call on a disposed module (161002). */
export function disposedModule(op: string): never {
  throw new AclnnError(
    ACLNN_ERR_PARAM_INVALID,
    `${op}: the module was disposed (its parameters and statistics were freed)`,
    { argument: "module" },
  );
}

/**
 * The gradOut of a backward: a Tensor of the forward's input shape (161001 when missing,
 * 161002 otherwise), as autograd requires of the gradient of an output.
 */
export function checkGradOut(op: string, gradOut: unknown, input: Tensor): Tensor {
  const dy = requireTensor(op, "gradOut", gradOut);
  checkShape(op, "gradOut", dy, input.shape, "the forward's input");
  return dy;
}
