/*
 * Software CANN ("aclsim") -- internal header shared by every simulator source file.
 *
 * The shared state (device-memory registry, handles, streams, per-thread error text,
 * counters) lives in libaclsim_core.so; every function here is prefixed with sim_ and is
 * exported from the core library only.  The public libraries (libacl_rt.so, libascendcl.so,
 * libnnopbase.so, libopapi*.so) export exactly the CANN symbols declared in sim_api.h and
 * forward to these functions.
 */
#ifndef ACLSIM_SIM_H
#define ACLSIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_CORE_API __attribute__((visibility("default")))
#define SIM_PUBLIC __attribute__((visibility("default")))

#define SIM_MAX_DIMS 8
#define SIM_MAX_TENSORS 16 /* aclnnAdaLayerNormBackward has 13 tensor slots */

/* ---- status codes ---------------------------------------------------------------- */
enum {
  SIM_OK = 0,
  /* aclnn */
  SIM_NN_NULLPTR = 161001,
  SIM_NN_INVALID = 161002,
  SIM_NN_RUNTIME = 361001,
  SIM_NN_INNER = 561000,
  SIM_NN_TILING = 561002, /* ACLNN_ERR_INNER_TILING_ERROR: a generated operator's tiling failed */
  SIM_NN_INNER_NULLPTR = 561103,
  SIM_NN_OPP_PATH = 561107,
  /* acl runtime */
  SIM_ACL_INVALID_PARAM = 100000,
  SIM_ACL_UNINITIALIZE = 100001,
  SIM_ACL_REPEAT_INIT = 100002,
  SIM_ACL_REPEAT_FINALIZE = 100037,
  SIM_RT_PARAM_INVALID = 107000,
  SIM_RT_INVALID_DEVICEID = 107001,
  SIM_RT_CONTEXT_NULL = 107002,
  SIM_RT_STREAM_ABORT = 107023,
  SIM_RT_MEMORY_ALLOCATION = 207001,
  SIM_RT_NO_DEVICE = 207004,
  SIM_RT_NO_STREAM_RESOURCE = 207008,
  SIM_RT_INTERNAL_ERROR = 507000,
  SIM_RT_CONTEXT_RELEASE = 507007,
  SIM_RT_AICORE_EXCEPTION = 507015,
  SIM_RT_DRV_INTERNAL_ERROR = 507899
};

/* ---- enums ------------------------------------------------------------------------- */
enum {
  SIM_DT_FLOAT = 0, SIM_DT_FLOAT16 = 1, SIM_DT_INT8 = 2, SIM_DT_INT32 = 3, SIM_DT_UINT8 = 4,
  SIM_DT_INT16 = 6, SIM_DT_UINT16 = 7, SIM_DT_UINT32 = 8, SIM_DT_INT64 = 9, SIM_DT_UINT64 = 10,
  SIM_DT_DOUBLE = 11, SIM_DT_BOOL = 12, SIM_DT_BF16 = 27
};
/* A dtype's name as CANN's messages print it, e.g. "DT_FLOAT16" (sim_numeric.c). */
const char *sim_dt_str(int32_t dt);
enum {
  SIM_FMT_NCHW = 0, SIM_FMT_NHWC = 1, SIM_FMT_ND = 2, SIM_FMT_NC1HWC0 = 3, SIM_FMT_FRACTAL_Z = 4,
  SIM_FMT_HWCN = 16, SIM_FMT_NDHWC = 27, SIM_FMT_FRACTAL_NZ = 29, SIM_FMT_NCDHW = 30,
  SIM_FMT_NDC1HWC0 = 32, SIM_FMT_FRACTAL_Z_3D = 33, SIM_FMT_NC = 35, SIM_FMT_NCL = 47
};
enum { SIM_H2H = 0, SIM_H2D = 1, SIM_D2H = 2, SIM_D2D = 3, SIM_MEMCPY_DEFAULT = 4, SIM_H2B2D = 5 };

