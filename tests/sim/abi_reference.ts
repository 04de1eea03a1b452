/**
 * The CANN ABI the tests check the library's symbol table (tests/ffi/symbols.test.ts) and the
 * software CANN's exports (check_abi.ts) against: `tests/sim/cann_abi.json`, which is the shared
 * reference `../shared/reference/cann_abi.json` (generated from the real CANN headers) plus the
 * entries of `../shared/reference/cann_abi_norm_family.json` (the norm-family operators of
 * issue 39, parsed from hicann/ops-nn) for the operators the library binds, added as each lands.
 *
 * Where the shared references exist (they are not in the repository), the snapshot is checked
 * against them: every entry of cann_abi.json is in the snapshot, equal; every other entry of the
 * snapshot is in cann_abi_norm_family.json, equal. Without them the snapshot stands alone.
 *
 * @module
 */

/** One ABI entry: the classes of the parameters in order and of the result. */
export interface AbiReferenceEntry {
  /** Parameter classes ("pointer", "i32", "u64", "f64", ...). */
  parameters: string[];
  /** Result class. */
  result: string;
}

/** The ABI and what disagrees between the snapshot and the shared references (empty: none). */
export interface AbiReference {
  /** Function name -> its ABI, the snapshot's. */
  abi: Record<string, AbiReferenceEntry>;
  /** One line per disagreement. */
  problems: string[];
}

function readJson(url: URL): Record<string, AbiReferenceEntry> | undefined {
  try {
    return JSON.parse(Deno.readTextFileSync(url));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

function same(a: AbiReferenceEntry, b: AbiReferenceEntry): boolean {
  return JSON.stringify(a.parameters) === JSON.stringify(b.parameters) && a.result === b.result;
}

/** Reads the snapshot and checks it against the shared references when they exist. */
export function loadAbiReference(): AbiReference {
  const abi = readJson(new URL("cann_abi.json", import.meta.url))!;
  const problems: string[] = [];
  const shared = readJson(new URL("../../../shared/reference/cann_abi.json", import.meta.url));
  if (!shared) return { abi, problems };
  const family = readJson(
    new URL("../../../shared/reference/cann_abi_norm_family.json", import.meta.url),
  ) ?? {};
  for (const [name, entry] of Object.entries(shared)) {
    if (!abi[name]) problems.push(`tests/sim/cann_abi.json lacks ${name} of cann_abi.json`);
    else if (!same(abi[name], entry)) {
      problems.push(`tests/sim/cann_abi.json: ${name} differs from cann_abi.json`);
    }
  }
  for (const [name, entry] of Object.entries(abi)) {
    if (shared[name]) continue;
    const want = family[name];
    if (!want) {
      problems.push(
        `tests/sim/cann_abi.json: ${name} is in neither cann_abi.json nor cann_abi_norm_family.json`,
      );
    } else if (!same(entry, want)) {
      problems.push(`tests/sim/cann_abi.json: ${name} differs from cann_abi_norm_family.json`);
    }
  }
  return { abi, problems };
}
