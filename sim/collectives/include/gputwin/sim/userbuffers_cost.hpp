#pragma once
// Transformer Engine's userbuffers transfers (`simulate --tp-comm-overlap`, models/layer_ops.hpp TpCommOverlap):
// the ring-exchange steps of an all-gather overlapped with a column-parallel GEMM and the chunks of a pipelined
// reduce-scatter after a row-parallel one. They are not NCCL calls: TE registers one buffer per GEMM with every
// TP peer at start-up (transformer_engine/common/userbuffers, `initialize_ub` in pytorch/module/base.py) and
//   - a ring-exchange step is a copy-engine cudaMemcpyAsync of one rank's slice into the next rank's buffer over
//     NVLink plus a flag write the receiver's stream waits on (`userbuffers_send` / `userbuffers_recv` with
//     `use_ce`, TE's default for ring_exchange; RingExchangeOverlapCfg num_sm = 1 is the flag kernel);
//   - a pipelined reduce-scatter chunk is one userbuffers kernel (`reducescatter2_userbuff_strided`) on TE's
//     `num_sm` SMs (16, PipelineOverlapCfg / get_default_config) that reads its 1/t slice of every peer's
//     partial output from the registered buffers over NVLink and sums it (one-shot, no ring steps).
// So each pays one fixed cost -- the cluster's `nccl.userbuffers_latency_us` (cluster_spec.hpp: a CE put over
// NVLink4 measures ~4 us) -- and none of NCCL's: no protocol base latency, kernel launch, per-step hop latency,
// channel count or protocol wire overhead. Their bytes are flows on the real links (so NVLink sharing applies):
// the ring step from each rank to the next, the reduce-scatter directly from each rank to every other (1/t each),
// the same bytes per GPU as NCCL's ring. Plain C++.

#include "gputwin/sim/collective_plan.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <vector>

namespace gputwin::sim {

enum class UserbuffersOp {
  None,          // not a userbuffers transfer: a NCCL collective
  RingExchange,  // `tp.ring_exchange`: one step of TE's ring-exchange all-gather (SendRecv of one slice)
  ReduceScatter, // `tp.reduce_scatter_chunk`: one chunk of TE's pipelined reduce-scatter
};

// Which userbuffers transfer collective op `op` is, by its vocabulary name (models/op_vocabulary.hpp: the
// generator emits these names only on the --tp-comm-overlap path); None for every other op.
UserbuffersOp userbuffers_op(const traces::Op& op);

// SMs (CTAs) a userbuffers transfer occupies while in flight, for the compute-communication interference model
// (sim/estimator/interference.hpp charges them as channels x sms_per_channel; 1 SM per CTA on the built-in GPUs).
// Ring exchange: 1 -- the copy engine moves the data (its HBM traffic still interferes), but the receiver's
// one-thread-block kernel (`kuserbuffers_pushrecv`, TE's num_sm = 1 for this method) spins on the step's flag for the
// whole step, and a GEMM CTA (full register file / ~200 KB shared memory) cannot share its SM (sim/README.md,
// sms_per_channel). Reduce-scatter: TE's
// default num_sm for the pipeline method, 16 (transformer_engine/pytorch/module/base.py get_default_config:
// num_sm 16 for "pipeline", 1 for "ring_exchange"; Megatron-Core's PipelineOverlapCfg likewise).
inline constexpr int userbuffers_ring_exchange_ctas = 1;
inline constexpr int userbuffers_reduce_scatter_ctas = 16;
int userbuffers_ctas(UserbuffersOp op);

// The flows and cost of userbuffers transfer `ub` of `bytes` over the TP group `gpus` (rank i = gpus[i]):
// RingExchange: `bytes` (one slice) from every rank to the next on the ring (rank i -> i + 1 mod n);
// ReduceScatter: `bytes` is the chunk's nccl-tests size, every rank sends bytes / n to every other rank.
// choice.latency_s = cluster.nccl.userbuffers_latency_s; nccl_channels = userbuffers_ctas(ub); no wire overhead.
// REQUIRES: ub != None, gpus valid and distinct (throws std::invalid_argument otherwise).
CollectivePlan plan_userbuffers(const topo::ClusterSpec& cluster, UserbuffersOp ub, const std::vector<int>& gpus,
                                double bytes);

} // namespace gputwin::sim
