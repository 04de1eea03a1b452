/*
 * Software HCCL ("aclsim") -- HcclAllReduce's reductions (sum, prod, max, min) over the ranks'
 * blocks, compiled into libaclsim_core.so.
 *
 * Citations name the CANN source a behaviour is modelled on:
 * "hcomm" is the CANN hcomm mirror xiaobingling93-pixel/cann-hcomm b5f3e5be (line numbers of that
 * snapshot), "hccl" is hicann/hccl 09300b70, "runtime" is hicann/runtime, "torch_npu" is
 * Ascend/pytorch 9e73e708. "[aclsim]" marks the simulator's own choices.
 */
#define _GNU_SOURCE
#include "hccl_sim_internal.h"

#include <math.h>

/* Reductions. [aclsim] In rank order 0, 1, ..., n-1, so every rank gets bit-identical results.
 * Floating types (fp16, bf16, fp32, fp64) accumulate in double and are rounded once to the data
 * type (round to nearest even; sim_to_fp16 / sim_to_bf16); a NaN operand of max/min gives NaN.
 * Integer types are exact in two's complement, wrapping modulo 2^bits (what integer hardware
 * does; doubles would be inexact beyond 2^53 for int64 / uint64). The device's own order and
 * precision (and HCCL_DETERMINISTIC) are not modelled. */
static bool is_float(int32_t dt) {
  return dt == HCCL_DATA_TYPE_FP16 || dt == HCCL_DATA_TYPE_BFP16 || dt == HCCL_DATA_TYPE_FP32 ||
         dt == HCCL_DATA_TYPE_FP64;
}

static double load_f(int32_t dt, const void *p, uint64_t i) {
  switch (dt) {
    case HCCL_DATA_TYPE_FP16: return sim_from_fp16(((const uint16_t *)p)[i]);
    case HCCL_DATA_TYPE_BFP16: return sim_from_bf16(((const uint16_t *)p)[i]);
    case HCCL_DATA_TYPE_FP32: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
  }
}

static void store_f(int32_t dt, void *p, uint64_t i, double v) {
  switch (dt) {
    case HCCL_DATA_TYPE_FP16: ((uint16_t *)p)[i] = sim_to_fp16(v); break;
    case HCCL_DATA_TYPE_BFP16: ((uint16_t *)p)[i] = sim_to_bf16(v); break;
    case HCCL_DATA_TYPE_FP32: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
  }
}

static bool is_signed(int32_t dt) {
  return dt == HCCL_DATA_TYPE_INT8 || dt == HCCL_DATA_TYPE_INT16 || dt == HCCL_DATA_TYPE_INT32 ||
         dt == HCCL_DATA_TYPE_INT64;
}

static uint64_t load_i(int32_t dt, const void *p, uint64_t i) {
  switch (dt) {
    case HCCL_DATA_TYPE_INT8: return (uint64_t)(int64_t)((const int8_t *)p)[i];
    case HCCL_DATA_TYPE_INT16: return (uint64_t)(int64_t)((const int16_t *)p)[i];
    case HCCL_DATA_TYPE_INT32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
    case HCCL_DATA_TYPE_INT64: return (uint64_t)((const int64_t *)p)[i];
    case HCCL_DATA_TYPE_UINT8: return ((const uint8_t *)p)[i];
    case HCCL_DATA_TYPE_UINT16: return ((const uint16_t *)p)[i];
    case HCCL_DATA_TYPE_UINT32: return ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
  }
}

static void store_i(int32_t dt, void *p, uint64_t i, uint64_t v) {
  switch (dtype_size(dt)) {
    case 1: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case 2: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case 4: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: ((uint64_t *)p)[i] = v; break;
  }
}

void reduce(int32_t dt, int32_t op, void *out, void *const *in, uint32_t n, uint64_t count) {
  if (is_float(dt)) {
    for (uint64_t i = 0; i < count; i++) {
      double acc = load_f(dt, in[0], i);
      for (uint32_t r = 1; r < n; r++) {
        double v = load_f(dt, in[r], i);
        switch (op) {
          case HCCL_REDUCE_SUM: acc += v; break;
          case HCCL_REDUCE_PROD: acc *= v; break;
          case HCCL_REDUCE_MAX: acc = isnan(acc) || isnan(v) ? NAN : (v > acc ? v : acc); break;
          default: acc = isnan(acc) || isnan(v) ? NAN : (v < acc ? v : acc); break;
        }
      }
      store_f(dt, out, i, acc);
    }
    return;
  }
  bool sgn = is_signed(dt);
  for (uint64_t i = 0; i < count; i++) {
    uint64_t acc = load_i(dt, in[0], i);
    for (uint32_t r = 1; r < n; r++) {
      uint64_t v = load_i(dt, in[r], i);
      switch (op) {
        case HCCL_REDUCE_SUM: acc += v; break;
        case HCCL_REDUCE_PROD: acc *= v; break;
        case HCCL_REDUCE_MAX: acc = (sgn ? (int64_t)v > (int64_t)acc : v > acc) ? v : acc; break;
        default: acc = (sgn ? (int64_t)v < (int64_t)acc : v < acc) ? v : acc; break;
      }
    }
    store_i(dt, out, i, acc);
  }
}