/* ---- operators ---------------------------------------------------------------------- */
typedef enum {
  SIM_OP_BN_REDUCE_BACKWARD = 1,
  SIM_OP_BN_BACKWARD,
  SIM_OP_GN_BACKWARD,
  SIM_OP_BN_STATS,
  SIM_OP_BN_GATHER_STATS,
  SIM_OP_BN_ELEMT_BACKWARD,
  SIM_OP_BN,
  SIM_OP_BN_ELEMT,
  SIM_OP_GN,
  SIM_OP_LAYER_NORM, /* aclnnLayerNorm and aclnnLayerNormWithImplMode: one executor kind */
  SIM_OP_LAYER_NORM_BACKWARD,
  SIM_OP_RMS_NORM,
  SIM_OP_RMS_NORM_GRAD,
  SIM_OP_ADD_RMS_NORM,
  SIM_OP_GEMMA_RMS_NORM,
  SIM_OP_INPLACE_ADD_RMS_NORM,
  SIM_OP_BN_REDUCE,
  SIM_OP_SYNC_BN_GATHER_STATS,
  SIM_OP_ADD_LAYER_NORM,
  SIM_OP_DEEP_NORM,
  SIM_OP_INSTANCE_NORM,
  SIM_OP_FAST_BN_BACKWARD, /* aclnnFastBatchNormBackward: planned in the SIM_OP_BN_BACKWARD slot order */
  SIM_OP_ADD_RMS_NORM_CAST,
  SIM_OP_ADA_LAYER_NORM,
  SIM_OP_ADA_LAYER_NORM_V2,
  SIM_OP_ADD_LAYER_NORM_GRAD,
  SIM_OP_DEEP_NORM_GRAD,
  SIM_OP_GN_SILU, /* aclnnGroupNormSilu and aclnnGroupNormSiluV2: one executor kind */
  SIM_OP_GN_SWISH,
  SIM_OP_FAST_LAYER_NORM, /* aclnnFastLayerNorm: planned in the SIM_OP_LAYER_NORM slot order */
  SIM_OP_GN_SWISH_GRAD,
  SIM_OP_ADA_LAYER_NORM_GRAD,
  SIM_OP_COUNT
} SimOpId;

/* A tensor descriptor: a copy of what aclCreateTensor recorded (the executor snapshots it). */
typedef struct {
  int32_t ndim;
  int64_t dims[SIM_MAX_DIMS];
  int64_t strides[SIM_MAX_DIMS];
  int64_t offset;
  int32_t dtype;
  int32_t format;
  int32_t sndim;
  int64_t sdims[SIM_MAX_DIMS];
  void *data;
  uint64_t alloc_id; /* device allocation validated at phase 1 (0 = none needed) */
  void *origin;      /* aclTensor handle this descriptor was copied from */
} SimTensorDesc;

/* How the task of a plan runs at synchronisation. */
typedef enum {
  SIM_RUN_COMPUTE = 0, /* the operator's computation */
  SIM_RUN_NOTHING,     /* CANN's early SUCCESS that writes nothing (e.g. an empty input) */
  SIM_RUN_FILL         /* CANN's empty-tensor path: every slot with fill_on[] gets fill[] */
} SimRunMode;

/* Everything phase 1 planned: tensors (inputs first, then outputs), flags and scalars. */
typedef struct {
  SimOpId op;
  const char *name; /* e.g. "aclnnBatchNormReduceBackward" */
  int n_in, n_out;
  SimTensorDesc t[SIM_MAX_TENSORS];
  bool present[SIM_MAX_TENSORS];
  const char *tname[SIM_MAX_TENSORS];
  bool mask[3];
  bool training;
  double eps, momentum;
  double alpha; /* DeepNorm's x factor (a float attribute) */
  int64_t N, C, HxW, group;
  uint64_t ws_size;
  SimRunMode run;
  bool fill_on[SIM_MAX_TENSORS];
  double fill[SIM_MAX_TENSORS];
  /* SoC traits captured at phase 1 (the SoC name is read per call, like the real runtime's). */
  bool regbase;           /* NpuArch DAV_3510 */
  bool bn_saves_variance; /* saveInvstd holds Var(x) (BatchNorm writes it, Backward reads it) */
  /* LayerNorm / RMSNorm family (sim_ops_*norm*.c): the normalized dims are the input's dims from
   * norm_axis on (rows = product of the dims before it, cols = product of the rest). */
  int32_t norm_axis;
  int32_t norm_mode;  /* LayerNorm implMode; AddRmsNorm mode (0 add, 1 pre, 2 post); InplaceAddRmsNorm norm key */
  int32_t norm_dt[3]; /* dtypes of CANN's intermediate results, chosen at phase 1 (per operator) */
  int32_t npu_arch;       /* [version] NpuArch of the platform file (SIM_DAV_RESV: none) */
  int32_t overflow_mode;  /* SimOverflowMode the modelled narrow-dtype steps round with */
  bool decomposed;        /* the chip takes the op_api decomposition sim_decomposed.c models */
  /* GroupNormSilu / GroupNormSwish (sim_ops_group_norm_*.c) */
  bool activate;      /* activateSilu / activateSwish */
  bool cast_round;    /* 16-bit outputs cast half away from zero (CAST_ROUND, A2/A3 GroupNormSilu) */
  double swish_scale; /* s of gn / (1 + exp(-s gn)): 1 for SiLU */
  bool dgamma_required; /* GroupNormSwishGrad dgamma_is_require */
  bool dbeta_required;  /* GroupNormSwishGrad dbeta_is_require */
} SimPlan;

