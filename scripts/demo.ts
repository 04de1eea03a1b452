/**
 * `deno task demo`: runs the three seed operators on a realistic shape on the embedded
 * default backend (an Ascend NPU when CANN and a device are found, the CPU backend
 * otherwise), and prints the backend, the shapes, the time per op, the largest deviation
 * from a float64 recomputation and whether it is within tolerance. `--help` lists the flags.
 *
 * @module
 */

import "./require_deno.ts";
import { parseArgs } from "node:util";
import { reportUserErrors, runCommand } from "./cli.ts";

import type { DefaultDeviceSelection, DType } from "../mod.ts";

reportUserErrors("demo");

const USAGE = `deno task demo [options]

Runs the three seed operators (aclnnBatchNormReduceBackward, aclnnBatchNormBackward and its
InfiniOp descriptor form, aclnnGroupNormBackward) on the default backend: an Ascend NPU when
CANN and a device are found, the CPU backend otherwise. For each it prints the time per call
and the deviation from a float64 recomputation, and says whether that is within tolerance.

Options:
  --shape N,C,H,W   input shape, rank 2 to 8 (default 8,64,32,32)
  --groups G        GroupNorm groups, a divisor of C (default 32)
  --dtype D         float32, float16 or bfloat16 (default float32)
  --repeat R        timed runs per operator after a warm-up, the median is shown (default 3)
  --lib-dir DIR     absolute directory of the CANN libraries (default: discovery)
  --cpu             use the CPU backend without looking for an NPU
  --sim             use the software CANN built into build/sim (deno task build:sim)
  -h, --help        print this text

Exit status: 0 when every operator matches, 1 when one does not, 2 for a bad option.`;

/** Ends the demo with one line about a bad option (no stack trace). */
function usageError(message: string): never {
  console.error(`demo: ${message} (see deno task demo --help)`);
  Deno.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    // `deno task demo -- --flag` hands the `--` through.
    args: Deno.args.filter((arg) => arg !== "--"),
    strict: true,
    options: {
      shape: { type: "string", default: "8,64,32,32" },
      groups: { type: "string", default: "32" },
      dtype: { type: "string", default: "float32" },
      repeat: { type: "string", default: "3" },
      "lib-dir": { type: "string" },
      cpu: { type: "boolean", default: false },
      sim: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
} catch (e) {
  usageError(e instanceof Error ? e.message : String(e));
}
const flags = parsed.values;
if (flags.help) {
  console.log(USAGE);
  Deno.exit(0);
}

function positiveInteger(text: string, what: string): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1) {
    usageError(`${what} must be a positive integer, got "${text}"`);
  }
  return Number(text);
}

const shape = flags.shape.split(",").map((d) => positiveInteger(d, "--shape dimensions"));
if (shape.length < 2 || shape.length > 8) {
  usageError(`--shape needs 2 to 8 dimensions, got ${shape.length}`);
}
const group = positiveInteger(flags.groups, "--groups");
if (shape[1] % group !== 0) {
  usageError(`--groups ${group} must divide C = ${shape[1]} (--shape dimension 2)`);
}
if (!["float32", "float16", "bfloat16"].includes(flags.dtype)) {
  usageError(`--dtype must be float32, float16 or bfloat16, got "${flags.dtype}"`);
}
const dtype = flags.dtype as DType;
const repeat = positiveInteger(flags.repeat, "--repeat");
const libDir = flags["lib-dir"];
if (libDir !== undefined && !libDir.startsWith("/")) {
  usageError(`--lib-dir must be an absolute path, got "${libDir}"`);
}
const [N, C] = shape;
const HxW = shape.slice(2).reduce((a, b) => a * b, 1);

