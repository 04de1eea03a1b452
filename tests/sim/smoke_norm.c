/*
 * Software CANN ("aclsim") smoke test of the LayerNorm / RMSNorm operators, linked like a CANN
 * application (libacl_rt, libnnopbase, libopapi_nn, libopapi_math).  Each operator runs once on
 * a small float32 case checked against the formula in double, and refuses one argument with
 * CANN's code.  Exit status 0 = every check passed.  (tests/sim_layer_norm*.test.ts and
 * tests/software_cann/rms_norm.test.ts test them thoroughly.)
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_api.h"
#include "smoke_check.h"

int g_checks, g_failures;

typedef struct {
  aclTensor *t;
  void *dev;
  int64_t n;
} Buf;

enum { MAXB = 16 };
static Buf g_bufs[MAXB];
static int g_nbufs;

/* A contiguous float32 ND tensor holding `data` (NULL: unwritten), released by release_all. */
static aclTensor *f32(const float *data, const int64_t *shape, int nd) {
  Buf *b = &g_bufs[g_nbufs++];
  int64_t strides[8], n = 1;
  for (int i = nd - 1; i >= 0; i--) {
    strides[i] = n;
    n *= shape[i];
  }
  b->n = n;
  CHECK(aclrtMalloc(&b->dev, (size_t)(n > 0 ? n : 1) * 4, 0) == 0, "aclrtMalloc");
  if (data && n > 0) CHECK(aclrtMemcpy(b->dev, (size_t)n * 4, data, (size_t)n * 4, 1) == 0, "H2D");
  b->t = aclCreateTensor(shape, (uint64_t)nd, 0, strides, 0, 2, &n, 1, b->dev);
  CHECK(b->t != NULL, "aclCreateTensor");
  return b->t;
}

static void read_back(const aclTensor *t, float *out) {
  for (int i = 0; i < g_nbufs; i++)
    if (g_bufs[i].t == t) CHECK(aclrtMemcpy(out, (size_t)g_bufs[i].n * 4, g_bufs[i].dev, (size_t)g_bufs[i].n * 4, 2) == 0, "D2H");
}

static void release_all(void) {
  for (int i = 0; i < g_nbufs; i++) {
    CHECK(aclDestroyTensor(g_bufs[i].t) == 0, "aclDestroyTensor");
    CHECK(aclrtFree(g_bufs[i].dev) == 0, "aclrtFree");
  }
  g_nbufs = 0;
}

typedef aclnnStatus (*Phase2)(void *, uint64_t, aclOpExecutor *, aclrtStream);

/* Phase 1 status rc (must be 0), then the workspace, phase 2 and the synchronisation. The
 * out-params are passed by address: C evaluates arguments in no set order, so their values are
 * read here, after the phase 1 call has filled them. */
static void run(int rc, Phase2 f, const uint64_t *wsp, aclOpExecutor *const *exp, const char *what) {
  uint64_t ws = *wsp;
  aclOpExecutor *ex = *exp;
  const char *msg = rc ? aclGetRecentErrMsg() : NULL;
  CHECK(rc == 0, "%s phase 1: %d %s", what, rc, msg ? msg : "");
  if (rc) return;
  void *w = NULL;
  if (ws) CHECK(aclrtMalloc(&w, ws, 0) == 0, "workspace");
  int rc2 = f(w, ws, ex, NULL);
  msg = rc2 ? aclGetRecentErrMsg() : NULL;
  CHECK(rc2 == 0, "%s phase 2: %d %s", what, rc2, msg ? msg : "");
  CHECK(aclrtSynchronizeStream(NULL) == 0, "%s sync", what);
  if (w) CHECK(aclrtFree(w) == 0, "workspace free");
}

static void refused(int rc, int want, const char *needle, const char *what) {
  const char *msg = aclGetRecentErrMsg();
  CHECK(rc == want, "%s: %d, want %d (%s)", what, rc, want, msg ? msg : "(none)");
  CHECK(msg && strstr(msg, needle), "%s: '%s' lacks '%s'", what, msg ? msg : "(none)", needle);
}

