/**
 * BatchNorm backward in the shape of the InfiniOp API (`infiniopCreateBatchNormBackwardDescriptor`,
 * `infiniopGetBatchNormBackwardWorkspaceSize`, `infiniopBatchNormBackward`,
 * `infiniopDestroyBatchNormBackwardDescriptor`): a descriptor is created once from tensor
 * descriptions, reports its workspace size, computes into the output tensors it is given, and
 * is destroyed.
 *
 * The InfiniOp forward is y = (x - E[x]) / sqrt(Var[x]) * gamma + beta, with E[x] and Var[x]
 * taken over dims 0 and 2 of an (N, C, L) input and passed as `runningMean`/`runningVar`.
 * The gradient is therefore BatchNorm's training-mode gradient at mean = runningMean and
 * invstd = 1 / sqrt(runningVar + eps) (`eps` defaults to 0, as in the InfiniOp formula):
 *
 * ```
 * gradInput  = w * invstd * (dy - sum(dy) / M - (x - mean) * invstd^2 * sum(dy * (x - mean)) / M)
 * gradWeight = sum(dy * (x - mean)) * invstd,   gradBias = sum(dy),   M = N * L
 * ```
 *
 * Errors are `AclnnError`s whose `status` is the InfiniOp status name: code 161001
 * with `NULL_POINTER` for a missing tensor, 161002 with `BAD_PARAM`, `BAD_TENSOR_DTYPE`,
 * `BAD_TENSOR_SHAPE`, `BAD_TENSOR_STRIDES` or `INSUFFICIENT_WORKSPACE` for the rest.
 *
 * @example
 * ```ts
 * import { createBatchNormBackwardDescriptor, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 3, 4], { seed: 1 });
 * const dy = Tensor.random([2, 3, 4], { seed: 2 });
 * const perChannel = { dtype: "float32", shape: [3] } as const;
 * using desc = createBatchNormBackwardDescriptor({
 *   gradInput: x, gradOutput: dy, input: x,
 *   gradWeight: perChannel, gradBias: perChannel,
 *   weight: perChannel, runningMean: perChannel, runningVar: perChannel,
 * });
 * const gradInput = Tensor.zeros([2, 3, 4]);
 * const gradWeight = Tensor.zeros([3]);
 * const gradBias = Tensor.zeros([3]);
 * desc.compute({
 *   gradInput, gradWeight, gradBias, input: x, gradOutput: dy,
 *   weight: Tensor.ones([3]), runningMean: Tensor.zeros([3]), runningVar: Tensor.ones([3]),
 *   workspace: new Uint8Array(desc.workspaceSize),
 * });
 * console.log(gradBias.toArray().length); // 3
 * ```
 *
 * @module
 */

import type { Device } from "../tensor/device.ts";
import { type DType, dtypeByteSize, FLOAT_DTYPES } from "../tensor/dtype.ts";
import { contiguousStrides, formatShape, isContiguousLayout } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import { channelGeometry } from "../backends/mod.ts";
import {
  checkAliasing,
  checkComputeTensor,
  COMPUTE,
  CREATE,
  DATA,
  DESTROY,
  type Layout,
  layoutOf,
  type Name,
  NAMES,
  sameStrides,
} from "./infiniop_layout.ts";
import { checkKnownNames, namesOf } from "./known_names.ts";
import { backendChecked, invalidStatus as fail, sameShape } from "./validate.ts";

/** The aclnn operator the descriptor runs (its device rules apply). */
const KERNEL_OP = "aclnnBatchNormBackward";

/** A tensor description as InfiniOp's `infiniopTensorDescriptor_t` holds it. */
export interface InfiniopTensorDescriptor {
  /** Element type. */
  readonly dtype: DType;
  /** Shape. */
  readonly shape: readonly number[];
  /** Strides in elements; row-major contiguous when omitted. */
  readonly strides?: readonly number[];
}

/** A Tensor, or just its description. */
export type TensorOrDescriptor = Tensor | InfiniopTensorDescriptor;

