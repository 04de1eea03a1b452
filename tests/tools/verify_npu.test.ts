/**
 * `deno task verify:npu` (scripts/verify_npu.ts), run as a user runs it: a child process
 * (`Deno.execPath()`) against the built software CANN, with `--quick`. It passes on the
 * simulator and writes a report naming the SoC and the CANN version; it fails, listing the
 * deviations, when the simulator corrupts every kernel's outputs by a relative 1e-2
 * (ACLSIM_FAULT=corrupt); it skips what the library says a chip does not run; bad options end
 * in one line and exit 2. Its conformance cases include the norm family's, every peer case of
 * each tests/fixtures/conformance/norm_family_*.ts file and CANN's examples, some of each file's
 * in the quick run. Also the version files it reads (scripts/cann_versions.ts). Needs the
 * built simulator (`deno task build:sim`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { cannVersion, driverVersion, versionField } from "../../scripts/cann_versions.ts";
import { NORM_FAMILY_CONFORMANCE } from "../../scripts/verify_npu/conformance.ts";
import { SWEEP } from "../../scripts/verify_npu/sweep_all.ts";
import { SWEEP_OPS } from "../../scripts/verify_npu/sweep_ops.ts";
import { SWEEP_SHAPES } from "../../scripts/verify_npu/sweep.ts";
import { operatorSupported, SOC_FAMILIES, SOC_OPERATORS } from "../../src/backends/ascend/soc.ts";
import { SIM_AVAILABLE } from "../helpers/backends.ts";

const SCRIPT = new URL("../../scripts/verify_npu.ts", import.meta.url).pathname;
/** Everything this file writes (the reports, the fake install trees). */
const OUT = new URL("../../build/verify-npu-test", import.meta.url).pathname;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** The report's text ("" when none was written). */
  report: string;
}

/** Runs the verifier with `args`, the simulator playing `soc`, `env` on top. */
async function verify(
  args: string[],
  options: { soc?: string; env?: Record<string, string>; report?: string } = {},
): Promise<Run> {
  Deno.mkdirSync(OUT, { recursive: true });
  const report = `${OUT}/${options.report ?? "report"}.md`;
  try {
    Deno.removeSync(report);
  } catch { /* not there */ }
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-ffi",
      "--allow-env",
      "--allow-read",
      `--allow-write=${OUT}`,
      SCRIPT,
      ...args,
      "--report",
      report,
    ],
    env: {
      ACLSIM_FAULT: "",
      ACLSIM_SOC_NAME: options.soc ?? "Ascend950PR_9599",
      ...options.env,
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  let text = "";
  try {
    text = Deno.readTextFileSync(report);
  } catch { /* not written */ }
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr), report: text };
}

/** The rows of the stdout tables: operator, suite, dtypes, layout and the counts. */
function tableRows(stdout: string) {
  const rows: {
    op: string;
    suite: string;
    dtypes: string;
    layout: string;
    cases: number;
    passed: number;
    failed: number;
    skipped: number;
  }[] = [];
  let op = "";
  for (const line of stdout.split("\n")) {
    if (/^\S/.test(line)) op = line.trim();
    const m = line.match(
      /^ {2}(conformance|sweep) {2,}(.+?) {2,}(\S+(?: \S+)?) +(\d+) +(\d+) +(\d+) +(\d+) /,
    );
    if (m) {
      const [, suite, dtypes, layout, cases, passed, failed, skipped] = m;
      rows.push({
        op,
        suite,
        dtypes,
        layout,
        cases: +cases,
        passed: +passed,
        failed: +failed,
        skipped: +skipped,
      });
    }
  }
  return rows;
}

Deno.test("verify:npu: the sweep runs every SoC operator", () => {
  const swept = new Set(SWEEP.flatMap((s) => s.kernels));
  assert.deepEqual(SOC_OPERATORS.filter((op) => !swept.has(op)), [], "operators no sweep runs");
});

