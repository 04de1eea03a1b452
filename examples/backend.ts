/**
 * The examples' backend: the library's embedded default (`selectDefaultDevice`: an Ascend NPU
 * when CANN and a device open, otherwise the CPU backend). Every example takes the same flags:
 * `--cpu` skips the NPU probe, `--sim` runs the NPU code path on the software CANN in
 * `build/sim` (build it with `deno task build:sim`), `--help` prints them; an unknown flag is
 * refused in one line (exit 2).
 *
 * @module
 */

import { AclError, type Device, selectDefaultDevice } from "../mod.ts";

/** The device the example runs on, and a line saying which and why. */
export interface Backend {
  /** `"cpu"` or the opened NPU. */
  readonly device: Device;
  /** e.g. `CPU backend (...; no NPU: ...)` or `NPU npu:0 (...)`. */
  readonly description: string;
  /** Closes the NPU (nothing for the CPU). */
  close(): void;
}

const FLAGS = ["--cpu", "--sim", "--help", "-h"];

/**
 * Reads the example's flags (`--cpu`, `--sim`, `--help`), opens the backend and prints
 * `backend: ...`. `usage` is the example's own first line of help.
 */
export function openBackend(usage = "usage: deno run -A <example> [--cpu | --sim]"): Backend {
  const name = new URL(Deno.mainModule).pathname.split("/").at(-1);
  const args = Deno.args.filter((a) => a !== "--");
  const unknown = args.find((a) => !FLAGS.includes(a));
  if (unknown !== undefined) {
    console.error(`${name}: unknown flag ${unknown} (flags: --cpu, --sim, --help)`);
    Deno.exit(2);
  }
  if (args.includes("--help") || args.includes("-h")) {
    console.log(
      `${usage}\n  --cpu    the CPU backend, without probing for an NPU\n` +
        "  --sim    the NPU code path on the software CANN of build/sim (deno task build:sim)\n" +
        "  -h, --help  print this text",
    );
    Deno.exit(0);
  }
  const sim = args.includes("--sim");
  let selected;
  try {
    selected = selectDefaultDevice(
      args.includes("--cpu")
        ? { backend: "cpu" }
        : sim
        ? { backend: "npu", libDir: new URL("../build/sim", import.meta.url).pathname }
        : {},
    );
  } catch (e) {
    if (!(e instanceof AclError)) throw e;
    console.error(`${name}: ${e.message.split("\n")[0]}`);
    if (sim) console.error("  (build the software CANN first: deno task build:sim)");
    Deno.exit(1);
  }
  const { device, description } = selected;
  console.log(`backend: ${description}`);
  return { device, description, close: () => device !== "cpu" && device.close() };
}
