/**
 * Builds the software CANN (tests/sim/*.c) into build/sim/ as shared libraries with the real
 * CANN file names, plus the C smoke test.
 *
 * ```sh
 * deno run --allow-run=cc --allow-read --allow-write scripts/build_sim.ts            # build
 * deno run --allow-run=cc --allow-read --allow-write scripts/build_sim.ts --force    # rebuild all
 * deno run --allow-run=cc,build/sim/smoke,build/sim/smoke_norm,build/sim/hccl_smoke \
 *   --allow-read --allow-write --allow-env scripts/build_sim.ts --smoke
 *                                     # build + run smoke, smoke_norm and hccl_smoke
 * ```
 *
 * Targets are skipped when they are newer than their sources, the headers and this script. On a
 * compiler error the compiler output is printed and the script exits with status 1.
 *
 * The simulator knows chips the way CANN does, from platform files: this script renders
 * `tests/sim/platform_config.txt` (hand-copied from hicann/runtime's `platform_config/*.ini`) as
 * `build/data/platform_config/<SoC_version>.ini` (`scripts/sim_platform.ts`), where
 * `libaclsim_core.so` finds them at run time relative to its own real path, as CANN's platform
 * library does. It never reads the library's SoC table (`src/backends/ascend/soc.ts`).
 *
 * @module
 */

import { parseCommand } from "./cli.ts";
import "./require_deno.ts";
import { writePlatformConfig } from "./sim_platform.ts";

const root = new URL("../", import.meta.url);
const srcDir = new URL("tests/sim/", root);
const outDir = new URL("build/sim/", root);
/** CANN's PLATFORM_RELATIVE_PATH beside the libraries' directory (sim_platform.ts). */
const platformDir = new URL("build/data/platform_config/", root);
const PLATFORM_TABLE = new URL("platform_config.txt", srcDir);

const CFLAGS = [
  "-std=c11",
  "-O2",
  "-fPIC",
  "-Wall",
  "-Wextra",
  "-Werror",
  "-fvisibility=hidden",
];
const HEADERS = [
  "sim.h",
  "sim_core_internal.h",
  "sim_api.h",
  "sim_ops_common.h",
  "sim_ops_norm.h",
  "sim_ops_seed.h",
  "sim_scratch.h",
  "smoke.h",
  "smoke_check.h",
  "hccl_sim.h",
  "hccl_sim_internal.h",
  "hccl_transport_internal.h",
  "sim_hccl_api.h",
  "hccl_smoke.h",
];

/** One output of the build. */
interface Target {
  /** File name in build/sim/. */
  out: string;
  /** Source files in tests/sim/. */
  sources: string[];
  /** Extra compiler/linker arguments. */
  args: string[];
}

/**
 * The operators' sources in tests/sim/: `sim_ops.c` (the dispatch), `sim_ops_common.c` (what
 * every operator's phase 1 shares), `sim_ops_norm.c` (the generated operators' framework),
 * `sim_ops_seed_checks.c` and `sim_ops_seed_per_channel.c` (what the seed operators share) and
 * each operator's `sim_ops_<operator>.c`, found by name, so that a new operator's file is built
 * without an edit here. Sorted, for a stable command line.
 */
function operatorSources(): string[] {
  return [...Deno.readDirSync(srcDir)].map((e) => e.name)
    .filter((name) => /^sim_ops(_[a-z0-9_]+)?\.c$/.test(name)).sort();
}

const CORE = "libaclsim_core.so";
/**
 * No RPATH/RUNPATH, like CANN's own libraries: loading one by absolute path only works once the
 * libraries it needs are loaded (src/ffi/library.ts opens each DT_NEEDED entry of the same
 * directory first), so the tests exercise the same loading as a real install.
 */
const linkCore = ["-L", ".", "-laclsim_core", "-Wl,--no-undefined"];