// The library loads only after the checks above: --help and a bad option answer without it.
const {
  batchNormBackward,
  batchNormReduceBackward,
  createBatchNormBackwardDescriptor,
  groupNormBackward,
  selectDefaultDevice,
  Tensor,
} = await import("../mod.ts");
type Tensor = import("../mod.ts").Tensor;
const { batchNormBackwardAt64, batchNormReduceBackward64, groupNormBackward64 } = await import(
  "../tests/oracle/mod.ts"
);

// Library directories must be absolute (relative ones are refused): resolve build/sim here.
const simDir = new URL("../build/sim", import.meta.url).pathname;
let selection: DefaultDeviceSelection = selectDefaultDevice({ backend: "cpu" });
await runCommand("demo", () => {
  if (flags.cpu) return;
  selection = flags.sim
    ? selectDefaultDevice({ libDir: simDir, backend: "npu" })
    : selectDefaultDevice({ libDir });
});
const device = selection.device;
console.log(`backend: ${selection.description}`);
console.log(`shape: [${shape.join(", ")}] ${dtype}, GroupNorm groups: ${group}, repeat: ${repeat}`);

// Inputs in float64 (the reference sees exactly the values the tensors hold after rounding).
const x = Tensor.random(shape, { seed: 1, dtype, distribution: "normal", low: 0.5, high: 2 });
const dy = Tensor.random(shape, { seed: 2, dtype, distribution: "normal" });
const x64 = x.toFloat64Array();
const dy64 = dy.toFloat64Array();

// BatchNorm statistics of the batch, and GroupNorm statistics per (n, group).
const bnMean = new Float64Array(C);
const bnVar = new Float64Array(C);
const inner = HxW;
for (let i = 0; i < x64.length; i++) bnMean[Math.floor(i / inner) % C] += x64[i] / (N * inner);
for (let i = 0; i < x64.length; i++) {
  const c = Math.floor(i / inner) % C;
  bnVar[c] += (x64[i] - bnMean[c]) ** 2 / (N * inner);
}
const bnInvstd = bnVar.map((v) => 1 / Math.sqrt(v + 1e-5));
const gnSize = (C / group) * HxW;
const gnMean = new Float64Array(N * group);
const gnRstd = new Float64Array(N * group);
for (let k = 0; k < N * group; k++) {
  const slice = x64.subarray(k * gnSize, (k + 1) * gnSize);
  const m = slice.reduce((a, b) => a + b, 0) / gnSize;
  const v = slice.reduce((a, b) => a + (b - m) ** 2, 0) / gnSize;
  gnMean[k] = m;
  gnRstd[k] = 1 / Math.sqrt(v + 1e-5);
}
const weight64 = Float64Array.from({ length: C }, (_, c) => 0.5 + c / C);

const onDevice = (t: Tensor) => t.to(device);
const xs = onDevice(x);
const dys = onDevice(dy);
const mean = onDevice(Tensor.fromArray(bnMean, [C]));
const invstd = onDevice(Tensor.fromArray(bnInvstd, [C]));
const weight = onDevice(Tensor.fromArray(weight64, [C]));
const runningMean = onDevice(Tensor.fromArray(bnMean, [C], dtype));
const runningVar = onDevice(Tensor.fromArray(bnVar, [C], dtype));
const gnMeanT = onDevice(Tensor.fromArray(gnMean, [N, group]));
const gnRstdT = onDevice(Tensor.fromArray(gnRstd, [N, group]));
const gamma = onDevice(Tensor.fromArray(weight64, [C]));

/**
 * Warm-up before timing an operator: at least this many calls and {@linkcode WARMUP_MS}, so that
 * the median is the steady state (one warm-up call left the first operator timed with the
 * worker pool starting and V8 still compiling: 3.8 ms a call against 0.6 once warm).
 */
const WARMUP_CALLS = 5;
/** Least warm-up time per operator, in milliseconds (see {@linkcode WARMUP_CALLS}). */
const WARMUP_MS = 30;

