/**
 * A module's forward whose kernels are still queued on an accelerator, and what a failed
 * forward tells: {@linkcode QueuedForward} remembers the first such forward of a window until the
 * device says what became of its work (done, or lost to a kernel fault found at a later
 * synchronisation), and then undoes what the forwards since changed.
 *
 * @module
 */

import type { AcceleratorDevice, Device } from "../tensor/device.ts";
import { ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError } from "../errors.ts";

/** The forward remembered: where, the mark of its work, and how to put back what it changed. */
interface PendingForward {
  readonly device: AcceleratorDevice;
  readonly mark: number;
  readonly undo: () => void;
}

/**
 * The queued forward of one module (module doc). Forwards queued in one window of the device
 * share its fate: the first one's undo covers them all.
 */
export class QueuedForward {
  #pending: PendingForward | undefined;

  /**
   * Remembers a forward whose output is on `device` (nothing for the CPU, which runs at once,
   * nor when a forward of the same window is remembered already); `undo` puts back the state
   * it changed.
   */
  remember(device: Device, undo: () => void): void {
    if (device === "cpu") return;
    const mark = device.workMark?.() ?? -1;
    if (mark >= 0) this.#pending ??= { device, mark, undo };
  }

  /**
   * Asks the device what became of the remembered forward's work: still queued, it stays
   * remembered and this returns null; done, it is forgotten (null); lost to a fault, its undo
   * runs and this returns what failed, for the message of a refused backward.
   */
  settle(): string | null {
    const p = this.#pending;
    if (p === undefined) return null;
    const outcome = p.device.workOutcome?.(p.mark) ?? { state: "done" };
    if (outcome.state === "queued") return null;
    this.#pending = undefined;
    if (outcome.state !== "failed") return null;
    p.undo();
    return `its kernels failed on ${p.device.name}: the synchronisation returned ${outcome.code}`;
  }

  /**
   * Forgets the remembered forward (after the state it changed was replaced: loadStateDict,
   * resetRunningStats), so that a fault found later undoes nothing.
   */
  forget(): void {
    this.#pending = undefined;
  }
}

/**
 * Whether `error` refused a forward before it ran anything (an argument check: 161001/161002);
 * such a forward leaves the previous one for its backward.
 */
export function refusedByChecks(error: unknown): boolean {
  return error instanceof AclnnError &&
    (error.code === ACLNN_ERR_PARAM_NULLPTR || error.code === ACLNN_ERR_PARAM_INVALID);
}

/** What failed, for the message of a refused backward: `AclError 507015`, or the error's name. */
export function failureOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === "number" ? `${error.name} ${code}` : error.name;
}
