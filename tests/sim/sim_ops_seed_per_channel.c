/*
 * Software CANN ("aclsim") -- what the seed operators' computations share: per-channel sums, means
 * and variances over every dim but 1 (the channel), per-channel loads with a default and
 * conditional stores (zero-filled buffers: zalloc, sim_ops_common.c).  Accumulation is in double.
 */
#define _GNU_SOURCE
#include "sim_ops_seed.h"

const int64_t *dims_of(const SimTensorDesc *d) { return d->dims; }

/* Per-channel sums over every dim but 1: sumDy and sum dy * (x - mean[c]). */
void channel_sums(const SimTensorDesc *xd, const double *x, const double *dy, const double *mean, double *sdy,
                         double *sdx) {
  const int64_t *dm = dims_of(xd);
  int64_t N = dm[0], C = dm[1], inner = 1;
  for (int i = 2; i < xd->ndim; i++) inner *= dm[i];
  for (int64_t ch = 0; ch < C; ch++) {
    double a = 0, b = 0, m = mean ? mean[ch] : 0;
    for (int64_t n = 0; n < N; n++) {
      int64_t base = (n * C + ch) * inner;
      for (int64_t k = 0; k < inner; k++) {
        a += dy[base + k];
        b += dy[base + k] * (x[base + k] - m);
      }
    }
    sdy[ch] = a;
    sdx[ch] = b;
  }
}

double *per_channel_or(const SimPlan *p, int s, int64_t C, double dflt) {
  if (p->present[s] && sim_desc_numel(&p->t[s]) == C) return sim_load(&p->t[s]);
  double *v = zalloc(C);
  for (int64_t i = 0; i < C; i++) v[i] = dflt;
  return v;
}

void store_if(const SimPlan *p, int s, const double *v) {
  if (p->present[s]) sim_store(&p->t[s], v);
}

/* mean and biased variance per channel (two-pass); returns the element count per channel. */
int64_t channel_mean_var(const SimTensorDesc *xd, const double *x, double *mean, double *var) {
  int64_t N = xd->dims[0], C = xd->dims[1], inner = 1;
  for (int i = 2; i < xd->ndim; i++) inner *= xd->dims[i];
  int64_t M = N * inner;
  for (int64_t ch = 0; ch < C; ch++) {
    double s = 0, q = 0;
    for (int64_t n = 0; n < N; n++)
      for (int64_t k = 0; k < inner; k++) s += x[(n * C + ch) * inner + k];
    double m = M > 0 ? s / (double)M : 0;
    for (int64_t n = 0; n < N; n++)
      for (int64_t k = 0; k < inner; k++) {
        double d = x[(n * C + ch) * inner + k] - m;
        q += d * d;
      }
    mean[ch] = m;
    var[ch] = M > 0 ? q / (double)M : 0;
  }
  return M;
}
