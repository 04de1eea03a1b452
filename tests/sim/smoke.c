/*
 * Software CANN ("aclsim") smoke test.  Built by scripts/build_sim.ts into build/sim/smoke and
 * linked like a CANN application (libacl_rt, libnnopbase, libopapi_nn, libopapi_math) plus
 * libaclsim_core for the fp16/bf16 rounding checks.  Exit status 0 = every check passed.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"
#include "sim_api.h"

static int g_checks, g_failures;

#define CHECK(cond, ...)                                         \
  do {                                                           \
    g_checks++;                                                  \
    if (!(cond)) {                                               \
      g_failures++;                                              \
      fprintf(stderr, "FAIL %s:%d: %s -- ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                              \
      fprintf(stderr, "\n");                                     \
    }                                                            \
  } while (0)

/* Checks a status and that aclGetRecentErrMsg() holds a text containing `needle` (on a thread
 * with a device set: a second read returns NULL). */
static void expect_error(int got, int want, const char *needle, const char *what) {
  const char *msg = aclGetRecentErrMsg();
  CHECK(got == want, "%s: status %d, want %d (msg: %s)", what, got, want, msg ? msg : "(none)");
  CHECK(msg != NULL, "%s: no error text", what);
  if (msg && needle) CHECK(strstr(msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, msg, needle);
  CHECK(aclGetRecentErrMsg() == NULL, "%s: error text not cleared after reading", what);
}

/* The same on a thread with NO device set: the text is kept in the thread-local copy that only
 * the device-message callback clears, so a second read returns the same text again (runtime
 * acl.cpp aclGetRecentErrMsgImpl). */
static void expect_error_nodev(int got, int want, const char *needle, const char *what) {
  const char *msg = aclGetRecentErrMsg();
  CHECK(got == want, "%s: status %d, want %d (msg: %s)", what, got, want, msg ? msg : "(none)");
  CHECK(msg != NULL, "%s: no error text", what);
  if (!msg) return;
  if (needle) CHECK(strstr(msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, msg, needle);
  char *copy = strdup(msg);
  const char *again = aclGetRecentErrMsg();
  CHECK(again != NULL && strcmp(again, copy) == 0, "%s: no device: a second read returns the text again ('%s')", what,
        again ? again : "(NULL)");
  free(copy);
}

static bool near(double a, double b, double tol) { return fabs(a - b) <= tol * (1.0 + fabs(b)); }

typedef struct {
  aclTensor *t;
  void *dev;
  int64_t n;
} Buf;

/* A contiguous tensor in fresh device memory; data (float values) converted to dtype. */
static Buf make(const float *data, const int64_t *shape, int nd, aclDataType dt) {
  Buf b = {0};
  int64_t strides[8], n = 1;
  for (int i = nd - 1; i >= 0; i--) {
    strides[i] = n;
    n *= shape[i];
  }
  b.n = n;
  size_t es = dt == 0 || dt == 3 ? 4 : 2;
  size_t bytes = (size_t)(n > 0 ? n : 1) * es;
  int rc = aclrtMalloc(&b.dev, bytes, 0);
  CHECK(rc == 0, "aclrtMalloc %d", rc);
  if (data && n > 0) {
    unsigned char *host = malloc(bytes);
    for (int64_t i = 0; i < n; i++) {
      if (dt == 0) memcpy(host + 4 * i, &data[i], 4);
      else if (dt == 3) { int32_t v = (int32_t)data[i]; memcpy(host + 4 * i, &v, 4); }
      else { uint16_t h = dt == 1 ? sim_to_fp16(data[i]) : sim_to_bf16(data[i]); memcpy(host + 2 * i, &h, 2); }
    }
    rc = aclrtMemcpy(b.dev, bytes, host, bytes, 1);
    CHECK(rc == 0, "aclrtMemcpy H2D %d", rc);
    free(host);
  }
  int64_t storage = n;
  b.t = aclCreateTensor(shape, (uint64_t)nd, dt, strides, 0, 2, &storage, 1, b.dev);
  CHECK(b.t != NULL, "aclCreateTensor");
  return b;
}

static void drop(Buf *b) {
  if (b->t) CHECK(aclDestroyTensor(b->t) == 0, "aclDestroyTensor");
  if (b->dev) CHECK(aclrtFree(b->dev) == 0, "aclrtFree");
  b->t = NULL;
  b->dev = NULL;
}

static void read_f32(const Buf *b, float *out) {
  int rc = aclrtMemcpy(out, (size_t)b->n * 4, b->dev, (size_t)b->n * 4, 2);
  CHECK(rc == 0, "aclrtMemcpy D2H %d", rc);
}

static void *ws_alloc(uint64_t size) {
  void *p = NULL;
  if (size) CHECK(aclrtMalloc(&p, size, 0) == 0, "workspace malloc");
  return p;
}

static void stats(int64_t *s) { CHECK(aclsimGetStats(s, 15) == 15, "aclsimGetStats count"); }

/* ---- fp16 / bf16 rounding ------------------------------------------------------------ */
static void test_rounding(void) {
  CHECK(sim_to_fp16(1.0) == 0x3C00, "fp16 1.0");
  CHECK(sim_to_fp16(65504.0) == 0x7BFF, "fp16 max");
  CHECK(sim_to_fp16(65519.99) == 0x7BFF, "fp16 below overflow threshold");
  CHECK(sim_to_fp16(65520.0) == 0x7C00, "fp16 overflow tie -> inf");
  CHECK(sim_to_fp16(1.0 + ldexp(1, -11)) == 0x3C00, "fp16 tie to even (down)");
  CHECK(sim_to_fp16(1.0 + 3 * ldexp(1, -11)) == 0x3C02, "fp16 tie to even (up)");
  CHECK(sim_to_fp16(ldexp(1, -24)) == 0x0001, "fp16 min subnormal");
  CHECK(sim_to_fp16(ldexp(1, -25)) == 0x0000, "fp16 half min subnormal ties to 0");
  CHECK(sim_to_fp16(3 * ldexp(1, -25)) == 0x0002, "fp16 1.5 subnormal ties to 2");
  CHECK(sim_to_fp16(-0.0) == 0x8000, "fp16 -0");
  CHECK(sim_to_fp16(NAN) == 0x7E00, "fp16 NaN");
  CHECK(sim_to_bf16(1.0) == 0x3F80, "bf16 1.0");
  CHECK(sim_to_bf16(1.0 + ldexp(1, -8)) == 0x3F80, "bf16 tie to even");
  CHECK(sim_to_bf16(NAN) == 0x7FC0, "bf16 NaN is quiet");
  CHECK(sim_to_bf16(ldexp(1, -133)) == 0x0001, "bf16 min subnormal");
  CHECK(sim_from_fp16(0x0001) == ldexp(1, -24), "fp16 decode subnormal");
  CHECK(sim_from_bf16(0xC000) == -2.0, "bf16 decode");
}

/* ---- the seed document's aclnnBatchNormReduceBackward example ---------------------------- */
static void test_reduce_backward_seed(aclrtStream stream) {
  const float dy[] = {1, 1, 1, 2, 2, 2, 3, 3}, x[] = {0, 1, 2, 3, 4, 5, 6, 7}, ones[] = {1, 1};
  const int64_t s42[] = {4, 2}, s2[] = {2};
  Buf gd = make(dy, s42, 2, 0), in = make(x, s42, 2, 0), mean = make(ones, s2, 1, 0), inv = make(ones, s2, 1, 0),
      w = make(ones, s2, 1, 0), sdy = make(ones, s2, 1, 0), sdx = make(ones, s2, 1, 0), gw = make(ones, s2, 1, 0),
      gb = make(ones, s2, 1, 0);
  uint64_t wsSize = 0;
  aclOpExecutor *ex = NULL;
  int rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, in.t, mean.t, inv.t, w.t, true, true, true, sdy.t, sdx.t,
                                                        gw.t, gb.t, &wsSize, &ex);
  CHECK(rc == 0, "phase 1: %d %s", rc, aclGetRecentErrMsg());
  CHECK(wsSize == 512 + 32, "workspace formula: %llu", (unsigned long long)wsSize);
  void *ws = ws_alloc(wsSize);
  int64_t s[15];
  stats(s);
  CHECK(s[7] == 1, "one live executor after phase 1 (%lld)", (long long)s[7]);
  rc = aclnnBatchNormReduceBackward(ws, wsSize, ex, stream);
  CHECK(rc == 0, "phase 2: %d", rc);
  stats(s);
  CHECK(s[7] == 0, "executor freed by phase 2 (%lld)", (long long)s[7]);
  CHECK(s[9] == 1, "one pending task (%lld)", (long long)s[9]);

  /* read before synchronising: the outputs still hold their old contents */
  float out[2];
  read_f32(&sdy, out);
  CHECK(out[0] == 1 && out[1] == 1, "stale read before sync: %g %g", out[0], out[1]);

  /* running the consumed executor again is an error */
  rc = aclnnBatchNormReduceBackward(ws, wsSize, ex, stream);
  expect_error(rc, 561103, "has already run", "rerun of a consumed executor");

  CHECK(aclrtSynchronizeStream(stream) == 0, "sync");
  read_f32(&sdy, out);
  CHECK(out[0] == 7 && out[1] == 8, "sumDy = %g %g (want 7 8)", out[0], out[1]);
  read_f32(&sdx, out);
  CHECK(out[0] == 21 && out[1] == 30, "sumDyXmu = %g %g (want 21 30)", out[0], out[1]);
  read_f32(&gw, out);
  CHECK(out[0] == 21 && out[1] == 30, "gradWeight = %g %g (want 21 30)", out[0], out[1]);
  read_f32(&gb, out);
  CHECK(out[0] == 7 && out[1] == 8, "gradBias = %g %g (want 7 8)", out[0], out[1]);

  /* the same input as a non-contiguous view: storage [2,4] read transposed (strides {1,4}) */
  const float xt[] = {0, 2, 4, 6, 1, 3, 5, 7};
  const int64_t s24[] = {2, 4};
  Buf st = make(xt, s24, 2, 0);
  int64_t strides[] = {1, 4}, storage = 8;
  aclTensor *view = aclCreateTensor(s42, 2, 0, strides, 0, 2, &storage, 1, st.dev);
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, view, mean.t, inv.t, NULL, true, false, false, sdy.t, sdx.t,
                                                    NULL, NULL, &wsSize, &ex);
  CHECK(rc == 0, "strided phase 1 (weight NULL, masks partly off): %d %s", rc, aclGetRecentErrMsg());
  CHECK(aclnnBatchNormReduceBackward(ws, wsSize, ex, NULL) == 0, "strided phase 2 on the default stream");
  CHECK(aclrtSynchronizeStream(NULL) == 0, "sync default stream");
  read_f32(&sdx, out);
  CHECK(out[0] == 21 && out[1] == 30, "strided sumDyXmu = %g %g", out[0], out[1]);

  /* a view that does not fit its storage */
  int64_t big_off = 1;
  aclTensor *bad = aclCreateTensor(s42, 2, 0, strides, big_off, 2, &storage, 1, st.dev);
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, bad, mean.t, inv.t, NULL, true, false, false, sdy.t, sdx.t,
                                                    NULL, NULL, &wsSize, &ex);
  expect_error(rc, 161002, "storage", "view outside its storage");
  CHECK(aclDestroyTensor(bad) == 0, "destroy bad");
  CHECK(aclDestroyTensor(view) == 0, "destroy view");
  drop(&st);

  /* validation: dtype mismatch, NULLs, host pointer */
  Buf h16 = make(dy, s42, 2, 1);
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(h16.t, in.t, mean.t, inv.t, w.t, true, true, true, sdy.t, sdx.t, gw.t,
                                                    gb.t, &wsSize, &ex);
  expect_error(rc, 161002, "Tensor inputParamTensorList[0].param expected dtype is DT_FLOAT but found DT_FLOAT16.",
               "dtype mismatch");
  drop(&h16);
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, in.t, NULL, inv.t, w.t, true, true, true, sdy.t, sdx.t, gw.t,
                                                    gb.t, &wsSize, &ex);
  expect_error(rc, 161001, "mean", "NULL mean");
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, in.t, mean.t, inv.t, w.t, true, true, true, NULL, sdx.t, gw.t,
                                                    gb.t, &wsSize, &ex);
  expect_error(rc, 161001, "expected a proper Tensor but got null for argument sumDy.", "NULL sumDy with inputG");
  float hostbuf[8] = {0};
  int64_t st8 = 8, str42[] = {2, 1};
  aclTensor *host = aclCreateTensor(s42, 2, 0, str42, 0, 2, &st8, 1, hostbuf);
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, host, mean.t, inv.t, w.t, true, true, true, sdy.t, sdx.t, gw.t,
                                                    gb.t, &wsSize, &ex);
  expect_error(rc, 161002, "not device memory", "host pointer as device data");
  CHECK(aclDestroyTensor(host) == 0, "destroy host tensor");
  int64_t nc1[] = {4, 2};
  aclTensor *priv = aclCreateTensor(nc1, 2, 0, str42, 0, 3, &st8, 1, in.dev);
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, priv, mean.t, inv.t, w.t, true, true, true, sdy.t, sdx.t, gw.t,
                                                    gb.t, &wsSize, &ex);
  expect_error(rc, 161002, "NC1HWC0", "private format");
  CHECK(aclDestroyTensor(priv) == 0, "destroy private-format tensor");

  /* workspace too small: 161002, and the executor is consumed */
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, in.t, mean.t, inv.t, w.t, true, true, true, sdy.t, sdx.t, gw.t,
                                                    gb.t, &wsSize, &ex);
  CHECK(rc == 0, "phase 1 again");
  rc = aclnnBatchNormReduceBackward(ws, wsSize - 1, ex, stream);
  expect_error(rc, 161002, "workspaceSize", "workspace too small");
  stats(s);
  CHECK(s[7] == 0, "executor consumed by the failed phase 2");

  /* this signature already ran non-repeatably: CANN answers phase 1 from its executor cache, and a
   * cache wrap cannot be made repeatable (561000, a warning only: no error text) */
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, in.t, mean.t, inv.t, w.t, true, true, true, sdy.t, sdx.t, gw.t,
                                                    gb.t, &wsSize, &ex);
  CHECK(rc == 0 && aclSetAclOpExecutorRepeatable(ex) == 561000, "cache hit: not repeatable");
  CHECK(aclGetRecentErrMsg() == NULL, "cache hit: 561000 without an error text");
  CHECK(aclDestroyAclOpExecutor(ex) == 0, "destroy the unrun cache-hit executor");

  /* repeatable executor (a signature that never ran: biasG off): runs twice, destroyed by the caller */
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, in.t, mean.t, inv.t, w.t, true, true, false, sdy.t, sdx.t, gw.t,
                                                    NULL, &wsSize, &ex);
  CHECK(rc == 0 && aclSetAclOpExecutorRepeatable(ex) == 0, "repeatable");
  CHECK(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "repeatable run 1");
  CHECK(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "repeatable run 2");
  CHECK(aclrtSynchronizeStream(stream) == 0, "sync repeatable");
  CHECK(aclDestroyAclOpExecutor(ex) == 0, "destroy repeatable executor");
  expect_error(aclDestroyAclOpExecutor(ex), 561000, "already destroyed", "double destroy of an executor");

  /* freeing an input before synchronising: the synchronise call reports it */
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, in.t, mean.t, inv.t, w.t, true, true, true, sdy.t, sdx.t, gw.t,
                                                    gb.t, &wsSize, &ex);
  CHECK(rc == 0 && aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "launch before free");
  CHECK(aclrtFree(in.dev) == 0, "free input early");
  in.dev = NULL;
  expect_error(aclrtSynchronizeStream(stream), 507000, "'input'", "input freed before sync");
  stats(s);
  CHECK(s[9] == 0, "no pending tasks after the failed sync");

  if (ws) CHECK(aclrtFree(ws) == 0, "free ws");
  drop(&gd), drop(&in), drop(&mean), drop(&inv), drop(&w), drop(&sdy), drop(&sdx), drop(&gw), drop(&gb);
}