/* ---- the platform (sim_soc.c): CANN's platform file <SoC_version>.ini, read at run time ---- */
/* op::SocVersion (hicann/opbase include/nnopbase/opdev/platform.h): ASCEND910_95 == ASCEND950. */
enum {
  SIM_SV_ASCEND910 = 0, SIM_SV_ASCEND910B, SIM_SV_ASCEND910_93, SIM_SV_ASCEND950, SIM_SV_ASCEND910E,
  SIM_SV_ASCEND310, SIM_SV_ASCEND310P, SIM_SV_ASCEND310B, SIM_SV_ASCEND310C, SIM_SV_ASCEND610LITE,
  SIM_SV_KIRINX90, SIM_SV_KIRIN9030, SIM_SV_ASCEND350, SIM_SV_RESERVED = 99999
};
/* NpuArch values the operators branch on (hicann/runtime pkg_inc/platform/soc_spec.h). */
enum { SIM_DAV_1001 = 1001, SIM_DAV_2002 = 2002, SIM_DAV_2201 = 2201, SIM_DAV_3002 = 3002, SIM_DAV_3510 = 3510,
       SIM_DAV_RESV = 0xFFFF };
/* aclrtFloatOverflowMode (hicann/runtime include/external/acl/acl_rt.h 281-282). */
typedef enum { SIM_OVERFLOW_SATURATION = 0, SIM_OVERFLOW_INFNAN = 1 } SimOverflowMode;

typedef struct {
  const char *soc_name; /* what aclrtGetSocName returned */
  bool known;           /* its platform file <soc_name>.ini was found and read */
  const char *family;   /* [version] Short_SoC_version, e.g. "Ascend910B" ("" when absent) */
  const char *product;  /* the product line CANN's documentation names for soc_version */
  int32_t npu_arch;     /* [version] NpuArch as opbase reads it (SIM_DAV_RESV when absent) */
  int32_t soc_version;  /* op::SocVersion from Short_SoC_version (SIM_SV_RESERVED when unknown) */
  bool support_inf_nan; /* [SoCInfo] support_inf_nan is 1 */
  int32_t padding_size; /* [AICoreSpec] padding_size, -1 when absent */
} SimSocInfo;
/* Fills *out for the SoC named soc_name from its platform file (sim_soc.c). */
SIM_CORE_API void sim_soc_lookup(const char *soc_name, SimSocInfo *out);
/* Where the platform files are: dirname(dirname(realpath(libaclsim_core.so)))/data/platform_config. */
SIM_CORE_API const char *sim_soc_config_dir(void);
/* The overflow mode the chip computes in now (ACLSIM_OVERFLOW_MODE, the chip's default). */
SIM_CORE_API SimOverflowMode sim_soc_overflow_mode(const SimSocInfo *soc);

/* ---- per-operator rules of the CANN sources (sim_rules.c), from SocVersion / NpuArch ---------- */
SIM_CORE_API bool sim_rule_regbase(const SimSocInfo *soc);
SIM_CORE_API bool sim_rule_documented(SimOpId op, const SimSocInfo *soc); /* "产品支持情况" */
SIM_CORE_API bool sim_rule_bf16(SimOpId op, const SimSocInfo *soc);
SIM_CORE_API bool sim_rule_bn_has_dtype_list(const SimSocInfo *soc);
SIM_CORE_API bool sim_rule_bn_saves_variance(const SimSocInfo *soc);
SIM_CORE_API bool sim_rule_gnb_mixed_precision(const SimSocInfo *soc);
SIM_CORE_API bool sim_rule_gnb_limits(const SimSocInfo *soc, int64_t *max_per_group, int64_t *max_channels);
SIM_CORE_API bool sim_rule_gnb_decomposed(const SimSocInfo *soc);
SIM_CORE_API bool sim_rule_gn_fp16_stats_cast(const SimSocInfo *soc);
SIM_CORE_API const char *sim_rule_product(int32_t soc_version);
SIM_CORE_API const char *sim_rule_bn_v3_format(const SimSocInfo *soc, bool training, int32_t format, int ndim,
                                               int64_t C, bool *known); /* NULL: taken */

