/**
 * The places that name the operators against the declarations, so that a new operator's entries
 * cannot be forgotten or drift: the kernel contract's methods (`Kernels`, by family) against the
 * SoC table's operators and groups (`src/backends/ascend/soc_operators.ts`), checked by the type
 * checker; docs/npu.md's per-operator tables ("runs on", "bfloat16") against the SoC table; the
 * README's operator table against the SoC operators and the functions `mod.ts` exports. An
 * operator's function and kernel are its aclnn name without `aclnn`, starting lower case
 * (aclnnGemmaRmsNorm: `gemmaRmsNorm`).
 *
 * @module
 */

import assert from "node:assert/strict";
import * as lib from "../../mod.ts";
import {
  SOC_FAMILIES,
  SOC_OPERATORS,
  SOC_SUPPORT,
  type SocFamilyName,
  type SocOperator,
} from "../../src/backends/ascend/soc.ts";
import { bf16Allowed, type SocOperatorGroup } from "../../src/backends/ascend/soc.ts";
import type {
  BatchNormFamilyKernels,
  BatchNormKernels,
  GroupNormActKernels,
  GroupNormKernels,
  Kernels,
  RowNormKernels,
} from "../../src/backends/types.ts";

const ROOT = new URL("../../", import.meta.url);
const NPU_MD = Deno.readTextFileSync(new URL("docs/npu.md", ROOT));
const README = Deno.readTextFileSync(new URL("README.md", ROOT));

/** The public function of an aclnn operator. */
function functionOf(op: SocOperator): string {
  return op[5].toLowerCase() + op.slice(6);
}

/** Whether A and B are the same type. */
type Equal<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** The aclnn operators of a kernel interface's methods. */
type OperatorsOf<K> = `aclnn${Capitalize<keyof K & string>}`;
/** The SoC table's operators of group G. */
type GroupOperators<G extends SocOperatorGroup> = {
  [K in SocOperator]: (typeof SOC_SUPPORT)[K]["group"] extends G ? K : never;
}[SocOperator];

Deno.test("Kernels: one method per SoC operator, each family's interface its group", () => {
  // Compile-time checks: a kernel without an operator, an operator without a kernel, or a
  // kernel declared in another family than its operator's group fails `deno check`.
  const checks: true[] = [
    true satisfies Equal<OperatorsOf<Kernels>, SocOperator>,
    true satisfies Equal<OperatorsOf<BatchNormKernels>, GroupOperators<"batchNorm">>,
    true satisfies Equal<OperatorsOf<BatchNormFamilyKernels>, GroupOperators<"batchNormFamily">>,
    true satisfies Equal<OperatorsOf<GroupNormKernels>, GroupOperators<"groupNorm">>,
    true satisfies Equal<OperatorsOf<GroupNormActKernels>, GroupOperators<"groupNormAct">>,
    true satisfies Equal<OperatorsOf<RowNormKernels>, GroupOperators<"rowNorm">>,
  ];
  assert.equal(checks.length, 6);
});

/** How docs/npu.md names each family's products. */
const LABEL: Readonly<Record<SocFamilyName, string>> = {
  Ascend910: "Atlas training",
  Ascend910B: "A2",
  Ascend910_93: "A3",
  Ascend310P: "Atlas inference",
  Ascend310B: "Atlas 200I/500 A2",
  Ascend950: "950",
  Ascend350: "350",
};

/** A cell's product labels, sorted ("—" or "… only" as docs/npu.md writes them). */
function labels(cell: string): string[] {
  const text = cell.trim().replace(/ only$/, "");
  return text === "—" ? [] : text.split(", ").sort();
}

/** The rows of docs/npu.md's per-operator tables: operator functions, runs on, bfloat16. */
function npuRows(): { functions: string[]; runsOn: string; bf16: string }[] {
  const rows = [];
  let inTable = false;
  for (const line of NPU_MD.split("\n")) {
    if (!line.startsWith("|")) {
      inTable = false;
      continue;
    }
    const cells = line.split("|").slice(1, -1);
    if (/^\s*operator\s*$/.test(cells[0])) inTable = cells[1].trim() === "runs on";
    const functions = [...cells[0].matchAll(/`([a-zA-Z0-9]+)`/g)].map((m) => m[1]);
    if (inTable && functions.length > 0) {
      rows.push({ functions, runsOn: cells[1], bf16: cells[2] });
    }
  }
  return rows;
}

Deno.test("docs/npu.md: each operator's products and bfloat16 are soc_operators.ts's", () => {
  const rows = npuRows();
  const listed = new Map(rows.flatMap((r) => r.functions.map((f) => [f, r])));
  for (const op of SOC_OPERATORS) {
    const { products } = SOC_SUPPORT[op];
    // The seed BatchNorm/GroupNorm operators (the only ones that run on Ascend 350) are
    // described per family, in the table above the per-operator ones.
    if ((products as readonly string[]).includes("Ascend350")) continue;
    const row = listed.get(functionOf(op));
    assert.ok(row, `docs/npu.md has no row for ${functionOf(op)} (${op})`);
    const families = SOC_FAMILIES.filter((f) => (products as readonly string[]).includes(f.name));
    const want = (fs: typeof families) => fs.map((f) => LABEL[f.name as SocFamilyName]).sort();
    assert.deepEqual(labels(row.runsOn), want(families), `${op}: runs on`);
    assert.deepEqual(
      labels(row.bf16),
      want(families.filter((f) => bf16Allowed(op, f))),
      `${op}: bfloat16`,
    );
  }
  const operators = new Set(SOC_OPERATORS.map(functionOf));
  const unknown = [...listed.keys()].filter((f) => !operators.has(f));
  assert.deepEqual(unknown, [], "rows of no SoC operator");
});

Deno.test("README: the operator table names every operator's function and aclnn name", () => {
  const section = README.slice(README.indexOf("\n## Operators"), README.indexOf("\n### "));
  const rows = section.split("\n").filter((l) => l.startsWith("| `"));
  const exported: Record<string, unknown> = lib;
  for (const op of SOC_OPERATORS) {
    const fn = functionOf(op);
    assert.equal(typeof exported[fn], "function", `mod.ts exports ${fn} (${op})`);
    const row = rows.find((r) => r.split("|")[1].includes(`\`${fn}\``));
    assert.ok(row, `the README's operator table has no row for ${fn}`);
    // A row of two operators may shorten the second's aclnn name (aclnnBatchNormElemt / …ElemtBackward).
    const shortened = row.includes(`…${op.replace(/^aclnn[A-Z][a-z]+[A-Z][a-z]+/, "")}`);
    assert.ok(row.includes(op) || shortened, `the README's row of ${fn} names ${op}`);
  }
});