/* ---- GroupNorm forward + backward against a PyTorch-formula reference -------------------- */
static void test_group_norm(aclrtStream stream) {
  enum { N = 2, C = 4, HW = 3, G = 2, D = C / G, TOT = N * C * HW };
  float x[TOT], dy[TOT], gamma[C], beta[C];
  for (int i = 0; i < TOT; i++) {
    x[i] = (float)(0.37 * i - 0.011 * i * i + ((i * 7) % 5));
    dy[i] = (float)(0.5 - 0.13 * ((i * 3) % 11));
  }
  for (int c = 0; c < C; c++) {
    gamma[c] = 0.5f + 0.25f * c;
    beta[c] = 0.1f * c;
  }
  const int64_t sx[] = {N, C, HW}, sc[] = {C}, sng[] = {N, G};
  Buf bx = make(x, sx, 3, 0), bdy = make(dy, sx, 3, 0), bg = make(gamma, sc, 1, 0), bb = make(beta, sc, 1, 0);
  Buf by = make(NULL, sx, 3, 0), bm = make(NULL, sng, 2, 0), br = make(NULL, sng, 2, 0);
  Buf bgi = make(NULL, sx, 3, 0), bgg = make(NULL, sc, 1, 0), bgb = make(NULL, sc, 1, 0);
  uint64_t wsSize;
  aclOpExecutor *ex;
  int rc = aclnnGroupNormGetWorkspaceSize(bx.t, bg.t, bb.t, N, C, HW, G, 1e-5, by.t, bm.t, br.t, &wsSize, &ex);
  CHECK(rc == 0, "GroupNorm phase 1: %d %s", rc, aclGetRecentErrMsg());
  void *ws = ws_alloc(wsSize);
  CHECK(aclnnGroupNorm(ws, wsSize, ex, stream) == 0, "GroupNorm phase 2");
  CHECK(aclrtSynchronizeStream(stream) == 0, "GroupNorm sync");
  float mean[N * G], rstd[N * G], y[TOT];
  read_f32(&bm, mean);
  read_f32(&br, rstd);
  read_f32(&by, y);
  /* reference forward */
  double rr[N * G];
  for (int n = 0; n < N; n++)
    for (int g = 0; g < G; g++) {
      double s = 0, q = 0;
      for (int i = 0; i < D * HW; i++) s += x[(n * C + g * D) * HW + i];
      double m = s / (D * HW);
      for (int i = 0; i < D * HW; i++) q += pow(x[(n * C + g * D) * HW + i] - m, 2);
      rr[n * G + g] = 1 / sqrt(q / (D * HW) + 1e-5);
      CHECK(near(mean[n * G + g], m, 1e-6), "GN mean[%d] %g vs %g", n * G + g, mean[n * G + g], m);
      CHECK(near(rstd[n * G + g], rr[n * G + g], 1e-6), "GN rstd %g vs %g", rstd[n * G + g], rr[n * G + g]);
      for (int i = 0; i < D * HW; i++) {
        int idx = (n * C + g * D) * HW + i, c = g * D + i / HW;
        double want = (x[idx] - m) * rr[n * G + g] * gamma[c] + beta[c];
        CHECK(near(y[idx], want, 1e-5), "GN y[%d] %g vs %g", idx, y[idx], want);
      }
    }

  /* backward, with mean/rstd from the forward */
  bool mask[3] = {true, true, true};
  aclBoolArray *om = aclCreateBoolArray(mask, 3);
  rc = aclnnGroupNormBackwardGetWorkspaceSize(bdy.t, bx.t, bm.t, br.t, bg.t, N, C, HW, G, om, bgi.t, bgg.t, bgb.t, &wsSize,
                                              &ex);
  CHECK(rc == 0, "GroupNormBackward phase 1: %d %s", rc, aclGetRecentErrMsg());
  CHECK(aclnnGroupNormBackward(ws, wsSize, ex, stream) == 0, "GroupNormBackward phase 2");
  CHECK(aclrtSynchronizeStream(stream) == 0, "GroupNormBackward sync");
  float gi[TOT], gg[C], gb[C];
  read_f32(&bgi, gi);
  read_f32(&bgg, gg);
  read_f32(&bgb, gb);
  /* reference: the PyTorch ds/db formulation (independent of the simulator's two-pass form) */
  double ds[N][C] = {{0}}, db[N][C] = {{0}}, wgg[C] = {0}, wgb[C] = {0};
  for (int n = 0; n < N; n++)
    for (int c = 0; c < C; c++)
      for (int k = 0; k < HW; k++) {
        int i = (n * C + c) * HW + k;
        ds[n][c] += (double)dy[i] * x[i];
        db[n][c] += dy[i];
      }
  for (int n = 0; n < N; n++)
    for (int g = 0; g < G; g++) {
      double m = mean[n * G + g], r = rstd[n * G + g], dsg = 0, dbg = 0, s = 1.0 / (D * HW);
      for (int c = g * D; c < (g + 1) * D; c++) {
        dsg += ds[n][c] * gamma[c];
        dbg += db[n][c] * gamma[c];
        wgg[c] += (ds[n][c] - db[n][c] * m) * r;
        wgb[c] += db[n][c];
      }
      double c2 = (dbg * m - dsg) * r * r * r * s, c3 = -c2 * m - dbg * r * s;
      for (int c = g * D; c < (g + 1) * D; c++)
        for (int k = 0; k < HW; k++) {
          int i = (n * C + c) * HW + k;
          double want = r * gamma[c] * dy[i] + c2 * x[i] + c3;
          CHECK(near(gi[i], want, 1e-4), "GNB gradInput[%d] %.8g vs %.8g", i, gi[i], want);
        }
    }
  for (int c = 0; c < C; c++) {
    CHECK(near(gg[c], wgg[c], 1e-4), "GNB gradGamma[%d] %g vs %g", c, gg[c], wgg[c]);
    CHECK(near(gb[c], wgb[c], 1e-6), "GNB gradBeta[%d] %g vs %g", c, gb[c], wgb[c]);
  }

  /* validation */
  rc = aclnnGroupNormBackwardGetWorkspaceSize(bdy.t, bx.t, bm.t, br.t, bg.t, N, C, HW, 3, om, bgi.t, bgg.t, bgb.t, &wsSize,
                                              &ex);
  expect_error(rc, 161002, "Expected C can be divided by group, but got false.", "C % group");
  rc = aclnnGroupNormBackwardGetWorkspaceSize(bdy.t, bx.t, bm.t, br.t, bg.t, N, C, HW, G, NULL, bgi.t, bgg.t, bgb.t, &wsSize,
                                              &ex);
  /* CANN returns 161002 for every CheckMaskNotNull failure of GroupNormBackward */
  expect_error(rc, 161002, "argument [outputMask]", "NULL outputMask");
  aclBoolArray *om2 = aclCreateBoolArray(mask, 2);
  rc = aclnnGroupNormBackwardGetWorkspaceSize(bdy.t, bx.t, bm.t, br.t, bg.t, N, C, HW, G, om2, bgi.t, bgg.t, bgb.t, &wsSize,
                                              &ex);
  expect_error(rc, 161002, "outputMask len to be 3, but got 2.", "outputMask of length 2");
  CHECK(aclDestroyBoolArray(om2) == 0, "destroy mask2");
  rc = aclnnGroupNormBackwardGetWorkspaceSize(bdy.t, bx.t, bm.t, br.t, bg.t, N, C, HW, G, om, NULL, bgg.t, bgb.t, &wsSize, &ex);
  expect_error(rc, 161002, "argument [gradInput]", "NULL gradInput with mask[0]");
  unsetenv("ASCEND_OPP_PATH");
  rc = aclnnGroupNormBackwardGetWorkspaceSize(bdy.t, bx.t, bm.t, br.t, bg.t, N, C, HW, G, om, bgi.t, bgg.t, bgb.t, &wsSize,
                                              &ex);
  expect_error(rc, 561107, "set_env.sh", "ASCEND_OPP_PATH unset");
  setenv("ASCEND_OPP_PATH", "/simulated/opp", 1);

  CHECK(aclDestroyBoolArray(om) == 0, "destroy mask");
  if (ws) CHECK(aclrtFree(ws) == 0, "free ws");
  drop(&bx), drop(&bdy), drop(&bg), drop(&bb), drop(&by), drop(&bm), drop(&br), drop(&bgi), drop(&bgg), drop(&bgb);
}