/* ---- CANN's op_api decompositions that form intermediates in a narrow dtype (sim_decomposed.c) -- */
SIM_CORE_API void sim_elemt_rebuild_variance(const double *invstd, int64_t C, int32_t dtype, double eps,
                                             int32_t mode, double *var);
SIM_CORE_API double sim_gn_rstd_from_variance(double var, double eps, int32_t dtype, int32_t mode);
SIM_CORE_API void sim_gn_backward_decomposed(const double *x, const double *dy, const double *mean,
                                             const double *rstd, const double *gamma, int64_t N, int64_t C,
                                             int64_t HxW, int64_t G, int32_t dtype, int32_t mode, double *gi,
                                             double *gg, double *gb);
SIM_CORE_API void sim_elemt_backward(const double *dy, const double *x, const double *mean, const double *invstd,
                                     const double *w, const double *sum_dy, const double *sum_dy_xmu, double total,
                                     int64_t numel, int64_t C, int64_t inner, int32_t promote, int32_t mode,
                                     double *gi);

/* ---- errors (thread-local text) ------------------------------------------------------ */
SIM_CORE_API int sim_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
SIM_CORE_API const char *sim_take_error(void);

/* ---- helpers -------------------------------------------------------------------------- */
SIM_CORE_API size_t sim_dtype_size(int32_t dtype);
SIM_CORE_API const char *sim_dtype_name(int32_t dtype);
SIM_CORE_API const char *sim_format_name(int32_t format);
SIM_CORE_API int64_t sim_desc_numel(const SimTensorDesc *d);
SIM_CORE_API int64_t sim_desc_storage_numel(const SimTensorDesc *d);
SIM_CORE_API double *sim_load(const SimTensorDesc *d);                 /* numel doubles, run scratch (sim_scratch.h) */
SIM_CORE_API void sim_store(const SimTensorDesc *d, const double *v);  /* logical row-major */
/* Every value sim_store writes is multiplied by `factor` before its rounding (1 = off): the fault
 * kind `corrupt`, set around one kernel by run_task with the lock held. */
SIM_CORE_API void sim_set_store_scale(double factor);
SIM_CORE_API uint16_t sim_to_fp16(double x);
SIM_CORE_API uint16_t sim_to_bf16(double x);
SIM_CORE_API double sim_from_fp16(uint16_t h);
SIM_CORE_API double sim_from_bf16(uint16_t h);
/* x rounded to dtype (FLOAT, FLOAT16, BF16; others unchanged) as the chip rounds an intermediate
 * in `mode` (SimOverflowMode): INFNAN keeps Inf/NaN, SATURATION turns +-Inf into +-max and NaN
 * into 0. */
SIM_CORE_API double sim_round_dtype(double x, int32_t dtype, int32_t mode);

/* ---- locking & handles ------------------------------------------------------------------ */
SIM_CORE_API void sim_lock(void);
SIM_CORE_API void sim_unlock(void);

/* device memory queries (lock held by the caller or not: they lock themselves) */
SIM_CORE_API uint64_t sim_dev_range_alloc(const void *p, uint64_t bytes); /* alloc id or 0 */
/* Entries compared by the allocation registries' binary searches since load (tests). */
SIM_CORE_API uint64_t sim_registry_probes(void);
SIM_CORE_API bool sim_dev_alloc_live(uint64_t alloc_id);
SIM_CORE_API bool sim_is_device_ptr(const void *p);
SIM_CORE_API void sim_describe_ptr(const void *p, char *buf, size_t n);

/* ---- runtime (acl / aclrt) ------------------------------------------------------------ */
SIM_CORE_API int sim_acl_init(const char *config);
SIM_CORE_API int sim_acl_finalize(void);
SIM_CORE_API int sim_rt_set_device(int32_t id);
SIM_CORE_API int sim_rt_reset_device(int32_t id);
SIM_CORE_API int sim_rt_get_device(int32_t *id);
SIM_CORE_API int sim_rt_get_device_count(uint32_t *count);
SIM_CORE_API int sim_rt_sync_device(void);
SIM_CORE_API int sim_rt_create_stream(void **stream);
SIM_CORE_API int sim_rt_destroy_stream(void *stream);
SIM_CORE_API int sim_rt_sync_stream(void *stream);
/* A host task on a stream (sim_streams.c explains the contract; used by the software HCCL). */
SIM_CORE_API int sim_stream_enqueue(const char *fn, void *stream, int badcode, int (*run)(void *arg),
                                    void (*drop)(void *arg), void *arg);
