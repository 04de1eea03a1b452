/**
 * The conformance cases of the fused LayerNorm operators of the norm family (addLayerNorm,
 * addLayerNormGrad, deepNorm, deepNormGrad, fastLayerNorm) as `deno task verify:npu` cases: the
 * peer cases of tests/fixtures/conformance/norm_family_rows.ts and CANN's examples
 * (norm_family_examples.ts), on the inputs and seeds tests/conformance/norm_family_rows.test.ts
 * gives them, each call run on the NPU and on the CPU backend and compared.
 *
 * aclnnAddLayerNorm's mean and rstd are a case of their own ("addLayerNorm (mean and rstd)", as in
 * the sweep): the Atlas inference series' kernel does not write them (soc_fused.ts
 * addLayerNormStoresStatistics), and its OpDef takes one dtype for every tensor
 * (addLayerNormMixedDtypes).
 *
 * @module
 */

import {
  addLayerNorm,
  addLayerNormGrad,
  deepNorm,
  deepNormGrad,
  type DType,
  fastLayerNorm,
  type Tensor,
} from "../../mod.ts";
import type { SocFamily } from "../../src/backends/ascend/soc.ts";
import {
  addLayerNormMixedDtypes,
  addLayerNormStoresStatistics,
} from "../../src/backends/ascend/soc_fused.ts";
import {
  addLayerNormExample,
  addLayerNormGradExample,
  deepNormExample,
  deepNormGradExample,
  fastLayerNormExample,
} from "../../tests/fixtures/conformance/norm_family_examples.ts";
import {
  ADD_LAYER_NORM_CASES,
  ADD_LAYER_NORM_GRAD_CASES,
  addLayerNormInputs,
  addLayerNormOutDType,
  DEEP_NORM_CASES,
  DEEP_NORM_GRAD_CASES,
  DEEP_NORM_GRAD_ZERO_CASES,
  deepNormGradZeroInputs,
  deepNormInputs,
  FAST_LAYER_NORM_UT,
  fastLayerNormUtInputs,
  rowGradInputs,
} from "../../tests/fixtures/conformance/norm_family_rows.ts";
import {
  type Call,
  conformanceCase,
  dtypeLabel,
  dtypesLabel,
  numel,
  placeOn,
  placeOpt,
  type VerifyCase,
} from "./model.ts";
import { atDataPrecision } from "./sweep_row_ops.ts";

/** ops-nn's example of `op` (hicann/ops-nn e5c3fa9 `norm/<op>/examples/`). */
const example = (op: string, file = op) => `ops-nn ${op}/examples/test_aclnn_${file}.cpp`;

/** One aclnnAddLayerNorm call's host inputs and attributes. */
interface AddLayerNormData {
  x1: Tensor;
  x2: Tensor;
  gamma: Tensor;
  beta: Tensor;
  bias?: Tensor;
  epsilon: number;
}

/**
 * The two cases of one aclnnAddLayerNorm call: y and x ("addLayerNorm"), mean and rstd
 * ("addLayerNorm (mean and rstd)", where the chip writes them).
 */
function addLayerNormCases(
  name: string,
  dtypes: Record<string, DType | undefined>,
  shape: readonly number[],
  build: () => AddLayerNormData,
): VerifyCase[] {
  const types = Object.values(dtypes).filter((t): t is DType => t !== undefined);
  const mixed = new Set(types).size > 1;
  const oneDType = (family: SocFamily) =>
    mixed && !addLayerNormMixedDtypes(family)
      ? `aclnnAddLayerNorm takes no mixed dtypes on ${family.name}`
      : undefined;
  const { x1, ...others } = dtypes;
  const fields = {
    dtype: dtypesLabel(x1!, others),
    layout: "contiguous",
    kernels: ["aclnnAddLayerNorm"] as const,
    dtypes: types,
    numel: numel(shape),
  };
  const setup = (statistics: boolean) => (): Call => {
    const i = build();
    return (d) => {
      const r = addLayerNorm({
        x1: placeOn(i.x1, d),
        x2: placeOn(i.x2, d),
        gamma: placeOn(i.gamma, d),
        beta: placeOn(i.beta, d),
        bias: placeOpt(i.bias, d),
        epsilon: i.epsilon,
        additionalOutput: true,
      });
      return statistics ? { mean: r.mean, rstd: r.rstd } : { y: r.y, x: r.x };
    };
  };
  return [
    conformanceCase("addLayerNorm", name, { ...fields, alsoRefused: oneDType }, setup(false)),
    conformanceCase("addLayerNorm (mean and rstd)", name, {
      ...fields,
      alsoRefused: (family) =>
        oneDType(family) ??
          (addLayerNormStoresStatistics(family)
            ? undefined
            : `aclnnAddLayerNorm writes no mean or rstd on ${family.name}`),
    }, setup(true)),
  ];
}