/* ---- BatchNorm forward, Stats, GatherStatsWithCounts, Elemt, ElemtBackward, Backward -------- */
static void test_batch_norm_family(aclrtStream stream) {
  enum { N = 3, C = 2, L = 2, TOT = N * C * L };
  float x[TOT], dy[TOT];
  for (int i = 0; i < TOT; i++) {
    x[i] = (float)(i * 0.5 - 1 + (i % 3));
    dy[i] = (float)(1.0 - 0.25 * i);
  }
  const float w[] = {2, 3}, b[] = {0.5f, -1}, rm0[] = {0, 0}, rv0[] = {1, 1};
  const int64_t sx[] = {N, C, L}, sc[] = {C};
  Buf bx = make(x, sx, 3, 0), bdy = make(dy, sx, 3, 0), bw = make(w, sc, 1, 0), bb = make(b, sc, 1, 0);
  Buf brm = make(rm0, sc, 1, 0), brv = make(rv0, sc, 1, 0), by = make(NULL, sx, 3, 0), bsm = make(NULL, sc, 1, 0),
      bsi = make(NULL, sc, 1, 0);
  uint64_t wsSize;
  aclOpExecutor *ex;
  int rc = aclnnBatchNormGetWorkspaceSize(bx.t, bw.t, bb.t, brm.t, brv.t, true, 0.1, 1e-5, by.t, bsm.t, bsi.t, &wsSize, &ex);
  CHECK(rc == 0, "BatchNorm phase 1: %d %s", rc, aclGetRecentErrMsg());
  void *ws = ws_alloc(wsSize + 4096);
  CHECK(aclnnBatchNorm(ws, wsSize, ex, stream) == 0, "BatchNorm phase 2");
  CHECK(aclrtSynchronizeStream(stream) == 0, "BatchNorm sync");
  double mean[C], var[C], inv[C];
  for (int c = 0; c < C; c++) {
    double s = 0, q = 0;
    for (int n = 0; n < N; n++)
      for (int l = 0; l < L; l++) s += x[(n * C + c) * L + l];
    mean[c] = s / (N * L);
    for (int n = 0; n < N; n++)
      for (int l = 0; l < L; l++) q += pow(x[(n * C + c) * L + l] - mean[c], 2);
    var[c] = q / (N * L);
    inv[c] = 1 / sqrt(var[c] + 1e-5);
  }
  float sm[C], si[C], rm[C], rv[C], y[TOT];
  read_f32(&bsm, sm), read_f32(&bsi, si), read_f32(&brm, rm), read_f32(&brv, rv), read_f32(&by, y);
  for (int c = 0; c < C; c++) {
    CHECK(near(sm[c], mean[c], 1e-6), "BN saveMean %g vs %g", sm[c], mean[c]);
    CHECK(near(si[c], inv[c], 1e-6), "BN saveInvstd %g vs %g", si[c], inv[c]);
    CHECK(near(rm[c], 0.1 * mean[c], 1e-6), "BN runningMean %g", rm[c]);
    CHECK(near(rv[c], 0.9 + 0.1 * var[c] * N * L / (N * L - 1), 1e-6), "BN runningVar %g", rv[c]);
  }
  for (int i = 0; i < TOT; i++) {
    int c = (i / L) % C;
    CHECK(near(y[i], (x[i] - mean[c]) * inv[c] * w[c] + b[c], 1e-5), "BN y[%d]", i);
  }

  /* BatchNormStats -> GatherStatsWithCounts (one "device") -> Elemt */
  rc = aclnnBatchNormStatsGetWorkspaceSize(bx.t, 1e-5, bsm.t, bsi.t, &wsSize, &ex);
  CHECK(rc == 0 && aclnnBatchNormStats(ws, wsSize, ex, stream) == 0, "BatchNormStats: %d", rc);
  const int64_t s1c[] = {1, C}, s1[] = {1};
  const float cnt[] = {N * L};
  Buf bm2 = make(NULL, s1c, 2, 0), bi2 = make(NULL, s1c, 2, 0), bcnt = make(cnt, s1, 1, 0);
  Buf bma = make(NULL, sc, 1, 0), bia = make(NULL, sc, 1, 0);
  CHECK(aclrtMemcpyAsync(bm2.dev, 8, bsm.dev, 8, 3, stream) == 0, "memcpy async D2D mean");
  CHECK(aclrtMemcpyAsync(bi2.dev, 8, bsi.dev, 8, 3, stream) == 0, "memcpy async D2D invstd");
  rc = aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(bx.t, bm2.t, bi2.t, brm.t, brv.t, 0.1, 1e-5, bcnt.t, bma.t, bia.t,
                                                           &wsSize, &ex);
  CHECK(rc == 0, "GatherStats phase 1: %d %s", rc, aclGetRecentErrMsg());
  CHECK(aclnnBatchNormGatherStatsWithCounts(ws, wsSize, ex, stream) == 0, "GatherStats phase 2");
  rc = aclnnBatchNormElemtGetWorkspaceSize(bx.t, bw.t, bb.t, bma.t, bia.t, 1e-5, by.t, &wsSize, &ex);
  CHECK(rc == 0 && aclnnBatchNormElemt(ws, wsSize, ex, stream) == 0, "Elemt: %d", rc);
  CHECK(aclrtSynchronizeStream(stream) == 0, "sync stats chain");
  float ma[C], ia[C];
  read_f32(&bma, ma), read_f32(&bia, ia), read_f32(&by, y), read_f32(&brm, rm), read_f32(&brv, rv);
  for (int c = 0; c < C; c++) {
    CHECK(near(ma[c], mean[c], 1e-6), "meanAll %g vs %g", ma[c], mean[c]);
    CHECK(near(ia[c], inv[c], 1e-4), "invstdAll %g vs %g", ia[c], inv[c]);
    double rm2 = 0.9 * 0.1 * mean[c] + 0.1 * mean[c];
    CHECK(near(rm[c], rm2, 1e-5), "gather runningMean %g vs %g", rm[c], rm2);
  }
  for (int i = 0; i < TOT; i++) {
    int c = (i / L) % C;
    CHECK(near(y[i], (x[i] - mean[c]) * inv[c] * w[c] + b[c], 1e-4), "Elemt y[%d]", i);
  }

  /* BatchNormBackward (training) == ReduceBackward + ElemtBackward */
  bool mask[3] = {true, true, true};
  aclBoolArray *om = aclCreateBoolArray(mask, 3);
  Buf gi = make(NULL, sx, 3, 0), gw = make(NULL, sc, 1, 0), gb = make(NULL, sc, 1, 0);
  Buf gi2 = make(NULL, sx, 3, 0), sdy = make(NULL, sc, 1, 0), sdx = make(NULL, sc, 1, 0);
  const int32_t counter_i[] = {N * L};
  (void)counter_i;
  const float counter_f[] = {N * L};
  Buf bc = make(counter_f, s1, 1, 3);
  rc = aclnnBatchNormBackwardGetWorkspaceSize(bdy.t, bx.t, bw.t, brm.t, brv.t, bma.t, bia.t, true, 1e-5, om, gi.t, gw.t, gb.t,
                                              &wsSize, &ex);
  CHECK(rc == 0 && aclnnBatchNormBackward(ws, wsSize, ex, stream) == 0, "BatchNormBackward: %d %s", rc,
        rc ? aclGetRecentErrMsg() : "");
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(bdy.t, bx.t, bma.t, bia.t, bw.t, true, false, false, sdy.t, sdx.t, NULL,
                                                    NULL, &wsSize, &ex);
  CHECK(rc == 0 && aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "ReduceBackward: %d", rc);
  rc = aclnnBatchNormElemtBackwardGetWorkspaceSize(bdy.t, bx.t, bma.t, bia.t, bw.t, sdy.t, sdx.t, bc.t, gi2.t, &wsSize, &ex);
  CHECK(rc == 0 && aclnnBatchNormElemtBackward(ws, wsSize, ex, stream) == 0, "ElemtBackward: %d %s", rc,
        rc ? aclGetRecentErrMsg() : "");
  CHECK(aclrtSynchronizeStream(stream) == 0, "sync backward");
  float g1[TOT], g2[TOT];
  read_f32(&gi, g1), read_f32(&gi2, g2);
  for (int i = 0; i < TOT; i++) CHECK(near(g1[i], g2[i], 1e-5), "gradInput[%d] %g vs %g", i, g1[i], g2[i]);
  float sumg = 0;
  for (int i = 0; i < TOT; i++) sumg += g1[i];
  CHECK(fabs(sumg) < 1e-4, "training gradInput sums to ~0 (%g)", sumg);

  CHECK(aclDestroyBoolArray(om) == 0, "destroy om");
  CHECK(aclrtFree(ws) == 0, "free ws");
  drop(&bx), drop(&bdy), drop(&bw), drop(&bb), drop(&brm), drop(&brv), drop(&by), drop(&bsm), drop(&bsi);
  drop(&bm2), drop(&bi2), drop(&bcnt), drop(&bma), drop(&bia), drop(&gi), drop(&gw), drop(&gb), drop(&gi2), drop(&sdy),
      drop(&sdx), drop(&bc);
}

/* ---- fp16/bf16 I/O, empty tensors, address rebinding, async-copy staleness ------------------- */
static void read_u16(const Buf *b, uint16_t *out) {
  CHECK(aclrtMemcpy(out, (size_t)b->n * 2, b->dev, (size_t)b->n * 2, 2) == 0, "D2H u16");
}

static void test_dtypes_and_misc(aclrtStream stream) {
  const float dy[] = {1, 1, 1, 2, 2, 2, 3, 3}, x[] = {0, 1, 2, 3, 4, 5, 6, 7}, ones[] = {1, 1}, half[] = {0.5f, 0.5f};
  const int64_t s42[] = {4, 2}, s2[] = {2};
  /* fp16 data, fp16 statistics, bf16 and fp32 outputs */
  Buf gd = make(dy, s42, 2, 1), in = make(x, s42, 2, 1), mean = make(ones, s2, 1, 1), inv = make(half, s2, 1, 1);
  Buf sdy = make(NULL, s2, 1, 27), sdx = make(NULL, s2, 1, 27), gw = make(NULL, s2, 1, 1), gb = make(NULL, s2, 1, 0);
  uint64_t wsSize;
  aclOpExecutor *ex;
  int rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, in.t, mean.t, inv.t, NULL, true, true, true, sdy.t, sdx.t,
                                                        gw.t, gb.t, &wsSize, &ex);
  CHECK(rc == 0, "fp16 phase 1: %d %s", rc, rc ? aclGetRecentErrMsg() : "");
  void *ws = ws_alloc(wsSize);
  CHECK(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "fp16 phase 2");
  CHECK(aclrtSynchronizeStream(stream) == 0, "fp16 sync");
  uint16_t h[2];
  float f[2];
  read_u16(&sdy, h);
  CHECK(sim_from_bf16(h[0]) == 7 && sim_from_bf16(h[1]) == 8, "bf16 sumDy %g %g", sim_from_bf16(h[0]), sim_from_bf16(h[1]));
  read_u16(&sdx, h);
  CHECK(sim_from_bf16(h[0]) == 21 && sim_from_bf16(h[1]) == 30, "bf16 sumDyXmu");
  read_u16(&gw, h);
  CHECK(sim_from_fp16(h[0]) == 10.5 && sim_from_fp16(h[1]) == 15, "fp16 gradWeight %g %g", sim_from_fp16(h[0]),
        sim_from_fp16(h[1]));
  read_f32(&gb, f);
  CHECK(f[0] == 7 && f[1] == 8, "fp32 gradBias from fp16 input");

  /* repeatable executor rebound to a new input buffer: on a composite executor the index is
   * ignored, the aclTensor gets the address, and the executor reads it at its next run */
  const float x2[] = {1, 2, 3, 4, 5, 6, 7, 8};
  Buf in2 = make(x2, s42, 2, 1);
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, in.t, mean.t, inv.t, NULL, true, false, false, sdy.t, sdx.t,
                                                    NULL, NULL, &wsSize, &ex);
  CHECK(rc == 0 && aclSetAclOpExecutorRepeatable(ex) == 0, "repeatable fp16");
  CHECK(aclSetInputTensorAddr(ex, 99, in.t, in2.dev) == 0, "rebind input (the index is ignored)");
  void *raw = NULL;
  CHECK(aclGetRawTensorAddr(in.t, &raw) == 0 && raw == in2.dev, "aclSetInputTensorAddr set the aclTensor's address");
  expect_error(aclSetInputTensorAddr(ex, 0, NULL, in2.dev), 561103, "tensor cannot be a NULL pointer", "NULL tensor");
  CHECK(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "rebound run");
  CHECK(aclrtSynchronizeStream(stream) == 0, "rebound sync");
  read_u16(&sdx, h);
  CHECK(sim_from_bf16(h[0]) == 28 && sim_from_bf16(h[1]) == 38, "rebound sumDyXmu %g %g", sim_from_bf16(h[0]),
        sim_from_bf16(h[1]));
  /* the setter accepts any address; the launch refuses one that is not device memory */
  int local[4];
  CHECK(aclSetInputTensorAddr(ex, 0, in.t, local) == 0, "a host address is set without a check");
  expect_error(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream), 161002, "not device memory",
               "launch with a host address");
  CHECK(aclSetRawTensorAddr(in.t, in.dev) == 0, "restore raw address");
  CHECK(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "the executor survived the refused launch");
  CHECK(aclrtSynchronizeStream(stream) == 0, "restored sync");
  read_u16(&sdx, h);
  CHECK(sim_from_bf16(h[0]) == 21 && sim_from_bf16(h[1]) == 30, "restored sumDyXmu %g %g", sim_from_bf16(h[0]),
        sim_from_bf16(h[1]));
  CHECK(aclDestroyAclOpExecutor(ex) == 0, "destroy repeatable");

  /* empty input (N = 0): phase 1 succeeds, per-channel outputs are zero-filled */
  const int64_t s02[] = {0, 2};
  Buf e_dy = make(NULL, s02, 2, 0), e_x = make(NULL, s02, 2, 0), m32 = make(ones, s2, 1, 0), i32 = make(ones, s2, 1, 0);
  Buf o1 = make(ones, s2, 1, 0), o2 = make(ones, s2, 1, 0);
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(e_dy.t, e_x.t, m32.t, i32.t, NULL, true, false, false, o1.t, o2.t, NULL,
                                                    NULL, &wsSize, &ex);
  CHECK(rc == 0 && aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "empty input: %d", rc);
  CHECK(aclrtSynchronizeStream(stream) == 0, "empty sync");
  read_f32(&o1, f);
  CHECK(f[0] == 0 && f[1] == 0, "empty input -> zero sumDy");

  /* aclrtMemcpyAsync is queued: the destination is stale until the stream is synchronised */
  float src[2] = {42, 43}, back[2];
  CHECK(aclrtMemcpyAsync(o2.dev, 8, src, 8, 1, stream) == 0, "async H2D");
  read_f32(&o2, back);
  CHECK(back[0] == 0 && back[1] == 0, "async copy not visible before sync (%g)", back[0]);
  CHECK(aclrtSynchronizeStream(stream) == 0, "async sync");
  read_f32(&o2, back);
  CHECK(back[0] == 42 && back[1] == 43, "async copy visible after sync");
  /* a workspace freed before the task runs */
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, in.t, mean.t, inv.t, NULL, true, false, false, sdy.t, sdx.t,
                                                    NULL, NULL, &wsSize, &ex);
  CHECK(rc == 0 && aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "launch then free the workspace");
  CHECK(aclrtFree(ws) == 0, "free workspace early");
  expect_error(aclrtSynchronizeStream(stream), 507000, "workspace", "workspace freed before sync");

  drop(&gd), drop(&in), drop(&mean), drop(&inv), drop(&sdy), drop(&sdx), drop(&gw), drop(&gb), drop(&in2);
  drop(&e_dy), drop(&e_x), drop(&m32), drop(&i32), drop(&o1), drop(&o2);
}

