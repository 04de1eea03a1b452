/**
 * The software HCCL's part of the simulator ABI check (run by {@linkcode checkAbi} in
 * check_abi.ts, so by tests/sim/abi_test.ts too):
 *
 * 1. every prototype of tests/sim/sim_hccl_api.h is compared with hccl_abi.json (plus the
 *    simulator-only hook `aclsimHcclGetStats`); the compiler checks export_hcomm.c / export_hccl.c
 *    against that header;
 * 2. libhcomm.so must define exactly the communicator calls and the hook, libhccl.so exactly the
 *    collectives (ELF .dynsym), as current CANN splits them (hicann/hccl
 *    docs/zh/api_ref/hccl_header_and_lib.md:3);
 * 3. libhccl.so lists libhcomm.so in DT_NEEDED and neither carries an RPATH/RUNPATH;
 * 4. both are opened with `Deno.dlopen` and the JSON signatures -- libhccl.so with **every**
 *    symbol, since dlsym on its handle also searches its DT_NEEDED libhcomm.so (how torch_npu's
 *    HcclCompile.h and src/ffi/library.ts bind HCCL) -- after loading, by absolute path, what they
 *    need (no RPATH), and a few calls are made.
 *
 * ```sh
 * deno run --allow-read --allow-ffi tests/sim/check_abi.ts [build/sim]
 * ```
 *
 * @module
 */

import { type AbiEntry, elfDynamicSymbols, parsePrototypes } from "./check_abi.ts";
import { fileSource, inspectElf } from "../../src/ffi/elf.ts";

/** The simulator-only test hook exported by libhcomm.so (not CANN). */
export const HCCL_TEST_HOOK: Readonly<Record<string, AbiEntry>> = {
  aclsimHcclGetStats: { parameters: ["pointer", "u64"], result: "i32" },
};

/** Names of the counters returned by aclsimHcclGetStats, in order. */
export const HCCL_STAT_NAMES: readonly string[] = [
  "communicators",
  "queuedCollectives",
  "rootInfoServers",
  "collectivesCompleted",
  "collectivesFailed",
];

/** The collectives, defined in libhccl.so; every other HCCL symbol is libhcomm.so's. */
const COLLECTIVES = new Set(["HcclAllReduce", "HcclAllGather", "HcclBroadcast"]);

/** Which symbols libhcomm.so and libhccl.so must define, given the names in hccl_abi.json. */
export function hcclLibraryLayout(names: readonly string[]): Record<string, string[]> {
  return {
    "libhcomm.so": [...names.filter((n) => !COLLECTIVES.has(n)), ...Object.keys(HCCL_TEST_HOOK)],
    "libhccl.so": names.filter((n) => COLLECTIVES.has(n)),
  };
}

function dynamicInfo(path: string) {
  const file = Deno.openSync(path);
  try {
    return inspectElf(fileSource(file));
  } finally {
    file.close();
  }
}

