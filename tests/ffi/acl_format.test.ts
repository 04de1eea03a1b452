/**
 * The aclFormat the library gives each tensor it passes to aclCreateTensor (issue 38 E2b): the
 * label torch_npu gives a base-format tensor, by rank: NCL for 3 dims, NCHW for 4, NCDHW for 5,
 * ND otherwise (Ascend/op-plugin op_plugin/utils/op_api_common.h, ConvertType(const
 * at::Tensor&)), read back from the descriptors with aclGetFormat; and what a wrong label does on
 * the software CANN, whose BatchNorm hands 4-D and 5-D inputs to a kernel that checks it
 * (tests/software_cann/formats.test.ts). Needs the built simulator.
 *
 * @module
 */

import assert from "node:assert/strict";
import { createAclTensor } from "../../src/ffi/acl_tensor.ts";
import { ascendState, type DeviceBuffer } from "../../src/ffi/runtime.ts";
import { batchNorm } from "../../src/ops/batch_norm.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { openSim } from "../helpers/ffi_sim.ts";
import { onSoc } from "../helpers/sim_raw.ts";

/** op-plugin's label by rank, as aclFormat values (../shared/reference/cann-abi.md). */
const TORCH_NPU_FORMAT: Readonly<Record<number, number>> = { 3: 47, 4: 0, 5: 30 };
const ND = 2;

Deno.test("aclCreateTensor gets torch_npu's label for each rank: NCL, NCHW, NCDHW, else ND", () => {
  using npu = openSim();
  const libs = ascendState(npu).libs;
  const format = new Int32Array(1);
  for (let rank = 0; rank <= 8; rank++) {
    const shape = Array.from({ length: rank }, (_, i) => (i % 3) + 1);
    for (const t of [Tensor.zeros(shape, "float32", npu), Tensor.zeros(shape, "bfloat16", npu)]) {
      // A permuted view too (channels-last strides): the label follows the rank, not the strides.
      const views = rank >= 3 ? [t, t.permute([0, ...shape.map((_, i) => i).slice(2), 1])] : [t];
      for (const view of views) {
        const buffer = view.storage as DeviceBuffer;
        const d = createAclTensor(libs, view, buffer.pointer, buffer.byteLength);
        try {
          assert.equal(libs.nnopbase.aclGetFormat(d.handle, format), 0);
          assert.equal(format[0], TORCH_NPU_FORMAT[rank] ?? ND, `rank ${rank} ${t.dtype}`);
        } finally {
          d.destroy();
        }
      }
      t.dispose();
    }
  }
});

Deno.test("BatchNorm of 2-D to 6-D inputs on the NPU equals the CPU backend (the kernel checks the labels)", () => {
  for (const soc of ["Ascend950PR_9599", "Ascend910B4"]) {
    onSoc(soc, (npu) => {
      // C = 64 on the A2 takes BatchNormV3 for NCHW/NCDHW inputs.
      for (
        const shape of [[3, 64], [2, 64, 3], [2, 64, 2, 3], [2, 64, 2, 1, 3], [2, 64, 1, 2, 1, 2]]
      ) {
        const host = Tensor.random(shape, { seed: shape.length });
        const want = batchNorm({ input: host, training: true });
        const got = batchNorm({ input: host.to(npu), training: true });
        assertClose(got.output, want.output, undefined, `${soc} [${shape}] output`);
        assertClose(got.saveMean, want.saveMean, undefined, `${soc} [${shape}] saveMean`);
      }
    });
  }
});
