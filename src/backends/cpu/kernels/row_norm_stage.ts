/**
 * The row norms' stages (LayerNorm, RMSNorm, AddRmsNorm, AddLayerNorm / DeepNorm,
 * AddRmsNormCast, AdaLayerNorm and its backward: src/backends/cpu/rows/row_call.ts builds
 * them): work items of whole rows run by the WebAssembly row kernels in the host heap
 * (src/backends/cpu/wasm/row_norms*.wat), on any thread. A stage's
 * `constants` (a float64 array in the host heap, so that the pool's job words describe it)
 * holds its parameters at the ROW_* indices below: the kernel's arguments are byte addresses
 * in the heap, which every thread's instance of the kernels shares. Each item writes its own
 * rows, its rows' statistics and its own column partials (float32, n rounded up to 4 per
 * item), so the results are the same whichever thread runs which item.
 *
 * Worker-safe (see pool/worker_entry.ts).
 *
 * @module
 */

import type { RowNormOp, RowNormStage } from "./stage_types.ts";

import type { RowNormExports } from "./row_exports.ts";
import { WASM_REGION_BYTES } from "./wasm_instance.ts";

export type { RowNormOp, RowNormStage };

/** Parameter index: elements per row. */
export const ROW_N = 0;
/** Parameter index: rows of the call. */
export const ROW_ROWS = 1;
/** Parameter index: rows per work item. */
export const ROW_PER = 2;
/**
 * Parameter index: the kernels' dtype code of the data tensors (stage_types.ts KernelCode:
 * bfloat16's code 3 when no float constant of the call is NaN; rows/row_call.ts run).
 */
export const ROW_DT = 3;
/** Parameter index: epsilon, as the float32 the kernels receive (CANN's attribute is a float). */
export const ROW_EPS = 4;
/**
 * Parameter index: flags; LayerNorm backward's (1 column sums, 2 gradInput), the fused add +
 * LayerNorm's (add_ln_fwd: 1 store x, 2 bias rows, 4 per-column bias), its backward's
 * (add_ln_bwd: 1 dsum, 2 DeepNormGrad), AdaLayerNormBackward's (ada_ln_bwd: 1 gradInput, 2
 * column sums, 4 batch sums).
 */
export const ROW_FLAGS = 5;
/**
 * Parameter index of the data tensors' (byte address of row 0, bytes between rows), five
 * pairs: LayerNorm x, y; LayerNorm backward dy, x, gradInput; RMSNorm x, y; RMSNorm backward
 * dy, x, dx; AddRmsNorm x1, x2, x, y; AddLayerNorm / DeepNorm x1, x2, bias, x, y; their
 * backward dy, x1 / x, x2 / gx, dsum / dx, dx / dgx; AddRmsNormCast x1, x2, x, y1 (float32
 * rows), y2; AdaLayerNorm x, y; its backward dy, x, gradInput.
 */
export const ROW_DATA = 6;
/**
 * Parameter index of the float32 arrays' byte addresses, five: LayerNorm w, b, mean, rstd;
 * LayerNorm backward w, mean, rstd, pw, pb; RMSNorm (and AddRmsNorm) g, rstd; RMSNorm
 * backward g, rstd, pg; AddLayerNorm / DeepNorm gamma, beta, column bias, mean, rstd; their
 * backward gamma, mean, rstd, pw, pb; AddRmsNormCast g, rstd; AdaLayerNorm w, b, 1 + scale,
 * shift (one padded row per batch index), mean (then rstd right after mean's `rows` entries);
 * AdaLayerNormBackward w, b, 1 + scale, mean (rstd after it), pw (then pb, ps and psh: pw's and
 * pb's `items` padded rows each, ps's and psh's ROW_SLOTS padded rows per item).
 * Per-row arrays start at row 0; partials hold n rounded up to 4 per item.
 */
export const ROW_ARRAYS = 16;
/** Parameter index: the fused add's alpha (a float32; 1 for AddLayerNorm and its backward). */
export const ROW_ALPHA = 21;
/**
 * Parameter index: the fused add's scratch row (n rounded up to 4 float32s), or -1: the
 * region of the thread that runs the item (kernels/wasm_instance.ts; free during a row stage).
 */
export const ROW_SCRATCH = 22;
/** Parameter index: AdaLayerNorm's rows per batch index (S, the scale and shift rows' period). */
export const ROW_SEQ = 23;
/** Parameter index: AdaLayerNormBackward's batch slots per item (padded rows of ps and psh). */
export const ROW_SLOTS = 24;
/** Number of parameters. */
export const ROW_PARAMS = 25;

/**
 * Runs items [from, to) of the row-norm stage `op` with parameters `p` on kernels `k`;
 * `region` is the running thread's region of the heap (the fused add's default scratch).
 */
