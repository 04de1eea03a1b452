/**
 * An operator declared once: its argument names, its outputs with the rule that allocates each
 * one the caller's `out` does not give, its validation (hand-written, in CANN's check order)
 * and its kernel call. From that, {@linkcode defineOperator} derives what every operator used to
 * repeat by hand: the validation memo's keys (every argument named, arrays by element, every
 * `out` entry), the allocation of missing outputs inside a failure scope, and a result whose
 * `using` frees exactly the outputs the call allocated.
 *
 * @module
 */

import type { Backend } from "../backends/mod.ts";
import type { Device } from "../tensor/device.ts";
import { releaseOnFailure } from "../tensor/scope.ts";
import type { DType } from "../tensor/dtype.ts";
import { Tensor } from "../tensor/tensor.ts";
import { checkKnownNames } from "./known_names.ts";
import { pushValueKeys, ValidationMemo } from "./memo.ts";
import { DisposableResult } from "./results.ts";
import { argumentsOf } from "./validate.ts";

/** What validation establishes for one set of argument values, as a spec needs it. */
export interface ValidatedCall<O extends string> {
  /** The device every tensor lives on. */
  readonly device: Device;
  /** The backend that runs it (its device rules passed). */
  readonly backend: Backend;
  /** The outputs given in `out` (validated); missing ones are allocated per call. */
  readonly given: { readonly [K in O]?: Tensor };
}

/**
 * What validation establishes for an operator that runs a backend plan on its input tensors:
 * the plan, and the tensors minus the outputs (`I`, unless the output names differ from the
 * tensor names).
 */
export interface PlannedCall<O extends string, P, T, I = Omit<T, O>> extends ValidatedCall<O> {
  /** The backend plan. */
  readonly plan: P;
  /** The inputs. */
  readonly tensors: I;
}

/** One operator's declaration. */
export interface OperatorSpec<A extends object, O extends string, V extends ValidatedCall<O>> {
  /** The CANN name, for messages (e.g. `aclnnBatchNormBackward`). */
  readonly op: string;
  /**
   * Every argument the outcome depends on, by name (`out` excluded): the memo compares their
   * values by identity, arrays element by element. A name missing here would let a call reuse
   * a stale validation. These names and `out` are the operator's valid argument names: any
   * other field is refused (161002 naming it and the closest valid name).
   */
  readonly args: readonly (keyof A & string)[];
  /**
   * Each output and how it is allocated when `out` does not give it (on `v.device`, in the
   * layout and dtype PyTorch's rule gives), or undefined when the call does not produce it
   * (masked off). The order is the result's; these names are the only fields `out` may have.
   */
  readonly outputs: { readonly [K in O]: (v: V) => Tensor | undefined };
  /** Validation in CANN's order; throws AclnnError. */
  readonly validate: (args: A) => V;
  /** Runs the kernel with every produced output present. */
  readonly run: (v: V, outputs: { readonly [K in O]: Tensor | undefined }) => void;
}

/**
 * An operator's result: each output (null when not produced), freed by `using`. An operator
 * whose outputs are always produced declares them non-null in its own result type.
 */
export type OperatorResult<O extends string> = { [K in O]: Tensor | null } & Disposable;

/**
 * A new tensor (`Tensor.empty`) for an output the call produces only when `when` holds (an
 * output mask entry); undefined when it does not.
 */
export function emptyWhen(
  when: boolean,
  shape: readonly number[],
  dtype: DType,
  device: Device,
): Tensor | undefined {
  return when ? Tensor.empty(shape, dtype, device) : undefined;
}

/** {@linkcode emptyWhen} in the shape and memory layout of `like` (`Tensor.emptyLike`). */
export function emptyLikeWhen(
  when: boolean,
  like: Tensor,
  dtype: DType,
  device: Device,
): Tensor | undefined {
  return when ? Tensor.emptyLike(like, dtype, device) : undefined;
}

/** The memo keys of `args`: each listed argument (arrays by length and element), then `out`. */
function memoKeys(args: object, names: readonly string[], outputs: readonly string[]): unknown[] {
  const a = args as Record<string, unknown>;
  const keys: unknown[] = [];
  for (const name of names) pushValueKeys(keys, a[name]);
  // The entries of `out`, not the object: a loop may build a new `out` per call.
  const out = (a.out ?? undefined) as Record<string, unknown> | undefined;
  for (const name of outputs) keys.push(out?.[name]);
  return keys;
}

/**
 * The function that calls the operator `spec` declares: unknown argument names refused (in
 * `args` and in `out`), validation (memoised on the argument values), outputs allocated where `out` does not give them (freed again if the call fails),
 * the kernel, and the result.
 */
export function defineOperator<
  A extends object,
  O extends string,
  V extends ValidatedCall<O>,
  R extends OperatorResult<O> = OperatorResult<O>,
>(spec: OperatorSpec<A, O, V>): (args: A) => R {
  const memo = new ValidationMemo<V>();
  const names = Object.keys(spec.outputs) as O[];
  const argumentNames: ReadonlySet<string> = new Set([...spec.args, "out"]);
  const outputNames: ReadonlySet<string> = new Set(names);
  return (args: A) => {
    const a = argumentsOf(spec.op, args);
    // Every call: a misspelt name must not fall back to a default after the memo met.
    checkKnownNames(spec.op, a, argumentNames);
    const out = (a as { out?: unknown }).out;
    if (typeof out === "object" && out !== null) {
      checkKnownNames(spec.op, out, outputNames, "output");
    }
    const keys = memoKeys(a, spec.args, names);
    const v = memo.get(keys) ?? memo.set(keys, spec.validate(a));
    return releaseOnFailure(() => {
      const outputs = {} as { [K in O]: Tensor | undefined };
      const allocated: (Tensor | undefined)[] = [];
      for (const name of names) {
        const given = v.given[name];
        const t = given ?? spec.outputs[name](v);
        if (!given) allocated.push(t);
        outputs[name] = t;
      }
      spec.run(v, outputs);
      const result = new DisposableResult(allocated) as unknown as { [K in O]: Tensor | null };
      for (const name of names) result[name] = outputs[name] ?? null;
      return result as unknown as R;
    });
  };
}