/**
 * Arguments of {@linkcode createBatchNormBackwardDescriptor}. All tensors share one dtype dT
 * (float16, float32 or bfloat16). gradInput, gradOutput and input are (N, C, L) with
 * contiguous strides (C*L, L, 1); the others are (C) with any strides.
 */
export interface BatchNormBackwardDescriptorArgs {
  /** dL/dx, (N, C, L), contiguous. */
  gradInput: TensorOrDescriptor | null | undefined;
  /** dL/dgamma, (C). */
  gradWeight: TensorOrDescriptor | null | undefined;
  /** dL/dbeta, (C). */
  gradBias: TensorOrDescriptor | null | undefined;
  /** x, (N, C, L), contiguous. */
  input: TensorOrDescriptor | null | undefined;
  /** dL/dy, (N, C, L), contiguous. */
  gradOutput: TensorOrDescriptor | null | undefined;
  /** gamma, (C). */
  weight: TensorOrDescriptor | null | undefined;
  /** E[x] over dims 0 and 2, (C). */
  runningMean: TensorOrDescriptor | null | undefined;
  /** Var[x] (biased) over dims 0 and 2, (C). */
  runningVar: TensorOrDescriptor | null | undefined;
  /** Added to runningVar before the square root; finite and >= 0. Default 0. */
  eps?: number;
  /**
   * `true` (default, the seed's reading): runningMean/runningVar are the batch's statistics,
   * so the gradient is the training-mode one. `false`: they are fixed running statistics and
   * the gradient is PyTorch's eval-mode one, dx = dy * weight / sqrt(runningVar + eps), as
   * some InfiniCore releases test it.
   */
  training?: boolean;
}

/**
 * Arguments of {@linkcode BatchNormBackwardDescriptor.compute}: tensors matching the
 * descriptor (dtype, shape, strides), all on one device. `gradInput` may be the same tensor
 * as `gradOutput` (in place).
 */
export interface BatchNormBackwardComputeArgs {
  /** Receives dL/dx. */
  gradInput: Tensor | null | undefined;
  /** Receives dL/dgamma. */
  gradWeight: Tensor | null | undefined;
  /** Receives dL/dbeta. */
  gradBias: Tensor | null | undefined;
  /** x. */
  input: Tensor | null | undefined;
  /** dL/dy. */
  gradOutput: Tensor | null | undefined;
  /** gamma. */
  weight: Tensor | null | undefined;
  /** E[x] per channel. */
  runningMean: Tensor | null | undefined;
  /** Var[x] per channel. */
  runningVar: Tensor | null | undefined;
  /**
   * Scratch memory of at least `workspaceSize` bytes: a Uint8Array or a Tensor (its bytes are
   * numel * element size). When omitted the package provides its own scratch; when given but
   * smaller than `workspaceSize` the call fails with INSUFFICIENT_WORKSPACE.
   */
  workspace?: Uint8Array | Tensor | null;
}

/** The tensors of {@linkcode NAMES}, as fields of both argument records below. */
const TENSOR_FIELDS = Object.fromEntries(NAMES.map((name) => [name, true])) as {
  readonly [K in Name]: true;
};

/** Every argument of {@linkcode createBatchNormBackwardDescriptor}; others are BAD_PARAM. */
const CREATE_ARGS = namesOf<BatchNormBackwardDescriptorArgs>({
  ...TENSOR_FIELDS,
  eps: true,
  training: true,
});

/** Every argument of {@linkcode BatchNormBackwardDescriptor.compute}; others are BAD_PARAM. */
const COMPUTE_ARGS = namesOf<BatchNormBackwardComputeArgs>({ ...TENSOR_FIELDS, workspace: true });

/**
 * A BatchNorm backward plan over fixed tensor descriptions (InfiniOp's
 * `infiniopBatchNormBackwardDescriptor_t`). Disposable: `using desc = create...(...)`.
 */
