/*
 * Software CANN ("aclsim") -- CANN op_api decompositions whose intermediates the chip forms in a
 * narrow dtype.  Each l0op result (Mul, Div, Sub, Add, Rsqrt, Cast, ReduceSum) of the cited code
 * is rounded once to the dtype the code gives it, with the overflow mode of the chip
 * (sim_round_dtype: Inf/NaN mode keeps +-Inf and NaN, saturation mode turns them into +-max and
 * 0).  Kernel arithmetic between those steps is in double, as everywhere in the simulator.
 *
 * Sources: hicann/ops-nn e5c3fa9327ea (paths under norm/).
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>

#define R(x) sim_round_dtype((x), dtype, mode)

/* aclnnBatchNormElemt (batch_norm_elemt/op_host/op_api/aclnn_batch_norm_elemt.cpp 171-187): the
 * variance handed to BatchNorm in inference mode is rebuilt from invstd in invstd's own dtype:
 * Mul(invstd, invstd), Div(OnesLike, .), Sub(., eps) with eps = (float)eps converted to that
 * dtype (ConvertToTensor).  A float16 invstd above 255.9 squares past 65504: +Inf (variance
 * 0 - eps < 0, so the kernel's rsqrt(var + eps) is NaN) or 65504 in saturation mode (a variance
 * of 2^-16 - eps, ~15% off for invstd 300). */
void sim_elemt_rebuild_variance(const double *invstd, int64_t C, int32_t dtype, double eps, int32_t mode,
                                double *var) {
  double eps_t = R((double)(float)eps);
  for (int64_t c = 0; c < C; c++) {
    double v = R(invstd[c] * invstd[c]);
    v = R(1.0 / v);
    var[c] = R(v - eps_t);
  }
}

/* aclnnGroupNorm on NpuArch DAV_1001 with a float16 self (group_norm/op_host/op_api/
 * aclnn_group_norm.cpp 242-257 GroupNormOutCastProcess, 268-281 RstdProcess, 398-407): the float32
 * kernel's variance is Cast to float16, then rstd = Rsqrt(Add(variance, eps)) in float16, eps being
 * (float)eps converted to float16.  A group variance above 65504 casts to +Inf (rstd 0) or to
 * 65504 in saturation mode (rstd 1/sqrt(65504)). */
double sim_gn_rstd_from_variance(double var, double eps, int32_t dtype, int32_t mode) {
  double v = R(var);
  double a = R(v + R((double)(float)eps));
  return R(1.0 / sqrt(a));
}

/* aclnnGroupNormBackward where the GroupNormGrad kernel is not used (aclnn_group_norm_backward.cpp
 * 781-799; NpuArch other than DAV_2201 and DAV_3510), every step in gradOut's dtype (off DAV_3510
 * every tensor has it):
 *  - gradInput, GradInputProcess 468-503: dy' = Mul(gradOut, gamma); a BatchNorm backward in
 *    training mode over [1, N*group, C/group*HxW] with weight 1, saveMean = mean and saveInvstd =
 *    the variance rebuilt by GetvarianceBatchNorm 449-466 from rstd with eps 1e-5 (line 486, not
 *    the forward's eps): Sub(Div(OnesLike, Mul(rstd, rstd)), eps).  Off DAV_3510 that backward reads
 *    saveInvstd as the batch variance (aclnn_batch_norm_backward.cpp BatchNormBackwardProc,
 *    BNTrainingUpdateGrad / BNTrainingReduceGrad `batch_variance`): invstd = 1/sqrt(var + 1e-5).
 *  - gradGamma, GetDgamma / CalDgamma 505-575: Mul(gradOut, Mul(Sub(input, mean), rstd)), then
 *    ReduceSum over HxW and over N, each result in the dtype.
 *  - gradBeta, GetDbeta 577-596: ReduceSum of gradOut over HxW, then over N.
 * A float16 rstd above 255.9 overflows the rebuilt variance as in aclnnBatchNormElemt. */
