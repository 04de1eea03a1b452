/**
 * A job's stages as numbers in shared memory, so that a worker waiting in Atomics.wait
 * can take part in a job without a message: posting the stages cost the calling thread tens
 * of microseconds per job, and a worker idle in its event loop woke too late to run its share
 * of a medium call's items (bench/RESULTS.md).
 *
 * Every typed array of a described stage lives in the host heap (tensor/host_heap.ts), the
 * one shared memory every worker already holds: tensor storage, and the pool's arena for
 * a call's float64 temporaries. An array elsewhere (a tensor that got a buffer of its own
 * because the heap was full or turned off) cannot be described, and such a job is posted
 * as before (pool.ts).
 *
 * The words: [0] the number of stages, [1] the heap bytes the arrays reach up to (a worker
 * whose view of the memory has not yet seen it grow that far must not read them), then each
 * stage's fields in the order of {@linkcode describeStage}: numbers as they are, a layout and each address with a length
 * before their dims, each typed array as (type code, heap byte offset, length) or a single
 * 0 for none.
 *
 * Part of the pool's worker script (see worker_entry.ts).
 *
 * @module
 */

import { stageCode, stageOfCode } from "../kernels/stage_registry.ts";
import type { Layout, LayoutKind, TensorAddress } from "../kernels/layout_types.ts";
import type { Stage, StageFields } from "../kernels/stage_types.ts";
import { uniformStage } from "../kernels/stage_types.ts";

/** Float64 words of a job description (32 KiB: 16 stages of rank 8 take under 2000). */
export const JOB_WORDS = 4096;

/** Type code of a Float32Array in a description. */
const WORD_FLOAT32 = 1;
/** Type code of a Uint16Array (float16 or bfloat16 bits). */
const WORD_UINT16 = 2;
/** Type code of a Float16Array. */
const WORD_FLOAT16 = 3;
/** Type code of a Float64Array. */
const WORD_FLOAT64 = 4;

/** A typed-array field of a stage (see {@linkcode STAGE_ARRAY_FIELDS}). */
export type StageArrayField =
  | "dy"
  | "x"
  | "out"
  | "mean"
  | "partials"
  | "constants"
  | "cache"
  | "gamma"
  | "beta"
  | "groupStats"
  | "pairs";

/**
 * The typed-array fields of a stage, in the order a description holds them: the one list
 * that {@linkcode describeStage} and {@linkcode describedStage} both follow.
 */
const STAGE_ARRAY_FIELDS: readonly StageArrayField[] = [
  "dy",
  "x",
  "out",
  "mean",
  "partials",
  "constants",
  "cache",
  "gamma",
  "beta",
  "groupStats",
  "pairs",
];

/** The code of a layout kind. */
function layoutKindCode(kind: LayoutKind): number {
  return kind === "rows" ? 1 : kind === "pixels" ? 2 : 3;
}

/** The layout kind of a code from {@linkcode layoutKindCode}. */
function layoutKindOfCode(code: number): LayoutKind {
  if (code === 1) return "rows";
  if (code === 2) return "pixels";
  if (code === 3) return "strided";
  throw new RangeError(`job words: no layout kind has code ${code}`);
}

/** The type code of a typed array, or 0 for a kind a description does not carry. */
function arrayTypeCode(view: ArrayBufferView): number {
  if (view instanceof Float32Array) return WORD_FLOAT32;
  if (view instanceof Uint16Array) return WORD_UINT16;
  if (view instanceof Float16Array) return WORD_FLOAT16;
  if (view instanceof Float64Array) return WORD_FLOAT64;
  return 0;
}

/** Writes `dims` with its length first at words[at]; returns the next free word. */
function describeDims(words: Float64Array, at: number, dims: readonly number[]): number {
  words[at++] = dims.length;
  for (let i = 0; i < dims.length; i++) words[at++] = dims[i];
  return at;
}

/** Reads the dims that {@linkcode describeDims} wrote at words[at]. */
function describedDims(words: Float64Array, at: number): number[] {
  const length = words[at];
  const dims: number[] = [];
  for (let i = 1; i <= length; i++) dims.push(words[at + i]);
  return dims;
}

/** Writes a tensor address at words[at]; returns the next free word. */
function describeAddress(words: Float64Array, at: number, a: TensorAddress): number {
  words[at] = a.base;
  words[at + 1] = a.strideN;
  words[at + 2] = a.strideC;
  words[at + 3] = a.strideI;
  return describeDims(words, at + 4, a.innerStrides);
}

/** Reads the tensor address that {@linkcode describeAddress} wrote at words[at]. */
function describedAddress(words: Float64Array, at: number): TensorAddress {
  return {
    base: words[at],
    strideN: words[at + 1],
    strideC: words[at + 2],
    strideI: words[at + 3],
    innerStrides: describedDims(words, at + 4),
  };
}

/**
 * Writes `view` (or none) at words[at]: returns the next free word, or -1 when `view` is
 * not in the heap (`heapAt` gives its byte offset there, or -1) or of a kind not described.
 */
function describeArray(
  words: Float64Array,
  at: number,
  view: ArrayBufferView | undefined,
  heapAt: (view: ArrayBufferView) => number,
): number {
  if (view === undefined) {
    words[at] = 0;
    return at + 1;
  }
  const code = arrayTypeCode(view);
  const offset = heapAt(view);
  if (code === 0 || offset < 0) return -1;
  words[at] = code;
  words[at + 1] = offset;
  words[at + 2] = (view as Float64Array).length;
  words[1] = Math.max(words[1], offset + view.byteLength);
  return at + 3;
}

