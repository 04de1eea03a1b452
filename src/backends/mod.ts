/**
 * The backends: the CPU backend (the default, always registered) and the Ascend backend (for
 * tensors on an `AscendDevice`). Operators reach them only through {@linkcode backendFor}.
 *
 * @module
 */

import { ascendBackend } from "./ascend/mod.ts";
import { cpuBackend } from "./cpu/mod.ts";
import { registerBackend } from "./registry.ts";

registerBackend(cpuBackend);
registerBackend(ascendBackend);

export { backendFor, registerBackend, registeredBackends } from "./registry.ts";
export type * from "./types.ts";
export { channelGeometry, rowGeometry } from "./types.ts";
export { cpuBackend } from "./cpu/mod.ts";
export { ascendBackend } from "./ascend/mod.ts";
