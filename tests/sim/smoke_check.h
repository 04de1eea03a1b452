/*
 * The check counters and CHECK of the software CANN's smoke programs (smoke: smoke.h; smoke_norm):
 * CHECK counts a check and, when `cond` is false, counts a failure and prints the condition and a
 * printf-style message. Each program defines g_checks and g_failures once and reports them at
 * exit. (hccl_smoke.h has its own CHECK, which also names the rank process that failed.)
 */
#ifndef ACLSIM_SMOKE_CHECK_H
#define ACLSIM_SMOKE_CHECK_H

#include <stdio.h>

extern int g_checks, g_failures;

#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    g_checks++;                                                           \
    if (!(cond)) {                                                        \
      g_failures++;                                                       \
      fprintf(stderr, "FAIL %s:%d: %s -- ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                       \
      fprintf(stderr, "\n");                                              \
    }                                                                     \
  } while (0)

#endif