/* ---- per-SoC behaviour: ACLSIM_SOC_NAME is read on every phase 1 --------------------------- */
typedef aclnnStatus (*Phase2)(void *, uint64_t, aclOpExecutor *, aclrtStream);
#define SOC_WS_CAP 65536

/* phase 1 status rc must be 0; then phase 2 and synchronise */
static void run2(int rc, Phase2 f, void *ws, uint64_t wsSize, aclOpExecutor *ex, aclrtStream s, const char *what) {
  CHECK(rc == 0, "%s phase 1: %d %s", what, rc, rc ? aclGetRecentErrMsg() : "");
  if (rc) return;
  CHECK(wsSize <= SOC_WS_CAP, "%s workspace %llu", what, (unsigned long long)wsSize);
  CHECK(f(ws, wsSize, ex, s) == 0, "%s phase 2", what);
  CHECK(aclrtSynchronizeStream(s) == 0, "%s sync", what);
}

static void set_soc(const char *name) {
  if (name) setenv("ACLSIM_SOC_NAME", name, 1);
  else unsetenv("ACLSIM_SOC_NAME");
}

static void test_soc_fidelity(aclrtStream stream) {
  enum { N = 4, C = 3, L = 5, TOT = N * C * L };
  float x[TOT], dy[TOT], ones[C] = {1, 1, 1}, f[TOT], g[TOT];
  for (int i = 0; i < TOT; i++) {
    x[i] = (float)(0.25 * i - 3 + (i % 4));
    dy[i] = (float)(0.5 - 0.07 * ((i * 5) % 13));
  }
  const int64_t sx[] = {N, C, L}, sc[] = {C}, s1c[] = {1, C};
  Buf bx = make(x, sx, 3, 0), bdy = make(dy, sx, 3, 0), xb16 = make(x, sx, 3, 27);
  Buf by = make(NULL, sx, 3, 0), yb16 = make(NULL, sx, 3, 27), sm = make(NULL, sc, 1, 0), si = make(NULL, sc, 1, 0);
  Buf sm2 = make(NULL, sc, 1, 0), si2 = make(NULL, sc, 1, 0), gi = make(NULL, sx, 3, 0), gi2 = make(NULL, sx, 3, 0);
  Buf gw = make(ones, sc, 1, 0), gb = make(ones, sc, 1, 0), w1c = make(ones, s1c, 2, 0);
  uint64_t wsSize = 0;
  aclOpExecutor *ex = NULL;
  void *ws = ws_alloc(SOC_WS_CAP);
  bool all[3] = {true, true, true};
  aclBoolArray *om = aclCreateBoolArray(all, 3), *om2 = aclCreateBoolArray(all, 2);
  int rc;

  /* a SoC without a platform file: the checks run with RESERVED_VERSION / DAV_RESV, then no kernel */
  set_soc("AscendSim");
  CHECK(strcmp(aclrtGetSocName(), "AscendSim") == 0, "ACLSIM_SOC_NAME is read per call");
  rc = aclnnBatchNormStatsGetWorkspaceSize(bx.t, 1e-5, sm.t, si.t, &wsSize, &ex);
  expect_error(rc, 561103, "no kernel binary for SoC \"AscendSim\"", "SoC without a platform file");
  rc = aclnnBatchNormGetWorkspaceSize(bx.t, NULL, NULL, NULL, NULL, true, 0.1, 1e-5, by.t, sm.t, si.t, &wsSize, &ex);
  expect_error(rc, 161002, "support for npuArch 65535 is not implemented", "BatchNorm with NpuArch DAV_RESV");

  /* bf16 BatchNorm: not on the Atlas training series, yes on Atlas A2 (GetSupportDtypeList) */
  set_soc("Ascend910A");
  rc = aclnnBatchNormGetWorkspaceSize(xb16.t, NULL, NULL, NULL, NULL, true, 0.1, 1e-5, yb16.t, sm.t, si.t, &wsSize, &ex);
  expect_error(rc, 161002,
               "aclnnBatchNorm: Tensor input not implemented for DT_BF16, should be in dtype support list "
               "[DT_FLOAT,DT_FLOAT16,].",
               "bf16 BatchNorm on Ascend910A");
  set_soc("Ascend910B3");
  rc = aclnnBatchNormGetWorkspaceSize(xb16.t, NULL, NULL, NULL, NULL, true, 0.1, 1e-5, yb16.t, sm.t, si.t, &wsSize, &ex);
  run2(rc, aclnnBatchNorm, ws, wsSize, ex, stream, "bf16 BatchNorm on Ascend910B3");
  /* BatchNormStats: bf16 on DAV_3510 only */
  rc = aclnnBatchNormStatsGetWorkspaceSize(xb16.t, 1e-5, sm.t, si.t, &wsSize, &ex);
  expect_error(rc, 161002, "Tensor input not implemented for DT_BF16", "bf16 BatchNormStats on Ascend910B3");
  set_soc(NULL);
  rc = aclnnBatchNormStatsGetWorkspaceSize(xb16.t, 1e-5, sm.t, si.t, &wsSize, &ex);
  run2(rc, aclnnBatchNormStats, ws, wsSize, ex, stream, "bf16 BatchNormStats on the default Ascend950PR_9599");
  /* unsupported products */
  set_soc("Ascend310P3");
  rc = aclnnBatchNormStatsGetWorkspaceSize(bx.t, 1e-5, sm.t, si.t, &wsSize, &ex);
  expect_error(rc, 161002, "not supported on SoC Ascend310P3 (Atlas inference series", "BatchNormStats on 310P");
  set_soc("Ascend310B1");
  rc = aclnnBatchNormGetWorkspaceSize(bx.t, NULL, NULL, NULL, NULL, true, 0.1, 1e-5, by.t, sm.t, si.t, &wsSize, &ex);
  expect_error(rc, 161002, "support for npuArch 3002 is not implemented", "BatchNorm on 310B");

  /* saveInvstd: Var(x) on Atlas A2, 1/sqrt(var + eps) on 950; backward reads it the same way */
  set_soc("Ascend910B4");
  rc = aclnnBatchNormGetWorkspaceSize(bx.t, NULL, NULL, NULL, NULL, true, 0.1, 1e-5, by.t, sm.t, si.t, &wsSize, &ex);
  run2(rc, aclnnBatchNorm, ws, wsSize, ex, stream, "BatchNorm on Ascend910B4");
  rc = aclnnBatchNormBackwardGetWorkspaceSize(bdy.t, bx.t, NULL, NULL, NULL, sm.t, si.t, true, 1e-5, om, gi.t, gw.t, gb.t,
                                              &wsSize, &ex);
  run2(rc, aclnnBatchNormBackward, ws, wsSize, ex, stream, "BatchNormBackward on Ascend910B4");
  set_soc("Ascend950DT_9591");
  rc = aclnnBatchNormGetWorkspaceSize(bx.t, NULL, NULL, NULL, NULL, true, 0.1, 1e-5, by.t, sm2.t, si2.t, &wsSize, &ex);
  run2(rc, aclnnBatchNorm, ws, wsSize, ex, stream, "BatchNorm on Ascend950DT_9591");
  rc = aclnnBatchNormBackwardGetWorkspaceSize(bdy.t, bx.t, NULL, NULL, NULL, sm2.t, si2.t, true, 1e-5, om, gi2.t, gw.t,
                                              gb.t, &wsSize, &ex);
  run2(rc, aclnnBatchNormBackward, ws, wsSize, ex, stream, "BatchNormBackward on Ascend950DT_9591");
  float v[C], inv[C];
  read_f32(&si, v), read_f32(&si2, inv);
  for (int c = 0; c < C; c++) {
    double m = 0, q = 0;
    for (int n = 0; n < N; n++)
      for (int l = 0; l < L; l++) m += x[(n * C + c) * L + l];
    m /= N * L;
    for (int n = 0; n < N; n++)
      for (int l = 0; l < L; l++) q += pow(x[(n * C + c) * L + l] - m, 2);
    CHECK(near(v[c], q / (N * L), 1e-6), "A2 saveInvstd[%d] = %g is Var(x) %g", c, v[c], q / (N * L));
    CHECK(near(inv[c], 1 / sqrt(q / (N * L) + 1e-5), 1e-6), "950 saveInvstd[%d] = %g is invstd", c, inv[c]);
  }
  read_f32(&gi, f), read_f32(&gi2, g);
  for (int i = 0; i < TOT; i++) CHECK(near(f[i], g[i], 1e-5), "A2 and 950 gradInput[%d]: %g vs %g", i, f[i], g[i]);

  /* per-channel tensors must be exactly [C] where CANN checks it */
  rc = aclnnBatchNormGetWorkspaceSize(bx.t, w1c.t, NULL, NULL, NULL, true, 0.1, 1e-5, by.t, sm.t, si.t, &wsSize, &ex);
  expect_error(rc, 161002, "Dim of weight should be one and shape is channel num of input.", "[1, C] weight");

  /* null codes as CANN returns them */
  rc = aclnnBatchNormElemtGetWorkspaceSize(bx.t, NULL, NULL, NULL, si.t, 1e-5, by.t, &wsSize, &ex);
  expect_error(rc, 161002, "argument [mean]", "BatchNormElemt NULL mean is 161002");
  rc = aclnnBatchNormBackwardGetWorkspaceSize(bdy.t, bx.t, NULL, NULL, NULL, sm.t, si.t, true, 1e-5, om2, gi.t, gw.t, gb.t,
                                              &wsSize, &ex);
  expect_error(rc, 161001, "outputMask size should be 3, but got 2.", "BatchNormBackward mask length on 950");
  rc = aclnnBatchNormBackwardGetWorkspaceSize(bdy.t, bx.t, NULL, NULL, NULL, sm.t, si.t, true, 1e-5, om, gi.t, NULL, gb.t,
                                              &wsSize, &ex);
  expect_error(rc, 161001, "argument [gradWeight]", "BatchNormBackward NULL gradWeight");

  /* empty tensors */
  const int64_t s0[] = {0, C, L}, sng[] = {2, 1}, s2c0[] = {2, C, 0};
  Buf x0 = make(NULL, s0, 3, 0), y0 = make(NULL, s0, 3, 0), nanm = make(NULL, sc, 1, 0), onei = make(ones, sc, 1, 0);
  rc = aclnnBatchNormGetWorkspaceSize(x0.t, NULL, NULL, NULL, NULL, false, 0.1, 1e-5, y0.t, nanm.t, onei.t, &wsSize, &ex);
  CHECK(rc == 0 && wsSize == 0, "empty BatchNorm: %d, workspace %llu", rc, (unsigned long long)wsSize);
  CHECK(aclnnBatchNorm(NULL, 0, ex, stream) == 0, "empty BatchNorm phase 2 with no workspace");
  read_f32(&onei, inv);
  CHECK(inv[0] == 1, "the fill runs at synchronisation, not before (%g)", inv[0]);
  CHECK(aclrtSynchronizeStream(stream) == 0, "empty BatchNorm sync");
  read_f32(&nanm, v), read_f32(&onei, inv);
  for (int c = 0; c < C; c++) CHECK(v[c] == 0 && isnan(inv[c]), "empty BatchNorm: saveMean %g, saveInvstd %g", v[c], inv[c]);
  Buf st_m = make(NULL, sc, 1, 0), st_i = make(ones, sc, 1, 0);
  rc = aclnnBatchNormStatsGetWorkspaceSize(x0.t, 1e-5, st_m.t, st_i.t, &wsSize, &ex);
  run2(rc, aclnnBatchNormStats, ws, wsSize, ex, stream, "empty BatchNormStats");
  read_f32(&st_m, v), read_f32(&st_i, inv);
  for (int c = 0; c < C; c++) CHECK(v[c] == 0 && isnan(inv[c]), "empty Stats: mean %g, invstd %g", v[c], inv[c]);
  Buf gx0 = make(NULL, s2c0, 3, 0), gy0 = make(NULL, s2c0, 3, 0), gm = make(NULL, sng, 2, 0), gr = make(ones, sng, 2, 0);
  rc = aclnnGroupNormGetWorkspaceSize(gx0.t, NULL, NULL, 2, C, 0, 1, 1e-5, gy0.t, gm.t, gr.t, &wsSize, &ex);
  run2(rc, aclnnGroupNorm, ws, wsSize, ex, stream, "GroupNorm with HxW = 0");
  float g2[2];
  read_f32(&gm, g2);
  CHECK(g2[0] == 0 && g2[1] == 0, "empty GroupNorm meanOut %g %g", g2[0], g2[1]);
  read_f32(&gr, g2);
  CHECK(isnan(g2[0]) && isnan(g2[1]), "empty GroupNorm rstdOut %g %g", g2[0], g2[1]);
  set_soc("Ascend910_9391");
  Buf gw1 = make(ones, sc, 1, 0);
  rc = aclnnBatchNormBackwardGetWorkspaceSize(x0.t, x0.t, NULL, NULL, NULL, NULL, NULL, true, 1e-5, NULL, y0.t, gw1.t,
                                              NULL, &wsSize, &ex);
  run2(rc, aclnnBatchNormBackward, ws, wsSize, ex, stream, "empty BatchNormBackward (mask NULL: not even checked)");
  read_f32(&gw1, v);
  for (int c = 0; c < C; c++) CHECK(v[c] == 1, "empty BatchNormBackward wrote nothing (%g)", v[c]);
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(x0.t, x0.t, onei.t, onei.t, NULL, false, true, false, NULL, NULL, gw1.t,
                                                    NULL, &wsSize, &ex);
  run2(rc, aclnnBatchNormReduceBackward, ws, wsSize, ex, stream, "empty ReduceBackward on A3");
  read_f32(&gw1, v);
  for (int c = 0; c < C; c++) CHECK(v[c] == 1, "empty ReduceBackward on A3 wrote nothing (%g)", v[c]);
  set_soc(NULL);
  rc = aclnnBatchNormReduceBackwardGetWorkspaceSize(x0.t, x0.t, onei.t, onei.t, NULL, false, true, false, NULL, NULL, gw1.t,
                                                    NULL, &wsSize, &ex);
  run2(rc, aclnnBatchNormReduceBackward, ws, wsSize, ex, stream, "empty ReduceBackward on 950");
  read_f32(&gw1, v);
  for (int c = 0; c < C; c++) CHECK(v[c] == 0, "empty ReduceBackward on 950 zero-fills (%g)", v[c]);

  /* GroupNormBackward: mixed precision on DAV_3510 only, C / group <= 8000 on DAV_2201 only */
  enum { BIGC = 8001 };
  const int64_t sbig[] = {1, BIGC, 1}, s11[] = {1, 1}, sh[] = {1, C, 2}, s13[] = {1, 1};
  Buf big = make(NULL, sbig, 3, 0), bigi = make(NULL, sbig, 3, 0), m11 = make(ones, s11, 2, 0), r11 = make(ones, s11, 2, 0);
  bool m0[3] = {true, false, false};
  aclBoolArray *om0 = aclCreateBoolArray(m0, 3);
  set_soc("Ascend910B2");
  rc = aclnnGroupNormBackwardGetWorkspaceSize(big.t, big.t, m11.t, r11.t, NULL, 1, BIGC, 1, 1, om0, bigi.t, NULL, NULL,
                                              &wsSize, &ex);
  expect_error(rc, 161002, "Expected C / group <= 8000 to be true, but got false.", "GroupNormBackward limit on 910B");
  set_soc("Ascend950PR_9579");
  rc = aclnnGroupNormBackwardGetWorkspaceSize(big.t, big.t, m11.t, r11.t, NULL, 1, BIGC, 1, 1, om0, bigi.t, NULL, NULL,
                                              &wsSize, &ex);
  CHECK(rc == 0, "no C / group limit on 950: %d", rc);
  if (rc == 0) CHECK(aclDestroyAclOpExecutor(ex) == 0, "destroy the unrun executor");
  set_soc(NULL);
  float hx[C * 2];
  for (int i = 0; i < C * 2; i++) hx[i] = (float)(i * 0.5 - 1);
  Buf h16 = make(hx, sh, 3, 1), hgi = make(NULL, sh, 3, 1), mf = make(ones, s13, 2, 0), rf = make(ones, s13, 2, 0);
  rc = aclnnGroupNormBackwardGetWorkspaceSize(h16.t, h16.t, mf.t, rf.t, NULL, 1, C, 2, 1, om0, hgi.t, NULL, NULL, &wsSize,
                                              &ex);
  run2(rc, aclnnGroupNormBackward, ws, wsSize, ex, stream, "fp16 GroupNormBackward with fp32 mean on 950");
  set_soc("Ascend910B2");
  rc = aclnnGroupNormBackwardGetWorkspaceSize(h16.t, h16.t, mf.t, rf.t, NULL, 1, C, 2, 1, om0, hgi.t, NULL, NULL, &wsSize,
                                              &ex);
  expect_error(rc, 161002, "Tensor mean expected dtype is DT_FLOAT16 but found DT_FLOAT.", "mixed GroupNormBackward on A2");
  set_soc(NULL);

  /* GatherStatsWithCounts: runningMean without runningVar crashes CANN in phase 1 (the child
   * must die of SIGABRT); runningVar without runningMean is silently not updated. */
  const int64_t s1[] = {1};
  const float cnt[] = {N * L};
  Buf gmean = make(ones, s1c, 2, 0), ginv = make(ones, s1c, 2, 0), gcnt = make(cnt, s1, 1, 0);
  Buf grm = make(ones, sc, 1, 0), grv = make(ones, sc, 1, 0), gma = make(NULL, sc, 1, 0), gia = make(NULL, sc, 1, 0);
  fflush(stdout), fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stderr)) _exit(3);
    aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(bx.t, gmean.t, ginv.t, grm.t, NULL, 0.1, 1e-5, gcnt.t, gma.t, gia.t,
                                                        &wsSize, &ex);
    _exit(0);
  }
  int wstatus = 0;
  CHECK(pid > 0 && waitpid(pid, &wstatus, 0) == pid, "fork/waitpid");
  CHECK(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGABRT, "runningMean without runningVar aborts (status %d)",
        wstatus);
  rc = aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(bx.t, gmean.t, ginv.t, NULL, grv.t, 0.1, 1e-5, gcnt.t, gma.t,
                                                           gia.t, &wsSize, &ex);
  run2(rc, aclnnBatchNormGatherStatsWithCounts, ws, wsSize, ex, stream, "GatherStats with runningVar only");
  read_f32(&grv, v);
  for (int c = 0; c < C; c++) CHECK(v[c] == 1, "runningVar without runningMean is not updated (%g)", v[c]);
  drop(&gmean), drop(&ginv), drop(&gcnt), drop(&grm), drop(&grv), drop(&gma), drop(&gia);

  CHECK(aclDestroyBoolArray(om) == 0 && aclDestroyBoolArray(om2) == 0 && aclDestroyBoolArray(om0) == 0, "destroy masks");
  CHECK(aclrtFree(ws) == 0, "free ws");
  drop(&bx), drop(&bdy), drop(&xb16), drop(&by), drop(&yb16), drop(&sm), drop(&si), drop(&sm2), drop(&si2), drop(&gi);
  drop(&gi2), drop(&gw), drop(&gb), drop(&w1c), drop(&x0), drop(&y0), drop(&nanm), drop(&onei), drop(&st_m), drop(&st_i);
  drop(&gx0), drop(&gy0), drop(&gm), drop(&gr), drop(&gw1), drop(&big), drop(&bigi), drop(&m11), drop(&r11), drop(&h16);
  drop(&hgi), drop(&mf), drop(&rf);
}

