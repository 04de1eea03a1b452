/*
 * Software CANN ("aclsim") -- nnopbase's objects: aclTensor, aclBoolArray, aclIntArray,
 * aclScalar (create, destroy, look up, raw addresses), aclnnInit and aclnnFinalize.
 * Built into libaclsim_core.so; see tests/sim/README_runtime.md for every documented choice.
 *
 * Citations name the CANN source a behaviour is modelled on: "runtime:" is hicann/runtime,
 * "opbase:" is hicann/opbase.
 */
#define _GNU_SOURCE
#include "sim_core_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================================
 * Tensors, arrays, scalars
 * ====================================================================================== */
typedef struct { uint64_t n; bool *v; } BoolArr;
typedef struct { uint64_t n; int64_t *v; } IntArr;
typedef struct { int32_t dtype; unsigned char v[16]; } Scalar;

static bool dtype_known(int32_t dt) { return sim_dtype_size(dt) != 0; }

static bool format_known(int32_t f) {
  switch (f) {
    case -1: case SIM_FMT_NCHW: case SIM_FMT_NHWC: case SIM_FMT_ND: case SIM_FMT_NC1HWC0:
    case SIM_FMT_FRACTAL_Z: case SIM_FMT_HWCN: case SIM_FMT_NDHWC: case SIM_FMT_FRACTAL_NZ:
    case SIM_FMT_NCDHW: case SIM_FMT_NDC1HWC0: case SIM_FMT_FRACTAL_Z_3D: case SIM_FMT_NC:
    case SIM_FMT_NCL:
      return true;
    default:
      return false;
  }
}

void *sim_create_tensor(const int64_t *viewDims, uint64_t viewDimsNum, int32_t dataType,
                        const int64_t *stride, int64_t offset, int32_t format,
                        const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData) {
  const char *fn = "aclCreateTensor";
  if (viewDimsNum > SIM_MAX_DIMS) {
    sim_fail(SIM_NN_INVALID, "%s: viewDimsNum %" PRIu64 " exceeds the maximum of 8 dims", fn, viewDimsNum);
    return NULL;
  }
  if (storageDimsNum > SIM_MAX_DIMS) {
    sim_fail(SIM_NN_INVALID, "%s: storageDimsNum %" PRIu64 " exceeds the maximum of 8 dims", fn, storageDimsNum);
    return NULL;
  }
  if (viewDimsNum > 0 && viewDims == NULL) {
    sim_fail(SIM_NN_NULLPTR, "%s: viewDims is NULL but viewDimsNum is %" PRIu64, fn, viewDimsNum);
    return NULL;
  }
  if (viewDimsNum > 0 && stride == NULL) {
    sim_fail(SIM_NN_NULLPTR, "%s: stride is NULL but viewDimsNum is %" PRIu64, fn, viewDimsNum);
    return NULL;
  }
  if (storageDimsNum > 0 && storageDims == NULL) {
    sim_fail(SIM_NN_NULLPTR, "%s: storageDims is NULL but storageDimsNum is %" PRIu64, fn, storageDimsNum);
    return NULL;
  }
  if (!dtype_known(dataType)) {
    sim_fail(SIM_NN_INVALID, "%s: unknown dataType %d", fn, dataType);
    return NULL;
  }
  if (!format_known(format)) {
    sim_fail(SIM_NN_INVALID, "%s: unknown format %d", fn, format);
    return NULL;
  }
  for (uint64_t i = 0; i < viewDimsNum; i++)
    if (viewDims[i] < 0) {
      sim_fail(SIM_NN_INVALID, "%s: viewDims[%" PRIu64 "] = %" PRId64 " is negative", fn, i, viewDims[i]);
      return NULL;
    }
  for (uint64_t i = 0; i < storageDimsNum; i++)
    if (storageDims[i] < 0) {
      sim_fail(SIM_NN_INVALID, "%s: storageDims[%" PRIu64 "] = %" PRId64 " is negative", fn, i, storageDims[i]);
      return NULL;
    }
  Tensor *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->d.ndim = (int32_t)viewDimsNum;
  for (uint64_t i = 0; i < viewDimsNum; i++) {
    t->d.dims[i] = viewDims[i];
    t->d.strides[i] = stride[i];
  }
  t->d.offset = offset;
  t->d.dtype = dataType;
  t->d.format = format;
  t->d.sndim = (int32_t)storageDimsNum;
  for (uint64_t i = 0; i < storageDimsNum; i++) t->d.sdims[i] = storageDims[i];
  t->d.data = tensorData;
  sim_lock();
  void *h = handle_new(K_TENSOR, t, true);
  t->d.origin = h;
  sim_unlock();
  if (!h) free(t);
  return h;
}

static int destroy_obj(const char *fn, const void *h, Kind k) {
  if (h == NULL) return 0;
  sim_lock();
  const char *why = NULL;
  void *o = handle_get(h, k, &why);
  if (!o) {
    sim_unlock();
    return sim_fail(SIM_NN_INVALID, "%s: %p %s (not a live %s)", fn, h, why, kind_name(k));
  }
  if (k == K_BOOLARR) free(((BoolArr *)o)->v);
  if (k == K_INTARR) free(((IntArr *)o)->v);
  free(o);
  handle_free(h, true, END_DESTROYED);
  sim_unlock();
  return 0;
}

int sim_destroy_tensor(const void *t) { return destroy_obj("aclDestroyTensor", t, K_TENSOR); }
int sim_destroy_bool_array(const void *a) { return destroy_obj("aclDestroyBoolArray", a, K_BOOLARR); }
int sim_destroy_int_array(const void *a) { return destroy_obj("aclDestroyIntArray", a, K_INTARR); }
int sim_destroy_scalar(const void *s) { return destroy_obj("aclDestroyScalar", s, K_SCALAR); }