export interface BatchNormBackwardDescriptor extends Disposable {
  /** The common dtype dT. */
  readonly dtype: DType;
  /** Batch size N. */
  readonly N: number;
  /** Channels C. */
  readonly C: number;
  /** Length L. */
  readonly L: number;
  /** The eps added to runningVar. */
  readonly eps: number;
  /** Whether the statistics are the batch's (training-mode gradient). */
  readonly training: boolean;
  /**
   * Bytes of workspace that {@linkcode BatchNormBackwardDescriptor.compute} requires:
   * 24 * C, room for three float64 per-channel intermediates (invstd, sum(dy),
   * sum(dy * (x - mean))). The CPU backend checks the size as InfiniOp does but keeps its
   * float64 scratch in JavaScript memory; on an NPU, aclnn plans its own device workspace.
   */
  readonly workspaceSize: number;
  /** Whether {@linkcode BatchNormBackwardDescriptor.destroy} was called. */
  readonly destroyed: boolean;
  /**
   * Computes gradInput, gradWeight and gradBias into the given tensors. Throws an
   * `AclnnError` with the InfiniOp status on a mismatch with the descriptor, a
   * short workspace, or a destroyed descriptor.
   */
  compute(args: BatchNormBackwardComputeArgs): void;
  /** Releases the descriptor (idempotent); compute afterwards throws BAD_PARAM. */
  destroy(): void;
}

class Descriptor implements BatchNormBackwardDescriptor {
  readonly dtype: DType;
  readonly N: number;
  readonly C: number;
  readonly L: number;
  readonly eps: number;
  readonly training: boolean;
  readonly workspaceSize: number;
  readonly #layouts: Readonly<Record<Name, Layout>>;
  #destroyed = false;

  constructor(layouts: Record<Name, Layout>, eps: number, training: boolean) {
    this.#layouts = layouts;
    const [N, C, L] = layouts.input.shape;
    this.dtype = layouts.input.dtype;
    this.N = N;
    this.C = C;
    this.L = L;
    this.eps = eps;
    this.training = training;
    this.workspaceSize = 3 * 8 * C;
  }

  get destroyed(): boolean {
    return this.#destroyed;
  }

  compute(args: BatchNormBackwardComputeArgs): void {
    descriptorOf(this, COMPUTE, "compute(args)").#compute(args);
  }

