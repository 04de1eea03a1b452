/*
 * Software CANN ("aclsim") -- dtypes, fp16/bf16 conversion (round-to-nearest-even from double,
 * a single rounding), and strided view load/store in logical row-major order.
 */
#include "sim.h"
#include "sim_scratch.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t sim_dtype_size(int32_t dt) {
  switch (dt) {
    case SIM_DT_FLOAT: case SIM_DT_INT32: case SIM_DT_UINT32: return 4;
    case SIM_DT_FLOAT16: case SIM_DT_BF16: case SIM_DT_INT16: case SIM_DT_UINT16: return 2;
    case SIM_DT_INT8: case SIM_DT_UINT8: case SIM_DT_BOOL: return 1;
    case SIM_DT_INT64: case SIM_DT_UINT64: case SIM_DT_DOUBLE: return 8;
    default: return 0;
  }
}

const char *sim_dtype_name(int32_t dt) {
  switch (dt) {
    case SIM_DT_FLOAT: return "FLOAT";
    case SIM_DT_FLOAT16: return "FLOAT16";
    case SIM_DT_INT8: return "INT8";
    case SIM_DT_INT32: return "INT32";
    case SIM_DT_UINT8: return "UINT8";
    case SIM_DT_INT16: return "INT16";
    case SIM_DT_UINT16: return "UINT16";
    case SIM_DT_UINT32: return "UINT32";
    case SIM_DT_INT64: return "INT64";
    case SIM_DT_UINT64: return "UINT64";
    case SIM_DT_DOUBLE: return "DOUBLE";
    case SIM_DT_BOOL: return "BOOL";
    case SIM_DT_BF16: return "BF16";
    default: return "UNKNOWN";
  }
}

const char *sim_format_name(int32_t f) {
  switch (f) {
    case SIM_FMT_NCHW: return "NCHW";
    case SIM_FMT_NHWC: return "NHWC";
    case SIM_FMT_ND: return "ND";
    case SIM_FMT_NC1HWC0: return "NC1HWC0";
    case SIM_FMT_FRACTAL_Z: return "FRACTAL_Z";
    case SIM_FMT_HWCN: return "HWCN";
    case SIM_FMT_NDHWC: return "NDHWC";
    case SIM_FMT_FRACTAL_NZ: return "FRACTAL_NZ";
    case SIM_FMT_NCDHW: return "NCDHW";
    case SIM_FMT_NDC1HWC0: return "NDC1HWC0";
    case SIM_FMT_FRACTAL_Z_3D: return "FRACTAL_Z_3D";
    case SIM_FMT_NC: return "NC";
    case SIM_FMT_NCL: return "NCL";
    case -1: return "UNDEFINED";
    default: return "UNKNOWN";
  }
}

int64_t sim_desc_numel(const SimTensorDesc *d) {
  int64_t n = 1;
  for (int i = 0; i < d->ndim; i++) n *= d->dims[i];
  return n;
}

int64_t sim_desc_storage_numel(const SimTensorDesc *d) {
  int64_t n = 1;
  for (int i = 0; i < d->sndim; i++) n *= d->sdims[i];
  return n;
}

/* Rounds a double to a binary format with `mant` explicit mantissa bits and exponent bias
 * `bias` (max finite exponent = bias), round-to-nearest-even, subnormals kept.  Returns the
 * bit pattern without the sign; overflow gives infinity. */
static uint32_t round_bits(double ax, int mant, int bias) {
  int emin = 1 - bias;
  int e;
  (void)frexp(ax, &e); /* ax = f * 2^e, f in [0.5, 1) */
  e -= 1;              /* ax = g * 2^e, g in [1, 2) */
  if (e < emin) e = emin;
  double quantum = ldexp(1.0, e - mant);
  double m = nearbyint(ax / quantum); /* exact division by a power of two, RNE rounding */
  uint32_t exp_field = (uint32_t)(e + bias);
  uint32_t one = 1u << mant;
  if (m >= (double)(2u * one)) { /* rounded up to the next binade */
    m /= 2;
    exp_field += 1;
  }
  uint32_t mi = (uint32_t)m;
  if (mi < one) return mi; /* subnormal (exp field 0); mi == one handled as normal below */
  uint32_t max_exp_field = (uint32_t)(2 * bias + 1); /* all ones = inf/nan */
  if (exp_field >= max_exp_field) return max_exp_field << mant;
  return (exp_field << mant) | (mi - one);
}

static uint16_t to_small(double x, int mant, int bias, uint16_t qnan) {
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  if (isnan(x)) return (uint16_t)(sign | qnan);
  double ax = fabs(x);
  uint32_t max_exp_field = (uint32_t)(2 * bias + 1);
  if (isinf(ax)) return (uint16_t)(sign | (max_exp_field << mant));
  if (ax == 0) return sign;
  return (uint16_t)(sign | round_bits(ax, mant, bias));
}

uint16_t sim_to_fp16(double x) { return to_small(x, 10, 15, 0x7E00); }
uint16_t sim_to_bf16(double x) { return to_small(x, 7, 127, 0x7FC0); }

double sim_from_fp16(uint16_t h) {
  int s = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  double v;
  if (e == 0) v = ldexp((double)m, -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = ldexp((double)(m | 0x400), e - 25);
  return s ? -v : v;
}

double sim_from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return (double)f;
}

