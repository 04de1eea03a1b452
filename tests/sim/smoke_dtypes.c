/*
 * Software CANN ("aclsim") smoke test: fp16/bf16 I/O, empty tensors, address rebinding, async-copy staleness.
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

/* ---- fp16/bf16 I/O, empty tensors, address rebinding, async-copy staleness ------------------- */
static void read_u16(const Buf *b, uint16_t *out) {
  CHECK(aclrtMemcpy(out, (size_t)b->n * 2, b->dev, (size_t)b->n * 2, 2) == 0, "D2H u16");
}

void test_dtypes_and_misc(aclrtStream stream) {
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