  #compute(args: BatchNormBackwardComputeArgs): void {
    if (this.#destroyed) {
      fail(COMPUTE, "descriptor", "was destroyed", "BAD_PARAM");
    }
    if (args === undefined || args === null) {
      fail(COMPUTE, "args", "(the argument object) is required but is missing", "NULL_POINTER");
    }
    if (typeof args !== "object") {
      fail(COMPUTE, "args", `must be an object (got ${typeof args})`, "BAD_PARAM");
    }
    const a = args as unknown as Record<string, unknown>;
    checkKnownNames(COMPUTE, a, COMPUTE_ARGS, "option", "BAD_PARAM");
    this.#checkWorkspace(a.workspace);
    const t = {} as Record<Name, Tensor>;
    let device: Device | undefined;
    for (const name of NAMES) {
      const value = a[name];
      if (value === undefined || value === null) {
        fail(COMPUTE, name, "is required but is missing", "NULL_POINTER");
      }
      checkComputeTensor(name, value);
      const want = this.#layouts[name];
      if (value.dtype !== want.dtype) {
        fail(
          COMPUTE,
          name,
          `dtype ${value.dtype} differs from the descriptor's ${want.dtype}`,
          "BAD_TENSOR_DTYPE",
        );
      }
      if (!sameShape(value.shape, want.shape)) {
        fail(
          COMPUTE,
          name,
          `shape ${formatShape(value.shape)} differs from the descriptor's ${
            formatShape(want.shape)
          }`,
          "BAD_TENSOR_SHAPE",
        );
      }
      if (!sameStrides(want.shape, value.strides, want.strides)) {
        fail(
          COMPUTE,
          name,
          `strides ${formatShape(value.strides)} differ from the descriptor's ${
            formatShape(want.strides)
          }`,
          "BAD_TENSOR_STRIDES",
        );
      }
      if (device === undefined) device = value.device;
      else if (value.device !== device) {
        fail(COMPUTE, name, "is on another device than gradInput", "BAD_PARAM");
      }
      t[name] = value;
    }
    checkAliasing(t);
    this.#run(t, device ?? "cpu");
  }

  #checkWorkspace(workspace: unknown): void {
    if (workspace === undefined || workspace === null) return;
    let bytes: number;
    if (workspace instanceof Uint8Array) bytes = workspace.byteLength;
    else if (workspace instanceof Tensor) bytes = workspace.numel * dtypeByteSize(workspace.dtype);
    else fail(COMPUTE, "workspace", "must be a Uint8Array or a Tensor", "BAD_PARAM");
    if (bytes < this.workspaceSize) {
      fail(
        COMPUTE,
        "workspace",
        `holds ${bytes} bytes but the descriptor needs workspaceSize = ${this.workspaceSize}`,
        "INSUFFICIENT_WORKSPACE",
      );
    }
  }

  #run(t: Record<Name, Tensor>, device: Device): void {
    const backend = backendChecked(KERNEL_OP, device, t);
    const temporaries: Tensor[] = [];
    const onDevice = (host: Tensor) => {
      const placed = host.to(device);
      if (placed !== host) temporaries.push(placed);
      return placed;
    };
    let statistics: { saveMean: Tensor; saveInvstd: Tensor } | {
      runningMean: Tensor;
      runningVar: Tensor;
    };
    if (this.training) {
      // BatchNorm's training-mode gradient at (runningMean, 1/sqrt(runningVar + eps)). Both go
      // to the kernel as float32 (legal with fp16/bf16 data): invstd rounded to dT loses enough
      // precision to dominate the gradient when a channel has few elements.
      const invstd = t.runningVar.toFloat64Array().map((v) => 1 / Math.sqrt(v + this.eps));
      const saveMean = t.runningMean.dtype === "float32"
        ? t.runningMean
        : onDevice(Tensor.fromArray(t.runningMean.toFloat64Array(), [this.C], "float32"));
      statistics = { saveMean, saveInvstd: onDevice(Tensor.fromArray(invstd, [this.C])) };
    } else {
      statistics = { runningMean: t.runningMean, runningVar: t.runningVar };
    }
    try {
      backend.batchNormBackward(
        {
          geometry: channelGeometry(t.input.shape),
          training: this.training,
          eps: this.eps,
          mask: [true, true, true],
        },
        {
          gradOut: t.gradOutput,
          input: t.input,
          weight: t.weight,
          ...statistics,
          gradInput: t.gradInput,
          gradWeight: t.gradWeight,
          gradBias: t.gradBias,
        },
      );
    } finally {
      for (const temporary of temporaries) temporary.dispose();
    }
  }

  destroy(): void {
    descriptorOf(this, DESTROY, "destroy()").#destroyed = true;
  }

  [Symbol.dispose](): void {
    this.destroy();
  }
}

/**
 * The descriptor a method of it was called on (`self`, its `this`): a method called off it, as
 * InfiniOp's C functions are called (`const { compute } = desc`), is NULL_POINTER naming the
 * descriptor; one called on another object is BAD_PARAM.
 */
function descriptorOf(self: unknown, op: string, call: string): Descriptor {
  if (self === undefined || self === null) {
    fail(
      op,
      "descriptor",
      `is required but is missing: call ${call.replace(/\(.*/, "")} on the descriptor ` +
        `(desc.${call}), not on ${self}`,
      "NULL_POINTER",
    );
  }
  if (!(self instanceof Descriptor)) {
    fail(op, "descriptor", "must be made by createBatchNormBackwardDescriptor", "BAD_PARAM");
  }
  return self;
}

