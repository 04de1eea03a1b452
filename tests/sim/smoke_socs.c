/*
 * Software CANN ("aclsim") smoke test: per-SoC behaviour (ACLSIM_SOC_NAME is read on every phase 1).
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

void set_soc(const char *name) {
  if (name) setenv("ACLSIM_SOC_NAME", name, 1);
  else unsetenv("ACLSIM_SOC_NAME");
}

void test_soc_fidelity(aclrtStream stream) {
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
