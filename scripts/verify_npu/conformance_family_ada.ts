/**
 * The conformance cases of the adaptive LayerNorm operators of the norm family (adaLayerNorm,
 * adaLayerNormV2, adaLayerNormBackward) as `deno task verify:npu` cases: the peer cases of
 * tests/fixtures/conformance/norm_family_ada.ts and CANN's examples (norm_family_examples.ts), on
 * the inputs and seeds tests/conformance/norm_family_ada.test.ts gives them, each call run on the
 * NPU and on the CPU backend and compared.
 *
 * @module
 */

import { adaLayerNorm, adaLayerNormBackward, adaLayerNormV2, type Tensor } from "../../mod.ts";
import {
  ADA_ATK_CASES,
  ADA_GRAD_CASES,
  ADA_V2_UT_CASES,
  type AdaCase,
  adaGradInputs,
  adaInputs,
} from "../../tests/fixtures/conformance/norm_family_ada.ts";
import {
  adaLayerNormBackwardExample,
  adaLayerNormExample,
} from "../../tests/fixtures/conformance/norm_family_examples.ts";
import {
  type Call,
  conformanceCase,
  dtypesLabel,
  numel,
  placeOn,
  placeOpt,
  type VerifyCase,
} from "./model.ts";

/** x, scale, shift (weight, bias) of one aclnnAdaLayerNorm(V2) call, and its epsilon. */
type AdaData = Record<"x" | "scale" | "shift", Tensor> & {
  weight?: Tensor;
  bias?: Tensor;
  epsilon: number;
};

function adaCall(i: AdaData, v2: boolean): Call {
  return (d) => {
    const args = {
      x: placeOn(i.x, d),
      scale: placeOn(i.scale, d),
      shift: placeOn(i.shift, d),
      weight: placeOpt(i.weight, d),
      bias: placeOpt(i.bias, d),
      epsilon: i.epsilon,
    };
    if (!v2) return { output: adaLayerNorm(args).output };
    const r = adaLayerNormV2(args);
    return { output: r.output, mean: r.mean, rstd: r.rstd };
  };
}

/** adaLayerNorm's or adaLayerNormV2's example and cases (seeds of norm_family_ada.test.ts). */
function adaAll(v2: boolean): VerifyCase[] {
  const op = v2 ? "adaLayerNormV2" : "adaLayerNorm";
  const kernels = [v2 ? "aclnnAdaLayerNormV2" : "aclnnAdaLayerNorm"] as const;
  const file = v2 ? "ada_layer_norm_v2" : "ada_layer_norm";
  const cases: readonly AdaCase[] = v2 ? [...ADA_ATK_CASES, ...ADA_V2_UT_CASES] : ADA_ATK_CASES;
  return [
    conformanceCase(op, `ops-nn ${file}/examples/test_aclnn_${file}.cpp [2,4,8] (golden)`, {
      dtype: "float32",
      layout: "contiguous",
      kernels,
      dtypes: ["float32"],
      numel: 64,
    }, () => adaCall(adaLayerNormExample(), v2)),
    ...cases.map((c, k) =>
      conformanceCase(op, `${c.source} [${c.shape}] scale ${c.scale} shift ${c.shift}`, {
        dtype: c.dtype,
        layout: "contiguous",
        kernels,
        dtypes: [c.dtype],
        numel: numel(c.shape),
      }, () => adaCall({ ...adaInputs(c, (v2 ? 41000 : 40000) + 10 * k), epsilon: c.eps }, v2))
    ),
  ];
}

/** The tensors of one aclnnAdaLayerNormBackward call (weight, bias optional). */
type AdaGradData = Record<string, Tensor | undefined>;

function adaBackwardCall(i: AdaGradData): Call {
  return (d) => {
    const H = i.input!.shape[i.input!.rank - 1];
    const r = adaLayerNormBackward({
      gradOut: placeOn(i.gradOut!, d),
      input: placeOn(i.input!, d),
      normalizedShape: [H],
      rstd: placeOn(i.rstd!, d),
      mean: placeOn(i.mean!, d),
      scale: placeOn(i.scale!, d),
      shift: placeOn(i.shift!, d),
      weight: placeOpt(i.weight, d),
      bias: placeOpt(i.bias, d),
    });
    return {
      gradInput: r.gradInput,
      gradScale: r.gradScale,
      gradShift: r.gradShift,
      gradWeight: r.gradWeight,
      gradBias: r.gradBias,
    };
  };
}

function adaBackwardAll(): VerifyCase[] {
  const kernels = ["aclnnAdaLayerNormBackward"] as const;
  return [
    conformanceCase(
      "adaLayerNormBackward",
      "ops-nn ada_layer_norm_grad/examples/test_aclnn_ada_layer_norm_grad.cpp [2,2,2] (golden)",
      { dtype: "float32", layout: "contiguous", kernels, dtypes: ["float32"], numel: 8 },
      () => {
        const { normalizedShape: _, ...tensors } = adaLayerNormBackwardExample();
        return adaBackwardCall(tensors);
      },
    ),
    ...ADA_GRAD_CASES.map((c, k) => {
      const weight = c.weight === undefined ? c.dtype : c.weight;
      const bias = c.bias === undefined ? (weight ?? c.dtype) : c.bias;
      return conformanceCase("adaLayerNormBackward", `${c.source} [${c.shape}] ${c.form}`, {
        dtype: dtypesLabel(c.dtype, { weight, bias }),
        layout: "contiguous",
        kernels,
        dtypes: [c.dtype, weight, bias].filter((t) => !!t) as VerifyCase["dtypes"],
        numel: numel(c.shape),
      }, () => adaBackwardCall(adaGradInputs(c, 42000 + 10 * k)));
    }),
  ];
}

/** Every case of norm_family_ada.ts and of these operators' examples. */
export function adaFamilyCases(): VerifyCase[] {
  return [...adaAll(false), ...adaAll(true), ...adaBackwardAll()];
}
