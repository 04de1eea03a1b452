/**
 * Unknown fields of an argument or options object: a misspelt name (`epsilon` for `eps`) would
 * otherwise be ignored and its default used without a word. Every operator refuses them with
 * 161002 naming the field and the closest valid name, from the names its one declaration lists
 * (an operator spec's `args`, a module's zod schema, a record typed by the arguments'
 * interface).
 *
 * @module
 */

import { ACLNN_ERR_PARAM_INVALID, AclnnError, type InfiniStatus } from "../errors.ts";

/** A name lowercased, without `_` and `-` (so `grad_out` meets `gradOut`). */
function normalized(name: string): string {
  return name.toLowerCase().replace(/[_-]/g, "");
}

/** Edit distance (insertions, deletions, substitutions) between `a` and `b`. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      next.push(Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + cost));
    }
    row = next;
  }
  return row[b.length];
}

/**
 * The valid name closest to `name`: the same name in another case or spelling (`grad_out`,
 * `GRADOUT`), else one that starts the other (`eps` and `epsilon`), else one that holds the
 * other (`mask` in `outputMask`), else the fewest edits; ties go to the name declared first.
 */
export function closestName(name: string, names: Iterable<string>): string | undefined {
  const n = normalized(name);
  let best: string | undefined;
  let bestScore = Infinity;
  for (const candidate of names) {
    const c = normalized(candidate);
    const shorter = Math.min(n.length, c.length);
    const prefix = shorter >= 2 && (n.startsWith(c) || c.startsWith(n));
    const inside = shorter >= 3 && (n.includes(c) || c.includes(n));
    const score = c === n ? 0 : prefix ? 1 : inside ? 2 : 3 + editDistance(n, c);
    if (score < bestScore) {
      best = candidate;
      bestScore = score;
    }
  }
  return best;
}

/**
 * Throws for an unknown field `name` of `op`'s `what` (e.g. "option", or "output" for an
 * `out` entry): 161002 (with `status` for the InfiniOp API), naming the field, the closest
 * valid name and every valid name, e.g. `unknown option "epsilon" for aclnnLayerNorm; did
 * you mean "eps"? (its options: input, normalizedShape, weight, bias, eps, out)`.
 */
export function unknownName(
  op: string,
  name: string,
  names: Iterable<string>,
  what = "option",
  status?: InfiniStatus,
): never {
  const valid = [...names];
  const closest = closestName(name, valid);
  const hint = closest === undefined ? "" : `; did you mean "${closest}"?`;
  const tail = status === undefined ? "" : ` (${status})`;
  throw new AclnnError(
    ACLNN_ERR_PARAM_INVALID,
    `unknown ${what} "${name}" for ${op}${hint} (its ${what}s: ${valid.join(", ") || "none"})` +
      tail,
    { argument: name, status },
  );
}

/**
 * Refuses the first enumerable field of `value` that `names` does not hold
 * ({@linkcode unknownName}); symbol keys (a result's `Symbol.dispose`) are not fields.
 */
export function checkKnownNames(
  op: string,
  value: object,
  names: ReadonlySet<string>,
  what = "option",
  status?: InfiniStatus,
): void {
  for (const key in value) {
    if (!names.has(key)) unknownName(op, key, names, what, status);
  }
}

/**
 * The names of an operator's arguments from a record that lists each field of its arguments
 * interface `A` once (`{ input: true, eps: true, ... }`): the compiler checks that the record
 * holds exactly A's fields, so the list cannot fall behind the interface.
 */
export function namesOf<A>(fields: { readonly [K in keyof Required<A>]: true }): ReadonlySet<
  string
> {
  return new Set(Object.keys(fields));
}