/**
 * Creates a BatchNorm backward descriptor from Tensors or plain `{ dtype, shape, strides? }`
 * descriptions (InfiniOp's `infiniopCreateBatchNormBackwardDescriptor`).
 *
 * Checks, in order: every tensor present (NULL_POINTER, code 161001); one dtype dT in
 * float16/float32/bfloat16 for all (BAD_TENSOR_DTYPE); input of rank 3 (N, C, L), gradOutput
 * and gradInput of input's shape, the per-channel tensors of shape (C) (BAD_TENSOR_SHAPE);
 * gradInput, gradOutput and input contiguous, strides (C*L, L, 1) where a dim has more than
 * one element (BAD_TENSOR_STRIDES); eps finite and >= 0
 * (BAD_PARAM). All but NULL_POINTER are code 161002.
 *
 * @example
 * ```ts
 * import { createBatchNormBackwardDescriptor, Tensor } from "@aclnn/norm";
 * const data = { dtype: "float16", shape: [8, 4, 16] } as const;
 * const c = { dtype: "float16", shape: [4] } as const;
 * const desc = createBatchNormBackwardDescriptor({
 *   gradInput: data, gradOutput: data, input: data,
 *   gradWeight: c, gradBias: c, weight: c, runningMean: c, runningVar: c, eps: 1e-5,
 * });
 * console.log(desc.workspaceSize); // 96
 * desc.destroy();
 * ```
 */
export function createBatchNormBackwardDescriptor(
  args: BatchNormBackwardDescriptorArgs,
): BatchNormBackwardDescriptor {
  const a = (args ?? {}) as unknown as Record<string, unknown>;
  if (typeof a === "object") checkKnownNames(CREATE, a, CREATE_ARGS, "option", "BAD_PARAM");
  const layouts = {} as Record<Name, Layout>;
  for (const name of NAMES) layouts[name] = layoutOf(name, a[name]);

  const dT = layouts.input.dtype;
  if (!FLOAT_DTYPES.includes(dT)) {
    fail(
      CREATE,
      "input",
      `dtype ${dT} is not supported (supported: ${FLOAT_DTYPES.join(", ")})`,
      "BAD_TENSOR_DTYPE",
    );
  }
  for (const name of NAMES) {
    if (layouts[name].dtype !== dT) {
      fail(
        CREATE,
        name,
        `dtype ${layouts[name].dtype} must equal input dtype ${dT} (one dtype for all tensors)`,
        "BAD_TENSOR_DTYPE",
      );
    }
  }

  const shape = layouts.input.shape;
  if (shape.length !== 3) {
    fail(CREATE, "input", `shape ${formatShape(shape)} must be (N, C, L)`, "BAD_TENSOR_SHAPE");
  }
  for (const name of ["gradOutput", "gradInput"] as const) {
    if (!sameShape(layouts[name].shape, shape)) {
      fail(
        CREATE,
        name,
        `shape ${formatShape(layouts[name].shape)} must equal input shape ${formatShape(shape)}`,
        "BAD_TENSOR_SHAPE",
      );
    }
  }
  for (const name of NAMES) {
    if (DATA.includes(name)) continue;
    if (!sameShape(layouts[name].shape, [shape[1]])) {
      fail(
        CREATE,
        name,
        `shape ${formatShape(layouts[name].shape)} must be (C) = [${shape[1]}]`,
        "BAD_TENSOR_SHAPE",
      );
    }
  }
  for (const name of DATA) {
    if (!isContiguousLayout(layouts[name].shape, layouts[name].strides)) {
      fail(
        CREATE,
        name,
        `strides ${formatShape(layouts[name].strides)} must be contiguous (C*L, L, 1) = ${
          formatShape(contiguousStrides(shape))
        }`,
        "BAD_TENSOR_STRIDES",
      );
    }
  }
  const eps = a.eps ?? 0;
  if (typeof eps !== "number" || !Number.isFinite(eps) || eps < 0) {
    fail(CREATE, "eps", `${String(eps)} must be a finite number >= 0`, "BAD_PARAM");
  }
  const training = a.training ?? true;
  if (typeof training !== "boolean") {
    fail(CREATE, "training", `${String(training)} must be a boolean`, "BAD_PARAM");
  }
  return new Descriptor(layouts, eps, training);
}