SIM_CORE_API int sim_rt_malloc(void **p, uint64_t size, uint32_t policy);
SIM_CORE_API int sim_rt_free(void *p);
SIM_CORE_API int sim_rt_malloc_host(void **p, uint64_t size);
SIM_CORE_API int sim_rt_free_host(void *p);
SIM_CORE_API int sim_rt_memcpy(void *dst, uint64_t destMax, const void *src, uint64_t count,
                               uint32_t kind);
SIM_CORE_API int sim_rt_memcpy_async(void *dst, uint64_t destMax, const void *src, uint64_t count,
                                     uint32_t kind, void *stream);
SIM_CORE_API int sim_rt_memset(void *p, uint64_t maxCount, int32_t value, uint64_t count);
SIM_CORE_API int sim_rt_create_context(void **ctx, int32_t device);
SIM_CORE_API int sim_rt_set_current_context(void *ctx);
SIM_CORE_API int sim_rt_get_current_context(void **ctx);
SIM_CORE_API int sim_rt_destroy_context(void *ctx);
SIM_CORE_API int sim_rt_get_mem_info(uint32_t attr, uint64_t *freeBytes, uint64_t *totalBytes);
/* ACLSIM_SOC_NAME (read on every call) or "Ascend950PR_9599" (sim_soc.c). */
SIM_CORE_API const char *sim_rt_get_soc_name(void);
/* 15 counters (README_test_hooks.md). */
SIM_CORE_API int32_t sim_get_stats(int64_t *out, uint64_t n);

/* ---- fault injection (sim_fault.c; a test hook, README_test_hooks.md "Fault injection") ------ */
typedef enum {
  SIM_FAULT_MALLOC = 1,    /* aclrtMalloc fails (default 207001) */
  SIM_FAULT_MEMCPY,        /* aclrtMemcpy fails (default 507899) */
  SIM_FAULT_KERNEL,        /* an operator's task fails at synchronisation (default 507015) */
  SIM_FAULT_WORKSPACE,     /* phase 1 asks for a workspace too large to allocate */
  SIM_FAULT_CREATE_STREAM, /* aclrtCreateStream fails (default 207008) */
  SIM_FAULT_STREAM,        /* a stream refuses a task: launch 361001, aclrtMemcpyAsync 107023 */
  SIM_FAULT_CORRUPT,       /* [aclsim] a kernel's stores are scaled by 1 + value/1e6 (default 1e-2) */
  SIM_FAULT_KINDS
} SimFaultKind;
/* aclsimInjectFault: kind 0 disarms every kind; nth 0 disarms `kind`; otherwise the nth call of
 * `kind` from now (1 = the next) and the next times - 1 ones (times -1: every one) fail with
 * `value` (a status code, or for SIM_FAULT_WORKSPACE a byte size; 0 = the default). */
SIM_CORE_API int32_t sim_fault_inject(int32_t kind, int64_t nth, int64_t times, int64_t value);
/* Counts one call of `kind` (ACLSIM_FAULT read first); true: it must fail, *value = the armed
 * value (0 = the kind's default, applied by the caller). */
SIM_CORE_API bool sim_fault_fire(int kind, int64_t *value);
SIM_CORE_API int64_t sim_fault_fired(void); /* faults injected so far (counter 14) */
SIM_CORE_API const char *sim_fault_name(int kind);
/* Counts one kernel execution of the `corrupt` kind: the factor the kernel's stores are multiplied
 * by, 1 + value/1e6 (value 0: 1e-2) when the fault fires, else 1. Lock held by the caller. */
SIM_CORE_API double sim_fault_corrupt_factor(void);

/* ---- nnopbase ---------------------------------------------------------------------------- */
SIM_CORE_API void *sim_create_tensor(const int64_t *viewDims, uint64_t viewDimsNum, int32_t dataType,
                                     const int64_t *stride, int64_t offset, int32_t format,
                                     const int64_t *storageDims, uint64_t storageDimsNum,
                                     void *tensorData);