/** The `--quick` run's conformance cases (scripts/verify_npu.ts). */
const QUICK_NUMEL = 2000;

/** Every `source` of a fixture module's exports: case lists, cases, and `*Cases()` builders. */
function fixtureSources(module: Record<string, unknown>): string[] {
  const sourceOf = (v: unknown) =>
    typeof v === "object" && v !== null && typeof (v as { source?: unknown }).source === "string"
      ? [(v as { source: string }).source]
      : [];
  return Object.entries(module).flatMap(([name, v]) => {
    if (Array.isArray(v)) return v.flatMap(sourceOf);
    if (typeof v === "function" && v.length === 0 && /Cases$/.test(name)) {
      return (v() as unknown[]).flatMap(sourceOf);
    }
    return sourceOf(v);
  });
}

Deno.test("verify:npu: the norm family's conformance cases, each fixture file's in --quick", async () => {
  const files = Object.keys(NORM_FAMILY_CONFORMANCE);
  assert.deepEqual(files.sort(), [
    "norm_family_ada.ts",
    "norm_family_batch.ts",
    "norm_family_group.ts",
    "norm_family_rms.ts",
    "norm_family_rows.ts",
  ]);
  const family = new Set<string>();
  for (const [file, build] of Object.entries(NORM_FAMILY_CONFORMANCE)) {
    const cases = build();
    const names = cases.map((c) => c.name);
    // Every peer case of the fixture file is a case (by its source), and an example of each.
    const module = await import(`../fixtures/conformance/${file}`);
    const sources = fixtureSources(module);
    assert.ok(sources.length > 0, file);
    for (const source of sources) {
      assert.ok(names.some((n) => n.includes(source)), `${file}: no case of ${source}`);
    }
    assert.ok(names.some((n) => n.endsWith("(golden)")), `${file}: no CANN example`);
    assert.ok(cases.every((c) => c.suite === "conformance" && c.kernels.length > 0), file);
    // The quick run takes some of its peer cases.
    const quick = cases.filter((c) => c.numel <= QUICK_NUMEL && !c.name.endsWith("(golden)"));
    assert.ok(quick.length > 0, `${file}: no peer case in --quick`);
    for (const c of cases) family.add(c.kernels[0]);
  }
  // The 19 operators of the norm family, each with its sweep op (the same library function).
  assert.equal(family.size, 19, [...family].join(", "));
  const ops = Object.values(NORM_FAMILY_CONFORMANCE).flatMap((b) => b().map((c) => c.op));
  for (const op of ops) assert.ok(SWEEP.some((s) => s.op === op), `${op} is no sweep op`);
});

