/**
 * The symbol table against cann_abi.json (generated from the real CANN headers, with the
 * norm-family entries the library binds: tests/sim/abi_reference.ts): every bound
 * function exists there, with exactly the same ABI class for each parameter and the result,
 * and every function listed there is bound. Needs no native library.
 */

import assert from "node:assert/strict";
import {
  hcclSymbols,
  nnopbaseSymbols,
  opapiMathSymbols,
  opapiNnSymbols,
  opapiSymbols,
  runtimeSymbols,
} from "../../src/ffi/symbols.ts";
import {
  ACLNN_OPERATORS,
  type AclnnOperatorDeclaration,
} from "../../src/ffi/symbols/aclnn_operators.ts";
import { loadAbiReference } from "../sim/abi_reference.ts";

type Abi = Record<string, { parameters: string[]; result: string }>;

/** tests/sim/cann_abi.json, checked against the shared references (tests/sim/abi_reference.ts). */
function loadAbi(): Abi {
  const { abi, problems } = loadAbiReference();
  assert.deepEqual(problems, [], "tests/sim/cann_abi.json against the shared references");
  return abi;
}

/** ABI class of a Deno FFI type. */
function abiClass(type: Deno.NativeType | Deno.NativeResultType): string {
  switch (type) {
    case "pointer":
    case "buffer":
    case "function":
      return "pointer";
    case "usize":
    case "u64":
      return "u64";
    case "isize":
    case "i64":
      return "i64";
    default:
      return String(type);
  }
}

const tables: Record<string, Deno.ForeignLibraryInterface> = {
  runtime: runtimeSymbols,
  nnopbase: nnopbaseSymbols,
  opapi_nn: opapiNnSymbols,
  opapi_math: opapiMathSymbols,
};

Deno.test("symbols: every entry matches cann_abi.json class by class", () => {
  const abi = loadAbi();
  for (const [lib, table] of Object.entries(tables)) {
    for (const [name, def] of Object.entries(table)) {
      const fn = def as Deno.ForeignFunction;
      const expected = abi[name];
      assert.ok(expected, `${lib}.${name} is not in cann_abi.json`);
      assert.deepEqual(
        fn.parameters.map(abiClass),
        expected.parameters,
        `${lib}.${name} parameters`,
      );
      assert.equal(abiClass(fn.result ?? "void"), expected.result, `${lib}.${name} result`);
      assert.notEqual(fn.nonblocking, true, `${lib}.${name} must not be nonblocking`);
    }
  }
});

Deno.test("symbols: every cann_abi.json function is bound exactly once", () => {
  const abi = loadAbi();
  const bound = Object.values(tables).flatMap((t) => Object.keys(t));
  assert.equal(new Set(bound).size, bound.length, "a symbol is in two tables");
  assert.deepEqual([...bound].sort(), Object.keys(abi).sort());
});

Deno.test("symbols: the legacy libopapi.so table is the union of the split ones", () => {
  assert.deepEqual(
    Object.keys(opapiSymbols).sort(),
    [...Object.keys(opapiNnSymbols), ...Object.keys(opapiMathSymbols)].sort(),
  );
  // Every operator has both phases, and phase 2 has the common prototype.
  for (const name of Object.keys(opapiSymbols)) {
    if (name.endsWith("GetWorkspaceSize")) {
      const phase2 = name.slice(0, -"GetWorkspaceSize".length) as keyof typeof opapiSymbols;
      assert.deepEqual(opapiSymbols[phase2].parameters, ["pointer", "u64", "pointer", "pointer"]);
      const p1 = opapiSymbols[name as keyof typeof opapiSymbols].parameters;
      assert.deepEqual(p1.slice(-2), ["buffer", "buffer"], `${name} out-params`);
    }
  }
});

Deno.test("symbols: only release-dependent symbols are optional", () => {
  const optional = Object.entries(tables).flatMap(([, t]) =>
    Object.entries(t).filter(([, d]) => (d as Deno.ForeignFunction).optional).map(([n]) => n)
  );
  // The operators their declarations mark optional (aclnn_operators.ts: newer than the
  // BatchNorm, GroupNorm and LayerNorm operators), each phase 2 together with its phase 1, and
  // the runtime and nnopbase entry points some release lacks (their comments in
  // src/ffi/symbols/).
  const operators = Object.entries(ACLNN_OPERATORS)
    .filter(([, d]: [string, AclnnOperatorDeclaration]) => d.optional)
    .flatMap(([name]) => [name, `${name}GetWorkspaceSize`]);
  assert.deepEqual(
    optional.sort(),
    [
      "aclGetRawTensorAddr",
      "aclSetRawTensorAddr",
      "aclnnFinalize",
      "aclnnInit",
      "aclrtGetSocName",
      ...operators,
    ].sort(),
  );
  // The operators of the BatchNorm family's first releases are not.
  for (const name of ["aclnnBatchNorm", "aclnnGroupNormBackward", "aclnnLayerNorm"]) {
    assert.ok(!optional.includes(name), name);
  }
});

Deno.test("symbols: the HCCL table matches hccl_abi.json class by class", () => {
  // hccl_abi.json is written from hicann/hccl's public headers (hccl.h, hccl_comm.h,
  // hccl_types.h); the software HCCL of tests/sim is checked against the same file.
  const abi: Abi = JSON.parse(
    Deno.readTextFileSync(new URL("../sim/hccl_abi.json", import.meta.url)),
  );
  for (const [name, def] of Object.entries(hcclSymbols)) {
    const fn = def as Deno.ForeignFunction;
    const expected = abi[name];
    assert.ok(expected, `hccl.${name} is not in hccl_abi.json`);
    assert.deepEqual(fn.parameters.map(abiClass), expected.parameters, `hccl.${name} parameters`);
    assert.equal(abiClass(fn.result ?? "void"), expected.result, `hccl.${name} result`);
    assert.notEqual(fn.nonblocking, true, `hccl.${name} must not be nonblocking`);
  }
  // Every call the issue names is bound (HcclBarrier/Broadcast/GetCommAsyncError are not used).
  for (
    const name of [
      "HcclGetRootInfo",
      "HcclCommInitRootInfo",
      "HcclCommDestroy",
      "HcclAllReduce",
      "HcclAllGather",
      "HcclGetRankSize",
      "HcclGetRankId",
      "HcclGetErrorString",
    ]
  ) assert.ok(name in hcclSymbols, `${name} is bound`);
});