/**
 * Median wall time of one call over `repeat` runs after the warm-up, in milliseconds, timed the
 * same way for every operator: the call as users write it (outputs allocated by the call), the
 * device's queued work finished (an NPU synchronises), the result freed at once (as `using`
 * does). Reading the results back is not timed: `read` runs once, on a last call.
 */
function time<T>(
  call: () => Disposable,
  read: (result: Disposable) => T,
): { result: T; ms: number } {
  const finish = () => device !== "cpu" && device.synchronize();
  const warm = performance.now();
  for (let i = 0; i < WARMUP_CALLS || performance.now() - warm < WARMUP_MS; i++) {
    call()[Symbol.dispose]();
    finish();
  }
  const times: number[] = [];
  for (let i = 0; i < repeat; i++) {
    const start = performance.now();
    const r = call();
    finish();
    times.push(performance.now() - start);
    r[Symbol.dispose]();
  }
  times.sort((a, b) => a - b);
  const last = call();
  try {
    return { result: read(last), ms: times[Math.floor(times.length / 2)] };
  } finally {
    last[Symbol.dispose]();
  }
}

/** Largest |a - b| / max(1, |b|) over all elements. */
function maxDeviation(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    worst = Math.max(worst, Math.abs(actual[i] - expected[i]) / Math.max(1, Math.abs(expected[i])));
  }
  return worst;
}

/** The oracle's training-mode BatchNorm input gradient at the given statistics. */
function gradInput64(mean: Float64Array, invstd: Float64Array, w: Float64Array): Float64Array {
  return batchNormBackwardAt64(dy64, x64, shape, w, mean, invstd, true).gradInput;
}

const rows: { op: string; outputs: string; ms: number; deviation: number }[] = [];

// 1. aclnnBatchNormReduceBackward
{
  const { result, ms } = time(
    () => batchNormReduceBackward({ gradOut: dys, input: xs, mean, invstd, weight }),
    (r) => {
      const { sumDy, sumDyXmu, gradWeight } = r as ReturnType<typeof batchNormReduceBackward>;
      return [sumDy!.toFloat64Array(), sumDyXmu!.toFloat64Array(), gradWeight!.toFloat64Array()];
    },
  );
  const ref = batchNormReduceBackward64(dy64, x64, shape, bnMean, bnInvstd);
  const deviation = Math.max(
    maxDeviation(result[0], ref.sumDy),
    maxDeviation(result[1], ref.sumDyXmu),
    maxDeviation(result[2], ref.gradWeight),
  );
  rows.push({ op: "batchNormReduceBackward", outputs: `4 x [${C}]`, ms, deviation });
}

// 2. BatchNorm backward, aclnn shape and InfiniOp descriptor shape (training gradient).
const refGradInput = gradInput64(bnMean, bnInvstd, weight64);
{
  const { result, ms } = time(
    () =>
      batchNormBackward({
        gradOut: dys,
        input: xs,
        weight,
        saveMean: mean,
        saveInvstd: invstd,
        training: true,
      }),
    (r) => (r as ReturnType<typeof batchNormBackward>).gradInput!.toFloat64Array(),
  );
  const deviation = maxDeviation(result, refGradInput);
  rows.push({ op: "batchNormBackward", outputs: `[${shape.join(", ")}]`, ms, deviation });
}
{
  const L = HxW;
  const as3d = (t: Tensor) => t.reshape([N, C, L]);
  const gradInput = Tensor.zeros([N, C, L], dtype, device);
  const gradWeight = Tensor.zeros([C], dtype, device);
  const gradBias = Tensor.zeros([C], dtype, device);
  const dweight = onDevice(Tensor.fromArray(weight64, [C], dtype));
  const tensors = {
    gradInput,
    gradWeight,
    gradBias,
    input: as3d(xs),
    gradOutput: as3d(dys),
    weight: dweight,
    runningMean,
    runningVar,
  };
  // InfiniOp's running stats are E[x] and Var[x] of the batch; eps 1e-5 matches the reference.
  using descriptor = createBatchNormBackwardDescriptor({ ...tensors, eps: 1e-5 });
  // The descriptor API writes into the outputs it is given: nothing to allocate or free.
  const { ms } = time(() => {
    descriptor.compute(tensors);
    return { [Symbol.dispose]() {} };
  }, () => undefined);
  // The descriptor uses the dtype-rounded running stats; compare against those.
  const rm = runningMean.toFloat64Array();
  const rv = runningVar.toFloat64Array();
  const ref = gradInput64(rm, rv.map((v) => 1 / Math.sqrt(v + 1e-5)), dweight.toFloat64Array());
  const deviation = maxDeviation(gradInput.toFloat64Array(), ref);
  rows.push({ op: "InfiniOp BatchNormBackward", outputs: `[${N}, ${C}, ${L}]`, ms, deviation });
}