Deno.test({
  name: "verify:npu: passes on the software CANN; the report names the SoC and the CANN version",
  ignore: !SIM_AVAILABLE,
  fn: async () => {
    const r = await verify(["--sim", "--quick"], { report: "pass" });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^verify:npu: PASSED$/m);
    assert.match(r.stdout, /^\d+ cases: \d+ passed, 0 failed, \d+ skipped/m);
    // A table per operator, every operator of the sweep among them, each with sweep rows.
    const rows = tableRows(r.stdout);
    for (const op of SWEEP.filter((op) => op.takes?.(SWEEP_SHAPES[0]) ?? true)) {
      assert.ok(rows.some((row) => row.op === op.op && row.suite === "sweep"), op.op);
    }
    // The 950 runs every operator but those CANN documents for other products only
    // (soc_operators.ts; e.g. adaLayerNormBackward: aclnn_ada_layer_norm_backward.cpp:436-455
    // computes on A2/A3 only): only their sweeps skip cases.
    const skipped = new Set(rows.filter((row) => row.skipped > 0).map((row) => row.op));
    const on950 = SOC_FAMILIES.find((f) => f.name === "Ascend950")!;
    const notOn950 = SWEEP.filter((s) => s.kernels.some((k) => !operatorSupported(k, on950)))
      .map((s) => s.op);
    assert.ok([...skipped].every((op) => notOn950.includes(op)), [...skipped].join(", "));
    assert.ok(rows.some((row) => row.suite === "conformance"), "conformance rows");
    // The norm family's conformance cases of each fixture file: some ran and passed.
    for (const [file, build] of Object.entries(NORM_FAMILY_CONFORMANCE)) {
      const ops = new Set(build().filter((c) => c.numel <= QUICK_NUMEL).map((c) => c.op));
      assert.ok(
        rows.some((row) => row.suite === "conformance" && ops.has(row.op) && row.passed > 0),
        `${file}: no conformance case passed`,
      );
    }
    for (const layout of ["contiguous", "channels-last", "strided"]) {
      assert.ok(rows.some((row) => row.layout === layout), layout);
    }
    assert.match(r.report, /^# @aclnn\/norm NPU verification: PASSED$/m);
    assert.match(r.report, /^\| SoC \| Ascend950PR_9599 \|$/m);
    assert.match(
      r.report,
      /^\| SoC family \| Ascend950 \(Ascend 950PR\/950DT, NpuArch 3510\) \|$/m,
    );
    // The simulator's build writes the version file where a real install keeps it.
    assert.match(
      r.report,
      /^\| CANN version \| aclsim-\d+\.\d+\.\d+ .*share\/info\/runtime\/version\.info\) \|$/m,
    );
    assert.match(r.report, /^\| Driver version \| unknown \|$/m);
    assert.match(r.report, /^\| float32 \| 2\.0e-4 \| 6\.0e-8 \|$/m);
    assert.match(r.report, /## Deviations\n\nNone\./);
  },
});

Deno.test({
  name: "verify:npu: fails and lists the deviations when the simulator corrupts outputs by 1e-2",
  ignore: !SIM_AVAILABLE,
  fn: async () => {
    const r = await verify(["--sim", "--quick"], {
      env: { ACLSIM_FAULT: "corrupt" },
      report: "corrupt",
    });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /^verify:npu: FAILED$/m);
    assert.match(r.report, /^# @aclnn\/norm NPU verification: FAILED$/m);
    // Every sweep case with float32 or float16 data fails (a relative 1e-2 is beyond their
    // tolerances); bfloat16's tolerance (1.6e-2) is wider than the perturbation, so a bfloat16
    // case fails only through a float32 output.
    const rows = tableRows(r.stdout).filter((row) => row.suite === "sweep");
    assert.ok(rows.length > 50, `${rows.length} sweep rows`);
    for (const row of rows) {
      if (/^float(32|16)/.test(row.dtypes)) {
        // (Cases of an operator this chip does not run are skipped, not failed.)
        assert.equal(row.failed, row.cases - row.skipped, `${row.op} ${row.dtypes} ${row.layout}`);
      }
    }
    // The deviations name the operator, case, dtypes, layout, output, index and both values:
    // here the NPU's value is the CPU backend's times 1.01, rounded to float32.
    const table = r.report.slice(r.report.indexOf("## Deviations"));
    for (const op of SWEEP_OPS) {
      assert.ok(table.includes(`| ${op.op} | sweep |`), `${op.op} has deviations`);
    }
    const row = table.split("\n").find((l) =>
      l.startsWith("| batchNormReduceBackward | sweep |") && l.includes("| float32 |") &&
      l.includes("| sumDy (float32) |")
    );
    assert.ok(row, "a float32 sumDy deviation of the sweep");
    const cells = row.split(" | ");
    const [index, npu, cpu] = cells.slice(7, 10);
    assert.match(index, /^\[\d+\]$/);
    assert.ok(
      Math.abs(Number(npu) - Math.fround(Number(cpu) * 1.01)) <= Math.abs(Number(cpu)) * 2 ** -23,
      `NPU ${npu} = CPU ${cpu} x 1.01`,
    );
  },
});

