/**
 * The executor's aclIntArray and int32 argument kinds (LayerNorm's normalizedShape and
 * aclnnLayerNormWithImplMode's implMode) through the software CANN: values reach the operator,
 * the int array is part of the cached call's signature, every descriptor is destroyed, and
 * malformed values are refused in TypeScript before any native object exists. Needs the built
 * simulator (`deno task build:sim`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { type AclnnArg, arg, runAclnn } from "../../src/ffi/executor.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { simStats } from "../helpers/ffi_sim.ts";
import { leakCheckedSimTest } from "../helpers/sim_raw.ts";
import { layerNorm as layerNorm64 } from "../oracle/row_norms.ts";

const X = Array.from({ length: 24 }, (_, i) => Math.sin(i) * 3 + (i % 4));

function layerNormArgs(
  npu: AscendDevice,
  normalizedShape: number[],
  tail: AclnnArg[] = [],
): { args: AclnnArg[]; y: Tensor; mean: Tensor; rstd: Tensor } {
  // [A1..Ai, 1..1], as DAV_3510 (the simulator's default SoC) requires.
  const stats = [2, 3, 4].map((d, i) => (i < 3 - normalizedShape.length ? d : 1));
  const y = Tensor.zeros([2, 3, 4], "float32", npu);
  const mean = Tensor.zeros(stats, "float32", npu);
  const rstd = Tensor.zeros(stats, "float32", npu);
  const args = [
    arg.tensor(Tensor.fromArray(X, [2, 3, 4]).to(npu)),
    arg.intArray(normalizedShape),
    arg.tensor(undefined),
    arg.tensor(undefined),
    arg.f64(1e-5),
    arg.output(y),
    arg.output(mean),
    arg.output(rstd),
    ...tail,
  ];
  return { args, y, mean, rstd };
}

const simTest = (name: string, fn: (npu: AscendDevice) => void) => leakCheckedSimTest(name, fn);

simTest("executor: an aclIntArray reaches the operator and keys the cached call", (npu) => {
  // The same tensors' geometry with normalizedShape [4], then [3, 4], then [4] again: three
  // signatures' worth of phase 1 results, each with its own rows.
  for (const shape of [[4], [3, 4], [4]]) {
    const { args, y, mean, rstd } = layerNormArgs(npu, shape);
    runAclnn(npu, "aclnnLayerNorm", args);
    const cols = shape.reduce((a, b) => a * b, 1);
    const e = layerNorm64(X, 24 / cols, cols, Math.fround(1e-5));
    assertClose(y, e.y, undefined, `y over ${shape}`);
    assertClose(mean, e.mean, undefined, `mean over ${shape}`);
    assertClose(rstd, e.rstd, undefined, `rstd over ${shape}`);
  }
});

simTest("executor: an int32 argument (implMode) reaches the operator", (npu) => {
  for (const mode of [0, 1]) {
    const { args, y } = layerNormArgs(npu, [4], []);
    args.splice(8, 0, arg.i32(mode));
    runAclnn(npu, "aclnnLayerNormWithImplMode", args);
    assertClose(y, layerNorm64(X, 6, 4, Math.fround(1e-5)).y, undefined, `implMode ${mode}`);
  }
  // The simulator refuses implMode 3 as CANN's CheckImplMode does: the value got there.
  const bad = layerNormArgs(npu, [4]);
  bad.args.splice(8, 0, arg.i32(3));
  const e = assertAclnnError(() => runAclnn(npu, "aclnnLayerNormWithImplMode", bad.args), 161002);
  assert.match(e.nativeMessage ?? "", /Expected implMode to be in \[0, 1, 2\], but now got \[3\]/);
});

simTest("executor: malformed int arguments are refused before any native object", (npu) => {
  const before = simStats();
  for (const value of [1.5, 2 ** 31, -(2 ** 31) - 1]) {
    const { args } = layerNormArgs(npu, [4]);
    args.splice(8, 0, arg.i32(value));
    const e = assertAclnnError(() => runAclnn(npu, "aclnnLayerNormWithImplMode", args), 161002);
    assert.equal(e.argument, "#8", e.message);
  }
  const { args } = layerNormArgs(npu, [4.5]);
  const e = assertAclnnError(() => runAclnn(npu, "aclnnLayerNorm", args), 161002);
  assert.equal(e.argument, "#1", e.message);
  // A kind that does not match the C parameter is a programming error.
  const wrongKind = layerNormArgs(npu, [4]);
  wrongKind.args.splice(8, 0, arg.i64(0));
  assert.throws(
    () => runAclnn(npu, "aclnnLayerNormWithImplMode", wrongKind.args),
    (e: unknown) =>
      e instanceof TypeError && /argument 8 is a i64, the C parameter is i32/.test(e.message),
  );
  const intArrayForTensor = layerNormArgs(npu, [4]).args;
  intArrayForTensor[4] = arg.intArray([1]);
  assert.throws(() => runAclnn(npu, "aclnnLayerNorm", intArrayForTensor), TypeError);
  const after = simStats();
  assert.equal(after.intArrays, before.intArrays, "no aclIntArray was created");
  assert.equal(after.executors, before.executors, "no executor was created");
});
