/**
 * What `deno task verify:npu` prints and writes: a table per operator (cases, passed, failed,
 * skipped, worst error, tolerance, per suite, dtypes and layout) on stdout, and a Markdown
 * report to attach to an issue: the machine (SoC, CANN, driver, versions), the tolerances,
 * the tables, every deviation (operator, case, dtype, layout, output, index, NPU value, CPU
 * value, error) and what was skipped and why.
 *
 * @module
 */

import type { OutputComparison } from "./compare.ts";
import { toleranceTable } from "./compare.ts";
import { type Environment, versionText } from "./environment.ts";
import { type CaseResult, errorRatio, worstOutput } from "./run.ts";

/** One row of an operator's table. */
export interface Row {
  /** The cases' suite. */
  readonly suite: string;
  /** Their dtypes label. */
  readonly dtype: string;
  /** Their layout. */
  readonly layout: string;
  /** Cases in the row, and how each ended. */
  cases: number;
  /** Cases whose every output agreed. */
  passed: number;
  /** Cases with a deviation or a call that threw. */
  failed: number;
  /** Cases the chip does not run, by the library's rules. */
  skipped: number;
  /** The compared output furthest from its tolerance. */
  worst?: OutputComparison;
}

/** Rows per operator, in the order the operators first appear. */
export function summarize(results: readonly CaseResult[]): Map<string, Row[]> {
  const byOp = new Map<string, Map<string, Row>>();
  for (const r of results) {
    const { op, suite, dtype, layout } = r.case;
    let rows = byOp.get(op);
    if (!rows) byOp.set(op, rows = new Map());
    const key = `${suite}\u0000${dtype}\u0000${layout}`;
    let row = rows.get(key);
    if (!row) {
      rows.set(key, row = { suite, dtype, layout, cases: 0, passed: 0, failed: 0, skipped: 0 });
    }
    row.cases++;
    row[r.status]++;
    const w = worstOutput(r);
    if (w && (!row.worst || errorRatio(w) > errorRatio(row.worst))) row.worst = w;
  }
  return new Map([...byOp].map(([op, rows]) => [op, [...rows.values()]]));
}

/** Totals over every case. */
export function totals(
  results: readonly CaseResult[],
): { cases: number; passed: number; failed: number; skipped: number } {
  const count = (s: CaseResult["status"]) => results.filter((r) => r.status === s).length;
  return {
    cases: results.length,
    passed: count("passed"),
    failed: count("failed"),
    skipped: count("skipped"),
  };
}

function num(x: number | undefined): string {
  if (x === undefined) return "-";
  if (!Number.isFinite(x)) return String(x);
  return x === 0 ? "0" : x.toExponential(1);
}

const HEAD = [
  "suite",
  "dtypes",
  "layout",
  "cases",
  "passed",
  "failed",
  "skipped",
  "worst error",
  "tolerance",
];

function cells(row: Row): string[] {
  return [
    row.suite,
    row.dtype,
    row.layout,
    String(row.cases),
    String(row.passed),
    String(row.failed),
    String(row.skipped),
    num(row.worst?.worstError),
    num(row.worst?.tolerance),
  ];
}