Deno.test({
  name: "verify:npu: skips what the library says the chip does not run, and says why",
  ignore: !SIM_AVAILABLE,
  fn: async () => {
    const a2 = await verify(["--sim", "--quick"], { soc: "Ascend910B4", report: "a2" });
    assert.equal(a2.code, 0, a2.stdout + a2.stderr);
    assert.match(a2.report, /^\| SoC \| Ascend910B4 \|$/m);
    assert.match(
      a2.report,
      /\| batchNormStats \| \d+ \| aclnnBatchNormStats takes no bfloat16 on Ascend910B \|/,
    );
    assert.match(
      a2.report,
      /\| groupNormBackward \| \d+ \| aclnnGroupNormBackward takes no mixed precision on Ascend910B \|/,
    );
    const stats = tableRows(a2.stdout).find((row) =>
      row.op === "batchNormStats" && row.suite === "sweep" && row.dtypes === "bfloat16"
    );
    assert.ok(stats && stats.skipped === stats.cases && stats.passed === 0, JSON.stringify(stats));
    // Atlas 200I/500 A2 (Ascend310B) runs aclnnLayerNorm alone of them (soc.ts): its cases
    // pass, every other operator's are skipped.
    const b = await verify(["--sim", "--quick"], { soc: "Ascend310B1", report: "b" });
    assert.equal(b.code, 0, b.stdout + b.stderr);
    const ran = tableRows(b.stdout).filter((row) => row.passed > 0).map((row) => row.op);
    assert.deepEqual([...new Set(ran)], ["layerNorm"]);
    // Atlas training (Ascend910A): the library refuses float16 GroupNorm there (rules.ts
    // groupNormTakesFloat16), so those cases are skipped with the reason, not failed.
    const a = await verify(["--sim", "--quick", "--ops", "groupNorm,groupNormBackward"], {
      soc: "Ascend910A",
      report: "a",
    });
    assert.equal(a.code, 0, a.stdout + a.stderr);
    assert.match(
      a.report,
      /\| groupNorm \| \d+ \| aclnnGroupNorm takes no float16 on Ascend910 \|/,
    );
    const half = tableRows(a.stdout).filter((row) => row.dtypes === "float16");
    assert.ok(half.length > 0 && half.every((row) => row.failed === 0 && row.passed === 0));
    assert.ok(tableRows(a.stdout).some((row) => row.dtypes === "float32" && row.passed > 0));
    // The Atlas inference series (Ascend310P): aclnnAddLayerNorm writes no mean or rstd there
    // (soc_fused.ts), so the norm family's conformance cases of them are skipped, its y and x
    // compared; aclnnInstanceNorm runs on that series only, its cases of fewer than 32 bytes per
    // C or H*W skipped (aclnnInstanceNorm.md).
    const p = await verify(["--sim", "--quick"], { soc: "Ascend310P3", report: "p" });
    assert.equal(p.code, 0, p.stdout + p.stderr);
    assert.match(
      p.report,
      /\| addLayerNorm \(mean and rstd\) \| \d+ \| aclnnAddLayerNorm writes no mean or rstd on Ascend310P \|/,
    );
    assert.match(p.report, /\| instanceNorm \| \d+ \| aclnnInstanceNorm needs C \(\d+\) and H\*W/);
    const pRows = tableRows(p.stdout).filter((row) => row.suite === "conformance");
    for (const op of ["addLayerNorm", "instanceNorm"]) {
      assert.ok(pRows.some((row) => row.op === op && row.passed > 0), op);
    }
    // Calls the chip runs none of: nothing was verified, which is no pass.
    const none = await verify(["--sim", "--quick", "--ops", "batchNormStats,groupNorm"], {
      soc: "Ascend310B1",
      report: "none",
    });
    assert.equal(none.code, 1, none.stdout + none.stderr);
    assert.match(none.stdout, /NOTHING RAN: the library says Ascend310B1 runs none of these calls/);
  },
});

