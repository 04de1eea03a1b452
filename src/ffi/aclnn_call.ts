/**
 * An aclnn call by parameter name: the arguments of an operator as a record keyed by the names
 * in its C header (symbols/aclnn_operators.ts), put in the prototype's order and passed as
 * their declared kinds by the declaration itself. A backend can then neither swap two
 * arguments nor pass one as the wrong kind, and a parameter it leaves out (or misspells) is a
 * type error: an absent optional tensor is written `undefined`, by name.
 *
 * @module
 */

import type { AcceleratorDevice } from "../tensor/device.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { type AclnnArg, arg, runAclnn } from "./executor.ts";
import {
  ACLNN_OPERATORS,
  type AclnnOperatorDeclaration,
  type AclnnOperatorName,
  type AclnnParamKind,
} from "./symbols/aclnn_operators.ts";

/** The value a parameter of kind `K` takes. */
export type AclnnValue<K extends AclnnParamKind> = K extends "tensor" | "output"
  ? Tensor | undefined
  : K extends "bool" ? boolean
  : K extends "boolArray" ? readonly boolean[]
  : K extends "intArray" ? readonly number[]
  : K extends "string" ? string
  : number;

/** The arguments of operator `Op`, by the names of its C header. */
export type AclnnArguments<Op extends AclnnOperatorName> = {
  readonly [P in (typeof ACLNN_OPERATORS)[Op]["params"][number] as P[0]]: AclnnValue<P[1]>;
};

/** `value` as the executor's argument of kind `kind`. */
function toArg(kind: AclnnParamKind, value: unknown): AclnnArg {
  switch (kind) {
    case "tensor":
      return arg.tensor(value as Tensor | undefined);
    case "output":
      return arg.output(value as Tensor | undefined);
    case "bool":
      return arg.bool(value as boolean);
    case "i32":
      return arg.i32(value as number);
    case "i64":
      return arg.i64(value as number);
    case "f32":
      return arg.f32(value as number);
    case "f64":
      return arg.f64(value as number);
    case "boolArray":
      return arg.boolArray(value as readonly boolean[]);
    case "intArray":
      return arg.intArray(value as readonly number[]);
    case "string":
      return arg.string(value as string);
  }
}

/**
 * Runs operator `op` on `device` (both phases, as runAclnn does) with `args` by name, in the
 * order and kinds its declaration gives.
 */
export function callAclnn<Op extends AclnnOperatorName>(
  device: AcceleratorDevice,
  op: Op,
  args: AclnnArguments<Op>,
): void {
  const declared: AclnnOperatorDeclaration = ACLNN_OPERATORS[op];
  const values = args as unknown as Readonly<Record<string, unknown>>;
  runAclnn(device, op, declared.params.map(([name, kind]) => toArg(kind, values[name])));
}
