/**
 * The software CANN's platform files: `tests/sim/platform_config.txt` (one SoC per line, copied
 * by hand from hicann/runtime `src/platform/platform_config/{cann,cann-dev}/<SoC_version>.ini`)
 * rendered as the `<SoC_version>.ini` files CANN installs in `<arch>-linux/data/platform_config`
 * (hicann/runtime `cmake/package.cmake` 361-368). CANN's platform library finds that directory
 * at `dirname(dirname(realpath(<its .so>))) + "/data/platform_config"` (hicann/runtime
 * `src/platform/platform_infos_utils.h` GetConfigFilePath, PLATFORM_RELATIVE_PATH); the
 * simulator's libraries are in `build/sim/`, so its files go to `build/data/platform_config/`.
 *
 * Nothing here knows a chip: every fact is a column of the table.
 *
 * @module
 */

/** One line of `tests/sim/platform_config.txt`. */
export interface PlatformEntry {
  /** `[version] SoC_version`, also the file name (what `aclrtGetSocName()` returns). */
  readonly socVersion: string;
  /** `[version] Short_SoC_version`. */
  readonly shortSocVersion: string;
  /** `[version] NpuArch`, or undefined when the file has none. */
  readonly npuArch: string | undefined;
  /** `[SoCInfo] support_inf_nan`, or undefined when the file has none. */
  readonly supportInfNan: string | undefined;
  /** `[AICoreSpec] padding_size`, or undefined when the file has none. */
  readonly paddingSize: string | undefined;
  /** The hicann/runtime commit the values were copied from. */
  readonly commit: string;
  /** The file under `src/platform/platform_config/` at that commit. */
  readonly file: string;
}

const COLUMNS = 7;

/** Parses the table (comments start with `#`; `-` marks an absent key); throws on a bad line. */
export function parsePlatformConfig(text: string): PlatformEntry[] {
  const entries: PlatformEntry[] = [];
  const seen = new Set<string>();
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const cells = line.split(/\s+/);
    if (cells.length !== COLUMNS) {
      throw new Error(
        `platform_config.txt:${i + 1}: expected ${COLUMNS} columns, got ${cells.length}`,
      );
    }
    const opt = (s: string) => (s === "-" ? undefined : s);
    const [socVersion, shortSocVersion, npuArch, supportInfNan, paddingSize, commit, file] = cells;
    if (!/^[A-Za-z0-9_-]+$/.test(socVersion)) {
      throw new Error(
        `platform_config.txt:${i + 1}: bad SoC_version ${JSON.stringify(socVersion)}`,
      );
    }
    if (seen.has(socVersion)) {
      throw new Error(`platform_config.txt:${i + 1}: ${socVersion} is listed twice`);
    }
    seen.add(socVersion);
    entries.push({
      socVersion,
      shortSocVersion,
      npuArch: opt(npuArch),
      supportInfNan: opt(supportInfNan),
      paddingSize: opt(paddingSize),
      commit,
      file,
    });
  });
  return entries;
}

/** The `<SoC_version>.ini` text of one entry: the sections and keys CANN's file has. */
export function renderIni(e: PlatformEntry): string {
  const lines = [
    "# Written by scripts/build_sim.ts from tests/sim/platform_config.txt: the keys of hicann/runtime",
    `# ${e.commit} src/platform/platform_config/${e.file} that the software CANN reads.`,
    "[version]",
    `SoC_version=${e.socVersion}`,
    `Short_SoC_version=${e.shortSocVersion}`,
  ];
  if (e.npuArch !== undefined) lines.push(`NpuArch=${e.npuArch}`);
  if (e.supportInfNan !== undefined) {
    lines.push("", "[SoCInfo]", `support_inf_nan=${e.supportInfNan}`);
  }
  if (e.paddingSize !== undefined) lines.push("", "[AICoreSpec]", `padding_size=${e.paddingSize}`);
  return lines.join("\n") + "\n";
}

/**
 * Writes `<dir>/<SoC_version>.ini` for every entry of `table` (a file is rewritten only when its
 * text changes) and removes the `.ini` files of SoCs the table no longer lists. Returns the
 * number of files written.
 */
export async function writePlatformConfig(table: URL, dir: URL): Promise<number> {
  const entries = parsePlatformConfig(await Deno.readTextFile(table));
  await Deno.mkdir(dir, { recursive: true });
  const wanted = new Set(entries.map((e) => `${e.socVersion}.ini`));
  for await (const f of Deno.readDir(dir)) {
    if (f.isFile && f.name.endsWith(".ini") && !wanted.has(f.name)) {
      await Deno.remove(new URL(f.name, dir));
    }
  }
  let written = 0;
  for (const e of entries) {
    const file = new URL(`${e.socVersion}.ini`, dir);
    const text = renderIni(e);
    let old: string | null = null;
    try {
      old = await Deno.readTextFile(file);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    if (old !== text) {
      await Deno.writeTextFile(file, text);
      written++;
    }
  }
  return written;
}
