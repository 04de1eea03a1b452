/**
 * `tidy(fn)`: frees the memory of every tensor created inside `fn` except what `fn` returns,
 * as tfjs's `tf.tidy` does, but also for `async` functions: the scope follows `fn` across
 * `await` (node:async_hooks AsyncLocalStorage), so concurrent tidy scopes do not mix.
 *
 * What a scope frees is storage allocated while it was active, on the host and on devices (by
 * `Tensor.zeros`, `fromArray`, `clone`, `to(...)`, an operator's outputs, ...): device memory
 * goes back to the device's allocator, a host tensor's block to the host caching allocator,
 * and every freed tensor becomes unusable (161002). Views made inside a scope of tensors from
 * outside share outside storage and are never freed by it. Storage reachable from the returned
 * value (a Tensor, or arrays / plain objects holding tensors) is kept and handed to the
 * enclosing scope; {@linkcode keep} keeps a tensor that is not returned.
 *
 * @module
 */

import { AsyncLocalStorage } from "node:async_hooks";
import type { DeviceStorage } from "./device.ts";
import type { HostData } from "./dtype.ts";
import { heapFree } from "./host_heap.ts";

/** What a scope frees: device storage or a host tensor's typed array. */
type Storage = DeviceStorage | HostData;

interface Scope {
  readonly storages: Set<Storage>;
  readonly parent: Scope | undefined;
}

const current = new AsyncLocalStorage<Scope>();

/** The constructor of `async` functions (tidy gives them a scope that follows their awaits). */
const AsyncFunction = (async () => {}).constructor;
/**
 * Scopes of synchronous calls ({@linkcode releaseOnFailure}), innermost last: a plain stack is
 * enough (nothing else runs until the call returns) and costs far less than AsyncLocalStorage
 * on every operator call.
 */
const callScopes: Scope[] = [];

/** Records storage allocated now, for the innermost active scope (if any). */
export function trackStorage(storage: Storage): void {
  (callScopes.at(-1) ?? current.getStore())?.storages.add(storage);
}

/**
 * Runs the synchronous `fn` (an operator call: its outputs, then its kernels). If `fn` throws,
 * the device memory allocated while it ran is freed, so a failed call leaves nothing behind;
 * if it returns, that memory belongs to the enclosing scope as if there were no scope here.
 */
export function releaseOnFailure<T>(fn: () => T): T {
  const scope: Scope = {
    storages: new Set(),
    parent: callScopes.at(-1) ?? current.getStore(),
  };
  callScopes.push(scope);
  let result: T;
  try {
    result = fn();
  } catch (e) {
    for (const storage of scope.storages) release(storage);
    throw e;
  } finally {
    callScopes.pop();
  }
  for (const storage of scope.storages) scope.parent?.storages.add(storage);
  return result;
}

/** Anything holding its storage in a `storage` property (a Tensor). */
interface HasStorage {
  readonly storage: unknown;
}

function isDeviceStorage(value: unknown): value is DeviceStorage {
  return typeof value === "object" && value !== null && "release" in value &&
    "byteLength" in value && "device" in value;
}

function isStorage(value: unknown): value is Storage {
  return ArrayBuffer.isView(value) || isDeviceStorage(value);
}

/** Frees `storage` now: device memory, or a host tensor's heap block (marking it disposed). */
function release(storage: Storage): void {
  if (ArrayBuffer.isView(storage)) heapFree(storage);
  else storage.release();
}

/** Every storage reachable from `value` through tensors, arrays and plain objects. */
function reachableStorages(value: unknown, found: Set<Storage>, seen: Set<unknown>): void {
  if (typeof value !== "object" || value === null || seen.has(value)) return;
  seen.add(value);
  const storage = (value as HasStorage).storage;
  if (isStorage(storage)) {
    found.add(storage);
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) reachableStorages(item, found, seen);
    return;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) {
    for (const item of Object.values(value)) reachableStorages(item, found, seen);
  }
}

function close(scope: Scope, result: unknown): void {
  const keep = new Set<Storage>();
  reachableStorages(result, keep, new Set());
  for (const storage of scope.storages) {
    if (keep.has(storage)) scope.parent?.storages.add(storage);
    else release(storage);
  }
  scope.storages.clear();
}

/**
 * Runs `fn` and frees the memory of every tensor it created, on the host and on devices (each
 * freed tensor becomes unusable), except the tensors reachable from its result (a Tensor, or arrays and plain objects of them). Works with
 * `async` functions: the returned promise settles after the cleanup. Scopes nest; what an
 * inner scope returns belongs to the outer one.
 *
 * @example
 * ```ts
 * import { batchNormStats, Tensor, tidy } from "@aclnn/norm";
 * const x = Tensor.random([8, 3, 4], { seed: 1 });
 * const invstd = tidy(() => {
 *   // mean's memory (host or device) is freed when the scope ends; invstd is returned.
 *   const { mean, invstd } = batchNormStats({ input: x });
 *   return invstd;
 * });
 * console.log(invstd.shape); // [3]
 * ```
 */
export function tidy<T>(fn: () => T): T {
  const scope: Scope = { storages: new Set(), parent: callScopes.at(-1) ?? current.getStore() };
  let result: T;
  if (fn instanceof AsyncFunction) {
    // The scope must follow fn across its awaits.
    try {
      result = current.run(scope, fn);
    } catch (e) {
      close(scope, undefined);
      throw e;
    }
  } else {
    // A plain function runs to its end before anything else does: a stack is enough, and it
    // leaves nothing per call behind (an AsyncLocalStorage context outlives a synchronous
    // loop's young collections). A promise it returns is awaited, but what its continuations
    // allocate is not tracked: write such a function as `async`.
    callScopes.push(scope);
    try {
      result = fn();
    } catch (e) {
      close(scope, undefined);
      throw e;
    } finally {
      callScopes.pop();
    }
  }
  if (result instanceof Promise) {
    return result.then(
      (value) => {
        close(scope, value);
        return value;
      },
      (error) => {
        close(scope, undefined);
        throw error;
      },
    ) as T;
  }
  close(scope, result);
  return result;
}

/**
 * Keeps a tensor's storage out of the innermost `tidy` scope (its memory is then yours to
 * free with `dispose()`). Returns its argument.
 *
 * @example
 * ```ts
 * import { keep, Tensor, tidy } from "@aclnn/norm";
 * let running: Tensor | undefined;
 * tidy(() => {
 *   running = keep(Tensor.zeros([4])); // survives the scope without being returned
 * });
 * console.log(running?.shape); // [4]
 * ```
 */
export function keep<T extends { readonly storage: unknown }>(tensor: T): T {
  const storage = tensor.storage;
  if (isStorage(storage)) (callScopes.at(-1) ?? current.getStore())?.storages.delete(storage);
  return tensor;
}