SIM_CORE_API int sim_destroy_tensor(const void *t);
SIM_CORE_API void *sim_create_bool_array(const bool *v, uint64_t n);
SIM_CORE_API int sim_destroy_bool_array(const void *a);
SIM_CORE_API void *sim_create_int_array(const int64_t *v, uint64_t n);
SIM_CORE_API int sim_destroy_int_array(const void *a);
SIM_CORE_API void *sim_create_scalar(const void *v, int32_t dtype);
SIM_CORE_API int sim_destroy_scalar(const void *s);
SIM_CORE_API int sim_executor_set_repeatable(void *e);
SIM_CORE_API int sim_executor_destroy(void *e);
/* which: 0 = aclSetInputTensorAddr, 1 = aclSetOutputTensorAddr, 2 = aclSetTensorAddr (index ignored) */
SIM_CORE_API int sim_executor_set_addr(void *e, uint64_t index, void *tensor, void *addr, int which);
SIM_CORE_API int sim_tensor_set_raw_addr(void *t, void *addr);
SIM_CORE_API int sim_tensor_get_raw_addr(const void *t, void **addr);
SIM_CORE_API int sim_tensor_get_view_offset(const void *t, int64_t *offset);
SIM_CORE_API int sim_tensor_get_format(const void *t, int32_t *format);
SIM_CORE_API int sim_tensor_get_dtype(const void *t, int32_t *dtype);
SIM_CORE_API int sim_nn_init(const char *config);
SIM_CORE_API int sim_nn_finalize(void);

/* used by the operator code: resolve handles (lock taken inside) */
SIM_CORE_API int sim_lookup_tensor(const void *h, SimTensorDesc *out); /* 0 or -1 */
SIM_CORE_API int sim_lookup_bool_array(const void *h, bool *vals, uint64_t cap, uint64_t *n);
SIM_CORE_API int sim_lookup_int_array(const void *h, int64_t *vals, uint64_t cap, uint64_t *n);

/* executors: phase 1 registers a plan, phase 2 launches it */
SIM_CORE_API int sim_executor_create(const SimPlan *plan, uint64_t *workspaceSize, void **executor);
SIM_CORE_API int sim_op_launch(SimOpId op, const char *fname, void *workspace, uint64_t wsSize,
                               void *executor, void *stream);

/* ---- operators (sim_ops_*.c, part of the core) -------------------------------------------- */
SIM_CORE_API int sim_op_run(const SimPlan *p, void *workspace); /* executes at synchronise */

SIM_CORE_API int sim_bn_reduce_backward_ws(const void *gradOut, const void *input, const void *mean,
                                           const void *invstd, const void *weight, bool inputG,
                                           bool weightG, bool biasG, void *sumDy, void *sumDyXmu,
                                           void *gradWeight, void *gradBias, uint64_t *ws,
                                           void **exec);
SIM_CORE_API int sim_bn_backward_ws(const void *gradOut, const void *input, const void *weight,
                                    const void *runningMean, const void *runningVar,
                                    const void *saveMean, const void *saveInvstd, bool training,
                                    double eps, const void *outputMask, void *gradInput,
                                    void *gradWeight, void *gradBias, uint64_t *ws, void **exec);
SIM_CORE_API int sim_gn_backward_ws(const void *gradOut, const void *input, const void *mean,
                                    const void *rstd, const void *gamma, int64_t N, int64_t C,
                                    int64_t HxW, int64_t group, const void *outputMask,
                                    void *gradInput, void *gradGamma, void *gradBeta, uint64_t *ws,
                                    void **exec);
SIM_CORE_API int sim_bn_stats_ws(const void *input, double eps, void *mean, void *invstd,
                                 uint64_t *ws, void **exec);
SIM_CORE_API int sim_bn_gather_stats_ws(const void *input, const void *mean, const void *invstd,
                                        void *runningMean, void *runningVar, double momentum,
                                        double eps, const void *counts, void *meanAll,
                                        void *invstdAll, uint64_t *ws, void **exec);
SIM_CORE_API int sim_bn_elemt_backward_ws(const void *gradOut, const void *input, const void *mean,
                                          const void *invstd, const void *weight, const void *sumDy,
                                          const void *sumDyXmu, void *counter, void *gradInput,
                                          uint64_t *ws, void **exec);
SIM_CORE_API int sim_bn_ws(const void *input, const void *weight, const void *bias,
                           void *runningMean, void *runningVar, bool training, double momentum,
                           double eps, void *output, void *saveMean, void *saveInvstd,
                           uint64_t *ws, void **exec);
