/**
 * Deferred device errors. Work queued on a stream fails when the stream runs it, not when it is
 * launched: an AI Core exception (507015) or a collective that timed out (507048) is returned by
 * the next synchronisation, which may be made by an unrelated call (reading another tensor,
 * freeing memory). So each device keeps the calls queued since its last synchronisation (the
 * {@linkcode LaunchLog}), and such an error names the call that failed, when the runtime's text
 * tells which one, else the calls it may have been, and how to see it at that call:
 * `ASCEND_LAUNCH_BLOCKING=1` (torch_npu's switch, read when a device opens) synchronises after
 * every launch, so each call reports its own failure.
 *
 * @module
 */

import { nativeSummary } from "../errors.ts";
import { grantedEnv } from "../tensor/env.ts";

/** The environment variable that makes every launch synchronise (torch_npu's switch). */
export const LAUNCH_BLOCKING_ENV = "ASCEND_LAUNCH_BLOCKING";

/**
 * Whether `ASCEND_LAUNCH_BLOCKING` asks for blocking launches (1, true, yes, on). Read without
 * ever prompting: unset or not granted by `--allow-env` counts as off.
 */
export function launchBlockingFromEnv(): boolean {
  const value = grantedEnv(LAUNCH_BLOCKING_ENV);
  return value !== undefined && /^(1|true|yes|on)$/i.test(value.trim());
}

/** The calls queued in one synchronisation window: their numbers start at `first`. */
export interface LaunchWindow {
  /** The number of the window's first call on its device (calls are numbered from 1). */
  readonly first: number;
  /** The operator (or collective) of each call, in launch order. */
  readonly ops: readonly string[];
}

/** Calls launched on one device: a count, and the operators queued since the last sync. */
export class LaunchLog {
  /** Calls launched on the device so far (the last one's number). */
  count = 0;
  #ops: string[] = [];

  /** Records a launch of `op`; returns its call number. */
  record(op: string): number {
    this.#ops.push(op);
    return ++this.count;
  }

  /** The calls queued since the last synchronisation, forgotten here (the stream is drained). */
  take(): LaunchWindow {
    const ops = this.#ops;
    this.#ops = [];
    return { first: this.count - ops.length + 1, ops };
  }
}

/** Whether `text` names `op` as a whole word (aclnnLayerNorm is not aclnnLayerNormBackward). */
function names(text: string, op: string): boolean {
  for (let at = text.indexOf(op); at >= 0; at = text.indexOf(op, at + 1)) {
    const next = text.charCodeAt(at + op.length);
    if (
      !(next >= 48 && next <= 57) && !(next >= 65 && next <= 90) && !(next >= 97 && next <= 122)
    ) {
      return true;
    }
  }
  return false;
}

function callList(numbers: readonly number[]): string {
  const shown = numbers.slice(0, 4).map((n) => `#${n}`).join(", ");
  return numbers.length > 4 ? `${shown}, ... #${numbers.at(-1)}` : shown;
}

/**
 * Which call of `window` failed, as words: the one call the runtime's text names, else the
 * calls of the operator it names, else every call of the window.
 */
export function culprit(window: LaunchWindow, nativeMessage: string | undefined): string {
  const { first, ops } = window;
  if (ops.length === 0) return "work queued on the stream";
  const named = new Set(
    ops.filter((op) => nativeMessage !== undefined && names(nativeMessage, op)),
  );
  const calls: number[] = [];
  ops.forEach((op, i) => {
    if (named.size === 0 || named.has(op)) calls.push(first + i);
  });
  if (calls.length === 1) return `${ops[calls[0] - first]} (call #${calls[0]})`;
  const kinds = [...new Set(calls.map((n) => ops[n - first]))];
  if (kinds.length === 1) return `${kinds[0]} (one of calls ${callList(calls)})`;
  return `one of the ${calls.length} calls queued since the last synchronisation ` +
    `(${callList(calls)}: ${kinds.slice(0, 4).join(", ")}${kinds.length > 4 ? ", ..." : ""})`;
}

/**
 * The one-line message of a synchronisation that reported a failure of queued work: the call
 * that failed, the runtime's first line, and (when launches do not block) the switch that
 * reports it at its call.
 */
export function deviceFailureMessage(
  device: string,
  window: LaunchWindow,
  nativeMessage: string | undefined,
  blocking: boolean,
): string {
  const summary = nativeSummary(nativeMessage);
  const sync = `aclrtSynchronizeStream(${device}) failed${summary ? `: ${summary}` : ""}`;
  const who = culprit(window, nativeMessage);
  if (blocking) return `${who} failed on ${device}: ${sync}`;
  return `${who} failed on ${device} after it returned (${sync}); set ${LAUNCH_BLOCKING_ENV}=1 ` +
    "to see it at the call that failed";
}