// 3. aclnnGroupNormBackward
{
  const { result, ms } = time(
    () =>
      groupNormBackward({ gradOut: dys, input: xs, mean: gnMeanT, rstd: gnRstdT, gamma, group }),
    (r) => {
      const { gradInput, gradGamma, gradBeta } = r as ReturnType<typeof groupNormBackward>;
      return [gradInput!.toFloat64Array(), gradGamma!.toFloat64Array(), gradBeta!.toFloat64Array()];
    },
  );
  const ref = groupNormBackward64(dy64, x64, gnMean, gnRstd, weight64, N, C, HxW, group);
  const deviation = Math.max(
    maxDeviation(result[0], ref.gradInput),
    maxDeviation(result[1], ref.gradGamma),
    maxDeviation(result[2], ref.gradBeta),
  );
  rows.push({
    op: `groupNormBackward (group ${group})`,
    outputs: `[${shape.join(", ")}]`,
    ms,
    deviation,
  });
}

/**
 * Tolerance of the deviation per dtype: the float64 recomputation sees exactly the rounded
 * inputs, so what remains is the output's own rounding (half an ulp: 6e-8 for float32, 4.9e-4
 * for float16, 3.9e-3 for bfloat16) plus accumulation order, with room for an NPU that
 * accumulates in float32 over ~1e5 elements.
 */
const TOLERANCE: Record<string, number> = { float32: 1e-4, float16: 2e-3, bfloat16: 1.6e-2 };
const tolerance = TOLERANCE[dtype];

console.log("");
console.log(
  `${"operator".padEnd(34)}${"outputs".padEnd(22)}${"ms/call".padStart(10)}  ${
    "deviation".padStart(9)
  }  verdict`,
);
let failed = 0;
for (const r of rows) {
  const ok = r.deviation <= tolerance;
  if (!ok) failed++;
  console.log(
    `${r.op.padEnd(34)}${r.outputs.padEnd(22)}${r.ms.toFixed(2).padStart(10)}  ${
      r.deviation.toExponential(2).padStart(9)
    }  ${ok ? "matches" : "DOES NOT MATCH"}`,
  );
}
console.log("");
console.log(
  `ms/call: median wall time of one call with its outputs allocated by the call and freed at\n` +
    `once (as \`using\` does; the InfiniOp descriptor writes into the outputs it is given, as its\n` +
    `API does), the device's queued work included; reading results back is not timed.\n` +
    `deviation: the largest |output - reference| / max(1, |reference|) over every element of the\n` +
    `operator's outputs, where the reference is a float64 recomputation from the same (rounded)\n` +
    `inputs (the tests' float64 oracle, tests/oracle). Tolerance for ${dtype} outputs: ${tolerance}.`,
);
console.log(
  failed === 0
    ? `All ${rows.length} operators match their float64 recomputation.`
    : `${failed} of ${rows.length} operators do NOT match their float64 recomputation.`,
);
if (device !== "cpu") device.close();
if (failed > 0) Deno.exit(1);
