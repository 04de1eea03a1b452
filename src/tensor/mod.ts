/**
 * The Tensor layer: dtypes, layouts, and the Tensor class.
 *
 * @module
 */

export { Tensor } from "./tensor.ts";
export type { RandomOptions, ViewOptions } from "./tensor.ts";
export type { AcceleratorDevice, Device, DeviceStorage } from "./device.ts";
export { bf16ToNumber, dtypeByteSize, numberToBf16, roundToDType } from "./dtype.ts";
export type { DType, HostData } from "./dtype.ts";
export { Random } from "./random.ts";
export { keep, tidy } from "./scope.ts";
