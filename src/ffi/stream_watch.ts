/**
 * Deadlines of the work queued on a device's stream. A collective queued with a deadline (an
 * HCCL process group's `timeoutMs`) makes the next synchronisation wait at most that long: it
 * runs on a waiting thread (stream_waiter.ts), and when the deadline passes first the caller gets
 * an HcclError HCCL_E_TIMEOUT naming the collective, its deadline and HCCL's own exec timeout,
 * instead of waiting for HCCL to give up (68 s steps off Atlas A2/A3, whatever was asked). The
 * stream stays busy until HCCL gives up: meanwhile the device is held, every call on it fails at
 * once naming the collective, and closing it only forgets it (its memory and stream go with the
 * process). Once the stream has drained, the device works again.
 *
 * @module
 */

import { HCCL_E_TIMEOUT, HcclError } from "../errors.ts";
import { StreamWaiter, type WaiterSymbols, type WaitOutcome } from "./stream_waiter.ts";

/** A queued call whose synchronisation has a deadline. */
export interface WatchedCall {
  /** The call, e.g. `HcclAllGather #3 (rank 0 of 2)`. */
  readonly what: string;
  /** How long a synchronisation waits for it, in milliseconds. */
  readonly timeoutMs: number;
  /** What the native layer would wait instead, e.g. `68 s on Ascend950PR_9599 (...)`. */
  readonly nativeTimeout: string;
}

/** What a synchronisation needs of its device. */
export interface WatchedStream {
  /** `npu:<id>`. */
  readonly name: string;
  /** The device's context (null: unknown; then the calling thread waits). */
  readonly context: Deno.PointerValue;
  /** The device's stream. */
  readonly stream: Deno.PointerValue;
  /** aclrtSynchronizeStream on the calling thread, and the runtime's text when it fails. */
  syncHere(): WaitOutcome;
  /** The runtime library's path and the waiting thread's symbols. */
  waiterLibrary(): { path: string; symbols: WaiterSymbols } | null;
}

/** The deadlines of one device's stream, and whether a missed one still holds it. */
export class StreamWatch {
  /** The tightest deadline among the calls queued since the last synchronisation. */
  #pending: WatchedCall | null = null;
  /** The call whose deadline passed while the stream still runs it. */
  #held: WatchedCall | null = null;
  #waiter: StreamWaiter | null | undefined = undefined;

  /** Records a queued call with a deadline. */
  note(call: WatchedCall): void {
    if (this.#pending === null || call.timeoutMs < this.#pending.timeoutMs) this.#pending = call;
  }

  /** Whether a synchronisation that missed its deadline still runs (the stream is busy). */
  get held(): boolean {
    return this.#held !== null && this.#waiter?.busy === true;
  }

  /**
   * After a missed deadline: the outcome of the synchronisation once it has returned (the
   * caller settles the device's bookkeeping with it), or undefined when none is outstanding.
   * Throws {@linkcode heldError} while it still runs.
   */
  takeLate(what: string, device: string): WaitOutcome | undefined {
    if (this.#held === null) return undefined;
    const outcome = this.#waiter!.wait(0);
    if (outcome === undefined) throw this.heldError(what, device);
    this.#held = null;
    return outcome;
  }

  /** The error of a call made while the stream is held. */
  heldError(what: string, device: string): HcclError {
    const call = this.#held!;
    return new HcclError(
      HCCL_E_TIMEOUT,
      `${what}: ${device}'s stream is still running ${call.what}, which missed its ` +
        `${call.timeoutMs} ms deadline; HCCL gives up on it after ${call.nativeTimeout}; ` +
        "close the process group and the device, or wait",
    );
  }

  /**
   * Synchronises the stream: on the calling thread, or, when a queued call has a deadline, on
   * the waiting thread for at most that long. Returns the synchronisation's outcome; throws
   * HCCL_E_TIMEOUT when the deadline passes first (the device is then held).
   */
  synchronize(s: WatchedStream): WaitOutcome {
    const call = this.#pending;
    this.#pending = null;
    const waiter = call === null || s.context === null ? null : this.#waiterFor(s);
    if (waiter === null) return s.syncHere();
    waiter.begin(s.context, s.stream);
    const outcome = waiter.wait(call!.timeoutMs);
    if (outcome !== undefined) return outcome;
    this.#held = call;
    throw new HcclError(
      HCCL_E_TIMEOUT,
      `${call!.what} did not complete within timeoutMs ${call!.timeoutMs} ms on ${s.name}: a ` +
        `rank has not joined it; HCCL itself waits ${call!.nativeTimeout}, and the stream stays ` +
        "busy until then: calls on the device fail meanwhile",
    );
  }

  /** The waiting thread, started on first use (null: it cannot start; wait on this thread). */
  #waiterFor(s: WatchedStream): StreamWaiter | null {
    if (this.#waiter === undefined) {
      const library = s.waiterLibrary();
      this.#waiter = library === null ? null : StreamWaiter.start(library.path, library.symbols);
    }
    return this.#waiter;
  }

  /** Ends the waiting thread (the device closes). */
  close(): void {
    this.#waiter?.close();
    this.#waiter = null;
    this.#pending = null;
  }
}