SIM_CORE_API int sim_bn_elemt_ws(const void *input, const void *weight, const void *bias,
                                 void *mean, void *invstd, double eps, void *output, uint64_t *ws,
                                 void **exec);
SIM_CORE_API int sim_gn_ws(const void *self, const void *gamma, const void *beta, int64_t N,
                           int64_t C, int64_t HxW, int64_t group, double eps, void *out,
                           void *meanOut, void *rstdOut, uint64_t *ws, void **exec);

/* ---- LayerNorm / RMSNorm operators (sim_ops_*norm*.c, part of the core) ----------------------- */
/* api: "aclnnLayerNorm" (implMode 0) or "aclnnLayerNormWithImplMode" (the error texts' prefix) */
SIM_CORE_API int sim_layer_norm_ws(const char *api, const void *input, const void *normalizedShape,
                                   const void *weight, const void *bias, double eps, void *out,
                                   void *meanOut, void *rstdOut, int32_t implMode, uint64_t *ws,
                                   void **exec);
SIM_CORE_API int sim_layer_norm_backward_ws(const void *gradOut, const void *input,
                                            const void *normalizedShape, const void *mean,
                                            const void *rstd, const void *weight, const void *bias,
                                            const void *outputMask, void *gradInput,
                                            void *gradWeight, void *gradBias, uint64_t *ws,
                                            void **exec);
SIM_CORE_API int sim_rms_norm_ws(const void *x, const void *gamma, double epsilon, const void *yOut,
                                 const void *rstdOut, uint64_t *ws, void **exec);
SIM_CORE_API int sim_rms_norm_grad_ws(const void *dy, const void *x, const void *rstd,
                                      const void *gamma, const void *dxOut, const void *dgammaOut,
                                      uint64_t *ws, void **exec);
SIM_CORE_API int sim_add_rms_norm_ws(const void *x1, const void *x2, const void *gamma,
                                     double epsilon, void *yOut, void *rstdOut, void *xOut,
                                     uint64_t *ws, void **exec);
SIM_CORE_API int sim_gemma_rms_norm_ws(const void *x, const void *gamma, double epsilon,
                                       const void *yOut, const void *rstdOut, uint64_t *ws,
                                       void **exec);
SIM_CORE_API int sim_inplace_add_rms_norm_ws(const void *x1Ref, const void *x2Ref,
                                             const void *gamma, double epsilon,
                                             const void *rstdOut, uint64_t *ws, void **exec);
/* ---- BatchNorm operators of issue 39 (sim_ops_batch_norm_reduce.c, ...) ------------------------ */
SIM_CORE_API int sim_bn_reduce_ws(const void *x, void *sum, void *squareSum, uint64_t *ws, void **exec);
SIM_CORE_API int sim_sync_bn_gather_stats_ws(const void *totalSum, const void *totalSquareSum,
                                             const void *sampleCount, void *mean, void *variance,
                                             float momentum, float eps, void *batchMean,
                                             void *batchInvstd, uint64_t *ws, void **exec);
SIM_CORE_API int sim_add_layer_norm_ws(const void *x1, const void *x2, const void *gamma, const void *beta,
                                       const void *bias, double epsilon, bool additionalOutput, const void *yOut,
                                       const void *meanOut, const void *rstdOut, const void *xOut, uint64_t *ws,
                                       void **exec);
SIM_CORE_API int sim_deep_norm_ws(const void *x, const void *gx, const void *beta, const void *gamma, double alpha,
                                  double epsilon, const void *meanOut, const void *rstdOut, const void *yOut,
                                  uint64_t *ws, void **exec);
/* aclnnInstanceNorm (sim_ops_instance_norm.c, part of the core). */
SIM_CORE_API int sim_instance_norm_ws(const void *x, const void *gamma, const void *beta,
                                      const char *dataFormat, double eps, void *y, void *mean,
                                      void *variance, uint64_t *ws, void **exec);
SIM_CORE_API int sim_fast_bn_backward_ws(const void *gradOut, const void *input, const void *weight,
                                         const void *runningMean, const void *runningVar, const void *saveMean,
                                         const void *saveInvstd, bool training, double eps,
                                         const void *outputMask, int version, void *gradInput,
                                         void *gradWeight, void *gradBias, uint64_t *ws, void **exec);
SIM_CORE_API int sim_add_layer_norm_grad_ws(const void *dy, const void *x1, const void *x2, const void *rstd,
                                            const void *mean, const void *gamma, const void *dsum,
                                            const void *dxOut, const void *dgammaOut, const void *dbetaOut,
                                            uint64_t *ws, void **exec);