/** The typed array that {@linkcode describeArray} wrote at words[at], over `heap`. */
function describedArray(
  words: Float64Array,
  at: number,
  heap: ArrayBufferLike,
): ArrayBufferView | undefined {
  const code = words[at];
  const offset = words[at + 1];
  const length = words[at + 2];
  if (code === 0) return undefined;
  if (code === WORD_FLOAT32) return new Float32Array(heap, offset, length);
  if (code === WORD_UINT16) return new Uint16Array(heap, offset, length);
  if (code === WORD_FLOAT16) return new Float16Array(heap, offset, length);
  if (code === WORD_FLOAT64) return new Float64Array(heap, offset, length);
  throw new RangeError(`job words: no array type has code ${code}`);
}

/** Words an array took at words[at] (see {@linkcode describeArray}). */
function arrayWords(words: Float64Array, at: number): number {
  return words[at] === 0 ? 1 : 3;
}

/**
 * Writes stage `s` at words[at]: returns the next free word, or -1 when one of its arrays
 * cannot be described (see {@linkcode describeArray}).
 */
function describeStage(
  words: Float64Array,
  at: number,
  s: Stage,
  heapAt: (view: ArrayBufferView) => number,
): number {
  // Every stage has every field (uniformStage): the kinds differ only in which are set.
  const u = s as unknown as Readonly<Record<string, ArrayBufferView | number | undefined>>;
  words[at] = stageCode(s.op);
  words[at + 1] = s.dtype;
  words[at + 2] = s.items;
  words[at + 3] = u.group as number;
  words[at + 4] = u.eps as number;
  words[at + 5] = s.dyHeap;
  words[at + 6] = s.xHeap;
  words[at + 7] = s.outHeap;
  const { layout } = s;
  words[at + 8] = layoutKindCode(layout.kind);
  words[at + 9] = layout.N;
  words[at + 10] = layout.C;
  words[at + 11] = layout.inner;
  words[at + 12] = layout.perSample ? 1 : 0;
  words[at + 13] = u.dataSums ? 1 : 0;
  words[at + 14] = u.swishScale as number;
  at = describeDims(words, at + 15, layout.innerShape);
  at = describeAddress(words, at, s.dyAt);
  at = describeAddress(words, at, s.xAt);
  at = describeAddress(words, at, s.outAt);
  const fields = STAGE_ARRAY_FIELDS;
  for (let i = 0; i < fields.length && at >= 0; i++) {
    at = describeArray(words, at, u[fields[i]] as ArrayBufferView | undefined, heapAt);
  }
  return at;
}

/**
 * Writes `stages` into `words`: false when one cannot be described or they do not fit
 * (then the words say nothing; the job must be posted).
 */
export function describeStages(
  words: Float64Array,
  stages: readonly Stage[],
  heapAt: (view: ArrayBufferView) => number,
): boolean {
  words[0] = 0;
  words[1] = 0;
  let at = 2;
  for (let i = 0; i < stages.length; i++) {
    at = describeStage(words, at, stages[i], heapAt);
    // Writes past the end of a typed array are dropped: an overflow only shows in `at`.
    if (at < 0 || at > words.length) return false;
  }
  words[0] = stages.length;
  return true;
}

/** Reads the stage that {@linkcode describeStage} wrote at words[at]: [stage, next word]. */
function describedStage(
  words: Float64Array,
  at: number,
  heap: ArrayBufferLike,
): [Stage, number] {
  const innerShape = describedDims(words, at + 15);
  const layout: Layout = {
    kind: layoutKindOfCode(words[at + 8]),
    N: words[at + 9],
    C: words[at + 10],
    inner: words[at + 11],
    innerShape,
    perSample: words[at + 12] === 1,
  };
  let next = at + 16 + innerShape.length;
  const addresses: TensorAddress[] = [];
  for (let i = 0; i < 3; i++) {
    const address = describedAddress(words, next);
    addresses.push(address);
    next += 5 + address.innerStrides.length;
  }
  const fields: Record<string, unknown> = {
    op: stageOfCode(words[at]),
    dtype: words[at + 1],
    items: words[at + 2],
    group: words[at + 3],
    eps: words[at + 4],
    dataSums: words[at + 13] === 1,
    swishScale: words[at + 14],
    layout,
    dyAt: addresses[0],
    xAt: addresses[1],
    outAt: addresses[2],
  };
  for (const name of STAGE_ARRAY_FIELDS) {
    fields[name] = describedArray(words, next, heap);
    next += arrayWords(words, next);
  }
  // The arrays are of the types describeArray found (the stage kind says which are set).
  const stage = uniformStage(fields as unknown as StageFields<Stage>) as Stage;
  stage.dyHeap = words[at + 5];
  stage.xHeap = words[at + 6];
  stage.outHeap = words[at + 7];
  return [stage, next];
}

/**
 * Reads the stages that {@linkcode describeStages} wrote, over the heap's buffer `heap`; or
 * undefined when `heap` is shorter than the arrays need (this thread has not yet seen the
 * memory grow).
 */
export function describedStages(words: Float64Array, heap: ArrayBufferLike): Stage[] | undefined {
  if (heap.byteLength < words[1]) return undefined;
  const stages: Stage[] = [];
  let at = 2;
  for (let i = 0; i < words[0]; i++) {
    const [stage, next] = describedStage(words, at, heap);
    stages.push(stage);
    at = next;
  }
  return stages;
}
