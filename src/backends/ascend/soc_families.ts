/**
 * The Ascend SoC families this package knows and how a SoC name or a platform file places a chip
 * in one: the part of the chip table (`soc.ts`, which re-exports it) that no operator rule is in.
 *
 * Sources: hicann/runtime `src/platform/platform_config/{cann,cann-dev}/<SoC>.ini` ([version]
 * SoC_version, Short_SoC_version, NpuArch); hicann/opbase `src/nnopbase/composite_op/utils/
 * platform.cpp` InitSocVersion() and `include/nnopbase/opdev/platform.h` (op::SocVersion).
 *
 * @module
 */

/** The name (Short_SoC_version) of each family of {@linkcode SOC_FAMILIES}. */
export type SocFamilyName =
  | "Ascend910"
  | "Ascend910B"
  | "Ascend910_93"
  | "Ascend310P"
  | "Ascend310B"
  | "Ascend950"
  | "Ascend350";

/** A SoC family: what CANN's operator code branches on. */
export interface SocFamily {
  /** Short_SoC_version, e.g. `Ascend910B`. */
  readonly name: string;
  /** The product line as CANN's documentation names it, e.g. `Atlas A2 training series`. */
  readonly product: string;
  /** NpuArch of the platform ini (DAV_xxxx), what newer operator code branches on. */
  readonly npuArch: number;
  /** op::SocVersion enum value, what older (and some current) operator code branches on. */
  readonly socVersion: number;
  /**
   * The platform files' Short_SoC_version values that opbase maps to this family's SocVersion
   * (hicann/opbase `src/nnopbase/composite_op/utils/platform.cpp` InitSocVersion): how a SoC
   * name this table does not list is placed.
   */
  readonly shortVersions: readonly string[];
  /** SoC_version strings (aclrtGetSocName) of this family. */
  readonly names: readonly string[];
  /** Prefixes of further SoC_version strings of this family (matched after exact names). */
  readonly prefixes: readonly string[];
}

/** op::SocVersion values (opbase include/nnopbase/opdev/platform.h). */
export const SocVersion = {
  ASCEND910: 0,
  ASCEND910B: 1,
  ASCEND910_93: 2,
  ASCEND950: 3, // == ASCEND910_95
  ASCEND910E: 4,
  ASCEND310P: 6,
  ASCEND310B: 7,
  ASCEND350: 12,
} as const;

/** DAV_3510: the "regbase" architecture of Ascend 950 and 350 (ops-nn aclnn_util.h IsRegbase). */
export const DAV_3510 = 3510;

/** A family of {@linkcode SOC_FAMILIES}: its name is one of {@linkcode SocFamilyName}. */
type NamedFamily = SocFamily & { readonly name: SocFamilyName };

