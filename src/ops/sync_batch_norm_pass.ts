/**
 * What the SyncBatchNorm passes (sync_batch_norm.ts) share around their collective call: a
 * bounded wait for its result, the check of what it returned, and the tensors a pass owns, so
 * that a pass that fails (the collective threw, timed out or returned a wrong shape; a later
 * operator failed) frees everything it allocated.
 *
 * @module
 */

import { ACLNN_ERR_RUNTIME_ERROR, AclnnError } from "../errors.ts";
import { formatShape } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import * as check from "./validate.ts";

/**
 * Waits for a collective's result, at most `ms`: a rank that never comes (or a transport that
 * hangs) becomes an error (361001) instead of a hang, and the signal `start` was given is
 * aborted, so that the collective can stop waiting too.
 */
export async function within<T>(
  op: string,
  name: string,
  ms: number,
  start: (signal: AbortSignal) => T | Promise<T>,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const controller = new AbortController();
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        controller.abort();
        reject(
          new AclnnError(
            ACLNN_ERR_RUNTIME_ERROR,
            `${op}: ${name} did not complete within ${ms} ms (a rank that never joined, or a ` +
              "stalled transport)",
            { argument: name },
          ),
        );
      },
      ms,
    );
  });
  try {
    return await Promise.race([start(controller.signal), expired]);
  } finally {
    clearTimeout(timer);
  }
}

export function checkCollectiveResult(
  op: string,
  name: string,
  value: unknown,
  accepts: (t: Tensor) => boolean,
  expected: string,
): Tensor {
  if (!(value instanceof Tensor)) {
    check.invalid(op, name, `must return a Tensor (got ${typeof value})`);
  }
  if (!accepts(value)) {
    check.invalid(op, name, `returned shape ${formatShape(value.shape)}, expected ${expected}`);
  }
  return value;
}

/**
 * The tensors one pass allocates: scratch (the packed statistics, the collective's result),
 * freed when the pass ends however it ends, and results, freed too unless it succeeds. Frees
 * happen after the queued work that reads the tensors (the device defers them). A single-rank
 * collective may return a view of `packed` itself: releasing twice is harmless.
 */
export class PassTensors {
  readonly #scratch: Tensor[] = [];
  readonly #results: Tensor[] = [];
  #succeeded = false;

  /** Records `t` as scratch. */
  scratch(t: Tensor): Tensor {
    this.#scratch.push(t);
    return t;
  }

  /** A collective's result is handed over (the pass frees it), whatever its shape. */
  handedOver<T>(value: T): T {
    if (value instanceof Tensor) this.#scratch.push(value);
    return value;
  }

  /** Records `t` as a result of the pass, freed if the pass fails. */
  result(t: Tensor): Tensor {
    this.#results.push(t);
    return t;
  }

  /** The pass returns its results: they are the caller's now. */
  succeeded(): void {
    this.#succeeded = true;
  }

  /** Frees the scratch, and the results unless the pass succeeded. */
  end(): void {
    for (const t of this.#scratch) t.dispose();
    if (!this.#succeeded) { for (const t of this.#results) t.dispose(); }
  }
}