/* ---- runtime errors ------------------------------------------------------------------------ */
static void *thread_without_device(void *arg) {
  (void)arg;
  void *p = NULL;
  expect_error_nodev(aclrtMalloc(&p, 64, 0), 107002, "aclrtSetDevice", "malloc on a thread without a device");
  /* a new message on a device-less thread comes first, followed by the kept older text */
  expect_error_nodev(aclrtGetDevice(NULL), 100000, "deviceId is NULL", "second error on a thread without a device");
  const char *both = aclGetRecentErrMsg();
  const char *prefix = "aclrtGetDevice: deviceId is NULL\n\naclrtMalloc: no device";
  CHECK(both && strncmp(both, prefix, strlen(prefix)) == 0,
        "new text + \"\\n\" + the kept text: '%s'", both ? both : "(NULL)");
  CHECK(aclrtSetDevice(0) == 0, "set device on the second thread");
  CHECK(aclGetRecentErrMsg() == NULL, "with a device set the kept text is cleared by the device-message callback");
  CHECK(aclrtMalloc(&p, 64, 0) == 0 && aclrtFree(p) == 0, "malloc/free after aclrtSetDevice");
  CHECK(aclrtResetDevice(0) == 0, "reset the second thread's reference");
  return NULL;
}

static void test_runtime_errors(void) {
  void *p = NULL, *q = NULL;
  expect_error(aclrtMalloc(&p, 0, 0), 100000, "size is 0", "malloc(0)");
  CHECK(aclrtMalloc(&p, 100, 0) == 0, "malloc");
  CHECK(((uintptr_t)p % 512) == 0, "512-byte alignment");
  expect_error(aclrtFree((char *)p + 16), 107000, "16 bytes into", "interior free");
  int local = 0;
  expect_error(aclrtFree(&local), 107000, "not device memory", "host pointer free");
  char host[200];
  expect_error(aclrtMemcpy(p, 100, host, 200, 1), 107000, "destMax", "count > destMax");
  expect_error(aclrtMemcpy(p, 200, host, 200, 1), 107000, "inside one live device allocation", "out of bounds H2D");
  expect_error(aclrtMemcpy(host, 100, p, 100, 1), 107000, "device allocation", "H2D with reversed pointers");
  CHECK(aclrtMalloc(&q, 100, 0) == 0, "malloc q");
  expect_error(aclrtMemcpy(q, 100, p, 100, 1), 107000, "must be host memory", "H2D from device memory");
  CHECK(aclrtMemcpy(q, 100, p, 100, 3) == 0, "D2D");
  CHECK(aclrtMemset(p, 100, 0, 100) == 0, "memset");
  expect_error(aclrtMemset(p, 200, 0, 200), 107000, "device allocation", "memset out of bounds");

  /* runtime memory.cpp aclrtMemcpyImpl / aclrtMemsetImpl and api_error.cc MemCopySync */
  CHECK(aclrtMemcpy(NULL, 0, NULL, 0, 1) == 0, "memcpy count 0 with NULL pointers: 0");
  CHECK(aclrtMemcpy(NULL, 0, NULL, 0, 77) == 0, "memcpy count 0 comes before the kind check");
  expect_error(aclrtMemcpy(NULL, 8, host, 8, 1), 100000, "dst is NULL", "memcpy NULL dst");
  expect_error(aclrtMemcpy(p, 100, host, 8, 6), 100000, "aclrtMemcpyKind", "memcpy kind 6");
  expect_error(aclrtMemcpy(p, 0, host, 8, 1), 107000, "destMax is 0", "memcpy destMax 0");
  memset(host, 0x5A, 8);
  CHECK(aclrtMemcpy(p, 100, host, 8, 5) == 0, "kind 5 (ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE) is host to device");
  CHECK(aclrtMemcpy(p, 100, p, 100, 1) == 0, "dst == src: 0 without copying (even with a wrong kind)");
  unsigned char back[8] = {0};
  CHECK(aclrtMemcpy(back, 8, p, 8, 2) == 0 && back[0] == 0x5A && back[7] == 0x5A, "kind 5 copied");
  CHECK(aclrtMemset(NULL, 0, 7, 0) == 0, "memset count 0 with a NULL pointer: 0");
  expect_error(aclrtMemset(NULL, 8, 0, 8), 100000, "devPtr is NULL", "memset NULL");
  expect_error(aclrtMemset(p, 8, 0, 16), 107000, "maxCount", "memset count > maxCount");
  CHECK(aclrtMemset(p, 100, 0x1AB, 4) == 0 && aclrtMemcpy(back, 8, p, 8, 2) == 0, "memset 0x1AB");
  CHECK(back[0] == 0xAB && back[3] == 0xAB && back[4] == 0x5A, "the value is truncated to a byte (%#x)", back[0]);
  CHECK(aclrtMemset(p, 100, -1, 2) == 0 && aclrtMemcpy(back, 8, p, 8, 2) == 0 && back[1] == 0xFF, "memset -1");
  CHECK(aclrtFree(p) == 0, "free p");
  expect_error(aclrtFree(p), 107000, "already freed", "double free");
  CHECK(aclrtFree(q) == 0, "free q");
  void *h = NULL;
  CHECK(aclrtMallocHost(&h, 64) == 0 && aclrtFreeHost(h) == 0, "host alloc/free");
  expect_error(aclrtSetDevice(7), 107001, "invalid", "bad device id");
  int32_t dev = -1;
  CHECK(aclrtGetDevice(&dev) == 0 && dev == 0, "aclrtGetDevice");
  uint32_t n = 0;
  CHECK(aclrtGetDeviceCount(&n) == 0 && n == 1, "device count %u", n);
  CHECK(strcmp(aclrtGetSocName(), "Ascend950PR_9599") == 0, "default soc name %s", aclrtGetSocName());
  size_t fr = 0, tot = 0;
  CHECK(aclrtGetMemInfo(1, &fr, &tot) == 0 && fr <= tot && tot > 0, "mem info");
  int64_t dims[] = {2, 2}, strides[] = {2, 1}, st = 4;
  CHECK(aclCreateTensor(dims, 9, 0, strides, 0, 2, &st, 1, NULL) == NULL, "9 dims rejected");
  CHECK(aclGetRecentErrMsg() != NULL, "message for 9 dims");
  CHECK(aclCreateTensor(dims, 2, 99, strides, 0, 2, &st, 1, NULL) == NULL, "unknown dtype rejected");
  CHECK(aclGetRecentErrMsg() != NULL, "message for unknown dtype");
  pthread_t th;
  pthread_create(&th, NULL, thread_without_device, NULL);
  pthread_join(th, NULL);
}