/** The per-operator tables as plain text. */
export function textTables(results: readonly CaseResult[]): string {
  const lines: string[] = [];
  for (const [op, rows] of summarize(results)) {
    const table = [HEAD, ...rows.map(cells)];
    const widths = HEAD.map((_, i) => Math.max(...table.map((r) => r[i].length)));
    lines.push(op);
    for (const r of table) {
      lines.push(
        "  " + r.map((c, i) => (i < 3 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  "),
      );
    }
    lines.push("");
  }
  return lines.join("\n");
}

/** The index of element `i` of a row-major array of `shape`, e.g. `[1, 0, 3]`. */
export function indexOf(i: number, shape: readonly number[]): string {
  if (i < 0) return "-";
  const at: number[] = [];
  let rest = i;
  for (let d = shape.length - 1; d >= 0; d--) {
    at.unshift(shape[d] > 0 ? rest % shape[d] : 0);
    rest = shape[d] > 0 ? Math.floor(rest / shape[d]) : rest;
  }
  return `[${at.join(", ")}]`;
}

/** One deviation: a failing output of a case, or a call that threw. */
export interface Deviation {
  /** The case's result. */
  readonly result: CaseResult;
  /** The failing output (none when a call threw). */
  readonly output?: OutputComparison;
}

/** Every deviation, in case order. */
export function deviations(results: readonly CaseResult[]): Deviation[] {
  const list: Deviation[] = [];
  for (const r of results) {
    if (r.status !== "failed") continue;
    if (r.reason !== undefined) list.push({ result: r });
    for (const o of r.outputs) if (o.mismatches > 0) list.push({ result: r, output: o });
  }
  return list;
}

/** A deviation as one line of text. */
export function deviationLine(d: Deviation): string {
  const c = d.result.case;
  const where = `${c.op} [${c.suite}] ${c.name} (${c.dtype}, ${c.layout})`;
  const o = d.output;
  if (!o) return `${where}: ${d.result.reason}`;
  if (o.problem) return `${where} ${o.output}: ${o.problem}`;
  return `${where} ${o.output}: ${o.mismatches}/${o.total} elements off; worst at ` +
    `${indexOf(o.worstIndex, o.shape)}: NPU ${o.npu}, CPU ${o.cpu}, error ${num(o.worstError)} ` +
    `> ${num(o.tolerance)}`;
}

/** Escapes a table cell. */
function md(s: string): string {
  return s.replaceAll("|", "\\|").replaceAll("\n", " ");
}

function mdTable(head: string[], rows: string[][]): string[] {
  return [
    `| ${head.join(" | ")} |`,
    `| ${head.map(() => "---").join(" | ")} |`,
    ...rows.map((r) => `| ${r.map(md).join(" | ")} |`),
  ];
}

/** What the report says about how the run was made. */
export interface RunInfo {
  /** The command line, e.g. `deno task verify:npu --quick`. */
  readonly command: string;
  /** When the run started. */
  readonly started: Date;
  /** How long it took. */
  readonly seconds: number;
}

/** The Markdown report. */
export function markdownReport(
  env: Environment,
  results: readonly CaseResult[],
  run: RunInfo,
): string {
  const t = totals(results);
  const verdict = t.failed === 0 ? "PASSED" : "FAILED";
  const out: string[] = [
    `# @aclnn/norm NPU verification: ${verdict}`,
    "",
    `${t.cases} cases: ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped (not run on ` +
    `this chip, by the library's rules). Each case runs one operator call on the NPU and on the ` +
    `CPU backend with the same inputs and compares every output.`,
    "",
    "## Machine",
    "",
    ...mdTable(["", ""], [
      ["SoC", env.socName],
      ["SoC family", env.socFamily],
      ["CANN version", versionText(env.cann)],
      ["Driver version", versionText(env.driver)],
      ["CANN libraries", env.libDir],
      ["Device", env.device],
      ["Library", env.library],
      ["Deno", env.deno],
      ["OS", env.os],
      ["Command", run.command],
      ["Started", run.started.toISOString()],
      ["Duration", `${run.seconds.toFixed(1)} s`],
    ]),
    "",
    "## Tolerances",
    "",
    "An NPU output and the CPU backend's output of the same call agree when, per element, " +
    "`|npu - cpu| <= tol * (max(1, max |cpu|) + |cpu|)`, with `tol` by the output's dtype; NaN " +
    "must meet NaN and an infinity the same infinity. `tol` is twice the test suite's entry " +
    "(`tests/helpers/tolerance.ts`: two half-ulps of the dtype plus 1e-4 for the NPU's float32 " +
    "accumulation), as each side may be that far from the exact value. The error shown is " +
    "`|npu - cpu| / (max(1, max |cpu|) + |cpu|)`.",
    "",
    ...mdTable(
      ["output dtype", "tol", "half ulp"],
      toleranceTable().map((r) => [r.dtype, num(r.tolerance), num(r.halfUlp)]),
    ),
    "",
    "## Results per operator",
    "",
  ];
  for (const [op, rows] of summarize(results)) {
    out.push(`### ${op}`, "", ...mdTable(HEAD, rows.map(cells)), "");
  }
  const devs = deviations(results);
  out.push("## Deviations", "");
  if (devs.length === 0) out.push("None.", "");
  else {
    out.push(
      `${devs.length} (per failing output: how many elements are off, and the worst one).`,
      "",
      ...mdTable(
        [
          "operator",
          "suite",
          "case",
          "dtypes",
          "layout",
          "output",
          "elements off",
          "index",
          "NPU",
          "CPU",
          "error",
          "tol",
        ],
        devs.map(({ result, output: o }) => {
          const c = result.case;
          const head = [c.op, c.suite, c.name, c.dtype, c.layout];
          if (!o) return [...head, "(call failed)", result.reason ?? "", "", "", "", "", ""];
          if (o.problem) return [...head, o.output, o.problem, "", "", "", "", num(o.tolerance)];
          return [
            ...head,
            `${o.output} (${o.dtype})`,
            `${o.mismatches} of ${o.total}`,
            indexOf(o.worstIndex, o.shape),
            String(o.npu),
            String(o.cpu),
            num(o.worstError),
            num(o.tolerance),
          ];
        }),
      ),
      "",
    );
  }
  const skipped = results.filter((r) => r.status === "skipped");
  out.push("## Skipped", "");
  if (skipped.length === 0) out.push("Nothing: the library claims this chip runs every case.", "");
  else {
    const reasons = new Map<string, number>();
    for (const r of skipped) {
      const key = `${r.case.op}\u0000${r.reason}`;
      reasons.set(key, (reasons.get(key) ?? 0) + 1);
    }
    out.push(
      "What the library's chip rules (`src/backends/ascend/soc.ts`, `rules.ts`) say this chip does not run:",
      "",
      ...mdTable(
        ["operator", "cases", "reason"],
        [...reasons].map(([k, n]) => {
          const [op, reason] = k.split("\u0000");
          return [op, String(n), reason];
        }),
      ),
      "",
    );
  }
  return out.join("\n");
}
