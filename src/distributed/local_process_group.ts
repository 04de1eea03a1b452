/**
 * `createLocalProcessGroup(W)`: W ranks inside one process, for tests and demos of
 * SyncBatchNorm. Every collective call of a rank is one step of that rank's sequence; step k
 * of every rank forms round k, which completes when all W ranks have joined it. A round checks
 * that every rank made the same call (the same collective, the same composition step, the same
 * shape): a rank out of order is an error for every rank of the round, never silently wrong
 * means. A round that does not complete within the timeout fails for the ranks waiting in it,
 * naming the ranks that never came. A rank that stops waiting (its call's `signal` aborts: the
 * composition's own `timeoutMs` passed) fails the round at once for the others, and the round's
 * timer ends with it: no timer of a round that cannot complete keeps the process alive.
 *
 * @module
 */

import { ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_RUNTIME_ERROR, AclnnError } from "../errors.ts";
import { formatShape } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import type { CollectiveCall, SyncBatchNormCollectives } from "../ops/sync_batch_norm.ts";

const OP = "createLocalProcessGroup";

/** Options of {@linkcode createLocalProcessGroup}. */
export interface LocalProcessGroupOptions {
  /** Milliseconds a round waits for every rank before failing. Default 60000. */
  timeoutMs?: number;
}

type Kind = "allGather" | "allReduce";

interface Arrival {
  readonly kind: Kind;
  readonly call: CollectiveCall | undefined;
  readonly tensor: Tensor;
}

interface Round {
  readonly index: number;
  readonly arrivals: (Arrival | undefined)[];
  arrived: number;
  readonly done: PromiseWithResolvers<Tensor[]>;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Removes the abort listeners of the ranks' signals (when the round ends). */
  readonly cleanups: (() => void)[];
}

function describe(a: Arrival): string {
  const what = a.call ? ` (${a.call.op} ${a.call.payload})` : "";
  return `${a.kind}${what} of shape ${formatShape(a.tensor.shape)}`;
}

/** The per-round matching and combination of the ranks' contributions. */
class Rounds {
  readonly #worldSize: number;
  readonly #timeoutMs: number;
  readonly #rounds = new Map<number, Round>();
  readonly #next: number[];

  constructor(worldSize: number, timeoutMs: number) {
    this.#worldSize = worldSize;
    this.#timeoutMs = timeoutMs;
    this.#next = new Array(worldSize).fill(0);
  }

