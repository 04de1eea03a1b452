/**
 * Proves that the software CANN built in build/sim/ exports exactly the CANN ABI.
 *
 * 1. Every prototype in tests/sim/sim_api.h is parsed and its parameter / result ABI classes are
 *    compared with cann_abi.json (the compiler already guarantees that the exported
 *    definitions in tests/sim/export_*.c match sim_api.h, which they include).
 * 2. The ELF dynamic symbol table of every built library is read: each public library must
 *    define exactly its own public symbols (nothing more, nothing missing).
 * 3. Each library is opened with `Deno.dlopen` using the signatures from cann_abi.json for the
 *    symbols it must export (this fails if one is missing), and a few calls are made.
 *
 * ```sh
 * deno run --allow-read --allow-ffi tests/sim/check_abi.ts [build/sim]
 * ```
 *
 * @module
 */

import { checkHcclAbi } from "./check_hccl_abi.ts";
import { loadAbiReference } from "./abi_reference.ts";

/** ABI class of one parameter or result, as written in cann_abi.json. */
export type AbiClass = "pointer" | "bool" | "i32" | "u32" | "i64" | "u64" | "f32" | "f64";

/** One entry of cann_abi.json. */
export interface AbiEntry {
  /** Parameter classes in order. */
  parameters: AbiClass[];
  /** Result class. */
  result: AbiClass;
}

/** The simulator-only test hooks exported by libacl_rt.so and libascendcl.so (not CANN). */
export const TEST_HOOK: Readonly<Record<string, AbiEntry>> = {
  aclsimGetStats: { parameters: ["pointer", "u64"], result: "i32" },
  aclsimInjectFault: { parameters: ["i32", "i64", "i64", "i64"], result: "i32" },
};

/** Names of the counters returned by aclsimGetStats, in order. */
export const STAT_NAMES: readonly string[] = [
  "deviceAllocations",
  "deviceBytes",
  "hostAllocations",
  "tensors",
  "boolArrays",
  "intArrays",
  "scalars",
  "executors",
  "streams",
  "pendingTasks",
  "contexts",
  "tasksExecuted",
  "tasksFailed",
  "deviceReferences",
  "faultsInjected",
];

const RUNTIME_EXTRA = new Set(["aclInit", "aclFinalize", "aclGetRecentErrMsg"]);

function isRuntime(name: string): boolean {
  return RUNTIME_EXTRA.has(name) || name.startsWith("aclrt");
}
function isOpMath(name: string): boolean {
  return name.startsWith("aclnnBatchNormStats");
}
/** The operators of libopapi_nn.so (CANN >= 8.5): every norm operator but the Stats pair. */
const OP_NN_PREFIXES = [
  "aclnnBatchNorm",
  "aclnnGroupNorm", // and aclnnGroupNormSilu, SiluV2, Swish, SwishGrad
  "aclnnLayerNorm",
  "aclnnRmsNorm",
  "aclnnAddRmsNorm",
  "aclnnGemmaRmsNorm",
  "aclnnInplaceAddRmsNorm",
  "aclnnFastBatchNorm",
  "aclnnFastLayerNorm",
  "aclnnSyncBatchNorm",
  "aclnnAddLayerNorm",
  "aclnnDeepNorm",
  "aclnnInstanceNorm",
  "aclnnAdaLayerNorm",
];
function isOpNn(name: string): boolean {
  return OP_NN_PREFIXES.some((p) => name.startsWith(p)) && !isOpMath(name);
}
function isNnopbase(name: string): boolean {
  return !isRuntime(name) && !isOpMath(name) && !isOpNn(name);
}

/** Which symbols each simulated library must export, given the names in cann_abi.json. */
export function libraryLayout(names: readonly string[]): Record<string, string[]> {
  const runtime = [...names.filter(isRuntime), ...Object.keys(TEST_HOOK)];
  return {
    "libacl_rt.so": runtime,
    "libascendcl.so": runtime,
    "libnnopbase.so": names.filter(isNnopbase),
    "libopapi_nn.so": names.filter(isOpNn),
    "libopapi_math.so": names.filter(isOpMath),
    "libopapi.so": names.filter((n) => isOpNn(n) || isOpMath(n)),
  };
}

