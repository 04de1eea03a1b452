/**
 * The pool's worker script, built at run time from the worker-safe modules themselves.
 * A worker spawned from a local file needs `--allow-read` in Deno (worker scripts load like
 * dynamic imports), while a `data:` URL needs no permission; so the script is the source
 * text (`Function.prototype.toString`) of every export of the kernel modules, declared at
 * the top level of one module in which they refer to each other by name.
 *
 * The rule that makes this work: a worker-safe module exports every binding its functions
 * use (functions and number constants only) and imports nothing at run time from outside
 * that set. A violation shows up as a ReferenceError in the pool tests.
 *
 * @module
 */

import * as codecs from "../kernels/codecs.ts";
import * as drivers from "../kernels/drivers.ts";
import * as formulas from "../kernels/formulas.ts";
import * as heapKernels from "../kernels/heap_kernels.ts";
import * as kernelTables from "../kernels/kernel_tables.ts";
import * as layoutTypes from "../kernels/layout_types.ts";
import * as moments from "../kernels/moments.ts";
import * as pixelKernels from "../kernels/pixel_kernels.ts";
import * as rowKernels from "../kernels/row_kernels.ts";
import * as rowNormStage from "../kernels/row_norm_stage.ts";
import * as stageTypes from "../kernels/stage_types.ts";
import * as stages from "../kernels/stages.ts";
import * as stridedKernels from "../kernels/strided_kernels.ts";
import * as wasmKernels from "../kernels/wasm_kernels.ts";
import * as jobWords from "./job_words.ts";
import * as serve from "./serve.ts";
import * as sync from "./sync.ts";
import * as workerMainModule from "./worker_main.ts";

/** Every worker-safe module, in no particular order (declarations are hoisted). */
export const WORKER_MODULES: readonly Readonly<Record<string, unknown>>[] = [
  codecs,
  drivers,
  formulas,
  heapKernels,
  kernelTables,
  layoutTypes,
  moments,
  pixelKernels,
  rowKernels,
  rowNormStage,
  stageTypes,
  stages,
  stridedKernels,
  wasmKernels,
  jobWords,
  serve,
  sync,
  workerMainModule,
];

/** The worker script: every export of {@linkcode WORKER_MODULES}, then `workerMain()`. */
export function workerSource(): string {
  const declared = new Map<string, unknown>();
  const lines: string[] = [];
  for (const module of WORKER_MODULES) {
    for (const [name, value] of Object.entries(module)) {
      const previous = declared.get(name);
      if (previous !== undefined) {
        if (previous === value) continue;
        throw new Error(`worker script: two different exports are named ${name}`);
      }
      declared.set(name, value);
      if (typeof value === "function") lines.push(value.toString());
      else if (typeof value === "number") lines.push(`const ${name} = ${value};`);
      else throw new Error(`worker script: export ${name} is neither a function nor a number`);
    }
  }
  lines.push(`workerMain();`);
  return lines.join("\n");
}

/** The worker script as a `data:` URL (needs no permission to load). */
export function workerUrl(): string {
  return `data:text/javascript;charset=utf-8,${encodeURIComponent(workerSource())}`;
}
