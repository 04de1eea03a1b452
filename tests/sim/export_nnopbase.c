/*
 * Software CANN ("aclsim") -- public symbols of libnnopbase.so.  Each function forwards to
 * libaclsim_core.so.
 */
#include "sim.h"
#include "sim_api.h"

SIM_PUBLIC aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                                      const int64_t *stride, int64_t offset, aclFormat format,
                                      const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData) {
  return sim_create_tensor(viewDims, viewDimsNum, dataType, stride, offset, format, storageDims, storageDimsNum,
                           tensorData);
}
SIM_PUBLIC aclnnStatus aclDestroyTensor(const aclTensor *tensor) { return sim_destroy_tensor(tensor); }
SIM_PUBLIC aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size) {
  return sim_create_bool_array(value, size);
}
SIM_PUBLIC aclnnStatus aclDestroyBoolArray(const aclBoolArray *array) { return sim_destroy_bool_array(array); }
SIM_PUBLIC aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size) {
  return sim_create_int_array(value, size);
}
SIM_PUBLIC aclnnStatus aclDestroyIntArray(const aclIntArray *array) { return sim_destroy_int_array(array); }
SIM_PUBLIC aclScalar *aclCreateScalar(void *value, aclDataType dataType) { return sim_create_scalar(value, dataType); }
SIM_PUBLIC aclnnStatus aclDestroyScalar(const aclScalar *scalar) { return sim_destroy_scalar(scalar); }
SIM_PUBLIC aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor) {
  return sim_executor_set_repeatable(executor);
}
SIM_PUBLIC aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor) { return sim_executor_destroy(executor); }
SIM_PUBLIC aclnnStatus aclSetInputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor,
                                             void *addr) {
  return sim_executor_set_addr(executor, index, tensor, addr, 0);
}
SIM_PUBLIC aclnnStatus aclSetOutputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor,
                                              void *addr) {
  return sim_executor_set_addr(executor, index, tensor, addr, 1);
}
SIM_PUBLIC aclnnStatus aclSetTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) {
  return sim_executor_set_addr(executor, index, tensor, addr, 2);
}
SIM_PUBLIC aclnnStatus aclSetRawTensorAddr(aclTensor *tensor, void *addr) { return sim_tensor_set_raw_addr(tensor, addr); }
SIM_PUBLIC aclnnStatus aclGetRawTensorAddr(const aclTensor *tensor, void **addr) {
  return sim_tensor_get_raw_addr(tensor, addr);
}
SIM_PUBLIC aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset) {
  return sim_tensor_get_view_offset(tensor, offset);
}
SIM_PUBLIC aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format) {
  return sim_tensor_get_format(tensor, format);
}
SIM_PUBLIC aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType) {
  return sim_tensor_get_dtype(tensor, dataType);
}
SIM_PUBLIC aclnnStatus aclnnInit(const char *configPath) { return sim_nn_init(configPath); }
SIM_PUBLIC aclnnStatus aclnnFinalize(void) { return sim_nn_finalize(); }