/* ---- aclGetRecentErrMsg: the per-thread queue (runtime acl.cpp, error_manager.cc) ---------- */
static int count_char(const char *str, char c) {
  int n = 0;
  for (; *str; str++) n += *str == c;
  return n;
}

static void test_error_queue(void) {
  /* on the main thread, device 0 set */
  void *p = NULL;
  CHECK(aclGetRecentErrMsg() == NULL, "nothing pending: NULL, not \"\"");
  CHECK(aclrtMalloc(&p, 0, 0) == 100000, "first failure");
  CHECK(aclrtSetDevice(99) == 107001, "second failure");
  CHECK(aclrtMalloc(&p, 0, 0) == 100000, "the first failure again (an identical item is not queued twice)");
  const char *m = aclGetRecentErrMsg();
  const char *want = "aclrtMalloc: size is 0\nTraceBack (most recent call last):\n        aclrtSetDevice: device id 99 ";
  CHECK(m && strncmp(m, want, strlen(want)) == 0, "ErrorManager format: '%s'", m ? m : "(NULL)");
  CHECK(m && count_char(m, '\n') == 3, "three lines, each ending in a newline: '%s'", m ? m : "(NULL)");
  CHECK(aclGetRecentErrMsg() == NULL, "cleared by the read");
  for (int i = 0; i < 1005; i++) CHECK(aclrtSetDevice(1000 + i) == 107001, "failure %d", i);
  m = aclGetRecentErrMsg();
  CHECK(m && count_char(m, '\n') == 1001, "1000 items: the first line, the TraceBack line and 999 more (%d)",
        m ? count_char(m, '\n') : -1);
  CHECK(m && strstr(m, "device id 1999 ") != NULL && strstr(m, "device id 2000 ") == NULL,
        "items after the 1000th are dropped");
  CHECK(aclGetRecentErrMsg() == NULL, "cleared after 1000 items");
}

/* ---- work in a forked child: process-wide state (aclInit counts, device references) -------- */
static void in_child(void (*fn)(void), const char *what) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    g_failures = 0;
    fn();
    fflush(stderr);
    _exit(g_failures ? 1 : 0);
  }
  int wstatus = 0;
  CHECK(pid > 0 && waitpid(pid, &wstatus, 0) == pid && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0,
        "%s: a check failed in the child process (FAIL lines above)", what);
}

/* runtime acl.cpp aclInitImpl / aclFinalizeImpl; opbase aclnn_init.cpp. Runs before any aclInit. */
static void child_init_finalize(void) {
  CHECK(aclFinalize() == 0, "aclFinalize in a process that never called aclInit: 0 the first time");
  expect_error_nodev(aclFinalize(), 100037, "repeatedly finalized", "second aclFinalize");
  CHECK(aclInit(NULL) == 0, "aclInit after aclFinalize");
  CHECK(aclInit(NULL) == 100002 && aclInit("other.json") == 100002, "repeated aclInit: 100002 (count 3)");
  const char *m = aclGetRecentErrMsg();
  CHECK(m && strstr(m, "repeatedly finalized") && !strstr(m, "aclInit"),
        "100002 queues no message (the kept 100037 text comes back: no device): '%s'", m ? m : "(NULL)");
  CHECK(aclFinalize() == 0, "aclFinalize zeroes the count (3) in one call");
  CHECK(aclFinalize() == 100037, "then it is a repeated finalize");
  CHECK(aclInit(NULL) == 0, "the count was zeroed: aclInit initialises again");
  CHECK(aclnnInit(NULL) == 0 && aclnnInit(NULL) == 0 && aclnnInit("x.json") == 0, "aclnnInit: always 0");
  CHECK(aclnnFinalize() == 0 && aclnnFinalize() == 0, "aclnnFinalize: always 0");
  CHECK(aclFinalize() == 0, "final aclFinalize");
}

static int64_t stat_at(int i) {
  int64_t s[15];
  stats(s);
  return s[i];
}

/* runtime runtime.cc PrimaryContextRetain / PrimaryContextRelease, api_error.cc DeviceReset. */
static void child_device_refs(void) {
  setenv("ACLSIM_DEVICE_COUNT", "2", 1);
  int64_t refs = stat_at(13);
  CHECK(refs == 1, "the parent's one reference of device 0 (%lld)", (long long)refs);
  expect_error(aclrtSetDevice(2), 107001, "invalid", "bad device id");
  CHECK(stat_at(13) == refs, "a failed aclrtSetDevice adds no reference");
  expect_error(aclrtResetDevice(1), 507007,
               "Resetting the device failed. Reason: The device has not been set or has already been reset",
               "aclrtResetDevice without a reference");
  expect_error(aclrtResetDevice(-1), 107001, "invalid", "aclrtResetDevice of a bad id");
  CHECK(aclrtSetDevice(1) == 0 && aclrtSetDevice(1) == 0, "two references of device 1");
  CHECK(stat_at(13) == refs + 2, "counted per call");
  aclrtStream s1 = NULL;
  aclrtContext c1 = NULL;
  CHECK(aclrtCreateStream(&s1) == 0 && aclrtGetCurrentContext(&c1) == 0, "a stream in device 1's default context");
  CHECK(aclrtResetDevice(1) == 0, "one reference released");
  int32_t dev = -1;
  CHECK(aclrtGetDevice(&dev) == 0 && dev == 1, "still bound while a reference remains");
  CHECK(aclrtSynchronizeStream(s1) == 0, "its streams live on");
  void *d = NULL;
  char src[64] = {0};
  CHECK(aclrtMalloc(&d, 64, 0) == 0 && aclrtMemcpyAsync(d, 64, src, 64, 1, s1) == 0, "a task queued on the stream");
  int64_t st[15];
  stats(st);
  int64_t failed = st[12], streams = st[8];
  CHECK(aclrtResetDevice(1) == 0, "the last reference");
  stats(st);
  CHECK(st[13] == refs, "references back to the parent's (%lld)", (long long)st[13]);
  CHECK(st[9] == 0 && st[12] == failed + 1, "the queued task was discarded");
  CHECK(st[8] == streams - 1, "the user stream was torn down");
  expect_error_nodev(aclrtGetDevice(&dev), 107002, "no device", "the calling thread was unbound");
  CHECK(aclrtSetDevice(1) == 0, "set device 1 again");
  expect_error(aclrtSynchronizeStream(s1), 107000, "tore the device's default context down",
               "a stream of the torn-down context");
  expect_error(aclrtDestroyStream(s1), 107000, "not a live aclrtStream", "destroying it");
  expect_error(aclrtSetCurrentContext(c1), 107000, "torn down", "the torn-down default context");
  CHECK(aclrtFree(d) == 0, "device memory is not released by the reset");
  CHECK(aclrtSetDevice(0) == 0, "bind device 0 (a second reference)");
  CHECK(aclrtResetDevice(1) == 0, "last reference of device 1 from a thread bound to device 0");
  CHECK(aclrtGetDevice(&dev) == 0 && dev == 0, "the thread stays on device 0");
  CHECK(aclrtResetDevice(0) == 0 && stat_at(13) == refs, "the extra device 0 reference released");
}

/* ---- aclrtMalloc's padding (runtime memory.cpp GetAlignedAndPaddingSize) -------------------- */
static void test_malloc_padding(void) {
  static const struct {
    const char *soc;
    uint64_t size, want;
  } cases[] = {
      {NULL, 100, 128},          {NULL, 1, 32},           {NULL, 32, 32},           {NULL, 33, 64},
      {"Ascend350_354f", 64, 64}, {"Ascend910B4", 100, 160}, {"Ascend910B4", 1, 64},    {"Ascend910B4", 32, 64},
      {"Ascend910B4", 33, 96},   {"Ascend910A", 64, 96},  {"Ascend310P3", 64, 96},  {"Ascend910_9391", 64, 96},
      {"Ascend310B1", 64, 96},   {"NoSuchSoc", 64, 96},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    set_soc(cases[i].soc);
    const char *soc = cases[i].soc ? cases[i].soc : "default";
    int64_t b0 = stat_at(1);
    size_t fr0 = 0, fr1 = 0, tot = 0;
    void *p = NULL;
    CHECK(aclrtGetMemInfo(1, &fr0, &tot) == 0 && aclrtMalloc(&p, cases[i].size, 0) == 0, "%s malloc", soc);
    CHECK(aclrtGetMemInfo(1, &fr1, &tot) == 0 && fr0 - fr1 == cases[i].want, "%s: aclrtGetMemInfo counts %zu bytes for %llu",
          soc, fr0 - fr1, (unsigned long long)cases[i].size);
    CHECK(stat_at(1) - b0 == (int64_t)cases[i].want, "%s: live bytes +%lld for %llu (want %llu)", soc,
          (long long)(stat_at(1) - b0), (unsigned long long)cases[i].size, (unsigned long long)cases[i].want);
    CHECK(aclrtMemset(p, cases[i].want, 0, cases[i].want) == 0, "%s: the padding is addressable", soc);
    CHECK(aclrtMemset(p, cases[i].want + 1, 0, cases[i].want + 1) == 107000, "%s: one byte past it is not", soc);
    CHECK(aclGetRecentErrMsg() != NULL, "%s: message", soc);
    CHECK(aclrtFree(p) == 0 && stat_at(1) == b0, "%s free", soc);
  }
  set_soc(NULL);
}

/* ---- device-address lookups: correctness with many allocations, O(log n) ------------------- */
/* Registry entries compared per lookup (a count, not a time: timings flake on a shared VM). */
static double lookup_probes(void *const *ptrs, int n) {
  enum { CALLS = 20000 };
  uint64_t before = sim_registry_probes();
  for (int k = 0; k < CALLS; k++) (void)sim_dev_range_alloc((const char *)ptrs[k % n] + 8, 8);
  return (double)(sim_registry_probes() - before) / CALLS;
}

static void test_registry(void) {
  enum { N = 1200 };
  static void *p[N];
  static uint64_t id[N];
  for (int i = 0; i < N; i++) CHECK(aclrtMalloc(&p[i], 64 + (uint64_t)(i % 7) * 32, 0) == 0, "malloc %d", i);
  for (int i = 0; i < N; i++) id[i] = sim_dev_range_alloc(p[i], 1);
  for (int i = 0; i < N; i += 3) CHECK(aclrtFree(p[i]) == 0, "free %d", i);
  int bad = 0;
  for (int i = 0; i < N; i++) {
    bool live = i % 3 != 0;
    uint64_t got = sim_dev_range_alloc((char *)p[i] + 16, 16);
    bad += live ? got != id[i] || !sim_dev_alloc_live(id[i]) : got != 0 || sim_dev_alloc_live(id[i]);
    bad += sim_is_device_ptr((char *)p[i] + 63) != live;
    bad += sim_dev_range_alloc((char *)p[i] + 16, 1 << 20) != 0; /* past the end */
  }
  CHECK(bad == 0, "%d wrong lookups over %d allocations", bad, N);
  expect_error(aclrtFree(p[0]), 107000, "already freed", "double free among many");
  expect_error(aclrtFree((char *)p[1] + 8), 107000, "8 bytes into", "interior free among many");
  static void *live[N];
  int nl = 0;
  for (int i = 0; i < N; i++)
    if (i % 3 != 0) live[nl++] = p[i];
  double many = lookup_probes(live, nl);
  for (int i = 10; i < nl; i++) CHECK(aclrtFree(live[i]) == 0, "free live %d", i);
  double few = lookup_probes(live, 10);
  /* A binary search compares at most ceil(log2(n + 1)) entries per search (11 for 800). */
  CHECK(few > 0 && many <= 3 * 11, "lookups over %d live allocations compare %.1f entries, over 10 %.1f (binary search expected)",
        nl, many, few);
  for (int i = 0; i < 10; i++) CHECK(aclrtFree(live[i]) == 0, "free live %d", i);
}

