/**
 * Calls the streaming kernels cannot run on the caller's tensors as they are run on scratch
 * copies instead (the Ascend backend does the same for overlapping outputs): an input is
 * copied into a contiguous scratch tensor, an output is computed into one and copied into the
 * caller's view afterwards (in logical order, each element rounded once to its dtype). A
 * tensor is staged when
 *
 * - the call mixes data dtypes and it is not float32: aclnn computes mixed calls in float32
 *   and casts the result to the output's dtype (ops-nn
 *   norm/sync_batch_norm_backward_elemt/op_api/aclnn_batch_norm_elemt_backward.cpp:
 *   GetPromoteType gives float32 unless every tensor is float16, every input is Cast to it,
 *   and the result is Cast to gradInput's dtype), and float16/bfloat16 inputs convert to
 *   float32 exactly;
 * - its storage is too large for int32 element indices (its scratch copy holds only the view);
 * - it is an output that overlaps an input other than element for element, or writes one
 *   element twice;
 * - `relayout` is set (a tensor the kernels cannot view, e.g. GroupNorm data with no strided
 *   [N, C, HxW] view): every data tensor.
 *
 * @module
 */

import type { Tensor } from "../../../tensor/tensor.ts";
import { heapScratchTensor, stageInto, stageOut } from "../heap_scratch.ts";
import { stridesLike } from "../../../tensor/layout.ts";
import { MAX_PIXEL_CHANNELS } from "../kernels/channel_stages.ts";
import { indexable, MAX_STORAGE_ELEMENTS, overlapsInputs, writesTwice } from "./aliasing.ts";

/** Which fields of a kernel's tensor record are data inputs and data outputs. */
export interface DataRoles<T> {
  /** Data tensors the kernel reads (absent fields are skipped). */
  readonly inputs: readonly (keyof T)[];
  /** Data tensors the kernel writes (absent fields are skipped). */
  readonly outputs: readonly (keyof T)[];
}

/** What staging may be needed for: the row kernels handle dtypes and aliasing themselves. */
export interface StagingOptions {
  /** Only storages too large for int32 indices are staged (the row kernels). */
  readonly sizeOnly?: boolean;
  /** Every data tensor is staged into a contiguous copy. */
  readonly relayout?: boolean;
  /**
   * With `relayout`: the strides of each copy (a dense order), undefined for row-major.
   */
  readonly order?: (t: Tensor) => readonly number[] | undefined;
}

/**
 * The dense order of a BatchNorm-family copy of `t`: channels-last when `t` is (dim 1
 * innermost) with a channel count the channel kernels take in place, so that the staged call
 * gets the pixels layout, hence the bits, of the same call in place; else row-major (rows).
 */
export function batchNormOrder(t: Tensor): readonly number[] | undefined {
  const { shape } = t;
  const C = shape[1] ?? 1;
  if (shape.length < 3 || C % 4 !== 0 || C > MAX_PIXEL_CHANNELS) return undefined;
  if (stridesLike(shape, t.strides)[1] !== 1) return undefined;
  // Channels innermost: [N, C, ...inner] stored as N, ...inner, C.
  const strides = new Array<number>(shape.length);
  strides[1] = 1;
  let step = C;
  for (let d = shape.length - 1; d >= 2; d--) {
    strides[d] = step;
    step *= shape[d];
  }
  strides[0] = step;
  return strides;
}

/**
 * The BatchNorm family's staging: every data tensor into a dense copy in the host heap
 * ({@linkcode batchNormOrder}), which the float32 channel kernels take in place (setup.ts
 * batchNormCall).
 */
export const RELAYOUT: StagingOptions = Object.freeze({ relayout: true, order: batchNormOrder });

/**
 * A dense host tensor of `t`'s shape in `dtype`, row-major or with `strides`, on a scratch
 * block of the host heap (../heap_scratch.ts); a RangeError beyond int32 indices.
 */
function scratch(
  t: Tensor,
  dtype: Tensor["dtype"],
  field: string,
  strides: readonly number[] | undefined,
): Tensor {
  if (t.numel > MAX_STORAGE_ELEMENTS) {
    throw new RangeError(
      `${field}: ${t.numel} elements exceed the CPU backend's ${MAX_STORAGE_ELEMENTS} per tensor`,
    );
  }
  return heapScratchTensor(t.shape, dtype, field, strides);
}

/**
 * Runs `run` on a copy of `t` whose data tensors that need it (see the module doc) are scratch
 * tensors, then copies the scratch outputs into `t`'s and frees every scratch tensor. `run`
 * must not need staging again on the staged record (an internal error otherwise).
 */
export function runStaged<T extends object>(
  t: T,
  roles: DataRoles<T>,
  run: (staged: T) => void,
  options: StagingOptions = {},
): void {
  const field = (k: keyof T) => (t as Record<keyof T, Tensor | undefined>)[k];
  const inputs = roles.inputs.filter((k) => field(k) !== undefined);
  const outputs = roles.outputs.filter((k) => field(k) !== undefined);
  const originals = inputs.map((k) => field(k)!);
  const all = [...originals, ...outputs.map((k) => field(k)!)];
  const mixed = !options.sizeOnly && all.some((x) => x.dtype !== all[0].dtype);
  const dtypeOf = (x: Tensor) => (mixed ? "float32" : x.dtype);
  const staged = { ...t } as Record<string, unknown>;
  const temporaries: Tensor[] = [];
  const copyBack: [Tensor, Tensor][] = [];
  // One dense order for every copy (the tensors' own when they agree, else row-major), so
  // that the staged call has one layout the kernels take.
  const orders = options.order ? all.map(options.order) : [];
  const uniform = orders.every((o) => o?.join() === orders[0]?.join());
  const orderOf = (x: Tensor) => (uniform ? options.order?.(x) : undefined);
  if (stagingDepth > 0 && options.relayout) {
    throw new Error("runStaged: a staged call needed staging again (internal error)");
  }
  stagingDepth++;
  try {
    for (const k of inputs) {
      const x = field(k)!;
      if (!options.relayout && indexable(x) && x.dtype === dtypeOf(x)) continue;
      const copy = scratch(x, dtypeOf(x), String(k), orderOf(x));
      temporaries.push(copy);
      stageInto(copy, x);
      staged[k as string] = copy;
    }
    for (const k of outputs) {
      const o = field(k)!;
      const aliased = !options.sizeOnly && (writesTwice(o) || overlapsInputs(o, originals));
      if (!options.relayout && indexable(o) && o.dtype === dtypeOf(o) && !aliased) continue;
      const copy = scratch(o, dtypeOf(o), String(k), orderOf(o));
      temporaries.push(copy);
      copyBack.push([o, copy]);
      staged[k as string] = copy;
    }
    if (temporaries.length === 0) throw new Error("runStaged: no tensor needs staging");
    run(staged as T);
    for (const [o, copy] of copyBack) stageOut(o, copy);
  } finally {
    stagingDepth--;
    for (const copy of temporaries) copy.dispose();
  }
}

/** How many runStaged calls are under way on this thread (a staged call stages nothing). */
let stagingDepth = 0;
