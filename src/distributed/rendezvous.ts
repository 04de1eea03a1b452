/**
 * A small TCP rendezvous for W processes, in the role PyTorch's TCPStore plays for
 * torch_npu's HCCL process group (ProcessGroupHCCL::broadcastMasterID: rank 0 publishes the
 * HCCL root info, the others fetch it). Rank 0 listens on the master address; every other rank
 * connects and says who it is; once all W ranks are there and agree on W, rank 0 makes the
 * payload (the root info) and sends it to each. Everything is bounded by one deadline.
 *
 * Failures are {@linkcode HcclError}s with the codes HCCL's own root-info exchange uses for the
 * same situations (hcomm topoinfo_exchange_*.cc): a wrong world size or a rank claimed twice
 * is HCCL_E_PARA (1), a rank that never came HCCL_E_TIMEOUT (9), rank 0 unreachable
 * HCCL_E_TCP_CONNECT (11), a connection lost mid-way HCCL_E_TCP_TRANSFER (13), and a master
 * port already taken HCCL_E_UNAVAIL (7, as HcclGetRootInfo answers for a bound port).
 * The error reaches every rank that is still connected, not only the one that caused it.
 *
 * Every rank knows the job's id (`jobId`); hellos prove it, and rank 0 proves it with the
 * payload (rendezvous_auth.ts says how, and what that does and does not protect against).
 * HCCL's own root server likewise accepts its agents by a socket tag made of the root info's
 * identifier and port (cann-hccl src/domain/collective_communication/framework/common/src/
 * topo/topoinfo_exchange_server.cc, TopoInfoExchangeServer::Connect).
 * Rank 0 closes, logs (`log`) and otherwise ignores any connection that is not a rank of this
 * job: one that says nothing within `helloTimeoutMs`, sends a line over 64 KiB or not JSON,
 * sends something else than a hello, or a hello without the proof (that one is told
 * `rejected`, so that a rank of another job fails at once with HCCL_E_PARA). A hello with the
 * proof is a rank of this job: a wrong world size or rank from it fails the job as above.
 *
 * Wire format: one JSON object per line (rendezvous_wire.ts). On each connection rank 0 says
 * `{"challenge":c}`; the rank answers `{"hello":{"rank":r,"worldSize":w,"nonce":n,"proof":p}}`;
 * rank 0 answers `{"payload":"<base64>","proof":q}`, `{"error":{"code":c,"message":"..."}}`
 * or `{"rejected":"job id"}`.
 *
 * Rank 0's side is rendezvous_serve.ts, the others' rendezvous_join.ts.
 *
 * @module
 */

import type { RendezvousOptions } from "./rendezvous_options.ts";
export type { RendezvousOptions } from "./rendezvous_options.ts";
import { join } from "./rendezvous_join.ts";
import { RendezvousServer } from "./rendezvous_serve.ts";
export { MAX_PAYLOAD_BYTES } from "./rendezvous_serve.ts";

/**
 * Meets the other W-1 ranks at `masterAddr:masterPort` and returns the payload rank 0 made
 * with `makePayload` (called on rank 0 only, once every rank is there; at most
 * {@linkcode MAX_PAYLOAD_BYTES}). Throws an {@linkcode HcclError} as described in the module
 * documentation, on every rank concerned, within `timeoutMs`.
 */
export async function rendezvous(
  options: RendezvousOptions,
  makePayload: () => Uint8Array,
): Promise<Uint8Array> {
  if (options.rank !== 0) return await join(options);
  const server = await RendezvousServer.listen(options);
  return await server.serve(makePayload);
}