void sim_gn_backward_decomposed(const double *x, const double *dy, const double *mean, const double *rstd,
                                const double *gamma, int64_t N, int64_t C, int64_t HxW, int64_t G, int32_t dtype,
                                int32_t mode, double *gi, double *gg, double *gb) {
  const double eps_f = (double)1e-5f;
  const double eps_t = R(eps_f);
  int64_t D = C / G;
  double cnt = (double)(D * HxW);
  for (int64_t c = 0; c < C; c++) gg[c] = gb[c] = 0;
  for (int64_t n = 0; n < N; n++) {
    for (int64_t g = 0; g < G; g++) {
      double m = mean[n * G + g], r = rstd[n * G + g];
      double v = R(R(1.0 / R(r * r)) - eps_t);
      double inv = 1.0 / sqrt(v + eps_f);
      double s1 = 0, s2 = 0;
      for (int64_t ch = g * D; ch < (g + 1) * D; ch++)
        for (int64_t k = 0; k < HxW; k++) {
          int64_t i = (n * C + ch) * HxW + k;
          double d = R(dy[i] * gamma[ch]), xh = (x[i] - m) * inv;
          s1 += d;
          s2 += d * xh;
        }
      for (int64_t ch = g * D; ch < (g + 1) * D; ch++) {
        double sg = 0, sb = 0;
        for (int64_t k = 0; k < HxW; k++) {
          int64_t i = (n * C + ch) * HxW + k;
          double d = R(dy[i] * gamma[ch]);
          double xh = (x[i] - m) * inv;
          gi[i] = inv * (d - s1 / cnt - xh * s2 / cnt);
          sg += R(dy[i] * R(R(x[i] - m) * r));
          sb += dy[i];
        }
        gg[ch] += R(sg);
        gb[ch] += R(sb);
      }
    }
  }
  for (int64_t c = 0; c < C; c++) {
    gg[c] = R(gg[c]);
    gb[c] = R(gb[c]);
  }
}

/* aclnnBatchNormElemtBackward (sync_batch_norm_backward_elemt/op_api/aclnn_batch_norm_elemt_backward.cpp
 * 191-202, 246-283, 346-405): every tensor is cast to `promote` -- FLOAT16 when gradOut, input,
 * mean, invstd, weight (a float32 fill of ones when NULL), sumDy and sumDyXmu are all FLOAT16,
 * else FLOAT; meanDy = sumDy / total and meanDyXmu = sumDyXmu / total are divided in float32
 * (MeanByCounter) and cast to `promote`; the kernel (op_kernel/arch35/
 * sync_batch_norm_backward_elemt_dag.h) computes in float32 and casts its result to `promote`,
 * which the caller then casts to gradInput's dtype. */
void sim_elemt_backward(const double *dy, const double *x, const double *mean, const double *invstd, const double *w,
                        const double *sum_dy, const double *sum_dy_xmu, double total, int64_t numel, int64_t C,
                        int64_t inner, int32_t promote, int32_t mode, double *gi) {
  const int32_t dtype = promote;
  double *mdy = malloc((size_t)(C > 0 ? C : 1) * sizeof(double));
  double *mdx = malloc((size_t)(C > 0 ? C : 1) * sizeof(double));
  if (mdy == NULL || mdx == NULL) {
    free(mdy), free(mdx);
    return;
  }
  for (int64_t c = 0; c < C; c++) {
    mdy[c] = R(sim_round_dtype(sum_dy[c] / total, SIM_DT_FLOAT, mode));
    mdx[c] = R(sim_round_dtype(sum_dy_xmu[c] / total, SIM_DT_FLOAT, mode));
  }
  for (int64_t i = 0; i < numel; i++) {
    int64_t ch = (i / inner) % C;
    double is = invstd[ch];
    gi[i] = R((dy[i] - mdy[ch] - (x[i] - mean[ch]) * (mdx[ch] * is * is)) * (is * w[ch]));
  }
  free(mdy), free(mdx);
}