function addLayerNormAll(): VerifyCase[] {
  const e = addLayerNormExample();
  const f32 = { x1: "float32", x2: "float32", gamma: "float32" } as const;
  const cases = [undefined, e.bias].flatMap((bias) =>
    addLayerNormCases(
      `${example("add_layer_norm")} [1,2,8] bias ${bias ? "0.5" : "none"} (golden)`,
      { ...f32, bias: bias && "float32" },
      e.x1.shape,
      () => ({ ...addLayerNormExample(), bias: bias && addLayerNormExample().bias }),
    )
  );
  ADD_LAYER_NORM_CASES.forEach((c, k) => {
    const dtypes = {
      x1: c.x1,
      x2: c.x2 ?? c.x1,
      gamma: c.gamma ?? c.x1,
      bias: c.bias ? c.biasDType ?? addLayerNormOutDType(c) : undefined,
      y: addLayerNormOutDType(c),
    };
    cases.push(...addLayerNormCases(`${c.source} [${c.shape}]`, dtypes, c.shape, () => ({
      ...addLayerNormInputs(c, k),
      epsilon: c.eps,
    })));
  });
  return cases;
}

function addLayerNormGradAll(): VerifyCase[] {
  const kernels = ["aclnnAddLayerNormGrad"] as const;
  const e = addLayerNormGradExample();
  const cases = [
    conformanceCase("addLayerNormGrad", `${example("add_layer_norm_grad")} [3,1,4] (golden)`, {
      dtype: "float32",
      layout: "contiguous",
      kernels,
      dtypes: ["float32"],
      numel: numel(e.dy.shape),
    }, () => {
      const i = addLayerNormGradExample();
      return (d) => {
        const r = addLayerNormGrad({
          dy: placeOn(i.dy, d),
          x1: placeOn(i.x1, d),
          x2: placeOn(i.x2, d),
          rstd: placeOn(i.rstd, d),
          mean: placeOn(i.mean, d),
          gamma: placeOn(i.gamma, d),
          dsum: placeOn(i.dsum, d),
        });
        return { dx: r.dx, dgamma: r.dgamma, dbeta: r.dbeta };
      };
    }),
  ];
  ADD_LAYER_NORM_GRAD_CASES.forEach((c, k) => {
    cases.push(conformanceCase("addLayerNormGrad", `${c.source} [${c.shape}]`, {
      dtype: dtypeLabel(c.dtype, "float32"),
      layout: "contiguous",
      kernels,
      dtypes: [c.dtype, "float32"],
      numel: numel(c.shape),
    }, () => {
      const i = rowGradInputs(c, 22000 + 10 * k, false);
      return (d) => {
        const r = addLayerNormGrad({
          dy: placeOn(i.dy, d),
          x1: placeOn(i.a, d),
          x2: placeOn(i.b, d),
          rstd: placeOn(i.rstd, d),
          mean: placeOn(i.mean, d),
          gamma: placeOn(i.gamma, d),
          dsum: placeOpt(i.dsum, d),
        });
        return { dx: r.dx, dgamma: r.dgamma, dbeta: r.dbeta };
      };
    }));
  });
  return cases;
}

function deepNormAll(): VerifyCase[] {
  const call =
    (build: () => ReturnType<typeof deepNormInputs>, alpha: number, eps: number) => (): Call => {
      const i = build();
      return (d) => {
        const r = deepNorm({
          x: placeOn(i.x, d),
          gx: placeOn(i.gx, d),
          beta: placeOn(i.beta, d),
          gamma: placeOn(i.gamma, d),
          alpha,
          epsilon: eps,
        });
        return { mean: r.mean, rstd: r.rstd, y: r.y };
      };
    };
  const fields = (dtype: DType, shape: readonly number[]) => ({
    dtype,
    layout: "contiguous",
    kernels: ["aclnnDeepNorm"] as const,
    dtypes: [dtype],
    numel: numel(shape),
  });
  const e = deepNormExample();
  return [
    conformanceCase(
      "deepNorm",
      `${example("deep_norm")} [3,1,4] (golden)`,
      fields("float32", e.x.shape),
      call(deepNormExample, e.alpha, e.epsilon),
    ),
    ...DEEP_NORM_CASES.map((c, k) =>
      conformanceCase(
        "deepNorm",
        `${c.source} [${c.shape}]`,
        fields(c.dtype, c.shape),
        call(() => deepNormInputs(c, k), c.alpha, c.eps),
      )
    ),
  ];
}

