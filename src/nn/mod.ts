/**
 * Modules a PyTorch user recognises: {@linkcode BatchNorm} (`nn.BatchNorm1d/2d/3d`),
 * {@linkcode GroupNorm} (`nn.GroupNorm`), {@linkcode InstanceNorm} (`nn.InstanceNorm1d/2d/3d`),
 * {@linkcode SyncBatchNorm} (`nn.SyncBatchNorm`),
 * {@linkcode LayerNorm} (`nn.LayerNorm`) and {@linkcode RMSNorm} (`nn.RMSNorm`), each with its
 * parameters, running statistics, forward/backward, train/eval mode and a state dict by
 * PyTorch's names, on every backend. Their shared members are those of
 * {@linkcode NormModule} (and {@linkcode BatchNormModule} for the two BatchNorm modules and
 * InstanceNorm,
 * {@linkcode RowNormModule} for LayerNorm and RMSNorm).
 *
 * @module
 */

export { NormModule } from "./norm_module.ts";
export { BatchNormModule } from "./batch_norm_module.ts";
export { RowNormModule } from "./row_norm_module.ts";
export { BatchNorm } from "./batch_norm.ts";
export { GroupNorm } from "./group_norm.ts";
export { InstanceNorm } from "./instance_norm.ts";
export { SyncBatchNorm } from "./sync_batch_norm.ts";
export { LayerNorm } from "./layer_norm.ts";
export { RMSNorm } from "./rms_norm.ts";
export type { RMSNormGradients } from "./rms_norm.ts";
export type { LayerNormOptions, RMSNormOptions } from "./row_norm_options.ts";
export type { SyncBatchNormOptions } from "./sync_batch_norm.ts";
export type {
  BatchNormOptions,
  GroupNormOptions,
  InstanceNormOptions,
  ModulePlacement,
} from "./options.ts";
export type { NormGradients } from "./saved.ts";
export type { LoadStateDictOptions, LoadStateDictResult, StateDict } from "./state_dict.ts";
