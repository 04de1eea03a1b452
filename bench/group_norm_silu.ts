/**
 * groupNormSilu on the CPU backend, one thread, in process: the fused operator against
 * groupNorm alone (the fused write's cost over a plain GroupNorm), on float32 shapes of a
 * diffusion U-Net's GroupNorm+SiLU blocks. Prints min and median ms per call; compare with
 * bench/torch_group_norm_silu.py (native_group_norm then silu, one thread):
 *
 * ```sh
 * MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
 *   python3 bench/torch_group_norm_silu.py
 * deno run -A bench/group_norm_silu.ts
 * ```
 *
 * @module
 */

import { groupNorm, groupNormSilu, Tensor } from "../mod.ts";
import { setCpuThreads } from "../src/backends/cpu/threads.ts";

setCpuThreads(1);
const SHAPES = [[2, 320, 64, 64], [2, 640, 32, 32], [1, 128, 256, 256]];
const REPS = 30;

function time(fn: () => void): { min: number; median: number } {
  for (let i = 0; i < 3; i++) fn();
  const t: number[] = [];
  for (let i = 0; i < REPS; i++) {
    const t0 = performance.now();
    fn();
    t.push(performance.now() - t0);
  }
  t.sort((a, b) => a - b);
  return { min: t[0], median: t[Math.floor(REPS / 2)] };
}

for (const shape of SHAPES) {
  const x = Tensor.random(shape, { seed: 1 });
  const gamma = Tensor.random([shape[1]], { seed: 2 });
  const beta = Tensor.random([shape[1]], { seed: 3 });
  const fused = time(() => {
    using _ = groupNormSilu({ self: x, gamma, beta, group: 32 });
  });
  const plain = time(() => {
    using _ = groupNorm({ input: x, gamma, beta, group: 32 });
  });
  console.log(
    `${shape.join("x")} groupNormSilu min ${fused.min.toFixed(2)} ms median ${
      fused.median.toFixed(2)
    } ms | groupNorm min ${plain.min.toFixed(2)} ms median ${plain.median.toFixed(2)} ms`,
  );
}