const TYPE_CLASS: Record<string, AbiClass> = {
  int: "i32",
  int32_t: "i32",
  aclError: "i32",
  aclnnStatus: "i32",
  aclDataType: "i32",
  aclFormat: "i32",
  uint32_t: "u32",
  aclrtMemcpyKind: "u32",
  aclrtMemMallocPolicy: "u32",
  aclrtMemAttr: "u32",
  int64_t: "i64",
  uint64_t: "u64",
  size_t: "u64",
  bool: "bool",
  float: "f32",
  double: "f64",
  aclrtStream: "pointer",
  aclrtContext: "pointer",
  // sim_hccl_api.h (the software HCCL, checked by check_hccl_abi.ts)
  HcclResult: "i32",
  HcclDataType: "i32",
  HcclReduceOp: "i32",
  HcclComm: "pointer",
};

function classOf(decl: string, withName: boolean): AbiClass {
  if (decl.includes("*")) return "pointer";
  const words = decl.replace(/\bconst\b/g, " ").trim().split(/\s+/);
  if (withName) words.pop(); // the parameter name
  const type = words.join(" ");
  const cls = TYPE_CLASS[type];
  if (!cls) throw new Error(`sim_api.h: unknown C type '${type}' in '${decl}'`);
  return cls;
}

/** Parses the one-line prototypes of sim_api.h into ABI entries. */
export function parsePrototypes(header: string): Record<string, AbiEntry> {
  const text = header.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
  const out: Record<string, AbiEntry> = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith("typedef")) continue;
    const m = /^(.+?)\b([A-Za-z_]\w*)\s*\((.*)\);$/.exec(line);
    if (!m) continue;
    const [, ret, name, params] = m;
    const list = params.trim() === "void" ? [] : params.split(",").map((p) => p.trim());
    out[name] = {
      parameters: list.map((p) => classOf(p, true)),
      result: classOf(ret.trim(), false),
    };
  }
  return out;
}

/** Defined global symbols of an ELF64 little-endian shared object (.dynsym). */
export function elfDynamicSymbols(bytes: Uint8Array): string[] {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (v.getUint32(0) !== 0x7f454c46 || bytes[4] !== 2 || bytes[5] !== 1) {
    throw new Error("not an ELF64 little-endian file");
  }
  const shoff = Number(v.getBigUint64(0x28, true));
  const shentsize = v.getUint16(0x3a, true);
  const shnum = v.getUint16(0x3c, true);
  const section = (i: number) => {
    const o = shoff + i * shentsize;
    return {
      type: v.getUint32(o + 4, true),
      offset: Number(v.getBigUint64(o + 24, true)),
      size: Number(v.getBigUint64(o + 32, true)),
      link: v.getUint32(o + 40, true),
      entsize: Number(v.getBigUint64(o + 56, true)),
    };
  };
  const names: string[] = [];
  for (let i = 0; i < shnum; i++) {
    const s = section(i);
    if (s.type !== 11) continue; // SHT_DYNSYM
    const str = section(s.link);
    for (let o = s.offset; o + s.entsize <= s.offset + s.size; o += s.entsize) {
      const nameOff = v.getUint32(o, true);
      const info = bytes[o + 4];
      const shndx = v.getUint16(o + 6, true);
      const bind = info >> 4;
      if (shndx === 0 || (bind !== 1 && bind !== 2)) continue; // undefined, or local
      let end = str.offset + nameOff;
      while (bytes[end] !== 0) end++;
      names.push(new TextDecoder().decode(bytes.subarray(str.offset + nameOff, end)));
    }
  }
  return names.sort();
}

/** Options of {@linkcode checkAbi}. */
export interface CheckAbiOptions {
  /** Directory of the built libraries (default: build/sim next to the repository root). */
  libDir?: string | URL;
}

