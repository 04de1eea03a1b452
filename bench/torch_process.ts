/**
 * How the benchmarks run PyTorch beside the library: Debian's `python3-torch` under
 * `/usr/bin/python3`, with glibc told to keep freed memory (without these two variables every
 * large PyTorch tensor costs fresh page faults on this VM and PyTorch runs 5-10x slower, which
 * would flatter us).
 *
 * @module
 */

/** PyTorch's settings, printed in each benchmark's header and given to its process. */
export const TORCH_ENV: Readonly<Record<string, string>> = {
  MALLOC_MMAP_THRESHOLD_: "4294967296",
  MALLOC_TRIM_THRESHOLD_: "4294967296",
};

/** The Python that has Debian's python3-torch. */
export const PYTHON = "/usr/bin/python3";

/** The header's description of the PyTorch side with `threads` threads. */
export function torchSettings(threads: number): string {
  const env = Object.entries(TORCH_ENV).map(([k, v]) => `${k}=${v}`).join(" ");
  return `PyTorch: ${PYTHON} with ${env}, torch.set_num_threads(${threads})`;
}

/**
 * Runs the Python script `script` (a path beside this file) with `args` under
 * {@linkcode TORCH_ENV} and returns its stdout parsed as JSON, or a one-line reason it could
 * not (the script's last stderr line, or the spawn error).
 */
export async function runTorch(script: string, args: readonly string[]): Promise<unknown> {
  try {
    const out = await new Deno.Command(PYTHON, {
      args: [new URL(script, import.meta.url).pathname, ...args],
      env: TORCH_ENV,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) return new TextDecoder().decode(out.stderr).trim().split("\n").at(-1)!;
    return JSON.parse(new TextDecoder().decode(out.stdout));
  } catch (e) {
    return (e as Error).message;
  }
}