/* ---- the repeatable-executor API (opbase acl_op_api.cpp, op_executor.cpp) --------------------- */
static void test_executor_api(aclrtStream stream) {
  /* a [2, 3] input (C = 3): a signature no other test runs */
  const float dy[] = {1, 2, 3, 4, 5, 6}, x[] = {1, 1, 1, 3, 3, 3}, x2[] = {0, 0, 0, 4, 4, 4}, zeros[] = {0, 0, 0},
              ones[] = {1, 1, 1};
  const int64_t s23[] = {2, 3}, s3[] = {3};
  Buf gd = make(dy, s23, 2, 0), in = make(x, s23, 2, 0), in2 = make(x2, s23, 2, 0), mean = make(zeros, s3, 1, 0),
      inv = make(ones, s3, 1, 0), sdy = make(NULL, s3, 1, 0), sdx = make(NULL, s3, 1, 0);
  uint64_t wsSize = 0;
  aclOpExecutor *ex = NULL, *ex2 = NULL;
  int64_t s[15];
#define PHASE1(input, exec)                                                                                           \
  aclnnBatchNormReduceBackwardGetWorkspaceSize(gd.t, (input), mean.t, inv.t, NULL, true, false, false, sdy.t, sdx.t, \
                                               NULL, NULL, &wsSize, (exec))

  /* NULL handles */
  expect_error(aclSetAclOpExecutorRepeatable(NULL), 561103, "executor cannot be a NULL pointer", "SetRepeatable(NULL)");
  expect_error(aclDestroyAclOpExecutor(NULL), 561103, "executor cannot be a NULL pointer", "Destroy(NULL)");
  expect_error(aclSetRawTensorAddr(NULL, in.dev), 161001, "tensor cannot be a NULL pointer", "SetRawTensorAddr(NULL)");
  expect_error(aclnnBatchNormReduceBackward(NULL, 0, NULL, stream), 161001, "executor is nullptr", "phase 2 NULL");
  expect_error(aclDestroyAclOpExecutor((aclOpExecutor *)(uintptr_t)0x1230), 561000, "never created", "unknown pointer");
  /* the address setters: the tensor first (index ignored), then the executor */
  void *raw = NULL;
  expect_error(aclSetOutputTensorAddr(NULL, 7, sdx.t, sdy.dev), 561103, "executor cannot be a NULL pointer",
               "NULL executor");
  CHECK(aclGetRawTensorAddr(sdx.t, &raw) == 0 && raw == sdy.dev, "the address was set before the executor check");
  CHECK(aclSetRawTensorAddr(sdx.t, sdx.dev) == 0, "restore sdx");
  expect_error(aclSetTensorAddr(NULL, 0, NULL, sdy.dev), 561103, "tensor cannot be a NULL pointer", "NULL tensor");

  /* ACLSIM_UNREPEATABLE_OPS: 561000, a warning only (no error text) */
  static const char *const lists[] = {"aclnnBatchNormStats, aclnnBatchNormReduceBackward", "*"};
  for (int i = 0; i < 2; i++) {
    setenv("ACLSIM_UNREPEATABLE_OPS", lists[i], 1);
    CHECK(PHASE1(in.t, &ex) == 0 && aclSetAclOpExecutorRepeatable(ex) == 561000, "unrepeatable (%s)", lists[i]);
    CHECK(aclGetRecentErrMsg() == NULL, "no error text (%s)", lists[i]);
    CHECK(aclDestroyAclOpExecutor(ex) == 0, "destroy the never-run executor");
  }
  setenv("ACLSIM_UNREPEATABLE_OPS", "aclnnBatchNorm,aclnnBatchNormReduceBackwardX", 1);
  CHECK(PHASE1(in.t, &ex) == 0 && aclSetAclOpExecutorRepeatable(ex) == 0, "other names listed: repeatable");
  unsetenv("ACLSIM_UNREPEATABLE_OPS");
  void *ws = ws_alloc(wsSize);

  /* a repeatable executor: any index, the current address read at every run */
  CHECK(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "run 1");
  expect_error(aclSetAclOpExecutorRepeatable(ex), 561000, "has already run", "SetRepeatable after a run");
  CHECK(aclSetTensorAddr(ex, 12345, in.t, in2.dev) == 0, "aclSetTensorAddr ignores the index");
  CHECK(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "run 2");
  float f[3];
  read_f32(&sdx, f);
  CHECK(f[0] != f[0], "nothing ran before synchronising (fresh memory is NaN)");
  CHECK(aclrtSynchronizeStream(stream) == 0, "sync");
  read_f32(&sdx, f);
  /* sumDyXmu = sum dy * (x - 0): run 2 reads x2 = {0, 0, 0, 4, 4, 4} */
  CHECK(f[0] == 16 && f[1] == 20 && f[2] == 24, "run 2 read the new address: %g %g %g", f[0], f[1], f[2]);
  stats(s);
  CHECK(s[7] == 1, "the repeatable executor survives its runs (%lld)", (long long)s[7]);
  /* memory freed before a relaunch: 161002 at the launch, the executor survives */
  CHECK(aclrtFree(in2.dev) == 0, "free in2");
  expect_error(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream), 161002, "already freed", "relaunch on freed memory");
  /* memory freed (and allocated again) after the launch: the allocation id catches it at sync */
  CHECK(aclrtMalloc(&in2.dev, 24, 0) == 0 && aclSetInputTensorAddr(ex, 0, in.t, in2.dev) == 0, "new in2");
  CHECK(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "launch on the new in2");
  void *old = in2.dev;
  CHECK(aclrtFree(in2.dev) == 0 && aclrtMalloc(&in2.dev, 24, 0) == 0, "free + malloc after the launch (%s address)",
        in2.dev == old ? "same" : "other");
  expect_error(aclrtSynchronizeStream(stream), 507000, "'input'", "the launched allocation is gone at sync");
  CHECK(aclSetRawTensorAddr(in.t, in.dev) == 0, "restore in");

  /* an executor that outlives its aclTensor: 561103 at relaunch, the executor survives */
  int64_t st6 = 6, str[] = {3, 1};
  aclTensor *alias = aclCreateTensor(s23, 2, 0, str, 0, 2, &st6, 1, in.dev);
  CHECK(PHASE1(alias, &ex2) == 0 && aclSetAclOpExecutorRepeatable(ex2) == 0, "repeatable executor on an alias");
  CHECK(aclDestroyTensor(alias) == 0, "destroy the alias");
  expect_error(aclnnBatchNormReduceBackward(ws, wsSize, ex2, stream), 561103, "outlived its tensor",
               "relaunch after aclDestroyTensor");
  CHECK(aclDestroyAclOpExecutor(ex2) == 0, "the executor is still destroyable");

  /* workspaceSize > 0 with a NULL workspace: 161001, and even a repeatable executor is deleted */
  stats(s);
  int64_t live = s[7];
  expect_error(aclnnBatchNormReduceBackward(NULL, wsSize, ex, stream), 161001, "workspace is nullptr", "NULL workspace");
  CHECK(stat_at(7) == live - 1, "the repeatable executor was deleted");
  expect_error(aclDestroyAclOpExecutor(ex), 561000, "NULL workspace", "destroy after that deletion");

  /* non-repeatable: consumed by its run; afterwards the signature is in CANN's executor cache */
  CHECK(PHASE1(in.t, &ex) == 0 && aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0, "non-repeatable run");
  expect_error(aclSetAclOpExecutorRepeatable(ex), 561000, "has already run", "SetRepeatable on a consumed executor");
  expect_error(aclDestroyAclOpExecutor(ex), 561000, "has already run", "destroy of a consumed executor");
  CHECK(PHASE1(in.t, &ex) == 0 && aclSetAclOpExecutorRepeatable(ex) == 561000, "phase 1 answered from the cache");
  CHECK(aclGetRecentErrMsg() == NULL, "cache hit: no error text");
  CHECK(aclnnBatchNormReduceBackward(ws, wsSize, ex, stream) == 0 && stat_at(7) == 0, "it runs once, consumed");
  CHECK(aclSetRawTensorAddr(in2.t, in2.dev) == 0, "in2's new memory");
  CHECK(PHASE1(in2.t, &ex) == 0 && aclSetAclOpExecutorRepeatable(ex) == 561000,
        "another aclTensor with the same geometry: a cache hit too");
  CHECK(aclDestroyAclOpExecutor(ex) == 0, "destroy it unrun");
  CHECK(aclrtSynchronizeStream(stream) == 0, "sync");
  read_f32(&sdx, f);
  CHECK(f[0] == 13 && f[1] == 17 && f[2] == 21, "sumDyXmu over x = {1, 1, 1, 3, 3, 3}: %g %g %g", f[0], f[1], f[2]);
#undef PHASE1
  if (ws) CHECK(aclrtFree(ws) == 0, "free ws");
  drop(&gd), drop(&in), drop(&in2), drop(&mean), drop(&inv), drop(&sdy), drop(&sdx);
}

/* ---- fault injection (sim_fault.c; README "Fault injection") -------------------------------- */
static int64_t stat_now(int i) {
  int64_t s[15];
  stats(s);
  return s[i];
}

/* BatchNormStats of x = {0..7} as [4, 2] on `stream`: phase 1, workspace, phase 2 (returned). */
typedef struct {
  Buf x, mean, invstd;
  void *ws;
  uint64_t wsSize;
} StatsCall;

static StatsCall stats_call_make(void) {
  const float x[] = {0, 1, 2, 3, 4, 5, 6, 7}, ones[] = {-1, -1};
  const int64_t s42[] = {4, 2}, s2[] = {2};
  StatsCall c = {make(x, s42, 2, 0), make(ones, s2, 1, 0), make(ones, s2, 1, 0), NULL, 0};
  return c;
}

static int stats_call_run(StatsCall *c, aclrtStream stream) {
  aclOpExecutor *ex = NULL;
  uint64_t ws = 0;
  int rc = aclnnBatchNormStatsGetWorkspaceSize(c->x.t, 1e-5, c->mean.t, c->invstd.t, &ws, &ex);
  CHECK(rc == 0, "BatchNormStats phase 1: %d", rc);
  if (rc) return rc;
  if (ws > c->wsSize) {
    if (c->ws) CHECK(aclrtFree(c->ws) == 0, "free the smaller workspace");
    c->ws = ws_alloc(ws);
    c->wsSize = ws;
  }
  return aclnnBatchNormStats(c->ws, ws, ex, stream);
}

static void stats_call_drop(StatsCall *c) {
  if (c->ws) CHECK(aclrtFree(c->ws) == 0, "free ws");
  drop(&c->x), drop(&c->mean), drop(&c->invstd);
}