/** dy, x, gx, gamma, mean, rstd of one aclnnDeepNormGrad call. */
type DeepGradData = Record<"dy" | "x" | "gx" | "gamma" | "mean" | "rstd", Tensor>;

function deepNormGradAll(): VerifyCase[] {
  const call = (build: () => DeepGradData, alpha: number) => (): Call => {
    const i = build();
    return (d) => {
      const r = deepNormGrad({
        dy: placeOn(i.dy, d),
        x: placeOn(i.x, d),
        gx: placeOn(i.gx, d),
        gamma: placeOn(i.gamma, d),
        mean: placeOn(i.mean, d),
        rstd: placeOn(i.rstd, d),
        alpha,
      });
      return { dx: r.dx, dgx: r.dgx, dgamma: r.dgamma, dbeta: r.dbeta };
    };
  };
  const fields = (dtype: DType, shape: readonly number[]) => ({
    dtype: dtypeLabel(dtype, "float32"),
    layout: "contiguous",
    kernels: ["aclnnDeepNormGrad"] as const,
    dtypes: [dtype, "float32"] as DType[],
    numel: numel(shape),
  });
  const e = deepNormGradExample();
  return [
    conformanceCase(
      "deepNormGrad",
      `${example("deep_norm_grad")} [3,1,4] (golden)`,
      fields("float32", e.dy.shape),
      call(deepNormGradExample, e.alpha),
    ),
    ...DEEP_NORM_GRAD_CASES.map((c, k) =>
      conformanceCase("deepNormGrad", `${c.source} [${c.shape}]`, fields(c.dtype, c.shape), () => {
        const i = rowGradInputs(c, 23000 + 10 * k, true);
        return call(() => ({ ...i, x: i.a, gx: i.b }), c.alpha ?? 0.3)();
      })
    ),
    ...DEEP_NORM_GRAD_ZERO_CASES.map((c) =>
      conformanceCase(
        "deepNormGrad",
        `${c.source} [${c.shape}] (all zero)`,
        fields(c.dtype, c.shape),
        call(() => deepNormGradZeroInputs(c), 0.3),
      )
    ),
  ];
}

/**
 * fastLayerNorm's example and its op_api UT case in each dtype; mean and rstd compared at the
 * data's precision, as the sweep compares them (sweep_row_ops.ts atDataPrecision).
 */
function fastLayerNormAll(): VerifyCase[] {
  const call = (
    build: () => { input: Tensor; weight: Tensor; bias: Tensor },
    normalizedShape: number[],
    eps: number,
  ) =>
  (): Call => {
    const i = build();
    return (d) => {
      const r = fastLayerNorm({
        input: placeOn(i.input, d),
        normalizedShape,
        weight: placeOn(i.weight, d),
        bias: placeOn(i.bias, d),
        eps,
      });
      return {
        output: r.output,
        "mean (data's precision)": atDataPrecision(r.mean, i.input.dtype),
        "rstd (data's precision)": atDataPrecision(r.rstd, i.input.dtype),
      };
    };
  };
  const fields = (dtype: DType, shape: readonly number[]) => ({
    dtype,
    layout: "contiguous",
    kernels: ["aclnnFastLayerNorm"] as const,
    dtypes: [dtype],
    numel: numel(shape),
  });
  const e = fastLayerNormExample();
  const u = FAST_LAYER_NORM_UT;
  return [
    conformanceCase(
      "fastLayerNorm",
      `${example("layer_norm_v4", "fast_layer_norm")} [1,2,32] (golden)`,
      fields("float32", e.input.shape),
      call(fastLayerNormExample, e.normalizedShape, e.eps),
    ),
    ...(["float32", "float16", "bfloat16"] as const).map((dtype) =>
      conformanceCase(
        "fastLayerNorm",
        `${u.source} [${u.shape}]`,
        fields(dtype, u.shape),
        call(() => fastLayerNormUtInputs(dtype), u.normalizedShape, u.eps),
      )
    ),
  ];
}

/** Every case of norm_family_rows.ts and of these operators' examples. */
export function rowsFamilyCases(): VerifyCase[] {
  return [
    ...addLayerNormAll(),
    ...addLayerNormGradAll(),
    ...deepNormAll(),
    ...deepNormGradAll(),
    ...fastLayerNormAll(),
  ];
}