  async contribute(rank: number, arrival: Arrival): Promise<Tensor> {
    const index = this.#next[rank]++;
    const signal = arrival.call?.signal;
    if (signal?.aborted) throw this.#withdrawn(index, rank);
    let round = this.#rounds.get(index);
    if (!round) {
      round = {
        index,
        arrivals: new Array(this.#worldSize),
        arrived: 0,
        done: Promise.withResolvers<Tensor[]>(),
        timer: undefined,
        cleanups: [],
      };
      const r = round;
      r.timer = setTimeout(() => this.#expire(r), this.#timeoutMs);
      this.#rounds.set(index, round);
    }
    round.arrivals[rank] = arrival;
    round.arrived++;
    if (signal) {
      const r = round;
      const onAbort = () => this.#end(r, this.#withdrawn(index, rank));
      signal.addEventListener("abort", onAbort, { once: true });
      round.cleanups.push(() => signal.removeEventListener("abort", onAbort));
    }
    if (round.arrived === this.#worldSize) {
      this.#close(round);
      try {
        round.done.resolve(this.#finish(round));
      } catch (e) {
        round.done.reject(e);
      }
    }
    return (await round.done.promise)[rank];
  }

  /** Takes `round` out of the group: its timer and the listeners of its ranks' signals end. */
  #close(round: Round): void {
    clearTimeout(round.timer);
    for (const cleanup of round.cleanups.splice(0)) cleanup();
    if (this.#rounds.get(round.index) === round) this.#rounds.delete(round.index);
  }

  /** Fails `round` (once) for every rank waiting in it. */
  #end(round: Round, error: AclnnError): void {
    if (this.#rounds.get(round.index) !== round) return;
    this.#close(round);
    round.done.reject(error);
  }

  #expire(round: Round): void {
    // A plain loop: the arrivals array is sparse, and flatMap/forEach skip its holes.
    const missing: number[] = [];
    for (let r = 0; r < this.#worldSize; r++) if (!round.arrivals[r]) missing.push(r);
    this.#end(
      round,
      new AclnnError(
        ACLNN_ERR_RUNTIME_ERROR,
        `${OP}: round ${round.index} did not complete within ${this.#timeoutMs} ms: rank(s) ` +
          `${missing.join(", ")} of ${this.#worldSize} never joined it`,
      ),
    );
  }

  /** The error of a round that rank `rank` stopped waiting for (its call's signal aborted). */
  #withdrawn(index: number, rank: number): AclnnError {
    return new AclnnError(
      ACLNN_ERR_RUNTIME_ERROR,
      `${OP}: round ${index} failed: rank ${rank} of ${this.#worldSize} stopped waiting for it ` +
        "(its call's signal was aborted: the composition's timeoutMs passed)",
    );
  }

  #finish(round: Round): Tensor[] {
    const arrivals = round.arrivals as Arrival[];
    const first = arrivals[0];
    for (let r = 1; r < arrivals.length; r++) {
      const a = arrivals[r];
      const sameCall = a.kind === first.kind && a.call?.op === first.call?.op &&
        a.call?.payload === first.call?.payload;
      const sameShape = a.tensor.shape.length === first.tensor.shape.length &&
        a.tensor.shape.every((d, i) => d === first.tensor.shape[i]);
      if (!sameCall || !sameShape) {
        throw new AclnnError(
          ACLNN_ERR_PARAM_INVALID,
          `${OP}: ranks are out of step in round ${round.index}: rank 0 made ${
            describe(first)
          }, rank ${r} made ${describe(a)}`,
          { argument: "rank" },
        );
      }
    }
    const parts = arrivals.map((a) => a.tensor.toFloat64Array());
    const size = parts[0].length;
    let values: Float64Array;
    let shape: number[];
    if (first.kind === "allGather") {
      values = new Float64Array(size * parts.length);
      parts.forEach((p, r) => values.set(p, r * size));
      shape = [parts.length, ...first.tensor.shape];
    } else {
      values = new Float64Array(size);
      for (const p of parts) for (let i = 0; i < size; i++) values[i] += p[i];
      shape = [...first.tensor.shape];
    }
    return arrivals.map(({ tensor }) => {
      const host = Tensor.fromArray(values, shape, tensor.dtype);
      return tensor.device === "cpu" ? host : host.to(tensor.device);
    });
  }
}

/**
 * Simulates a process group of `worldSize` ranks inside one process: returns one
 * {@linkcode SyncBatchNormCollectives} per rank, where `allGather` stacks the ranks' tensors
 * (`[W, ...shape]`) and `allReduce` sums them. A call resolves once every rank has made its
 * matching call, so run the ranks concurrently (e.g. `Promise.all`). Each rank's calls are
 * matched by their order: a rank whose k-th call differs from another rank's k-th call (another
 * collective, another step, another shape) fails every rank of that round with 161002, and a
 * round some rank never joins fails after `timeoutMs` with 361001 naming it. A rank whose call's
 * `signal` aborts (the composition's own `timeoutMs` passed) fails its round at once for every
 * rank in it, with 361001 naming it, and the round's timer ends. Each rank receives its own copy,
 * on its device.
 *
 * @example
 * ```ts
 * import { createLocalProcessGroup, Tensor } from "@aclnn/norm";
 * const [a, b] = createLocalProcessGroup(2);
 * const call = { op: "example", payload: "[x]" };
 * const [sa, sb] = await Promise.all([
 *   a.allReduce(Tensor.fromArray([1, 2], [2]), call),
 *   b.allReduce(Tensor.fromArray([10, 20], [2]), call),
 * ]);
 * console.log(sa.toArray(), sb.toArray()); // [11, 22] [11, 22]
 * ```
 */
export function createLocalProcessGroup(
  worldSize: number,
  options: LocalProcessGroupOptions = {},
): SyncBatchNormCollectives[] {
  if (!Number.isSafeInteger(worldSize) || worldSize < 1) {
    throw new RangeError(`${OP}: worldSize ${worldSize} must be an integer >= 1`);
  }
  const timeoutMs = options.timeoutMs ?? 60_000;
  if (!(timeoutMs > 0)) throw new RangeError(`${OP}: timeoutMs ${timeoutMs} must be > 0`);
  const rounds = new Rounds(worldSize, timeoutMs);
  return Array.from({ length: worldSize }, (_, rank) => ({
    allGather: (tensor: Tensor, call?: CollectiveCall) =>
      rounds.contribute(rank, { kind: "allGather", call, tensor }),
    allReduce: (tensor: Tensor, call?: CollectiveCall) =>
      rounds.contribute(rank, { kind: "allReduce", call, tensor }),
  }));
}