static const float X[8] = {1, 2, 3, 4, -1, 0.5f, 2, 8};
static const float G[4] = {0.5f, 1, 1.5f, 2};
static const int64_t S24[2] = {2, 4}, S4[1] = {4}, S21[2] = {2, 1};

static void test_layer_norm(void) {
  uint64_t ws;
  aclOpExecutor *ex;
  int64_t four = 4;
  aclIntArray *norm = aclCreateIntArray(&four, 1);
  aclTensor *x = f32(X, S24, 2), *w = f32(G, S4, 1), *y = f32(NULL, S24, 2);
  aclTensor *mean = f32(NULL, S21, 2), *rstd = f32(NULL, S21, 2);
  run(aclnnLayerNormGetWorkspaceSize(x, norm, w, NULL, 1e-5, y, mean, rstd, &ws, &ex), aclnnLayerNorm, &ws, &ex,
      "aclnnLayerNorm");
  float yo[8], mo[2], ro[2];
  read_back(y, yo), read_back(mean, mo), read_back(rstd, ro);
  for (int r = 0; r < 2; r++) {
    double m = 0, v = 0;
    for (int i = 0; i < 4; i++) m += X[4 * r + i] / 4.0;
    for (int i = 0; i < 4; i++) v += (X[4 * r + i] - m) * (X[4 * r + i] - m) / 4.0;
    double rs = 1 / sqrt(v + (double)1e-5f);
    CHECK(fabs(mo[r] - m) < 1e-6 && fabs(ro[r] - rs) < 1e-5 * rs, "mean/rstd row %d: %g %g vs %g %g", r, mo[r], ro[r], m, rs);
    for (int i = 0; i < 4; i++)
      CHECK(fabs(yo[4 * r + i] - (X[4 * r + i] - m) * rs * G[i]) < 1e-5, "y[%d][%d] %g", r, i, yo[4 * r + i]);
  }
  refused(aclnnLayerNormGetWorkspaceSize(NULL, norm, w, NULL, 1e-5, y, mean, rstd, &ws, &ex), 161001,
          "argument [input]", "LayerNorm NULL input");
  /* Backward, gradWeight only: gradWeight = sum over rows of dy * xhat. */
  bool mask[3] = {false, true, false};
  aclBoolArray *m3 = aclCreateBoolArray(mask, 3);
  aclTensor *gw = f32(NULL, S4, 1);
  run(aclnnLayerNormBackwardGetWorkspaceSize(x, x, norm, mean, rstd, w, NULL, m3, NULL, gw, NULL, &ws, &ex),
      aclnnLayerNormBackward, &ws, &ex, "aclnnLayerNormBackward");
  float go[4];
  read_back(gw, go);
  for (int i = 0; i < 4; i++) {
    double e = 0;
    for (int r = 0; r < 2; r++) e += X[4 * r + i] * (X[4 * r + i] - mo[r]) * ro[r];
    CHECK(fabs(go[i] - e) < 1e-5 * (1 + fabs(e)), "gradWeight[%d] %g vs %g", i, go[i], e);
  }
  CHECK(aclDestroyBoolArray(m3) == 0, "destroy mask");
  CHECK(aclDestroyIntArray(norm) == 0, "destroy normalizedShape");
  release_all();
}

