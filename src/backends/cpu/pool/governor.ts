/**
 * Whether a call large enough for the worker pool should use it, decided by measurement on
 * this machine, now: 2 threads must beat 1, or the pool is not used there.
 *
 * No fixed threshold can promise that. Where a pooled call wins depends on the machine, and
 * on what else runs on it: where another process holds a CPU, a worker only runs when it gets
 * one (the calling thread waits for the items it claimed), and its polling for the next job
 * competes with the calling thread, so a pooled call can be slower than the calling thread
 * alone at every size (bench/RESULTS.md).
 *
 * So calls are grouped by what they run (their stages' kinds, dtype, layout kind) and their
 * size (a power of two of elements), and each group keeps an estimate of the time per
 * element of its pooled runs and of its runs on the calling thread alone. A group tries both
 * ways first, then runs the faster one, and now and then the other one again (so that a
 * change, such as another process starting or ending, is seen): 4 ms after the last such run
 * at first, and twice as long after each such run that loses, up to 2 s; a run that beats
 * the chosen way, or a pooled run that improves on the pool's estimate (its workers warming
 * up), brings it back to 4 ms, and so does a change of choice (the way just left is looked at
 * again 4 ms later: slow phases of a few calls, such as another thread holding the second
 * CPU, must not leave a group on the slower way for seconds). A run alone that improves on
 * its own estimate but still loses does not: the calling thread's times scatter, and every
 * such run brought the checks back to 4 ms, so that a group called once per training step
 * (17 ms apart) ran alone on every step while the pool won by 2x (groupNormSwishGrad
 * [16,64,32,32]: 27 runs alone to 6 pooled). The spacing is in time, not calls, so that checking costs
 * small and large calls alike little: a check of a losing pool costs the call and about
 * 0.5 ms of the worker polling for the next job. Results do not depend on the choice: the
 * split into work items is the shape's, whoever runs them.
 *
 * The estimates fall at once to a faster run and rise slowly (a moving average) with slower
 * ones. A way's first runs are its slowest: a worker's kernels start in V8's interpreter and
 * take tens of pooled calls to be optimised, while the calling thread's are usually warm
 * already. An average of those first runs kept the pool of medium calls (half a million
 * elements) unchosen for hundreds of calls, each check too slow to lift it; taking every
 * improvement at once, and checking again soon while the runs improve, lets the workers warm
 * up within tens of checks. A run cannot be faster than the machine allows, so a fast run is
 * evidence; a slow one may be a preemption, so it moves the estimate by a quarter at most.
 *
 * A new group whose neighbour in size (same stages, dtype and layout kind) has chosen starts
 * with the neighbour's way, and tries the other one as checks 4 ms apart once its own way has
 * measured: the first calls of a new shape (an epoch's smaller last batch) then run as its
 * neighbour's do. Without that, a new group's first runs alternated, pooled first: a
 * batchNorm [5,128,16,16] float32 (2 threads) whose neighbours ran alone took 0.156 ms in
 * its first call against 0.092 alone (steady 0.048). A group with no chosen neighbour tries
 * both ways alternating, pooled first.
 *
 * A new pool is cold for everyone: its workers' JavaScript (the stage runners) starts in V8's
 * interpreter whatever the group. So the first {@linkcode POOL_WARM_RUNS} calls that may run
 * on a new pool do, whatever their group, and are not recorded: each group then measures
 * warm workers. Measured (bench/RESULTS.md): a groupNorm [16,64,32,32] float32 took 3.6,
 * 1.1, 0.8 ... ms in its first pooled runs and 0.25 ms from about the fourteenth (alone: 0.34);
 * a group that had measured its cold runs kept to the calling thread for hundreds of calls,
 * each check of the pool (every 4 ms at most) only one more warming run.
 *
 * A measured pooled run (a group's warm-up, or a check of the pool while the calling thread
 * runs alone) that would find the workers asleep (the last call ran alone, pool.ts quietPool,
 * or ended more than JOB_POLL_MS ago) runs {@linkcode WAKING_RUNS} + 1 times and only the last
 * is recorded: the first pays the futex wake-up of every worker (tens of microseconds on a VM),
 * which a pooled loop does not pay call after call, and which kept a 0.25 ms pooled call
 * measured slower than its 0.33 ms run alone; the second still runs slower than a pooled loop's
 * calls (layerNorm [64,1024] float32 after eight calls alone: 67.5, 27.1, then 18.4-18.9 us a
 * pooled call, against 25.6 alone), so that recording it kept such calls alone at 24-26 us where
 * the pool ran them in 16-17 (bench/RESULTS.md, twenty-first session). A group whose chosen
 * pooled calls do follow other groups' calls alone records them as they are, wake-up and all.
 *
 * @module
 */

import { STAGE_CODE_BASE, stageCode } from "../kernels/stage_registry.ts";
import type { Stage } from "../kernels/stage_types.ts";
import { JOB_POLL_MS } from "./sync.ts";

