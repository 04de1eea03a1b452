/**
 * `deno bench bench/cpu_kernels.bench.ts`: the CPU backend's streaming kernels through the
 * 10 public operators, for float32/float16/bfloat16, the shapes [4,16,8,8], [8,64,32,32] and
 * [32,64,56,56], NCHW and channels-last (GroupNorm with 32 groups, or 4 when C = 16). Each
 * group compares the dtypes of one operator, shape and layout against float32. The worker
 * pool is started first, so no case times worker startup; the thread count is the
 * CPU backend's default (ACLNN_NORM_THREADS when --allow-env grants it, else the cores).
 *
 * @module
 */

import { startCpuPool } from "../src/backends/cpu/threads.ts";
import { type BenchLayout, CPU_OPS, CPU_SHAPES } from "./cpu_case_names.ts";
import { type CpuCase, cpuCase } from "./cpu_cases.ts";

await startCpuPool();

/** The case whose tensors are alive now. */
let active: CpuCase | undefined;

for (const shape of CPU_SHAPES) {
  const large = shape[0] * shape[1] * shape[2] * shape[3] > 1 << 20;
  for (const layout of ["contiguous", "channels_last"] as BenchLayout[]) {
    for (const op of CPU_OPS) {
      for (const dtype of ["float32", "float16", "bfloat16"] as const) {
        // Built on its first iteration, and the previous case freed then: every case finds
        // room in the host heap (deno bench runs the cases one after another).
        if (op === "batchNormBackwardDescriptor" && layout !== "contiguous") continue;
        let built: CpuCase | undefined;
        const run = () => {
          if (!built) {
            active?.dispose();
            built = active = cpuCase(op, dtype, shape, layout)!;
          }
          built.run();
        };
        Deno.bench({
          name: `${op} ${dtype} ${shape.join("x")} ${layout}`,
          group: `${op} ${shape.join("x")} ${layout}`,
          baseline: dtype === "float32",
          // Large cases take tens of milliseconds: bound their iterations.
          ...(large ? { n: 20, warmup: 10 } : {}),
          fn: run,
        });
      }
    }
  }
}