static void test_rms_norm(void) {
  uint64_t ws;
  aclOpExecutor *ex;
  aclTensor *x = f32(X, S24, 2), *g = f32(G, S4, 1), *y = f32(NULL, S24, 2), *rstd = f32(NULL, S21, 2);
  run(aclnnRmsNormGetWorkspaceSize(x, g, 1e-6, y, rstd, &ws, &ex), aclnnRmsNorm, &ws, &ex, "aclnnRmsNorm");
  float yo[8], ro[2];
  read_back(y, yo), read_back(rstd, ro);
  for (int r = 0; r < 2; r++) {
    double q = 0;
    for (int i = 0; i < 4; i++) q += X[4 * r + i] * X[4 * r + i] / 4.0;
    double rs = 1 / sqrt(q + (double)1e-6f);
    CHECK(fabs(ro[r] - rs) < 1e-6 * rs, "rstd[%d] %g vs %g", r, ro[r], rs);
    for (int i = 0; i < 4; i++) CHECK(fabs(yo[4 * r + i] - X[4 * r + i] * rs * G[i]) < 1e-5, "y[%d][%d]", r, i);
  }
  /* RmsNormGrad with dy = 0: dx = 0, dgamma = 0. */
  static const float Z[8] = {0};
  aclTensor *dy = f32(Z, S24, 2), *dx = f32(NULL, S24, 2), *dg = f32(NULL, S4, 1);
  run(aclnnRmsNormGradGetWorkspaceSize(dy, x, rstd, g, dx, dg, &ws, &ex), aclnnRmsNormGrad, &ws, &ex, "aclnnRmsNormGrad");
  float dxo[8], dgo[4];
  read_back(dx, dxo), read_back(dg, dgo);
  for (int i = 0; i < 8; i++) CHECK(dxo[i] == 0, "dx[%d] %g", i, dxo[i]);
  for (int i = 0; i < 4; i++) CHECK(dgo[i] == 0, "dgamma[%d] %g", i, dgo[i]);
  refused(aclnnRmsNormGetWorkspaceSize(x, g, -1.0, y, rstd, &ws, &ex), 561002, "Epsilon less than zero",
          "RmsNorm negative epsilon");
  setenv("ACLSIM_SOC_NAME", "Ascend910A", 1);
  refused(aclnnRmsNormGetWorkspaceSize(x, g, 1e-6, y, rstd, &ws, &ex), 161002, "not supported", "RmsNorm on 910A");
  unsetenv("ACLSIM_SOC_NAME");
  /* AddRmsNorm with x2 = 0: y and rstd as RmsNorm's, xOut = x1. */
  aclTensor *x2 = f32(Z, S24, 2), *y2 = f32(NULL, S24, 2), *r2 = f32(NULL, S21, 2), *xo = f32(NULL, S24, 2);
  run(aclnnAddRmsNormGetWorkspaceSize(x, x2, g, 1e-6, y2, r2, xo, &ws, &ex), aclnnAddRmsNorm, &ws, &ex, "aclnnAddRmsNorm");
  float y2o[8], r2o[2], xoo[8];
  read_back(y2, y2o), read_back(r2, r2o), read_back(xo, xoo);
  CHECK(memcmp(y2o, yo, sizeof yo) == 0 && memcmp(r2o, ro, sizeof ro) == 0, "AddRmsNorm(x, 0) == RmsNorm(x)");
  CHECK(memcmp(xoo, X, sizeof X) == 0, "xOut = x1 + 0");
  release_all();
}

int main(void) {
  unsetenv("ACLSIM_SOC_NAME"); /* the default SoC, Ascend950PR_9599 */
  setenv("ASCEND_OPP_PATH", "/simulated/opp", 1);
  CHECK(aclInit(NULL) == 0, "aclInit");
  CHECK(aclrtSetDevice(0) == 0, "aclrtSetDevice");
  test_layer_norm();
  test_rms_norm();
  int64_t s[15];
  CHECK(aclsimGetStats(s, 15) == 15, "aclsimGetStats");
  for (int i = 0; i < 11; i++) CHECK(s[i] == 0, "live counter %d = %lld at exit", i, (long long)s[i]);
  CHECK(aclrtResetDevice(0) == 0, "aclrtResetDevice");
  CHECK(aclFinalize() == 0, "aclFinalize");
  printf("aclsim norm smoke: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures ? 1 : 0;
}
