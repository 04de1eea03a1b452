/*
 * Software HCCL ("aclsim") -- public symbols of libhcomm.so: communicator management, as CANN's
 * hcomm library defines them (hcomm src/framework/op_base/src/op_base.cc, op_base_host.cc,
 * hccl_independent_rank_graph.cc), plus the simulator's test
 * hook. Each function forwards to libaclsim_core.so (hccl_comms.c).
 */
#include "hccl_sim.h"
#include "sim_hccl_api.h"

SIM_PUBLIC HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo) { return (HcclResult)sim_hccl_get_root_info(rootInfo); }
SIM_PUBLIC HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank, HcclComm *comm) {
  return (HcclResult)sim_hccl_comm_init("HcclCommInitRootInfo", nRanks, rootInfo, rank, NULL, false, comm);
}
SIM_PUBLIC HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                                                 const HcclCommConfig *config, HcclComm *comm) {
  return (HcclResult)sim_hccl_comm_init("HcclCommInitRootInfoConfig", nRanks, rootInfo, rank, config, true, comm);
}
SIM_PUBLIC HcclResult HcclCommDestroy(HcclComm comm) { return (HcclResult)sim_hccl_comm_destroy(comm); }
SIM_PUBLIC HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize) {
  return (HcclResult)sim_hccl_get_rank_size(comm, rankSize);
}
SIM_PUBLIC HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank) { return (HcclResult)sim_hccl_get_rank_id(comm, rank); }
SIM_PUBLIC HcclResult HcclBarrier(HcclComm comm, aclrtStream stream) { return (HcclResult)sim_hccl_barrier(comm, stream); }
SIM_PUBLIC const char *HcclGetErrorString(HcclResult code) { return sim_hccl_error_string((int)code); }
SIM_PUBLIC HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult *asyncError) {
  return (HcclResult)sim_hccl_get_async_error(comm, asyncError);
}
SIM_PUBLIC int32_t aclsimHcclGetStats(int64_t *out, uint64_t n) { return sim_hccl_get_stats(out, n); }
