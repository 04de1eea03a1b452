/**
 * Building a call's stages from tensors: which tensors stream (layout, pool), and the stage
 * records with their typed arrays, addresses, constants and partials.
 *
 * @module
 */

import type { Tensor } from "../../../tensor/tensor.ts";
import type { ChannelGeometry } from "../../types.ts";
import { streamable } from "./aliasing.ts";
import { type Call, float64, prepareCall, visible } from "./call.ts";
import type { Layout } from "../kernels/layout_types.ts";
import { batchNormItems, channelSlots, rowsInMemoryOrder } from "../kernels/layout_types.ts";
import {
  type Stage,
  type StatsStage,
  type SumsStage,
  uniformStage,
  type WriteStage,
} from "../kernels/stage_types.ts";
import { batchNormDims, chooseLayout, type ChosenLayout } from "./layout.ts";
import { hostData, readArray, writeArray } from "../tensors/tensor_arrays.ts";
import { heapAddress } from "../../../tensor/host_heap.ts";
import { channelLayoutFits } from "../kernels/channel_stages.ts";
import { denseLayout, type DenseOrder } from "./dense_layout.ts";

/**
 * A BatchNorm-family call over non-empty `inputs` (and `output`, written from them), or
 * undefined when they must be staged first into contiguous heap copies (staging.ts, with
 * `relayout`): mixed dtypes, a storage beyond int32 indices, an output that overlaps an input
 * other than element for element, a tensor outside the host heap, or a layout the float32
 * channel kernels do not take in place (kernels/channel_stages.ts). A contiguous call always
 * fits: its layout is rows, or, with no inner dims, rows of one element where pixels do not.
 */
export function batchNormCall(
  g: ChannelGeometry,
  inputs: readonly Tensor[],
  output: Tensor | undefined,
): Call | undefined {
  const data = output ? [...inputs, output] : [...inputs];
  const dense = (order: DenseOrder) =>
    denseLayout(g.outer, g.channels, g.inner, data, output !== undefined, order);
  const common = dense("rows") ?? dense("pixels");
  if (common) return prepareCall(common, data, g.outer * g.channels * g.inner);
  if (!streamable(output, inputs)) return undefined;
  if (!data.every((t) => heapAddress(hostData(t)) >= 0)) return undefined;
  const innerShape = data[0].shape.slice(2);
  let chosen = chooseLayout(g.outer, g.channels, innerShape, data.map(batchNormDims));
  const fits = (c: ChosenLayout) => c.addresses.every((a) => channelLayoutFits(c.layout, a));
  if (!fits(chosen) && chosen.layout.kind === "pixels" && chosen.layout.inner === 1) {
    chosen = { ...chosen, layout: { ...chosen.layout, kind: "rows" } };
  }
  if (!fits(chosen)) return undefined;
  return prepareCall(chosen, data, g.outer * g.channels * g.inner);
}

/**
 * Length of the partials of a BatchNorm-family reduction: two per channel of each pixel block
 * (pixels), per (n, c) row (rows in memory order), or per slot of a channel's rows (rows taken
 * channel by channel: kernels/layout_types.ts channelSlots).
 */
export function partialsLength(layout: Layout, items: number): number {
  if (layout.kind === "pixels") return 2 * layout.C * items;
  return rowsInMemoryOrder(layout) ? 2 * layout.N * layout.C : 2 * channelSlots(layout);
}

/** The fields every BatchNorm stage of `call` shares: its kind, layout, dtype and item count. */
export function batchNormStageBase<Op extends Stage["op"]>(
  call: Call,
  op: Op,
): { op: Op; layout: Layout; dtype: Call["dtype"]; items: number } {
  return { op, layout: call.layout, dtype: call.dtype, items: batchNormItems(call.layout) };
}

/** The sums stage of a call whose data tensors start with dy (0) and x (1). */
export function sumsStage(call: Call, dy: Tensor, x: Tensor, mean: Float64Array): SumsStage {
  const base = batchNormStageBase(call, "sums");
  return uniformStage<SumsStage>({
    ...base,
    dy: readArray(dy),
    dyAt: call.addresses[0],
    x: readArray(x),
    xAt: call.addresses[1],
    outAt: call.addresses[0],
    mean: visible(call, mean),
    partials: float64(call, partialsLength(call.layout, base.items)),
  });
}

/** The stats stage of a call whose first data tensor is x. */
export function statsStage(call: Call, x: Tensor): StatsStage {
  const base = batchNormStageBase(call, "stats");
  return uniformStage<StatsStage>({
    ...base,
    x: readArray(x),
    xAt: call.addresses[0],
    dyAt: call.addresses[0],
    outAt: call.addresses[0],
    partials: float64(call, partialsLength(call.layout, base.items)),
  });
}

/**
 * A write stage of `call` (normalize, gradient or scale) into `out` with the packed `constants`.
 * The call's data tensors are x then out without `dy` (a forward; dyAt is x's address, unread),
 * and dy, x, out with it (a backward); `x` undefined: the stage does not read x (scale), though
 * the call holds it. `dataSums`: its constants come from this call's sums over the data it
 * reads (stage_types.ts WriteStage.dataSums).
 */
export function writeStage(
  call: Call,
  op: WriteStage["op"],
  dy: Tensor | undefined,
  x: Tensor | undefined,
  out: Tensor,
  constants: Float64Array,
  dataSums = false,
): WriteStage {
  const at = call.addresses;
  const first = dy ? 1 : 0;
  return uniformStage<WriteStage>({
    ...batchNormStageBase(call, op),
    dy: dy && readArray(dy),
    dyAt: at[0],
    x: x && readArray(x),
    xAt: at[first],
    out: writeArray(out),
    outAt: at[first + 1],
    constants,
    dataSums,
  });
}
