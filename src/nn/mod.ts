/**
 * Modules a PyTorch user recognises: {@linkcode BatchNorm} (`nn.BatchNorm1d/2d/3d`),
 * {@linkcode GroupNorm} (`nn.GroupNorm`) and {@linkcode SyncBatchNorm} (`nn.SyncBatchNorm`),
 * each with its parameters, running statistics, forward/backward, train/eval mode and a state
 * dict by PyTorch's names, on every backend.
 *
 * @module
 */

export { BatchNorm } from "./batch_norm.ts";
export { GroupNorm } from "./group_norm.ts";
export { SyncBatchNorm } from "./sync_batch_norm.ts";
export type { SyncBatchNormOptions } from "./sync_batch_norm.ts";
export type { BatchNormOptions, GroupNormOptions, ModulePlacement } from "./options.ts";
export type { NormGradients } from "./saved.ts";
export type { LoadStateDictOptions, LoadStateDictResult, StateDict } from "./state_dict.ts";
