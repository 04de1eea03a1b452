/**
 * Whether a call large enough for the worker pool should use it, decided by measurement on
 * this machine, now: 2 threads must beat 1, or the pool is not used there.
 *
 * No fixed threshold can promise that. Where a pooled call wins depends on the machine, and
 * on what else runs on it: on a 2-vCPU VM whose other vCPU is taken by another process, a
 * pooled call ran up to 2x slower than the calling thread alone at every size tried (the
 * worker only runs when it gets the CPU, and its polling for the next job competes with the
 * calling thread), while on the same VM idle it won from 64K elements.
 *
 * So calls are grouped by what they run (their stages' kinds, dtype, layout kind) and their
 * size (a power of two of elements), and each group keeps a moving average of the time per
 * element of its pooled runs and of its runs on the calling thread alone. A group tries both
 * ways first, then runs the faster one, and now and then the other one again (so that a
 * change, such as another process starting or ending, is seen): every 8th call at first, and
 * half as often after each such run that is slower, down to one in 512; a run that is faster
 * brings it back to every 8th. Results do not depend on the choice: the split into work
 * items is the shape's, whoever runs them.
 *
 * @module
 */

/** Runs of each way a group measures before it chooses. */
export const GOVERNOR_WARMUP_RUNS = 3;

/** Weight of a new run in a group's moving averages. */
const ALPHA = 0.25;

/** The shortest and longest interval (calls) between two runs of the way not chosen. */
const MIN_INTERVAL = 8;
const MAX_INTERVAL = 512;

/** How the pool is chosen: by measurement (the default), or always when eligible (tests). */
export type PoolPolicy = "measured" | "always";

/** What one group of calls has measured. */
interface Group {
  /** Moving averages of nanoseconds per element, pooled and alone (NaN: no run yet). */
  pooled: number;
  alone: number;
  pooledRuns: number;
  aloneRuns: number;
  /** Calls until the way not chosen runs again, and the interval it was set from. */
  countdown: number;
  interval: number;
  /** Whether the current call is a run of the way not chosen (checked when it is timed). */
  exploring: boolean;
}

/** The decisions of {@linkcode Governor.choose} for a group, and what they measured. */
export class Governor {
  readonly #groups = new Map<string, Group>();
  #policy: PoolPolicy = "measured";

  /** Sets the policy (for tests and benchmarks that must run on the pool). */
  setPolicy(policy: PoolPolicy): void {
    this.#policy = policy;
  }

  /** The current policy. */
  get policy(): PoolPolicy {
    return this.#policy;
  }

  /** Whether the next call of group `key` runs on the pool. */
  choose(key: string): boolean {
    if (this.#policy === "always") return true;
    let g = this.#groups.get(key);
    if (g === undefined) {
      g = {
        pooled: NaN,
        alone: NaN,
        pooledRuns: 0,
        aloneRuns: 0,
        countdown: MIN_INTERVAL,
        interval: MIN_INTERVAL,
        exploring: false,
      };
      this.#groups.set(key, g);
    }
    g.exploring = false;
    // Both ways first, alternating, pooled first (its first run also warms the workers).
    if (g.pooledRuns < GOVERNOR_WARMUP_RUNS || g.aloneRuns < GOVERNOR_WARMUP_RUNS) {
      return g.pooledRuns <= g.aloneRuns;
    }
    const pooledWins = g.pooled < g.alone;
    if (--g.countdown > 0) return pooledWins;
    g.exploring = true;
    return !pooledWins;
  }

  /** Records that a call of group `key` of `elements` elements took `ms`, pooled or not. */
  record(key: string, pooled: boolean, ms: number, elements: number): void {
    const g = this.#groups.get(key);
    if (g === undefined) return;
    const perElement = (ms * 1e6) / Math.max(1, elements);
    if (pooled) {
      g.pooled = g.pooledRuns++ === 0 ? perElement : g.pooled + ALPHA * (perElement - g.pooled);
    } else {
      g.alone = g.aloneRuns++ === 0 ? perElement : g.alone + ALPHA * (perElement - g.alone);
    }
    if (!g.exploring) return;
    // The other way ran. Slower than the chosen way's average: look again less often.
    // Faster: things may have changed; look again soon, until the averages tell.
    const faster = perElement < (pooled ? g.alone : g.pooled);
    g.interval = faster ? MIN_INTERVAL : Math.min(MAX_INTERVAL, g.interval * 2);
    g.countdown = g.interval;
    g.exploring = false;
  }

  /** What group `key` measured (for tests and benchmarks), or undefined. */
  measured(key: string): Readonly<Group> | undefined {
    return this.#groups.get(key);
  }

  /** Forgets every measurement (the pool was replaced: its cost may differ). */
  reset(): void {
    this.#groups.clear();
  }
}

/** The governor of this thread's CPU calls. */
export const governor: Governor = new Governor();

/**
 * The group of a call: what its stages do, its dtype and layout kind, and the power of two
 * of its element count.
 */
export function groupKey(
  stageOps: readonly string[],
  dtype: number,
  layoutKind: string,
  elements: number,
): string {
  return `${stageOps.join("+")}|${dtype}|${layoutKind}|${Math.floor(Math.log2(elements))}`;
}
