/*
 * Software HCCL ("aclsim") -- public symbols of libhccl.so: the collectives (hicann/hccl
 * include/hccl.h:35-37, 51-52, 120-121). The library lists libhcomm.so as a DT_NEEDED entry, as
 * CANN's does (hccl src/hccl.cmake:90-104), so dlsym on a libhccl.so handle also finds the
 * management calls. Each function forwards to libaclsim_core.so (hccl_collectives.c).
 */
#include "hccl_sim.h"
#include "sim_hccl_api.h"

SIM_PUBLIC HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                                    HcclComm comm, aclrtStream stream) {
  return (HcclResult)sim_hccl_all_reduce(sendBuf, recvBuf, count, (int32_t)dataType, (int32_t)op, comm, stream);
}
SIM_PUBLIC HcclResult HcclBroadcast(void *buf, uint64_t count, HcclDataType dataType, uint32_t root, HcclComm comm,
                                    aclrtStream stream) {
  return (HcclResult)sim_hccl_broadcast(buf, count, (int32_t)dataType, root, comm, stream);
}
SIM_PUBLIC HcclResult HcclAllGather(void *sendBuf, void *recvBuf, uint64_t sendCount, HcclDataType dataType,
                                    HcclComm comm, aclrtStream stream) {
  return (HcclResult)sim_hccl_all_gather(sendBuf, recvBuf, sendCount, (int32_t)dataType, comm, stream);
}
