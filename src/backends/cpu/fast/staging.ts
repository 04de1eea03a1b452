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

import { Tensor } from "../../../tensor/tensor.ts";
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
}

/** A contiguous host tensor of `t`'s shape in `dtype`, or a RangeError beyond int32 indices. */
function scratch(t: Tensor, dtype: Tensor["dtype"], field: string): Tensor {
  if (t.numel > MAX_STORAGE_ELEMENTS) {
    throw new RangeError(
      `${field}: ${t.numel} elements exceed the CPU backend's ${MAX_STORAGE_ELEMENTS} per tensor`,
    );
  }
  return Tensor.empty(t.shape, dtype);
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
  try {
    for (const k of inputs) {
      const x = field(k)!;
      if (!options.relayout && indexable(x) && x.dtype === dtypeOf(x)) continue;
      const copy = scratch(x, dtypeOf(x), String(k));
      temporaries.push(copy);
      copy.copy_(x);
      staged[k as string] = copy;
    }
    for (const k of outputs) {
      const o = field(k)!;
      const aliased = !options.sizeOnly && (writesTwice(o) || overlapsInputs(o, originals));
      if (!options.relayout && indexable(o) && o.dtype === dtypeOf(o) && !aliased) continue;
      const copy = scratch(o, dtypeOf(o), String(k));
      temporaries.push(copy);
      copyBack.push([o, copy]);
      staged[k as string] = copy;
    }
    if (temporaries.length === 0) throw new Error("runStaged: no tensor needs staging");
    run(staged as T);
    for (const [o, copy] of copyBack) o.copy_(copy);
  } finally {
    for (const copy of temporaries) copy.dispose();
  }
}
