/**
 * The host heap's size: the memory it takes (4 GiB of address space that never grows, or
 * where the system refuses that much, a growable one: {@linkcode heapMemory}) and how much of it
 * tensors may take ({@linkcode hostHeapMaxBytes}: a quarter of the machine's memory when
 * `--allow-sys` lets the library read it, else 2 GiB, at most 3 GiB; `ACLNN_NORM_HOST_HEAP_MB`
 * sets it). host_heap.ts hands out the blocks.
 *
 * @module
 */

import { grantedEnv } from "./env.ts";

/** The environment variable that sets the heap's maximum size in MiB (0: no tensor in it). */
export const HOST_HEAP_ENV = "ACLNN_NORM_HOST_HEAP_MB";

/**
 * Pages of the heap's memory, its minimum and its maximum (4 GiB: the most a 32-bit
 * WebAssembly memory has). The kernels' module imports a memory of exactly this size
 * (kernels.wat; scripts/build_wasm.ts refuses any other).
 */
export const HOST_HEAP_PAGES = 65536;

/** The heap's default maximum where the machine's memory cannot be read: 2 GiB. */
export const HOST_HEAP_DEFAULT_BYTES = 2 ** 31;

/** The largest heap: 4 GiB less a page (32-bit addresses). */
export const HOST_HEAP_LIMIT_BYTES = 2 ** 32 - 65536;

/**
 * The largest maximum for tensors: the heap's limit less 1 GiB, which stays for the kernels'
 * scratch (staged copies of tensors outside the heap, partial sums). A maximum at the limit
 * itself let a loop of dropped results fill all 4 GiB with tensors, after which any call that
 * needed scratch failed with 207001 (bench:step with `--allow-sys` on a 24 GiB machine, whose
 * quarter is 6 GiB).
 */
export const HOST_HEAP_TENSOR_LIMIT_BYTES = HOST_HEAP_LIMIT_BYTES - 2 ** 30;

/** The smallest default maximum, on a machine of little memory: 256 MiB. */
const HOST_HEAP_MIN_DEFAULT_BYTES = 2 ** 28;

let maxBytes: number | undefined;

/**
 * The default maximum: a quarter of the machine's memory (between 256 MiB and
 * {@linkcode HOST_HEAP_TENSOR_LIMIT_BYTES}) when `--allow-sys` is granted (never prompts), else
 * {@linkcode HOST_HEAP_DEFAULT_BYTES}.
 */
function defaultMaxBytes(): number {
  try {
    const state = Deno.permissions.querySync({ name: "sys", kind: "systemMemoryInfo" }).state;
    if (state !== "granted") return HOST_HEAP_DEFAULT_BYTES;
    const quarter = Math.floor(Deno.systemMemoryInfo().total / 4 / 65536) * 65536;
    return Math.min(HOST_HEAP_TENSOR_LIMIT_BYTES, Math.max(HOST_HEAP_MIN_DEFAULT_BYTES, quarter));
  } catch {
    return HOST_HEAP_DEFAULT_BYTES;
  }
}

/**
 * Bytes of the heap tensors may take: `ACLNN_NORM_HOST_HEAP_MB` when `--allow-env` grants
 * it (read once; never prompts; at most {@linkcode HOST_HEAP_TENSOR_LIMIT_BYTES}), else the default (a quarter of the machine's memory, or
 * {@linkcode HOST_HEAP_DEFAULT_BYTES}: module doc). A value that is not a whole number of MiB
 * is an error that names the variable (a RangeError), not silently ignored.
 */
export function hostHeapMaxBytes(): number {
  if (maxBytes !== undefined) return maxBytes;
  const text = grantedEnv(HOST_HEAP_ENV);
  if (text !== undefined && !/^\s*\d+\s*$/.test(text)) {
    throw new RangeError(
      `${HOST_HEAP_ENV}=${text}: must be a whole number of MiB (0 keeps tensors out of the ` +
        `host heap; default a quarter of the machine's memory)`,
    );
  }
  maxBytes = text !== undefined
    ? Math.min(Number(text) * 2 ** 20, HOST_HEAP_TENSOR_LIMIT_BYTES)
    : defaultMaxBytes();
  return maxBytes;
}

/** Page size of WebAssembly memories. */
export const PAGE_BYTES = 65536;

/**
 * The heap's memory: {@linkcode HOST_HEAP_PAGES} pages that never grow, or, where the system
 * refuses 4 GiB of address space (or `growable` asks), 16 pages that grow up to that size (the
 * kernels then run with the slower bounds checks of a growable memory: wasm_instance.ts
 * `fitMemoryImport`). Throws where shared WebAssembly memories are unavailable.
 */
export function heapMemory(growable: boolean): WebAssembly.Memory {
  if (!growable) {
    try {
      return new WebAssembly.Memory({
        initial: HOST_HEAP_PAGES,
        maximum: HOST_HEAP_PAGES,
        shared: true,
      });
    } catch {
      // Too much address space for this process: the growable memory below.
    }
  }
  return new WebAssembly.Memory({ initial: 16, maximum: HOST_HEAP_PAGES, shared: true });
}