/** Every SoC family this package knows, from the platform ini files (one per SocFamilyName). */
export const SOC_FAMILIES: readonly SocFamily[] = Object.freeze<NamedFamily[]>([
  {
    name: "Ascend910",
    shortVersions: ["Ascend910"],
    product: "Atlas training series",
    npuArch: 1001,
    socVersion: SocVersion.ASCEND910,
    // "Ascend910B" alone is the first-generation 910 (its ini says Short_SoC_version=Ascend910).
    names: ["Ascend910A", "Ascend910B", "Ascend910ProA", "Ascend910ProB", "Ascend910PremiumA"],
    prefixes: [],
  },
  {
    name: "Ascend910B",
    shortVersions: ["Ascend910B"],
    product: "Atlas A2 training series",
    npuArch: 2201,
    socVersion: SocVersion.ASCEND910B,
    names: [
      "Ascend910B1",
      "Ascend910B2",
      "Ascend910B2C",
      "Ascend910B3",
      "Ascend910B4",
      "Ascend910B4-1",
    ],
    prefixes: ["Ascend910B"],
  },
  {
    name: "Ascend910_93",
    shortVersions: ["Ascend910_93"],
    product: "Atlas A3 training series",
    npuArch: 2201,
    socVersion: SocVersion.ASCEND910_93,
    names: [
      "Ascend910_9362",
      "Ascend910_9363",
      "Ascend910_9372",
      "Ascend910_9381",
      "Ascend910_9382",
      "Ascend910_9391",
      "Ascend910_9392",
    ],
    prefixes: ["Ascend910_93"],
  },
  {
    name: "Ascend310P",
    shortVersions: ["Ascend310P"],
    product: "Atlas inference series",
    npuArch: 2002,
    socVersion: SocVersion.ASCEND310P,
    names: ["Ascend310P1", "Ascend310P3", "Ascend310P5", "Ascend310P7"],
    prefixes: ["Ascend310P"],
  },
  {
    name: "Ascend310B",
    shortVersions: ["Ascend310B"],
    product: "Atlas 200I/500 A2 inference",
    npuArch: 3002,
    socVersion: SocVersion.ASCEND310B,
    names: ["Ascend310B1", "Ascend310B2", "Ascend310B3", "Ascend310B4"],
    prefixes: ["Ascend310B"],
  },
  {
    name: "Ascend950",
    // Before hicann/runtime 9d41dbe4 (2026-01) the 950 platform files said
    // SoC_version=Ascend910_9599, Short_SoC_version=Ascend910_95 (cann-dev/Ascend910_9599.ini at
    // 494dda3); opbase maps Ascend910_95 to ASCEND910_95 == ASCEND950 (platform.h).
    shortVersions: ["Ascend950", "Ascend910_95"],
    product: "Ascend 950PR/950DT",
    npuArch: DAV_3510,
    socVersion: SocVersion.ASCEND950,
    names: [],
    prefixes: ["Ascend950PR_", "Ascend950DT_"],
  },
  {
    name: "Ascend350",
    shortVersions: ["Ascend350"],
    product: "Ascend 350",
    npuArch: DAV_3510,
    socVersion: SocVersion.ASCEND350,
    names: [],
    prefixes: ["Ascend350_"],
  },
]);

/** Families by SoC name, looked up once per name (every operator call asks). */
const familyByName = new Map<string, SocFamily | undefined>();

/**
 * The family of a SoC name (aclrtGetSocName), or undefined when this package does not know it.
 *
 * @example
 * ```ts
 * import { socFamily } from "@aclnn/norm/ascend";
 * console.log(socFamily("Ascend910B4")?.product); // Atlas A2 training series
 * ```
 */
export function socFamily(socName: string | null | undefined): SocFamily | undefined {
  if (!socName) return undefined;
  if (familyByName.has(socName)) return familyByName.get(socName);
  let family = SOC_FAMILIES.find((f) => f.names.includes(socName));
  family ??= SOC_FAMILIES.find((f) =>
    f.prefixes.some((p) => socName.startsWith(p) && socName.length > p.length)
  );
  familyByName.set(socName, family);
  return family;
}

/** DAV_2201: the Atlas A2/A3 architecture. */
export const DAV_2201 = 2201;

/** Whether the family is the DAV_3510 ("regbase") architecture. */
export function isRegbase(family: SocFamily): boolean {
  return family.npuArch === DAV_3510;
}

/**
 * The family of a platform file's `Short_SoC_version` (opbase's InitSocVersion map, restricted
 * to the families this package knows), with the file's `NpuArch` when it gives one (CANN reads
 * the architecture from the same file), or undefined.
 *
 * @example
 * ```ts
 * import { familyFromPlatform } from "@aclnn/norm/ascend";
 * console.log(familyFromPlatform("Ascend910_95", 3510)?.name); // Ascend950
 * ```
 */
export function familyFromPlatform(
  shortSocVersion: string | undefined,
  npuArch: number | undefined,
): SocFamily | undefined {
  if (!shortSocVersion) return undefined;
  const family = SOC_FAMILIES.find((f) => f.shortVersions.includes(shortSocVersion));
  if (!family || npuArch === undefined || npuArch === family.npuArch) return family;
  return Object.freeze({ ...family, npuArch });
}
