/**
 * State dicts: a module's parameters and buffers by PyTorch's names (`weight`, `bias`,
 * `running_mean`, `running_var`, `num_batches_tracked`), saved as snapshots and loaded back
 * with PyTorch's checks (`load_state_dict(strict=True)`): every key the module has must be
 * present, no other key may be, and each tensor must have the module's shape. A dict is
 * checked whole before anything is copied, so a refused dict leaves the module unchanged.
 *
 * Errors are {@linkcode AclnnError}s naming the key: 161001 for missing keys (strict), 161002
 * for an unexpected key (strict), a value that is not a usable Tensor (its storage detached,
 * disposed, or on a closed device), a shape mismatch, a dtype the entry cannot take, or a
 * negative or fractional batch count.
 *
 * @module
 */

import { z } from "../ops/zod.ts";
import { invalid, missing, optionalTensor, parseScalars } from "../ops/validate.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import type { Device } from "../tensor/device.ts";
import { formatShape } from "../tensor/layout.ts";
import { storageReleased } from "../tensor/storage.ts";
import { Tensor } from "../tensor/tensor.ts";

/**
 * A module's state by PyTorch's names. Values are tensors: float parameters and running
 * statistics in the module's dtype, `num_batches_tracked` an int32 scalar (shape `[]`; int64
 * in PyTorch, which this package has no dtype for: an int32 counts 2^31 - 1 batches).
 */
export type StateDict = Record<string, Tensor>;

/** Options of `loadStateDict`. */
export interface LoadStateDictOptions {
  /**
   * true (default): the dict must hold exactly the module's keys. false: missing keys keep
   * the module's values and unknown keys are ignored; both are reported in the result.
   */
  strict?: boolean;
}

/** What `loadStateDict` did not match (PyTorch's `missing_keys` and `unexpected_keys`). */
export interface LoadStateDictResult {
  /** The module's keys the dict did not hold (always empty when strict). */
  missingKeys: string[];
  /** The dict's keys the module does not have (always empty when strict). */
  unexpectedKeys: string[];
}

/** One entry of a module's state: a tensor updated in place, or the batch counter. */
export type StateEntry =
  | { readonly key: string; readonly tensor: Tensor }
  | {
    readonly key: string;
    readonly counter: { get(): number; set(value: number): void };
    readonly device: Device;
  };

/**
 * Snapshots (copies) of the entries: later training does not change them. An entry whose
 * tensor was disposed from outside the module is 161002 naming its key (`op` the call).
 */
export function snapshot(op: string, entries: readonly StateEntry[]): StateDict {
  for (const e of entries) {
    if ("tensor" in e && storageReleased(e.tensor.storage)) {
      invalid(
        op,
        e.key,
        "was disposed (its memory was freed: dispose() on the module's tensor, tidy, or its " +
          "device closed), so the module has no state to give; load one with loadStateDict",
      );
    }
  }
  const dict: StateDict = {};
  for (const e of entries) {
    if ("tensor" in e) {
      dict[e.key] = e.tensor.clone();
    } else {
      const host = Tensor.fromArray([e.counter.get()], [], "int32");
      dict[e.key] = e.device === "cpu" ? host : host.to(e.device);
    }
  }
  return dict;
}

const optionsSchema = z.object({
  strict: z.boolean({ invalid_type_error: "must be a boolean" }).default(true),
}).strict();

/** Checks `dict` against the entries, then copies it into them (module doc). */
export function loadState(
  op: string,
  entries: readonly StateEntry[],
  dict: unknown,
  options: LoadStateDictOptions | undefined,
): LoadStateDictResult {
  if (dict === undefined || dict === null) missing(op, "stateDict");
  if (typeof dict !== "object" || Array.isArray(dict) || Tensor.isTensor(dict)) {
    invalid(op, "stateDict", "must be an object of tensors by name (what stateDict() returns)");
  }
  const { strict } = parseScalars(op, optionsSchema, options ?? {});
  const given = dict as Record<string, unknown>;
  const known = new Set(entries.map((e) => e.key));
  const unexpectedKeys = Object.keys(given).filter((k) => !known.has(k));
  const missingKeys: string[] = [];
  const updates: (() => void)[] = [];
  for (const e of entries) {
    const value = Object.hasOwn(given, e.key) ? optionalTensor(op, e.key, given[e.key]) : undefined;
    if (value === undefined) {
      missingKeys.push(e.key);
      continue;
    }
    if (storageReleased(value.storage)) {
      invalid(
        op,
        e.key,
        "was disposed: its memory was freed (dispose(), tidy, or its device closed) before " +
          "the state dict was loaded",
      );
    }
    if ("tensor" in e) {
      checkEntryTensor(op, e.key, value, e.tensor);
      updates.push(() => e.tensor.copy_(value));
    } else {
      const n = checkCounter(op, e.key, value);
      updates.push(() => e.counter.set(n));
    }
  }
  if (strict && missingKeys.length > 0) {
    const extra = unexpectedKeys.length > 0
      ? `; unexpected key(s): ${unexpectedKeys.join(", ")}`
      : "";
    missing(
      op,
      missingKeys[0],
      `(missing key(s): ${missingKeys.join(", ")}${extra}) is required with strict: true`,
    );
  }
  if (strict && unexpectedKeys.length > 0) {
    invalid(
      op,
      unexpectedKeys[0],
      `is not a key of this module (unexpected key(s): ${unexpectedKeys.join(", ")}; its keys: ${
        [...known].join(", ") || "none"
      }); pass { strict: false } to ignore them`,
    );
  }
  for (const update of updates) update();
  return { missingKeys, unexpectedKeys };
}

function checkEntryTensor(op: string, key: string, value: Tensor, target: Tensor): void {
  if (!FLOAT_DTYPES.includes(value.dtype)) {
    invalid(op, key, `dtype ${value.dtype} is not supported (supported: ${FLOAT_DTYPES})`);
  }
  if (formatShape(value.shape) !== formatShape(target.shape)) {
    invalid(
      op,
      key,
      `size mismatch: shape ${formatShape(value.shape)} in the state dict, ${
        formatShape(target.shape)
      } in the module`,
    );
  }
}

function checkCounter(op: string, key: string, value: Tensor): number {
  if (value.dtype !== "int32" || value.rank !== 0) {
    invalid(
      op,
      key,
      `must be an int32 scalar (shape []), as stateDict() writes it; got ${value.dtype} of ` +
        `shape ${formatShape(value.shape)}`,
    );
  }
  const n = value.item();
  if (n < 0) invalid(op, key, `(${n}) must not be negative`);
  return n;
}