static double read_elem(const char *p, int32_t dt) {
  switch (dt) {
    case SIM_DT_FLOAT: { float f; memcpy(&f, p, 4); return f; }
    case SIM_DT_FLOAT16: { uint16_t h; memcpy(&h, p, 2); return sim_from_fp16(h); }
    case SIM_DT_BF16: { uint16_t h; memcpy(&h, p, 2); return sim_from_bf16(h); }
    case SIM_DT_INT32: { int32_t i; memcpy(&i, p, 4); return i; }
    case SIM_DT_INT64: { int64_t i; memcpy(&i, p, 8); return (double)i; }
    case SIM_DT_DOUBLE: { double d; memcpy(&d, p, 8); return d; }
    default: return NAN;
  }
}

static void write_elem(char *p, int32_t dt, double v) {
  switch (dt) {
    case SIM_DT_FLOAT: { float f = (float)v; memcpy(p, &f, 4); break; }
    case SIM_DT_FLOAT16: { uint16_t h = sim_to_fp16(v); memcpy(p, &h, 2); break; }
    case SIM_DT_BF16: { uint16_t h = sim_to_bf16(v); memcpy(p, &h, 2); break; }
    case SIM_DT_INT32: { /* NaN (an empty-tensor fill) and out-of-range values: no UB */
      int32_t i = isnan(v) ? 0 : v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : (int32_t)v;
      memcpy(p, &i, 4);
      break;
    }
    case SIM_DT_DOUBLE: memcpy(p, &v, 8); break;
    default: break;
  }
}

/* Visits every element of the view in logical row-major order; fn gets the byte pointer. */
typedef void (*visit_fn)(char *p, int64_t i, int32_t dt, void *ctx);
static void visit(const SimTensorDesc *d, visit_fn fn, void *ctx) {
  int64_t n = sim_desc_numel(d);
  if (n == 0) return;
  size_t es = sim_dtype_size(d->dtype);
  int64_t idx[SIM_MAX_DIMS] = {0};
  int64_t off = d->offset;
  for (int64_t i = 0; i < n; i++) {
    fn((char *)d->data + off * (int64_t)es, i, d->dtype, ctx);
    for (int k = d->ndim - 1; k >= 0; k--) {
      if (++idx[k] < d->dims[k]) {
        off += d->strides[k];
        break;
      }
      off -= d->strides[k] * (d->dims[k] - 1);
      idx[k] = 0;
    }
  }
}

static void load_one(char *p, int64_t i, int32_t dt, void *ctx) { ((double *)ctx)[i] = read_elem(p, dt); }
/* The fault `corrupt` (sim_fault.c): 1 except while run_task runs a corrupted kernel. */
static double g_store_scale = 1.0;
void sim_set_store_scale(double factor) { g_store_scale = factor; }

static void store_one(char *p, int64_t i, int32_t dt, void *ctx) {
  write_elem(p, dt, ((const double *)ctx)[i] * g_store_scale);
}

double *sim_load(const SimTensorDesc *d) {
  double *v = sim_scratch_doubles(sim_desc_numel(d));
  if (v) visit(d, load_one, v);
  return v;
}

void sim_store(const SimTensorDesc *d, const double *v) { visit(d, store_one, (void *)v); }

/* An intermediate the chip forms in `dtype` (a CANN decomposition's l0op result): rounded once
 * to nearest even.  In saturation mode a result that would be +-Inf is the dtype's largest
 * finite value and a NaN is 0; in Inf/NaN mode both are kept (hicann/runtime
 * docs/zh/api_ref/25-02_Enumerations.md 1381-1388, aclrtFloatOverflowMode). */
double sim_round_dtype(double x, int32_t dtype, int32_t mode) {
  double r;
  switch (dtype) {
    case SIM_DT_FLOAT: r = (double)(float)x; break;
    case SIM_DT_FLOAT16: r = sim_from_fp16(sim_to_fp16(x)); break;
    case SIM_DT_BF16: r = sim_from_bf16(sim_to_bf16(x)); break;
    default: return x;
  }
  if (mode != SIM_OVERFLOW_SATURATION) return r;
  if (isnan(r)) return 0.0;
  if (isinf(r)) {
    double max = dtype == SIM_DT_FLOAT16 ? 65504.0 : dtype == SIM_DT_BF16 ? sim_from_bf16(0x7F7F) : (double)FLT_MAX;
    return r > 0 ? max : -max;
  }
  return r;
}

/* A dtype's name as CANN's messages print it (ge::TypeUtils::DataTypeToSerialString). */
const char *sim_dt_str(int32_t dt) {
  switch (dt) {
    case SIM_DT_FLOAT: return "DT_FLOAT";
    case SIM_DT_FLOAT16: return "DT_FLOAT16";
    case SIM_DT_INT8: return "DT_INT8";
    case SIM_DT_INT32: return "DT_INT32";
    case SIM_DT_UINT8: return "DT_UINT8";
    case SIM_DT_INT16: return "DT_INT16";
    case SIM_DT_UINT16: return "DT_UINT16";
    case SIM_DT_UINT32: return "DT_UINT32";
    case SIM_DT_INT64: return "DT_INT64";
    case SIM_DT_UINT64: return "DT_UINT64";
    case SIM_DT_DOUBLE: return "DT_DOUBLE";
    case SIM_DT_BOOL: return "DT_BOOL";
    case SIM_DT_BF16: return "DT_BF16";
    default: return "DT_UNDEFINED";
  }
}
