/**
 * The liveness tokens of src/tensor/liveness.ts, made ahead: empty objects and their WeakRefs,
 * made in a job before the one that asks them (a WeakRef made or asked in the running job keeps
 * its target to the job's end: ECMA-262's kept list, "AddToKeptObjects"). An owner holds its
 * tokens through a WeakMap (an ephemeron): a token whose WeakRef answers undefined after a full
 * collection proves its owners collected. liveness.ts says how the heap uses them; the NPU
 * path's buffer tracker (src/ffi/reclaim.ts) takes them through {@linkcode livenessTokens}.
 *
 * @module
 */

/**
 * Tokens a refill makes (a few MiB of objects, made in 5-10 ms). A group of blocks takes
 * liveness.ts TOKENS_PER_GROUP, a set of canaries liveness.ts CANARIES. Twice as many made
 * V8's full collections slower (each marks every token and WeakRef): bench:step's float32
 * model filled its 3 GiB heap in its first 100 dropped steps, against 1.5-2.4 GiB.
 */
export const SUPPLY_TOKENS = 1 << 15;

/** The tokens made ahead and their WeakRefs, index for index. */
const supplyTokens: object[] = [];
const supplyRefs: WeakRef<object>[] = [];
let refillPending = false;

/** Each watched owner's tokens, held while the owner lives (never read: they only exist). */
const tokensOf = new WeakMap<object, object[]>();

/** Makes tokens for the jobs after this one. */
function refill(): void {
  refillPending = false;
  while (supplyTokens.length < SUPPLY_TOKENS) {
    const token = {};
    supplyTokens.push(token);
    supplyRefs.push(new WeakRef(token));
  }
}

/** Schedules a refill in a task of its own (a timer that does not keep the process alive). */
export function scheduleRefill(): void {
  if (refillPending) return;
  refillPending = true;
  Deno.unrefTimer(setTimeout(refill, 0));
}

/**
 * Takes up to `n` tokens' WeakRefs from the supply, and the tokens into `held` (or drops
 * them: canaries).
 */
export function takeTokens(n: number, held?: object[]): WeakRef<object>[] {
  if (supplyTokens.length < SUPPLY_TOKENS / 2) scheduleRefill();
  const from = Math.max(0, supplyTokens.length - n); // fewer when the supply is short
  const taken = supplyTokens.splice(from);
  held?.push(...taken);
  return supplyRefs.splice(from);
}

/**
 * Makes `owner`'s liveness askable inside the running job (the NPU path's buffer tracker,
 * src/ffi/reclaim.ts): up to `n` tokens of the supply held by `owner` alone (the same
 * ephemeron as the heap's groups), and their WeakRefs, returned. After a full collection,
 * `deref()` of one of them returns undefined if and only if `owner` was collected; each
 * answer "alive" keeps that token to the end of the job, so the next question in the same job
 * must ask the next one. Fewer than `n` (none) when the supply is short.
 */
export function livenessTokens(owner: object, n: number): WeakRef<object>[] {
  const tokens: object[] = [];
  const refs = takeTokens(n, tokens);
  if (refs.length > 0) holdTokens(owner, tokens);
  return refs;
}

/** Tokens left in the supply. */
export function suppliedTokens(): number {
  return supplyTokens.length;
}

/** Makes `owner` hold `tokens` (the ephemeron), until it is collected. */
export function holdTokens(owner: object, tokens: object[]): void {
  tokensOf.set(owner, tokens);
}

// The first supply, made while this module loads, and a task boundary before the modules that
// import this one run: a script's first job (its whole top-level loop, when the loop never
// awaits) then finds tokens it can ask. It costs the import a few ms, once per process.
refill();
await new Promise((resolve) => setTimeout(resolve, 0));