/** Runs the HCCL checks on the libraries in `dir` (ending in "/"); returns the problems. */
export async function checkHcclAbi(dir: string): Promise<string[]> {
  const problems: string[] = [];
  const abi: Record<string, AbiEntry> = JSON.parse(
    await Deno.readTextFile(new URL("hccl_abi.json", import.meta.url)),
  );
  const expected: Record<string, AbiEntry> = { ...abi, ...HCCL_TEST_HOOK };

  // 1. sim_hccl_api.h against hccl_abi.json
  const header = parsePrototypes(
    await Deno.readTextFile(new URL("sim_hccl_api.h", import.meta.url)),
  );
  for (const [name, want] of Object.entries(expected)) {
    const got = header[name];
    if (!got) problems.push(`sim_hccl_api.h: no prototype for ${name}`);
    else if (JSON.stringify(got) !== JSON.stringify(want)) {
      problems.push(
        `sim_hccl_api.h: ${name} is ${JSON.stringify(got)} but hccl_abi.json says ${
          JSON.stringify(want)
        }`,
      );
    }
  }
  for (const name of Object.keys(header)) {
    if (!(name in expected)) problems.push(`sim_hccl_api.h: ${name} is not in hccl_abi.json`);
  }

  // 2. exact export sets, 3. DT_NEEDED / no RPATH
  const layout = hcclLibraryLayout(Object.keys(abi));
  for (const [lib, symbols] of Object.entries(layout)) {
    const path = dir + lib;
    let exported: string[];
    try {
      exported = elfDynamicSymbols(await Deno.readFile(path));
    } catch (e) {
      problems.push(`${lib}: cannot read ${path}: ${(e as Error).message}`);
      continue;
    }
    const want = new Set(symbols);
    for (const s of symbols) if (!exported.includes(s)) problems.push(`${lib}: missing ${s}`);
    for (const s of exported) if (!want.has(s)) problems.push(`${lib}: unexpected export ${s}`);
    const check = dynamicInfo(path);
    if (!check.ok) {
      problems.push(`${lib}: ${check.problem}`);
      continue;
    }
    if (check.info.runpath !== undefined) {
      problems.push(`${lib}: carries an RPATH/RUNPATH (${check.info.runpath}); CANN's do not`);
    }
    const needs = lib === "libhccl.so"
      ? ["libhcomm.so", "libaclsim_core.so"]
      : ["libaclsim_core.so"];
    for (const n of needs) {
      if (!check.info.needed.includes(n)) problems.push(`${lib}: DT_NEEDED lacks ${n}`);
    }
  }
  if (problems.length) return problems;

  // 4. dlopen with the JSON signatures, dependencies first (no RPATH)
  const iface = (names: string[]) =>
    Object.fromEntries(
      names.map((s) => [s, { parameters: expected[s].parameters, result: expected[s].result }]),
    ) as Record<string, Deno.ForeignFunction>;
  const deps: Deno.DynamicLibrary<Record<string, Deno.ForeignFunction>>[] = [];
  try {
    for (const dep of ["libaclsim_core.so", "libacl_rt.so"]) deps.push(Deno.dlopen(dir + dep, {}));
    const hcomm = Deno.dlopen(dir + "libhcomm.so", iface(layout["libhcomm.so"]));
    deps.push(hcomm);
    // Every symbol through libhccl.so's handle (the management calls resolve in libhcomm.so).
    const hccl = Deno.dlopen(dir + "libhccl.so", iface(Object.keys(expected)));
    const fns = hccl.symbols as Record<string, (...args: unknown[]) => unknown>;
    const text = (code: number) => {
      const p = fns.HcclGetErrorString(code) as Deno.PointerValue;
      return p ? Deno.UnsafePointerView.getCString(p) : null;
    };
    for (
      const [code, want] of [[0, "no error"], [15, "call runtime api fail"], [
        1042,
        "unknown error",
      ]]
    ) {
      const got = text(code as number);
      if (got !== want) {
        problems.push(`libhccl.so: HcclGetErrorString(${code}) is ${JSON.stringify(got)}`);
      }
    }
    const n = fns.aclsimHcclGetStats(null, 0n);
    if (n !== HCCL_STAT_NAMES.length) {
      problems.push(`libhccl.so: aclsimHcclGetStats returned ${n}`);
    }
    // count 0 succeeds before any pointer check (hcomm op_base_host.cc:102)
    const zero = fns.HcclAllReduce(null, null, 0n, 4, 0, null, null);
    if (zero !== 0) problems.push(`libhccl.so: HcclAllReduce with count 0 returned ${zero}`);
    hccl.close();
  } catch (e) {
    problems.push(`HCCL: dlopen with the hccl_abi.json signatures failed: ${(e as Error).message}`);
  } finally {
    for (const d of deps.reverse()) d.close();
  }
  return problems;
}
