/**
 * The executor's `const char *` argument kind (aclnnInstanceNorm's dataFormat) through the
 * software CANN playing a 310P chip: the NUL-terminated text reaches the operator (its results
 * follow the format), the text keys the cached call (a cached executor is never reused for
 * another string), and a string holding a NUL or passed for a non-pointer parameter is refused
 * in TypeScript before any native object exists. Needs the built simulator.
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
import { instanceNorm64 } from "../oracle/instance_norm.ts";

const SHAPE = [1, 8, 2, 8]; // C = 8 (NCHW) or 8 (NHWC), 16 values per plane either way
const X = Array.from({ length: 128 }, (_, i) => Math.sin(i) * 3 + (i % 5));

function call(npu: AscendDevice, format: string, nhwc: boolean) {
  const stat = nhwc ? [1, 1, 1, 8] : [1, 8, 1, 1];
  const y = Tensor.zeros(SHAPE, "float32", npu);
  const mean = Tensor.zeros(stat, "float32", npu);
  const variance = Tensor.zeros(stat, "float32", npu);
  const args: AclnnArg[] = [
    arg.tensor(Tensor.fromArray(X, SHAPE).to(npu)),
    arg.tensor(Tensor.ones([8]).to(npu)),
    arg.tensor(Tensor.zeros([8]).to(npu)),
    arg.string(format),
    arg.f64(1e-5),
    arg.output(y),
    arg.output(mean),
    arg.output(variance),
  ];
  return { args, y, mean, variance };
}

const simTest = (name: string, fn: (npu: AscendDevice) => void) =>
  leakCheckedSimTest(name, fn, "Ascend310P3");

simTest("executor: a string reaches the operator (NCHW and NHWC read x differently)", (npu) => {
  for (const [format, nhwc] of [["NCHW", false], ["NHWC", true], ["NCHW", false]] as const) {
    const r = call(npu, format, nhwc);
    runAclnn(npu, "aclnnInstanceNorm", r.args);
    const e = instanceNorm64(X, SHAPE, nhwc, new Array(8).fill(1), new Array(8).fill(0), 1e-5);
    assertClose(r.mean, e.mean, undefined, `${format} mean`);
    assertClose(r.variance, e.variance, undefined, `${format} variance`);
    assertClose(r.y, e.y, undefined, `${format} y`);
  }
});

simTest("executor: the string keys the cached call", (npu) => {
  const r = call(npu, "NCHW", false);
  runAclnn(npu, "aclnnInstanceNorm", r.args);
  runAclnn(npu, "aclnnInstanceNorm", r.args); // the cached executor
  // The same tensors with another text: phase 1 runs again and refuses it.
  const bad = [...r.args];
  bad[3] = arg.string("NCH");
  const e = assertAclnnError(() => runAclnn(npu, "aclnnInstanceNorm", bad), 161002);
  assert.match(e.nativeMessage ?? "", /starts with neither/);
  // A longer text with the right prefix is a new signature that CANN accepts.
  bad[3] = arg.string("NCHW-and-more");
  runAclnn(npu, "aclnnInstanceNorm", bad);
});

simTest("executor: malformed string arguments are refused before any native object", (npu) => {
  const before = simStats();
  const r = call(npu, "NC\0HW", false);
  const e = assertAclnnError(() => runAclnn(npu, "aclnnInstanceNorm", r.args), 161002);
  assert.equal(e.argument, "#3", e.message);
  assert.match(e.message, /holds a NUL character/);
  const wrongKind = call(npu, "NCHW", false).args;
  wrongKind[4] = arg.string("1e-5");
  assert.throws(
    () => runAclnn(npu, "aclnnInstanceNorm", wrongKind),
    (e: unknown) =>
      e instanceof TypeError && /argument 4 is a string, the C parameter is f64/.test(e.message),
  );
  assert.equal(simStats().executors, before.executors, "no executor was created");
});