Deno.test({
  name: "verify:npu: --help exits 0; a bad option or no NPU ends in one line, no stack trace",
  ignore: !SIM_AVAILABLE,
  fn: async () => {
    const help = await verify(["--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^deno task verify:npu \[options\]/);
    assert.match(help.stdout, /--quick/);
    for (
      const [args, pattern] of [
        [["--bogus"], /Unknown option '--bogus'/],
        [["--device", "two"], /--device must be a device id/],
        [["--device", "-1"], /Option .--device. argument is ambiguous/],
        [["--lib-dir", "relative/dir"], /--lib-dir must be an absolute path/],
        [["--sim", "--lib-dir", "/x"], /--sim and --lib-dir exclude each other/],
      ] as const
    ) {
      const r = await verify([...args]);
      assert.equal(r.code, 2, `${args}: ${r.stderr}`);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.match(r.stderr, pattern);
      assert.doesNotMatch(r.stderr, /^\s+at /m);
      assert.equal(r.report, "", "no report");
    }
    // Discovery as openAscend() does it: $ACLNN_NORM_LIB_DIR is an explicit choice.
    const r = await verify([], { env: { ACLNN_NORM_LIB_DIR: `${OUT}/no-such-cann` } });
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    assert.match(
      r.stderr,
      /^verify:npu: cannot open NPU 0: \$ACLNN_NORM_LIB_DIR .*no-such-cann does not exist/,
    );
    assert.doesNotMatch(r.stderr, /^\s+at /m);
  },
});

Deno.test("verify:npu: CANN and driver versions come from the files CANN reads", () => {
  const root = `${OUT}/fake`;
  try {
    Deno.removeSync(root, { recursive: true });
  } catch { /* not there */ }
  const write = (path: string, text: string) => {
    Deno.mkdirSync(path.replace(/\/[^/]*$/, ""), { recursive: true });
    Deno.writeTextFileSync(path, text);
  };
  // CANN >= 8.5: <root>/share/info/runtime/version.info, the first "Version=" line.
  Deno.mkdirSync(`${root}/cann/lib64`, { recursive: true });
  write(`${root}/cann/share/info/runtime/version.info`, "version_dir=x\nVersion=8.5.0\n");
  assert.deepEqual(cannVersion(`${root}/cann/lib64`), {
    version: "8.5.0",
    file: `${root}/cann/share/info/runtime/version.info`,
  });
  // An older toolkit: <root>/<arch>-linux/ascend_toolkit_install.info.
  Deno.mkdirSync(`${root}/old/latest/lib64`, { recursive: true });
  write(`${root}/old/latest/x86_64-linux/ascend_toolkit_install.info`, "version=8.0.RC2\n");
  assert.equal(cannVersion(`${root}/old/latest/lib64`).version, "8.0.RC2");
  assert.deepEqual(cannVersion(`${root}/none/lib64`), { version: "unknown" });
  assert.deepEqual(cannVersion(null), { version: "unknown" });
  assert.equal(versionField("Version=\nVersion=1"), undefined, "the first Version= line counts");
  // The driver: Driver_Install_Path_Param of the install info, then <path>/driver/version.info.
  write(`${root}/etc/ascend_install.info`, `Driver_Install_Path_Param=${root}/drv\n`);
  write(`${root}/drv/driver/version.info`, "Version=24.1.rc2\n");
  assert.deepEqual(driverVersion(`${root}/etc/ascend_install.info`, `${root}/missing`), {
    version: "24.1.rc2",
    file: `${root}/drv/driver/version.info`,
  });
  write(`${root}/default/version.info`, "Version=23.0.3\n");
  assert.equal(
    driverVersion(`${root}/missing`, `${root}/default/version.info`).version,
    "23.0.3",
    "no install info: the default install path",
  );
  assert.deepEqual(driverVersion(`${root}/missing`, `${root}/missing`), { version: "unknown" });
});