SIM_CORE_API int sim_deep_norm_grad_ws(const void *dy, const void *x, const void *gx, const void *gamma,
                                       const void *mean, const void *rstd, double alpha, const void *dxOut,
                                       const void *dgxOut, const void *dbetaOut, const void *dgammaOut,
                                       uint64_t *ws, void **exec);
SIM_CORE_API int sim_add_rms_norm_cast_ws(const void *x1, const void *x2, const void *gamma, double epsilon,
                                          const void *y1Out, const void *y2Out, const void *rstdOut, const void *xOut,
                                          uint64_t *ws, void **exec);
/* aclnnAdaLayerNorm (v2 false: meanOut and rstdOut NULL) and aclnnAdaLayerNormV2. */
SIM_CORE_API int sim_ada_layer_norm_ws(bool v2, const void *x, const void *scale, const void *shift, const void *weight,
                                       const void *bias, double epsilon, const void *out, const void *meanOut,
                                       const void *rstdOut, uint64_t *ws, void **exec);
/* aclnnAdaLayerNormBackward (sim_ops_ada_layer_norm_grad.c). */
SIM_CORE_API int sim_ada_layer_norm_grad_ws(const void *gradOut, const void *input, const void *normalizedShape,
                                            const void *rstd, const void *mean, const void *scale, const void *shift,
                                            const void *weight, const void *bias, const void *gradInput,
                                            const void *gradScale, const void *gradShift, const void *gradWeight,
                                            const void *gradBias, uint64_t *ws, void **exec);
SIM_CORE_API int sim_gn_silu_ws(const char *api, const void *self, const void *gamma, const void *beta, int64_t group,
                                double eps, bool activateSilu, const void *out, const void *meanOut,
                                const void *rstdOut, uint64_t *ws, void **exec);
SIM_CORE_API int sim_gn_swish_ws(const void *x, const void *gamma, const void *beta, int64_t numGroups,
                                 const char *dataFormat, double eps, bool activateSwish, double swishScale,
                                 const void *yOut, const void *meanOut, const void *rstdOut, uint64_t *ws,
                                 void **exec);
SIM_CORE_API int sim_fast_layer_norm_ws(const void *input, const void *normalizedShape, const void *weight,
                                        const void *bias, double eps, void *out, void *meanOut, void *rstdOut,
                                        uint64_t *ws, void **exec);
SIM_CORE_API int sim_gn_swish_grad_ws(const void *dy, const void *mean, const void *rstd, const void *x,
                                      const void *gamma, const void *beta, int64_t numGroups,
                                      const char *dataFormat, double swishScale, bool dgammaIsRequire,
                                      bool dbetaIsRequire, const void *dxOut, const void *dgammaOut,
                                      const void *dbetaOut, uint64_t *ws, void **exec);
/* Their computations, called by sim_op_run at synchronisation (core-internal). */
int sim_run_layer_norm(const SimPlan *p);
int sim_run_layer_norm_backward(const SimPlan *p);
int sim_run_add_rms_norm_cast(const SimPlan *p);
int sim_run_ada_layer_norm(const SimPlan *p);
int sim_run_ada_layer_norm_grad(const SimPlan *p);
int sim_run_rms_norm(const SimPlan *p);
int sim_run_rms_norm_grad(const SimPlan *p);
int sim_run_add_rms_norm(const SimPlan *p);
int sim_run_gemma_rms_norm(const SimPlan *p);
int sim_run_inplace_add_rms_norm(const SimPlan *p);
int sim_run_bn_reduce(const SimPlan *p);
int sim_run_sync_bn_gather_stats(const SimPlan *p);
int sim_run_add_layer_norm(const SimPlan *p);
int sim_run_deep_norm(const SimPlan *p);
int sim_run_instance_norm(const SimPlan *p);
int sim_run_add_layer_norm_grad(const SimPlan *p);
int sim_run_deep_norm_grad(const SimPlan *p);
int sim_run_gn_silu(const SimPlan *p);
int sim_run_gn_swish(const SimPlan *p);
int sim_run_gn_swish_grad(const SimPlan *p);
double sim_gs_cast_round(double v, int32_t dt); /* CAST_ROUND of a float value to dt */
double sim_gs_swish(double gn, double s);       /* float gn / (1 + exp(-s gn)) */
void sim_gs_geometry(SimPlan *p, const SimTensorDesc *x, int64_t group); /* N, C, HxW, group of x */

#endif
