/**
 * The embedded default backend: an Ascend NPU when CANN and a device can be opened, the CPU
 * backend otherwise. Scripts (the demo, the examples, benchmarks) start here.
 *
 * @module
 */

import { AclError } from "../errors.ts";
import { grantedEnv } from "../tensor/env.ts";
import { type AscendDevice, openAscend, type OpenAscendOptions } from "../ffi/runtime.ts";

/** Environment variable that forces a backend: `cpu`, `npu` or `auto` (the default). */
export const BACKEND_ENV = "ACLNN_NORM_BACKEND";

/** The environment variable that names the CANN library directory (src/ffi/library.ts). */
const LIB_DIR_ENV = "ACLNN_NORM_LIB_DIR";

/** Which backend {@linkcode selectDefaultDevice} should pick. */
export type BackendChoice = "auto" | "cpu" | "npu";

/** Options of {@linkcode selectDefaultDevice}. */
export interface DefaultDeviceOptions extends OpenAscendOptions {
  /** `auto` tries the NPU and falls back to the CPU; `npu` fails when no NPU opens. */
  backend?: BackendChoice;
}

/** The chosen device and why. */
export interface DefaultDeviceSelection {
  /** `"cpu"` or the opened AscendDevice (close it when done). */
  readonly device: "cpu" | AscendDevice;
  /** A one-line description for logs, e.g. `NPU npu:0 (CANN in /usr/local/Ascend/...)`. */
  readonly description: string;
  /** Why the NPU was not used, when the CPU backend was chosen in `auto` mode. */
  readonly fallbackReason?: string;
}

const CHOICES: readonly BackendChoice[] = ["auto", "cpu", "npu"];

/** A bad value of the option or the variable (`where`): a RangeError listing the valid ones. */
function checkChoice(value: unknown, where: string): BackendChoice {
  if (!(CHOICES as readonly unknown[]).includes(value)) {
    throw new RangeError(
      `${where} is ${JSON.stringify(value)}, which is not a backend: use one of ` +
        `${CHOICES.map((c) => `"${c}"`).join(", ")}`,
    );
  }
  return value as BackendChoice;
}

/**
 * Whether the CANN libraries were named explicitly (the `libDir` option or
 * `$ACLNN_NORM_LIB_DIR`): then only that directory is tried, and one that cannot be opened is
 * an error in `auto` mode too, not a reason to fall back to the CPU.
 */
function explicitLibraries(options: DefaultDeviceOptions): boolean {
  return options.libDir !== undefined || grantedEnv(LIB_DIR_ENV) !== undefined;
}

function readBackendEnv(): BackendChoice | undefined {
  // Only when granted: without --allow-env the documented default applies, and the CPU
  // path must never prompt for a permission.
  const value = grantedEnv(BACKEND_ENV);
  if (value === undefined || value === "") return undefined;
  return checkChoice(value, `$${BACKEND_ENV}`);
}

/** How the CPU backend describes itself in a selection's description. */
const CPU_DESCRIPTION = "CPU backend (TypeScript and WebAssembly SIMD, float32 as CANN computes)";

/**
 * Opens the default device: the `backend` option, else `$ACLNN_NORM_BACKEND`, else `auto`
 * (an NPU when CANN and a device can be opened, otherwise the CPU backend with the reason).
 * A value other than `auto`, `cpu` or `npu` is a RangeError that lists the valid ones. A
 * library directory named by the `libDir` option or `$ACLNN_NORM_LIB_DIR` is the only one
 * tried, and one that cannot be opened is an AclError naming it in `auto` mode too.
 *
 * @example
 * ```ts
 * import { selectDefaultDevice, Tensor } from "@aclnn/norm";
 * const { device, description } = selectDefaultDevice();
 * console.log(description);
 * const x = Tensor.random([2, 3, 4], { seed: 1, device });
 * if (device !== "cpu") device.close();
 * ```
 */
export function selectDefaultDevice(options: DefaultDeviceOptions = {}): DefaultDeviceSelection {
  const backend = options.backend === undefined
    ? readBackendEnv() ?? "auto"
    : checkChoice(options.backend, "the backend option");
  if (backend === "cpu") {
    return { device: "cpu", description: CPU_DESCRIPTION };
  }
  try {
    const device = openAscend(options);
    const where = device.libDir ? ` (CANN libraries in ${device.libDir})` : "";
    return { device, description: `NPU ${device.name}${where}` };
  } catch (e) {
    if (backend === "npu") throw e;
    // A library error (code 0) under an explicit directory: that directory is wrong.
    if (e instanceof AclError && e.code === 0 && explicitLibraries(options)) throw e;
    const message = e instanceof Error ? e.message : String(e);
    // The discovery error lists every path tried over many lines; keep the log line short.
    const reason = message.startsWith("Could not open the CANN libraries")
      ? "CANN libraries not found (`deno task doctor` lists every path tried)"
      : message.split("\n")[0];
    return {
      device: "cpu",
      description: `${CPU_DESCRIPTION}; no NPU: ${reason}`,
      fallbackReason: reason,
    };
  }
}