export function runRowNormItems(
  k: RowNormExports,
  op: RowNormOp,
  p: Float64Array,
  from: number,
  to: number,
  region: number,
): void {
  const n = p[ROW_N];
  const per = p[ROW_PER];
  const dt = p[ROW_DT];
  const eps = p[ROW_EPS];
  const d = ROW_DATA;
  const f = ROW_ARRAYS;
  // Made once per call, not per item (their garbage was a tenth of a small call's: bench/
  // RESULTS.md, twelfth session): they read the item's `item` and `first`.
  let item = from;
  let first = 0;
  // The kernels' kept terms (up to two padded rows of float32): the thread's region when they
  // fit it, else none (the kernel loads the rows again; row_norms_grad.wat ln_bwd,
  // row_norms_rms_grad.wat rms_bwd, row_norms_add_grad.wat add_ln_bwd, row_norms_ada_grad.wat
  // ada_ln_bwd, row_norms.wat add_rms_fwd, row_norms_cast.wat add_rms_cast_fwd).
  const kept = region > 0 && 8 * ((n + 3) & ~3) <= WASM_REGION_BYTES ? region : -1;
  const at = (t: number) => p[d + 2 * t] + first * p[d + 2 * t + 1];
  const s = (t: number) => p[d + 2 * t + 1];
  const row = (a: number) => p[f + a] + 4 * first;
  const part = (a: number) => p[f + a] + 4 * ((n + 3) & ~3) * item;
  for (; item < to; item++) {
    first = item * per;
    const rows = Math.min(per, p[ROW_ROWS] - first);
    switch (op) {
      case "layerNormRows":
        k.ln_fwd(at(0), s(0), at(1), s(1), n, dt, rows, eps, p[f], p[f + 1], row(2), row(3));
        break;
      case "layerNormBackwardRows":
        k.ln_bwd(
          at(0),
          s(0),
          at(1),
          s(1),
          at(2),
          s(2),
          n,
          dt,
          rows,
          row(1),
          row(2),
          p[f],
          part(3),
          part(4),
          p[ROW_FLAGS],
          kept,
        );
        break;
      case "rmsNormRows":
        k.rms_fwd(at(0), s(0), at(1), s(1), n, dt, rows, eps, p[f], row(1));
        break;
      case "rmsNormGradRows":
        k.rms_bwd(at(0), s(0), at(1), s(1), at(2), s(2), n, dt, rows, row(1), p[f], part(2), kept);
        break;
      case "addRmsNormRows":
        k.add_rms_fwd(
          at(0),
          s(0),
          at(1),
          s(1),
          at(2),
          s(2),
          at(3),
          s(3),
          n,
          dt,
          rows,
          eps,
          p[f],
          row(1),
          kept,
        );
        break;
      case "addLayerNormRows":
        k.add_ln_fwd(
          at(0),
          s(0),
          at(1),
          s(1),
          at(2),
          s(2),
          at(3),
          s(3),
          at(4),
          s(4),
          n,
          dt,
          rows,
          eps,
          p[ROW_ALPHA],
          p[ROW_FLAGS],
          p[ROW_SCRATCH] < 0 ? region : p[ROW_SCRATCH],
          p[f],
          p[f + 1],
          p[f + 2],
          row(3),
          row(4),
        );
        break;
      case "addLayerNormGradRows":
        k.add_ln_bwd(
          at(0),
          s(0),
          at(1),
          s(1),
          at(2),
          s(2),
          at(3),
          s(3),
          at(4),
          s(4),
          n,
          dt,
          rows,
          p[ROW_ALPHA],
          p[ROW_FLAGS],
          p[f],
          row(1),
          row(2),
          part(3),
          part(4),
          kept,
        );
        break;
      case "addRmsNormCastRows":
        k.add_rms_cast_fwd(
          at(0),
          s(0),
          at(1),
          s(1),
          at(2),
          s(2),
          at(3),
          s(3),
          at(4),
          s(4),
          n,
          dt,
          rows,
          eps,
          p[f],
          row(1),
          kept,
        );
        break;
      case "adaLayerNormRows":
        k.ada_ln_fwd(
          ...[at(0), s(0), at(1), s(1), n, dt, rows, eps] as const,
          ...[p[f], p[f + 1], p[f + 2], p[f + 3], first, p[ROW_SEQ]] as const,
          row(4),
          row(4) + 4 * p[ROW_ROWS],
        );
        break;
      case "adaLayerNormGradRows": {
        const c4 = 4 * ((n + 3) & ~3);
        const items = Math.ceil(p[ROW_ROWS] / per);
        const pb = p[f + 4] + c4 * items;
        const ps = pb + c4 * items;
        const slot = c4 * p[ROW_SLOTS];
        k.ada_ln_bwd(
          ...[at(0), s(0), at(1), s(1), at(2), s(2), n, dt, rows, p[ROW_FLAGS]] as const,
          ...[
            p[f],
            p[f + 1],
            p[f + 2],
            first,
            p[ROW_SEQ],
            row(3),
            row(3) + 4 * p[ROW_ROWS],
          ] as const,
          part(4),
          pb + c4 * item,
          ps + slot * item,
          ps + slot * items + slot * item,
          kept,
        );
        break;
      }
    }
  }
}