void *sim_create_bool_array(const bool *v, uint64_t n) {
  if (n > 0 && v == NULL) {
    sim_fail(SIM_NN_NULLPTR, "aclCreateBoolArray: value is NULL but size is %" PRIu64, n);
    return NULL;
  }
  BoolArr *a = calloc(1, sizeof *a);
  a->n = n;
  a->v = calloc(n ? n : 1, sizeof(bool));
  for (uint64_t i = 0; i < n; i++) a->v[i] = v[i];
  sim_lock();
  void *h = handle_new(K_BOOLARR, a, true);
  sim_unlock();
  return h;
}

void *sim_create_int_array(const int64_t *v, uint64_t n) {
  if (n > 0 && v == NULL) {
    sim_fail(SIM_NN_NULLPTR, "aclCreateIntArray: value is NULL but size is %" PRIu64, n);
    return NULL;
  }
  IntArr *a = calloc(1, sizeof *a);
  a->n = n;
  a->v = calloc(n ? n : 1, sizeof(int64_t));
  if (n) memcpy(a->v, v, n * sizeof(int64_t));
  sim_lock();
  void *h = handle_new(K_INTARR, a, true);
  sim_unlock();
  return h;
}

void *sim_create_scalar(const void *v, int32_t dtype) {
  if (v == NULL) {
    sim_fail(SIM_NN_NULLPTR, "aclCreateScalar: value is NULL");
    return NULL;
  }
  size_t sz = sim_dtype_size(dtype);
  if (sz == 0) {
    sim_fail(SIM_NN_INVALID, "aclCreateScalar: unknown dataType %d", dtype);
    return NULL;
  }
  Scalar *s = calloc(1, sizeof *s);
  s->dtype = dtype;
  memcpy(s->v, v, sz);
  sim_lock();
  void *h = handle_new(K_SCALAR, s, true);
  sim_unlock();
  return h;
}

int sim_lookup_tensor(const void *h, SimTensorDesc *out) {
  sim_lock();
  Tensor *t = handle_get(h, K_TENSOR, NULL);
  if (t) *out = t->d;
  sim_unlock();
  return t ? 0 : -1;
}

int sim_lookup_int_array(const void *h, int64_t *vals, uint64_t cap, uint64_t *n) {
  sim_lock();
  IntArr *a = handle_get(h, K_INTARR, NULL);
  if (a) {
    *n = a->n;
    for (uint64_t i = 0; i < a->n && i < cap; i++) vals[i] = a->v[i];
  }
  sim_unlock();
  return a ? 0 : -1;
}

int sim_lookup_bool_array(const void *h, bool *vals, uint64_t cap, uint64_t *n) {
  sim_lock();
  BoolArr *a = handle_get(h, K_BOOLARR, NULL);
  if (a) {
    *n = a->n;
    for (uint64_t i = 0; i < a->n && i < cap; i++) vals[i] = a->v[i];
  }
  sim_unlock();
  return a ? 0 : -1;
}

static int tensor_get(const char *fn, const void *h, const void *out, Tensor **t) {
  if (h == NULL) return sim_fail(SIM_NN_NULLPTR, "%s failed because tensor cannot be a NULL pointer.", fn);
  if (out == NULL) return sim_fail(SIM_NN_NULLPTR, "%s: output pointer is NULL", fn);
  const char *why = NULL;
  *t = handle_get(h, K_TENSOR, &why);
  if (!*t) return sim_fail(SIM_NN_INVALID, "%s: tensor %p %s (not a live aclTensor)", fn, h, why);
  return 0;
}

/* opbase acl_op_api.cpp aclSetRawTensorAddr: NULL tensor -> 161001 (ACLNN_ERR_PARAM_NULLPTR, not
 * the 561103 of the executor functions), else tensor->SetStorageAddr(addr). A stale handle is the
 * simulator's 161002. */
int sim_tensor_set_raw_addr(void *h, void *addr) {
  sim_lock();
  Tensor *t;
  int rc = tensor_get("aclSetRawTensorAddr", h, "", &t);
  if (!rc) t->d.data = addr;
  sim_unlock();
  return rc;
}
int sim_tensor_get_raw_addr(const void *h, void **addr) {
  sim_lock();
  Tensor *t;
  int rc = tensor_get("aclGetRawTensorAddr", h, addr, &t);
  if (!rc) *addr = t->d.data;
  sim_unlock();
  return rc;
}
int sim_tensor_get_view_offset(const void *h, int64_t *offset) {
  sim_lock();
  Tensor *t;
  int rc = tensor_get("aclGetViewOffset", h, offset, &t);
  if (!rc) *offset = t->d.offset;
  sim_unlock();
  return rc;
}
int sim_tensor_get_format(const void *h, int32_t *format) {
  sim_lock();
  Tensor *t;
  int rc = tensor_get("aclGetFormat", h, format, &t);
  if (!rc) *format = t->d.format;
  sim_unlock();
  return rc;
}
int sim_tensor_get_dtype(const void *h, int32_t *dtype) {
  sim_lock();
  Tensor *t;
  int rc = tensor_get("aclGetDataType", h, dtype, &t);
  if (!rc) *dtype = t->d.dtype;
  sim_unlock();
  return rc;
}

/* opbase src/nnopbase/common/api/aclnn_init.cpp aclnnInit: loads the OPP packages once
 * (std::call_once) and sets the debug-kernel flag; it has no repeat guard and always returns
 * ACLNN_SUCCESS, a second call included. aclnnFinalize (same file) clears the AI-CPU task spaces
 * and always returns ACLNN_SUCCESS. Neither is required before an aclnn call. */
int sim_nn_init(const char *config) {
  (void)config;
  return 0;
}
int sim_nn_finalize(void) { return 0; }