/** Runs every check; returns the list of problems (empty = the ABI agrees). */
export async function checkAbi(options: CheckAbiOptions = {}): Promise<string[]> {
  const libDir = options.libDir ?? new URL("../../build/sim/", import.meta.url);
  const dir = typeof libDir === "string" ? libDir.replace(/\/?$/, "/") : libDir.pathname;
  const { abi: reference, problems } = loadAbiReference();
  const abi = reference as Record<string, AbiEntry>;
  const names = Object.keys(abi);

  // 1. sim_api.h against cann_abi.json
  const header = parsePrototypes(
    await Deno.readTextFile(new URL("sim_api.h", import.meta.url)),
  );
  const expected: Record<string, AbiEntry> = { ...abi, ...TEST_HOOK };
  for (const [name, want] of Object.entries(expected)) {
    const got = header[name];
    if (!got) {
      problems.push(`sim_api.h: no prototype for ${name}`);
      continue;
    }
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      problems.push(
        `sim_api.h: ${name} is ${JSON.stringify(got)} but cann_abi.json says ${
          JSON.stringify(want)
        }`,
      );
    }
  }
  for (const name of Object.keys(header)) {
    if (!(name in expected)) problems.push(`sim_api.h: ${name} is not in cann_abi.json`);
  }

  // 2. exact export sets, 3. dlopen with the JSON signatures. The libraries carry no RPATH
  // (as CANN's do), so what they need is loaded first: the core, then libopapi_math.so.
  const needed = [Deno.dlopen(`${dir}libaclsim_core.so`, {})];
  needed.push(Deno.dlopen(`${dir}libopapi_math.so`, {}));
  for (const [lib, symbols] of Object.entries(libraryLayout(names))) {
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

    const iface: Record<string, Deno.ForeignFunction> = {};
    for (const s of symbols) {
      const e = expected[s];
      iface[s] = { parameters: e.parameters, result: e.result };
    }
    try {
      const handle = Deno.dlopen(path, iface);
      const fns = handle.symbols as Record<string, (...args: unknown[]) => unknown>;
      if (lib === "libacl_rt.so" || lib === "libascendcl.so") {
        const n = fns.aclsimGetStats(null, 0n);
        if (n !== STAT_NAMES.length) problems.push(`${lib}: aclsimGetStats returned ${n}`);
        // Disarming every fault kind is harmless and must succeed; an unknown kind is refused.
        const clear = fns.aclsimInjectFault(0, 0n, 0n, 0n);
        if (clear !== 0) problems.push(`${lib}: aclsimInjectFault(0, 0, 0, 0) returned ${clear}`);
        const bad = fns.aclsimInjectFault(99, 1n, 1n, 0n);
        if (bad !== 100000) problems.push(`${lib}: aclsimInjectFault(99, ...) returned ${bad}`);
        fns.aclGetRecentErrMsg(); // consume the refusal's text
        const soc = fns.aclrtGetSocName() as Deno.PointerValue;
        const name = soc ? new Deno.UnsafePointerView(soc).getCString() : null;
        if (!name) problems.push(`${lib}: aclrtGetSocName returned NULL`);
      }
      handle.close();
    } catch (e) {
      problems.push(
        `${lib}: dlopen with the cann_abi.json signatures failed: ${(e as Error).message}`,
      );
    }
  }
  for (const handle of needed.reverse()) handle.close();
  // The software HCCL: sim_hccl_api.h, libhcomm.so, libhccl.so against hccl_abi.json.
  problems.push(...await checkHcclAbi(dir));
  return problems;
}

if (import.meta.main) {
  const problems = await checkAbi(Deno.args[0] ? { libDir: Deno.args[0] } : {});
  if (problems.length) {
    console.error(`check_abi: ${problems.length} problem(s):`);
    for (const p of problems) console.error(`  - ${p}`);
    Deno.exit(1);
  }
  console.log(
    "check_abi: sim_api.h / sim_hccl_api.h, the ELF exports and dlopen all agree with " +
      "cann_abi.json / hccl_abi.json",
  );
}