/**
 * Unrecorded pooled runs before a measured one that would find the workers asleep (module
 * doc): the wake-up, and the run after it.
 */
export const WAKING_RUNS = 2;

/** Runs of each way a group measures before it chooses. */
export const GOVERNOR_WARMUP_RUNS = 3;

/**
 * Calls a new pool runs first, whatever their group, before any is recorded: about as many as
 * its workers' stage runners take to be optimised (module doc).
 */
export const POOL_WARM_RUNS = 16;

/**
 * Weight of a slower run in a group's estimates. A run counts as at most twice the estimate
 * (a call the system preempted for a few milliseconds must not flip a choice): a lasting
 * change still moves the estimate by up to 25% per run. A faster run replaces the estimate.
 */
const ALPHA = 0.25;

/** The shortest and longest time (ms) between two runs of the way not chosen. */
const MIN_INTERVAL_MS = 4;
const MAX_INTERVAL_MS = 2048;

/** What one group of calls has measured. */
interface Group {
  /** Estimates of nanoseconds per element, pooled and alone (NaN: no run yet). */
  pooled: number;
  alone: number;
  pooledRuns: number;
  aloneRuns: number;
  /** When the way not chosen runs again (performance.now() ms), and the interval set. */
  nextCheck: number;
  interval: number;
  /** Whether the current call is a run of the way not chosen (checked when it is timed). */
  exploring: boolean;
  /**
   * Unrecorded pooled runs left before the measured one, counting the current call (the
   * workers waking: module doc).
   */
  waking: number;
  /** Whether the next call runs pooled again, after a waking one. */
  repeat: boolean;
  /**
   * The way its nearest measured neighbour chose ({@linkcode Governor.choose}), or undefined:
   * the way its warm-up runs first.
   */
  prior: boolean | undefined;
}

/** How a {@linkcode Governor} measures (the defaults: the module doc's). */
export interface GovernorOptions {
  /** Calls a new pool runs first, unrecorded (default {@linkcode POOL_WARM_RUNS}). */
  readonly warmRuns?: number;
  /**
   * Whether a measured pooled run (of a group's warm-up, or a check of the pool) that would
   * find the workers asleep runs twice, the first unrecorded (default true; module doc).
   */
  readonly wakeFirst?: boolean;
}

/** The decisions of {@linkcode Governor.choose} for a group, and what they measured. */
export class Governor {
  readonly #groups = new Map<number, Group>();
  readonly #warmRuns: number;
  readonly #wakeFirst: boolean;
  /** Pooled runs of the current pool so far (counted up to #warmRuns). */
  #poolRuns = 0;
  /**
   * Until when (performance.now() ms) the workers poll for the next job: the end of the last
   * call recorded plus JOB_POLL_MS when it ran pooled (after a call alone they sleep at once).
   */
  #awakeUntil = -Infinity;

  /** A governor that measures as `options` say (the tests of the choice itself change them). */
  constructor(options: GovernorOptions = {}) {
    this.#warmRuns = options.warmRuns ?? POOL_WARM_RUNS;
    this.#wakeFirst = options.wakeFirst ?? true;
  }

  /** Whether the pool is still in its first, unrecorded runs (module doc). */
  get warming(): boolean {
    return this.#poolRuns < this.#warmRuns;
  }

  /** Whether the call of group `key` starting `now` (performance.now() ms) runs pooled. */
  choose(key: number, now: number): boolean {
    const awake = now <= this.#awakeUntil;
    if (this.warming) return true;
    let g = this.#groups.get(key);
    if (g === undefined) {
      g = {
        pooled: NaN,
        alone: NaN,
        pooledRuns: 0,
        aloneRuns: 0,
        nextCheck: 0,
        interval: MIN_INTERVAL_MS,
        exploring: false,
        waking: 0,
        repeat: false,
        prior: this.#neighbourChoice(key),
      };
      this.#groups.set(key, g);
    }
    if (g.repeat) {
      g.repeat = false;
      return true;
    }
    g.exploring = false;
    let pooled: boolean;
    if (g.pooledRuns < GOVERNOR_WARMUP_RUNS || g.aloneRuns < GOVERNOR_WARMUP_RUNS) {
      if (g.prior === undefined) {
        // Both ways first, alternating, pooled first.
        g.nextCheck = now + g.interval;
        pooled = g.pooledRuns <= g.aloneRuns;
      } else {
        // The neighbour's way first; the other way's runs come as checks, MIN_INTERVAL_MS
        // apart, once the neighbour's way has measured.
        const priorRuns = g.prior ? g.pooledRuns : g.aloneRuns;
        const check = priorRuns >= GOVERNOR_WARMUP_RUNS && now >= g.nextCheck;
        if (priorRuns < GOVERNOR_WARMUP_RUNS || check) g.nextCheck = now + g.interval;
        pooled = check ? !g.prior : g.prior;
      }
    } else {
      const pooledWins = g.pooled < g.alone;
      if (now < g.nextCheck) return pooledWins;
      g.exploring = true;
      pooled = !pooledWins;
    }
    g.waking = pooled && this.#wakeFirst && !awake ? WAKING_RUNS : 0;
    return pooled;
  }

