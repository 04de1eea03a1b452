/**
 * The activated GroupNorm operators on the NPU: one two-phase aclnn call each, by the parameter
 * names of CANN's headers (ffi/symbols/aclnn_operators.ts). The chip rules (products, bfloat16,
 * statistics dtypes, empty inputs) are checked before, in `group_norm_act_rules.ts`.
 *
 * @module
 */

import { callAclnn } from "../../ffi/aclnn_call.ts";
import type { AscendDevice } from "../../ffi/runtime.ts";
import type { GroupNormActKernels } from "../types.ts";

/**
 * The Ascend kernels of aclnnGroupNormSilu, aclnnGroupNormSiluV2, aclnnGroupNormSwish and
 * aclnnGroupNormSwishGrad.
 */
export const ascendGroupNormActKernels: GroupNormActKernels = {
  groupNormSilu(p, t) {
    callAclnn(t.self.device as AscendDevice, "aclnnGroupNormSilu", {
      self: t.self,
      gamma: t.gamma,
      beta: t.beta,
      group: p.group,
      eps: p.eps,
      out: t.output,
      meanOut: t.mean,
      rstdOut: t.rstd,
    });
  },

  groupNormSiluV2(p, t) {
    callAclnn(t.self.device as AscendDevice, "aclnnGroupNormSiluV2", {
      self: t.self,
      gamma: t.gamma,
      beta: t.beta,
      group: p.group,
      eps: p.eps,
      activateSilu: p.activateSilu,
      out: t.output,
      meanOut: t.mean,
      rstdOut: t.rstd,
    });
  },

  groupNormSwish(p, t) {
    callAclnn(t.x.device as AscendDevice, "aclnnGroupNormSwish", {
      x: t.x,
      gamma: t.gamma,
      beta: t.beta,
      numGroups: p.numGroups,
      dataFormatOptional: p.dataFormat,
      eps: p.eps,
      activateSwish: p.activateSwish,
      swishScale: p.swishScale,
      yOut: t.y,
      meanOut: t.mean,
      rstdOut: t.rstd,
    });
  },
  groupNormSwishGrad(p, t) {
    callAclnn(t.x.device as AscendDevice, "aclnnGroupNormSwishGrad", {
      dy: t.dy,
      mean: t.mean,
      rstd: t.rstd,
      x: t.x,
      gamma: t.gamma,
      beta: t.beta,
      numGroups: p.numGroups,
      dataFormatOptional: p.dataFormat,
      swishScale: p.swishScale,
      dgammaIsRequire: p.dgammaIsRequire,
      dbetaIsRequire: p.dbetaIsRequire,
      dxOut: t.dx,
      dgammaOut: t.dgamma,
      dbetaOut: t.dbeta,
    });
  },
};