static void test_fault_injection(aclrtStream stream) {
  int64_t fired0 = stat_now(14);
  void *p = NULL, *q = NULL;

  /* the hook's arguments */
  expect_error(aclsimInjectFault(8, 1, 1, 0), 100000, "unknown fault kind", "unknown kind");
  expect_error(aclsimInjectFault(-1, 1, 1, 0), 100000, "unknown fault kind", "negative kind");
  expect_error(aclsimInjectFault(1, -1, 1, 0), 100000, "nth is negative", "negative nth");
  expect_error(aclsimInjectFault(1, 1, 0, 0), 100000, "times must be", "times 0");
  expect_error(aclsimInjectFault(1, 1, -2, 0), 100000, "times must be", "times -2");
  expect_error(aclsimInjectFault(2, 1, 1, -5), 100000, "negative", "negative code");
  expect_error(aclsimInjectFault(2, 1, 1, 1LL << 40), 100000, "does not fit", "code out of range");
  CHECK(aclsimInjectFault(0, 0, 0, 0) == 0 && aclsimInjectFault(3, 0, 0, 0) == 0, "disarming is always fine");

  /* aclrtMalloc: the 2nd call from now fails once with the driver's out-of-memory */
  int64_t allocs = stat_now(0), bytes = stat_now(1);
  CHECK(aclsimInjectFault(1, 2, 1, 0) == 0, "arm malloc:2");
  CHECK(aclrtMalloc(&p, 64, 0) == 0, "the 1st malloc from now succeeds");
  expect_error(aclrtMalloc(&q, 64, 0), 207001, "Failed to allocate memory requested by APP module", "injected OOM");
  CHECK(q == NULL, "nothing returned");
  CHECK(stat_now(0) == allocs + 1, "the failed call allocated nothing");
  CHECK(aclrtMalloc(&q, 64, 0) == 0, "the next malloc succeeds (times 1)");
  CHECK(aclrtFree(p) == 0 && aclrtFree(q) == 0, "free both");
  CHECK(stat_now(0) == allocs && stat_now(1) == bytes, "live counters back");
  CHECK(stat_now(14) == fired0 + 1, "one fault injected");
  /* parameter errors come first and do not count */
  CHECK(aclsimInjectFault(1, 1, 2, 507899) == 0, "arm malloc:1:2:507899");
  expect_error(aclrtMalloc(&p, 0, 0), 100000, "size is 0", "size 0 is still a parameter error");
  expect_error(aclrtMalloc(&p, 64, 0), 507899, "APP module", "custom code (1/2)");
  expect_error(aclrtMalloc(&p, 64, 0), 507899, "APP module", "custom code (2/2)");
  CHECK(aclrtMalloc(&p, 64, 0) == 0 && aclrtFree(p) == 0, "times 2: the third succeeds");
  CHECK(aclsimInjectFault(1, 1, -1, 0) == 0, "arm malloc for every call");
  for (int i = 0; i < 3; i++) expect_error(aclrtMalloc(&p, 64, 0), 207001, "APP module", "times -1");
  CHECK(aclsimInjectFault(1, 0, 0, 0) == 0, "disarm malloc");
  CHECK(aclrtMalloc(&p, 64, 0) == 0, "disarmed");

  /* aclrtMemcpy: the driver's copy fails, nothing is copied; count 0 and bad arguments do not count */
  char host[64], back[64];
  memset(host, 0x11, sizeof host);
  CHECK(aclrtMemcpy(p, 64, host, 64, 1) == 0, "H2D");
  memset(host, 0x22, sizeof host);
  CHECK(aclsimInjectFault(2, 1, 1, 0) == 0, "arm memcpy");
  CHECK(aclrtMemcpy(p, 64, host, 0, 1) == 0, "count 0 is not a copy");
  expect_error(aclrtMemcpy(p, 8, host, 64, 1), 107000, "exceeds destMax", "count > destMax is checked first");
  expect_error(aclrtMemcpy(p, 64, host, 64, 1), 507899, "drvMemcpy failed", "injected memcpy failure");
  CHECK(aclrtMemcpy(back, 64, p, 64, 2) == 0 && back[0] == 0x11 && back[63] == 0x11,
        "the failed copy wrote nothing; the next copy works");
  CHECK(aclrtFree(p) == 0, "free");

  /* aclrtCreateStream: no stream resource */
  int64_t streams = stat_now(8);
  aclrtStream s2 = NULL;
  CHECK(aclsimInjectFault(5, 1, 1, 0) == 0, "arm create_stream");
  expect_error(aclrtCreateStream(&s2), 207008, "no stream resource", "injected stream creation failure");
  CHECK(s2 == NULL && stat_now(8) == streams, "no stream was created");
  CHECK(aclrtCreateStream(&s2) == 0 && aclrtDestroyStream(s2) == 0, "the next one is created");

  StatsCall c = stats_call_make();
  float f[2];
  int64_t failed = stat_now(12), execs = stat_now(7);

  /* a kernel failure at synchronisation: AI Core exception; the output keeps its old contents */
  CHECK(aclsimInjectFault(3, 1, 1, 0) == 0, "arm kernel");
  CHECK(stats_call_run(&c, stream) == 0, "the launch itself succeeds");
  CHECK(stat_now(9) == 1, "queued");
  expect_error(aclrtSynchronizeStream(stream), 507015, "aicore exception", "AI Core exception at synchronize");
  CHECK(stat_now(12) == failed + 1 && stat_now(9) == 0, "the task failed");
  read_f32(&c.mean, f);
  CHECK(f[0] == -1 && f[1] == -1, "nothing written: %g %g", f[0], f[1]);
  CHECK(stats_call_run(&c, stream) == 0 && aclrtSynchronizeStream(stream) == 0, "the stream works afterwards");
  read_f32(&c.mean, f);
  CHECK(f[0] == 3 && f[1] == 4, "mean = %g %g", f[0], f[1]);
  CHECK(aclsimInjectFault(3, 2, 1, 507035) == 0, "arm kernel:2 with a vector core exception");
  CHECK(stats_call_run(&c, stream) == 0 && stats_call_run(&c, stream) == 0 && stats_call_run(&c, stream) == 0,
        "three launches");
  expect_error(aclrtSynchronizeStream(stream), 507035, "Kernel task happen error", "the second one fails");
  CHECK(stat_now(12) == failed + 3, "the failed task and the one after it (discarded)");

  /* phase 1 asks for a workspace no aclrtMalloc can give */
  size_t freeB = 0, total = 0;
  CHECK(aclrtGetMemInfo(0, &freeB, &total) == 0, "mem info");
  aclOpExecutor *ex = NULL;
  uint64_t ws = 0;
  CHECK(aclsimInjectFault(4, 1, 1, 0) == 0, "arm workspace");
  CHECK(aclnnBatchNormStatsGetWorkspaceSize(c.x.t, 1e-5, c.mean.t, c.invstd.t, &ws, &ex) == 0, "phase 1 succeeds");
  CHECK(ws == total + 1, "workspace = device memory + 1 (%llu)", (unsigned long long)ws);
  expect_error(aclrtMalloc(&p, ws, 0), 207001, "out of device memory", "the caller's aclrtMalloc fails");
  CHECK(aclDestroyAclOpExecutor(ex) == 0 && stat_now(7) == execs, "the caller destroys the executor");
  CHECK(aclsimInjectFault(4, 1, 1, 12345) == 0, "arm workspace with a size");
  CHECK(aclnnBatchNormStatsGetWorkspaceSize(c.x.t, 1e-5, c.mean.t, c.invstd.t, &ws, &ex) == 0 && ws == 12345,
        "workspace = the armed size (%llu)", (unsigned long long)ws);
  CHECK(aclDestroyAclOpExecutor(ex) == 0, "destroy");
  CHECK(aclnnBatchNormStatsGetWorkspaceSize(c.x.t, 1e-5, c.mean.t, c.invstd.t, &ws, &ex) == 0 && ws < 4096,
        "the next phase 1 is normal (%llu)", (unsigned long long)ws);
  CHECK(aclDestroyAclOpExecutor(ex) == 0, "destroy");

  /* a stream that refuses a task: the launch fails with 361001, naming the runtime's 107023 */
  CHECK(stats_call_run(&c, stream) == 0, "one task queued before the failure");
  CHECK(aclsimInjectFault(6, 1, 1, 0) == 0, "arm stream");
  expect_error(stats_call_run(&c, stream), 361001, "aclrtLaunchKernelWithHostArgs failed: 107023",
               "launch on a stream in abort state");
  CHECK(stat_now(7) == execs, "the executor was consumed by its phase 2");
  CHECK(stat_now(9) == 1, "the task queued before is kept");
  CHECK(aclrtSynchronizeStream(stream) == 0, "and runs");
  char h8[8] = {0};
  CHECK(aclsimInjectFault(6, 1, 1, 0) == 0, "arm stream again");
  expect_error(aclrtMemcpyAsync(c.mean.dev, 8, h8, 8, 1, stream), 107023, "abort state", "aclrtMemcpyAsync refused");
  CHECK(stat_now(9) == 0, "nothing queued");
  CHECK(stats_call_run(&c, stream) == 0 && aclrtSynchronizeStream(stream) == 0, "the stream works afterwards");

  /* ACLSIM_FAULT: read at every call; a new value arms afresh, the same value does not re-arm */
  setenv("ACLSIM_FAULT", "malloc:2", 1);
  CHECK(aclrtMalloc(&p, 64, 0) == 0, "env malloc:2 -- 1st");
  expect_error(aclrtMalloc(&q, 64, 0), 207001, "APP module", "env malloc:2 -- 2nd");
  CHECK(aclrtMalloc(&q, 64, 0) == 0, "env malloc:2 -- 3rd");
  CHECK(aclrtFree(p) == 0 && aclrtFree(q) == 0, "free");
  CHECK(aclrtMalloc(&p, 64, 0) == 0 && aclrtMalloc(&q, 64, 0) == 0, "the same value does not fire again");
  CHECK(aclrtFree(p) == 0 && aclrtFree(q) == 0, "free");
  setenv("ACLSIM_FAULT", " memcpy:1:1:0x7b, kernel ", 1);
  expect_error(aclrtMemcpy(h8, 8, c.mean.dev, 8, 2), 123, "drvMemcpy", "env memcpy with code 0x7b");
  CHECK(stats_call_run(&c, stream) == 0, "launch");
  expect_error(aclrtSynchronizeStream(stream), 507015, "aicore exception", "env kernel");
  setenv("ACLSIM_FAULT", "malloc:x", 1);
  fprintf(stderr, "(the next line is expected)\n");
  CHECK(aclrtMalloc(&p, 64, 0) == 0 && aclrtFree(p) == 0, "a malformed value is ignored");
  unsetenv("ACLSIM_FAULT");
  CHECK(aclrtMalloc(&p, 64, 0) == 0 && aclrtFree(p) == 0, "unset");

  stats_call_drop(&c);
  CHECK(aclsimInjectFault(0, 0, 0, 0) == 0, "disarm everything");
  CHECK(stat_now(14) == fired0 + 17, "faults injected: %lld", (long long)(stat_now(14) - fired0));
}

int main(void) {
  unsetenv("ASCEND_OPP_PATH");
  unsetenv("ACLSIM_SOC_NAME"); /* the default SoC, Ascend950PR_9599 */
  CHECK(aclGetRecentErrMsg() == NULL, "no error text at start");
  in_child(child_init_finalize, "aclInit / aclFinalize in a fresh process");
  CHECK(aclInit(NULL) == 0, "aclInit");
  CHECK(aclInit(NULL) == 100002, "second aclInit");
  CHECK(aclGetRecentErrMsg() == NULL, "100002 queues no message (runtime logs it at INFO only)");
  void *p = NULL;
  expect_error_nodev(aclrtMalloc(&p, 64, 0), 107002, "no device", "malloc before aclrtSetDevice");
  CHECK(aclrtSetDevice(0) == 0, "aclrtSetDevice");
  aclrtStream stream = NULL;
  CHECK(aclrtCreateStream(&stream) == 0, "aclrtCreateStream");
  int64_t dims[] = {2, 2}, strides[] = {2, 1}, st = 4;
  aclTensor *t = aclCreateTensor(dims, 2, 0, strides, 0, 2, &st, 1, NULL);
  uint64_t ws;
  aclOpExecutor *ex;
  expect_error(aclnnBatchNormStatsGetWorkspaceSize(t, 1e-5, t, t, &ws, &ex), 561107, "ASCEND_OPP_PATH", "no OPP path");
  CHECK(aclDestroyTensor(t) == 0, "destroy t");
  expect_error(aclDestroyTensor(t), 161002, "already destroyed", "double destroy of a tensor");
  setenv("ASCEND_OPP_PATH", "/simulated/opp", 1);

  test_rounding();
  test_reduce_backward_seed(stream);
  test_group_norm(stream);
  test_batch_norm_family(stream);
  test_dtypes_and_misc(stream);
  test_soc_fidelity(stream);
  test_runtime_errors();
  test_error_queue();
  test_malloc_padding();
  test_registry();
  test_executor_api(stream);
  test_fault_injection(stream);
  in_child(child_device_refs, "aclrtSetDevice / aclrtResetDevice reference counts");

  CHECK(aclrtDestroyStream(stream) == 0, "aclrtDestroyStream");
  int64_t s[15];
  stats(s);
  static const char *const names[] = {"device allocations", "device bytes", "host allocations", "tensors", "bool arrays",
                                      "int arrays", "scalars", "executors", "streams", "pending tasks", "contexts"};
  for (int i = 0; i < 11; i++) CHECK(s[i] == 0, "live %s = %lld at exit", names[i], (long long)s[i]);
  CHECK(s[11] > 0, "tasks executed (%lld)", (long long)s[11]);
  CHECK(s[13] == 1, "one device reference left (%lld)", (long long)s[13]);
  CHECK(aclrtResetDevice(0) == 0, "aclrtResetDevice");
  CHECK(stat_at(13) == 0, "no device reference left");
  int32_t dev = -1;
  expect_error_nodev(aclrtGetDevice(&dev), 107002, "no device", "the last reset unbound the thread");
  expect_error_nodev(aclrtResetDevice(0), 507007, "has already been reset", "one reset too many");
  CHECK(aclFinalize() == 0, "aclFinalize");
  printf("aclsim smoke: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures ? 1 : 0;
}