const TARGETS: Target[] = [
  {
    out: CORE,
    sources: [
      // The core's state and the runtime / nnopbase behaviour (sim_core_internal.h joins them).
      "sim_handles.c",
      "sim_errors.c",
      "sim_runtime.c",
      "sim_memory.c",
      "sim_memcpy.c",
      "sim_tensors.c",
      "sim_streams.c",
      "sim_executors.c",
      "sim_numeric.c",
      "sim_scratch.c",
      ...operatorSources(),
      "sim_soc.c",
      "sim_rules.c",
      "sim_decomposed.c",
      "sim_fault.c",
      // The software HCCL's API (hccl_sim_internal.h joins them) and its transport
      // (hccl_transport_internal.h joins those).
      "hccl_comms.c",
      "hccl_config.c",
      "hccl_dtypes.c",
      "hccl_reduce.c",
      "hccl_collectives.c",
      "hccl_transport_sockets.c",
      "hccl_transport_connect_timeout.c",
      "hccl_transport_root_server.c",
      "hccl_transport_join.c",
      "hccl_transport_exchange.c",
    ],
    args: ["-shared", `-Wl,-soname,${CORE}`, "-Wl,--no-undefined", "-lm", "-lpthread", "-ldl"],
  },
  ...["libacl_rt.so", "libascendcl.so"].map((out) => ({
    out,
    sources: ["export_runtime.c"],
    args: ["-shared", `-Wl,-soname,${out}`, ...linkCore],
  })),
  {
    out: "libnnopbase.so",
    sources: ["export_nnopbase.c"],
    args: ["-shared", "-Wl,-soname,libnnopbase.so", ...linkCore],
  },
  {
    out: "libopapi_math.so",
    sources: ["export_opapi.c"],
    args: ["-shared", "-DSIM_WITH_MATH", "-Wl,-soname,libopapi_math.so", ...linkCore],
  },
  {
    // CANN >= 8.5's libopapi_nn.so needs libopapi_math.so (a DT_NEEDED entry), whether or not
    // it calls into it; --no-as-needed keeps the entry.
    out: "libopapi_nn.so",
    sources: ["export_opapi.c"],
    args: [
      "-shared",
      "-DSIM_WITH_NN",
      "-Wl,-soname,libopapi_nn.so",
      "-Wl,--no-as-needed",
      "-lopapi_math",
      ...linkCore,
    ],
  },
  {
    out: "libopapi.so",
    sources: ["export_opapi.c"],
    args: [
      "-shared",
      "-DSIM_WITH_NN",
      "-DSIM_WITH_MATH",
      "-Wl,-soname,libopapi.so",
      ...linkCore,
    ],
  },
  // The software HCCL, split as in current CANN: libhcomm.so defines the communicator calls,
  // libhccl.so the collectives and lists libhcomm.so (and libacl_rt.so) as DT_NEEDED entries,
  // as hicann/hccl src/hccl.cmake:90-104 links it (--no-as-needed keeps entries it never calls).
  {
    out: "libhcomm.so",
    sources: ["export_hcomm.c"],
    args: [
      "-shared",
      "-Wl,-soname,libhcomm.so",
      "-Wl,--no-as-needed",
      "-lacl_rt",
      ...linkCore,
    ],
  },
  {
    out: "libhccl.so",
    sources: ["export_hccl.c"],
    args: [
      "-shared",
      "-Wl,-soname,libhccl.so",
      "-Wl,--no-as-needed",
      "-lhcomm",
      "-lacl_rt",
      ...linkCore,
    ],
  },
  {
    out: "hccl_smoke",
    sources: [
      "hccl_smoke.c",
      "hccl_smoke_collectives.c",
      "hccl_smoke_failures.c",
      "hccl_smoke_one_process.c",
    ],
    args: [
      "-fvisibility=default",
      "-L",
      ".",
      "-lhccl",
      "-lhcomm",
      "-lacl_rt",
      "-laclsim_core",
      "-Wl,-rpath,$ORIGIN",
      "-lm",
      "-lpthread",
    ],
  },
  {
    out: "smoke_norm",
    sources: ["smoke_norm.c"],
    // It calls no sim_* function: --no-as-needed keeps libaclsim_core.so as a direct DT_NEEDED
    // entry, which the rpath then finds (a RUNPATH does not serve the libraries' own entries).
    args: [
      "-fvisibility=default",
      "-Wl,--no-as-needed",
      "-L",
      ".",
      "-lacl_rt",
      "-lnnopbase",
      "-lopapi_nn",
      "-lopapi_math",
      "-laclsim_core",
      "-Wl,-rpath,$ORIGIN",
      "-lm",
    ],
  },
  {
    out: "smoke",
    sources: [
      "smoke.c",
      "smoke_seed_ops.c",
      "smoke_dtypes.c",
      "smoke_socs.c",
      "smoke_runtime.c",
      "smoke_executors.c",
      "smoke_faults.c",
    ],
    args: [
      "-fvisibility=default",
      "-L",
      ".",
      "-lacl_rt",
      "-lnnopbase",
      "-lopapi_nn",
      "-lopapi_math",
      "-laclsim_core",
      "-Wl,-rpath,$ORIGIN",
      "-lm",
      "-lpthread",
    ],
  },
];

