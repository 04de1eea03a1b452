/**
 * Progress of a long side-by-side benchmark (bench:norm, bench:cpu), on stderr so that stdout
 * keeps the results (`--markdown` output pastes into bench/RESULTS.md): the estimated total time
 * first, then one line per finished step with the time so far and the time left at that pace.
 *
 * @module
 */

/** A duration for people: `850 ms`, `42 s`, `3.5 min`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 90_000) return `${Math.round(ms / 1000)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/** How a benchmark times one case: warm-up, then timed calls until both minimums are met. */
export interface TimingRule {
  /** Warm-up: at least this many calls ... */
  readonly warmupCalls: number;
  /** ... and this many milliseconds. */
  readonly warmupMs: number;
  /** Timed calls: at least this many ... */
  readonly minRuns: number;
  /** ... and this many milliseconds of them ... */
  readonly minTimeMs: number;
  /** ... but at most this many calls. */
  readonly maxRuns: number;
}

/** The milliseconds `rule` spends on a case whose call takes `callMs`. */
export function timingMs(rule: TimingRule, callMs: number): number {
  const t = Math.max(callMs, 1e-3);
  const warm = Math.max(rule.warmupCalls * t, rule.warmupMs);
  const runs = Math.min(rule.maxRuns, Math.max(rule.minRuns, Math.ceil(rule.minTimeMs / t)));
  return warm + runs * t;
}

/**
 * The steps of a run: `total` of them, each reported as it finishes. The time left is the
 * estimate of the steps still to come, scaled by how the finished ones compared with theirs.
 */
export class Progress {
  readonly #name: string;
  readonly #total: number;
  readonly #start = performance.now();
  #done = 0;
  #expected = 0;
  #expectedDone = 0;

  /** A run of `total` steps, its lines prefixed with `name` (the task). */
  constructor(name: string, total: number) {
    this.#name = name;
    this.#total = total;
  }

  /** Prints what the run does and its estimated total time (milliseconds). */
  estimate(what: string, ms: number): void {
    this.#expected = ms;
    console.error(
      `${this.#name}: ${what}; estimated total ${duration(ms)}. One line per step as it finishes:`,
    );
  }

  /**
   * Counts one finished step (estimated to take `expectedMs`) and prints `line` with the time so
   * far and the time left.
   */
  step(line: string, expectedMs: number): void {
    this.#done++;
    this.#expectedDone += expectedMs;
    const elapsed = performance.now() - this.#start;
    const pace = this.#expectedDone > 0 ? elapsed / this.#expectedDone : 1;
    const left = Math.max(0, this.#expected - this.#expectedDone) * pace;
    const when = this.#done === this.#total
      ? `${duration(elapsed)} in all`
      : `${duration(elapsed)}, about ${duration(left)} left`;
    console.error(`${this.#name} [${this.#done}/${this.#total}] ${line} (${when})`);
  }
}
