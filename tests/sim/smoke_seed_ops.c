/*
 * Software CANN ("aclsim") smoke test: the seed operators: fp16/bf16 rounding, the seed document's
 * aclnnBatchNormReduceBackward example, GroupNorm forward and backward, and the BatchNorm family
 * against PyTorch-formula references.
 * Part of build/sim/smoke (smoke.c has the harness and main); exit status 0 = every check passed.
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

#include "smoke.h"

/* ---- fp16 / bf16 rounding ------------------------------------------------------------ */
void test_rounding(void) {
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
void test_reduce_backward_seed(aclrtStream stream) {
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
void test_group_norm(aclrtStream stream) {
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
void test_batch_norm_family(aclrtStream stream) {
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