async function mtime(url: URL): Promise<number | null> {
  try {
    return (await Deno.stat(url)).mtime?.getTime() ?? null;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

async function upToDate(t: Target, force: boolean): Promise<boolean> {
  if (force) return false;
  const out = await mtime(new URL(t.out, outDir));
  if (out === null) return false;
  const inputs = [
    ...[...t.sources, ...HEADERS].map((s) => new URL(s, srcDir)),
    new URL(import.meta.url),
  ];
  for (const input of inputs) {
    const m = await mtime(input);
    if (m === null || m >= out) return false;
  }
  return true;
}

async function compile(t: Target): Promise<void> {
  const args = [
    ...CFLAGS,
    `-I${srcDir.pathname}`,
    ...t.sources.map((s) => new URL(s, srcDir).pathname),
    "-o",
    t.out,
    ...t.args,
  ];
  let result: Deno.CommandOutput;
  try {
    result = await new Deno.Command("cc", {
      args,
      cwd: outDir,
      stdout: "piped",
      stderr: "piped",
    }).output();
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    console.error(
      "build_sim: the software CANN (needed by `deno task test`, `demo:sim` and the NPU " +
        "benchmarks) is built with a C compiler, and no `cc` was found on PATH; install one " +
        "(e.g. apt-get install gcc).",
    );
    Deno.exit(1);
  }
  const { code, stdout, stderr } = result;
  const text = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
  if (code !== 0) {
    console.error(
      `build_sim: compiling ${t.out} failed (cc exit ${code}):\ncc ${args.join(" ")}\n`,
    );
    console.error(text);
    Deno.exit(1);
  }
  if (text.trim()) console.error(text);
}

/**
 * A CANN install records its version in `<root>/share/info/runtime/version.info` (`Version=`
 * line; hicann/runtime src/acl/aclrt_impl/acl.cpp kRelPathInfo / kVersionInfoKey,
 * src/acl/utils/cann_info_utils.cpp RUNTIME_VERSION_PATH). The simulator's root is build/, so
 * `deno task doctor` and `deno task verify:npu` find this one where they look on a real install.
 */
async function writeVersionInfo(): Promise<void> {
  const { version } = JSON.parse(await Deno.readTextFile(new URL("deno.json", root)));
  const dir = new URL("build/share/info/runtime/", root);
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(
    new URL("version.info", dir),
    `Version=aclsim-${version} (the software CANN of @aclnn/norm tests/sim, not a CANN release)\n`,
  );
}

async function main(): Promise<void> {
  const flags = parseCommand({
    name: "build:sim",
    usage: `usage: deno task build:sim [--force] [--smoke]
  --force      rebuild every target
  --smoke      run the C smoke tests afterwards (exit 1 if a check fails)
  -h, --help   print this text`,
    options: {
      force: { type: "boolean", default: false },
      smoke: { type: "boolean", default: false },
    },
  });
  const force = flags.force;
  const smoke = flags.smoke;
  await Deno.mkdir(outDir, { recursive: true });
  await writePlatformConfig(PLATFORM_TABLE, platformDir);
  // A CANN install keeps its operator packages in <root>/opp beside the libraries, and
  // set_env.sh points ASCEND_OPP_PATH there. Lay the simulator out the same way: build/opp
  // beside build/sim, so openAscend derives ASCEND_OPP_PATH for it exactly as for CANN.
  const oppDir = new URL("build/opp/", root);
  await Deno.mkdir(oppDir, { recursive: true });
  await Deno.writeTextFile(
    new URL("README", oppDir),
    "Operator-package directory of the software CANN (tests/sim): ASCEND_OPP_PATH points here.\n",
  );
  await writeVersionInfo();
  for (const t of TARGETS) {
    const rel = `build/sim/${t.out}`;
    if (await upToDate(t, force)) {
      console.log(`up to date  ${rel}`);
      continue;
    }
    await compile(t);
    console.log(`built       ${rel}  (${t.sources.map((s) => `tests/sim/${s}`).join(", ")})`);
  }
  if (smoke) {
    for (const program of ["smoke", "smoke_norm", "hccl_smoke"]) {
      const { code } = await new Deno.Command(new URL(program, outDir).pathname, {
        env: { ASCEND_OPP_PATH: "" },
        stdout: "inherit",
        stderr: "inherit",
      }).output();
      if (code !== 0) {
        console.error(`build_sim: ${program} test failed (exit ${code})`);
        Deno.exit(1);
      }
    }
  }
}

if (import.meta.main) await main();