  /**
   * Records that the call of group `key` (of `elements` elements) that started at `start`
   * took `ms`, pooled or not.
   */
  record(key: number, pooled: boolean, start: number, ms: number, elements: number): void {
    if (pooled && this.warming) {
      this.#poolRuns++;
      this.#awakeUntil = start + ms + JOB_POLL_MS;
      return;
    }
    this.#awakeUntil = pooled ? start + ms + JOB_POLL_MS : -Infinity;
    const g = this.#groups.get(key);
    if (g === undefined) return;
    if (g.waking > 0) {
      // It woke the workers, or followed the run that did: pooled again, unrecorded until the
      // last of the waking runs is past.
      g.waking--;
      g.repeat = true;
      return;
    }
    const perElement = (ms * 1e6) / Math.max(1, elements);
    const improved = perElement < (pooled ? g.pooled : g.alone); // false at first (NaN)
    const pooledWon = g.pooled < g.alone;
    if (pooled) g.pooled = g.pooledRuns++ === 0 ? perElement : estimate(g.pooled, perElement);
    else g.alone = g.aloneRuns++ === 0 ? perElement : estimate(g.alone, perElement);
    if (!g.exploring) {
      // The chosen way's runs turned the choice (a few slow runs: another thread took the
      // second CPU for a while): the way left behind is looked at again soon, not up to 2 s
      // later as the interval its checks had grown to would say.
      if (pooledWon !== g.pooled < g.alone && g.pooledRuns > 0 && g.aloneRuns > 0) {
        g.interval = MIN_INTERVAL_MS;
        g.nextCheck = start + ms + MIN_INTERVAL_MS;
      }
      return;
    }
    // The other way ran. Faster than the chosen way, or the pool faster than it ran before
    // (its workers warming up): look again soon, until the estimates tell. Otherwise look
    // again less often.
    const faster = perElement < (pooled ? g.alone : g.pooled);
    g.interval = faster || (improved && pooled)
      ? MIN_INTERVAL_MS
      : Math.min(MAX_INTERVAL_MS, g.interval * 2);
    g.nextCheck = start + ms + g.interval;
    g.exploring = false;
  }

  /**
   * The way the group nearest in size to `key` with the same stages, dtype and layout kind
   * chose once both its ways had measured (the smaller on a tie), or undefined when none has.
   */
  #neighbourChoice(key: number): boolean | undefined {
    const size = key % SIZE_KEYS;
    const family = key - size;
    for (let d = 1; d < SIZE_KEYS; d++) {
      for (const s of [size - d, size + d]) {
        if (s < 0 || s >= SIZE_KEYS) continue;
        const n = this.#groups.get(family + s);
        if (
          n !== undefined && n.pooledRuns >= GOVERNOR_WARMUP_RUNS &&
          n.aloneRuns >= GOVERNOR_WARMUP_RUNS
        ) return n.pooled < n.alone;
      }
    }
    return undefined;
  }

  /** What group `key` measured (for tests and benchmarks), or undefined. */
  measured(key: number): Readonly<Group> | undefined {
    return this.#groups.get(key);
  }

  /** Forgets every measurement (the pool was replaced: its cost may differ, and it is cold). */
  reset(): void {
    this.#groups.clear();
    this.#poolRuns = 0;
    this.#awakeUntil = -Infinity;
  }
}

/** The governor of this thread's CPU calls. */
export const governor: Governor = new Governor();

/**
 * The estimate after `run`: the run itself when faster; otherwise the estimate moved toward
 * the run by ALPHA, the run counting as at most twice the estimate.
 */
function estimate(estimate: number, run: number): number {
  if (run < estimate) return run;
  return estimate + ALPHA * (Math.min(run, 2 * estimate) - estimate);
}

/** Sizes a group key tells apart: powers of two of the element count, 2^0 to 2^63. */
const SIZE_KEYS = 64;

/** Codes of the layout kinds (layout_types.ts) in keys (stage codes: stage_registry.ts). */
const LAYOUT_CODES: Readonly<Record<string, number>> = { rows: 0, pixels: 1, strided: 2 };

/**
 * The group of a call, as a number: what its stages do (in order), its dtype code and
 * layout kind, and the power of two of its element count.
 */
export function groupKey(
  stageOps: readonly string[],
  dtype: number,
  layoutKind: string,
  elements: number,
): number {
  let stages = 0;
  for (const op of stageOps) {
    stages = stages * STAGE_CODE_BASE + stageCode(op as Stage["op"]);
  }
  const kind = LAYOUT_CODES[layoutKind] ?? 3;
  return ((stages * 4 + dtype) * 4 + kind) * SIZE_KEYS +
    Math.floor(Math.log2(Math.max(1, elements)));
}
