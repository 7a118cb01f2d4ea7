#pragma once
// Appends ops to one rank's program: ids in issue order, the current phase/layer/micro-batch/chunk stamped on
// each, FLOPs and bytes from the shapes, and per-communicator sequence numbers that match across ranks.

#include "gputwin/models/op_vocabulary.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <map>
#include <vector>

namespace gputwin {

// Streams of a generated program: ops on one stream run in order.
enum WorkloadStream : int32_t {
  compute_stream = 0,  // kernels and the blocking TP collectives
  recv_stream = 1,     // pipeline receives
  send_stream = 2,     // pipeline sends
  dp_stream = 3,       // data-parallel gradient reduction (overlaps backward when asked)
  tp_async_stream = 4, // TP collectives Megatron overlaps with a GEMM (backward all-gather / reduce-scatter)
  cp_stream = 5,       // context-parallel K/V ring exchanges, overlapped with the blockwise attention
  param_gather_stream = 6, // ZeRO-1/2 parameter all-gathers overlapped with the next forward (--overlap-param-gather),
                           // ZeRO-3's unit all-gathers, each prefetched during the unit before
  ep_stream = 7, // MoE token exchanges of a combined 1F1B step (--overlap-moe-expert-parallel-comm: combined_step.hpp)
};

// The communicators a layer's ops use: the rank's TP group (ignored when t = 1) and its context-parallel
// group (ignored when cp = 1).
struct LayerGroups {
  int32_t tp = -1;
  int32_t cp = -1;
  int32_t ep = -1;  // expert-parallel group (MoE layers, ep > 1)
  int32_t etp = -1; // expert tensor-parallel group (MoE layers, etp > 1)
};

class OpEmitter {
public:
  explicit OpEmitter(std::vector<traces::Op>& out) : out_(out) {}

  void set_context(traces::Phase phase, int32_t layer, int32_t micro_batch, int32_t chunk);
  void set_phase(traces::Phase phase) { phase_ = phase; }
  traces::Phase phase() const { return phase_; }

  // A compute op of the vocabulary (op_vocabulary.hpp) on the compute stream, at its cost.
  int64_t compute(OpName name, const OpCost& cost, std::vector<int64_t> deps = {});
  // A compute op sized by the layer shape alone: compute(name, op_cost(name, shape)).
  int64_t compute(OpName name, const LayerShape& shape, std::vector<int64_t> deps = {})
  {
    return compute(name, op_cost(name, shape), std::move(deps));
  }
  // Communication ops of the vocabulary.
  int64_t collective(OpName name, CollectiveOp op, int32_t group, double bytes, int32_t stream,
                     std::vector<int64_t> deps = {})
  {
    return collective(interned_op_name(name), op, group, bytes, stream, std::move(deps));
  }
  int64_t send(OpName name, int32_t peer, int64_t sequence, double bytes, std::vector<int64_t> deps)
  {
    return send(interned_op_name(name), peer, sequence, bytes, std::move(deps));
  }
  int64_t recv(OpName name, int32_t peer, int64_t sequence, double bytes)
  {
    return recv(interned_op_name(name), peer, sequence, bytes);
  }

  // A collective of `bytes` (nccl-tests size) on `group`, numbered in this rank's order on that group.
  int64_t collective(const traces::InternedName& name, CollectiveOp op, int32_t group, double bytes, int32_t stream,
                     std::vector<int64_t> deps = {});
  int64_t send(const traces::InternedName& name, int32_t peer, int64_t sequence, double bytes, std::vector<int64_t> deps);
  int64_t recv(const traces::InternedName& name, int32_t peer, int64_t sequence, double bytes);

  // A copy of `op` (a captured op: its kind, name, phase, FLOPs, bytes, GEMM shape, collective and measured
  // duration) in the current layer/micro-batch/chunk, on `stream`; collectives on `group`, numbered anew.
  int64_t replay(const traces::Op& op, int32_t stream, int32_t group, std::vector<int64_t> deps);

  int32_t layer() const { return layer_; }
  int32_t micro_batch() const { return micro_batch_; }
  int64_t last_id() const { return out_.empty() ? -1 : out_.back().id; }
  // Id of the last op issued on the compute stream (-1 if none).
  int64_t last_compute_id() const { return last_compute_; }
  // After ops were reordered (combined_step.hpp): the id of the last op now on the compute stream.
  void set_last_compute_id(int64_t id) { last_compute_ = id; }
  int64_t next_id() const { return next_id_; }

private:
  traces::Op& add(const traces::InternedName& name, traces::OpKind kind, int32_t stream, std::vector<int64_t> deps);

  std::vector<traces::Op>& out_;
  int64_t next_id_ = 0;
  int64_t last_compute_ = -1;
  std::map<int32_t, int64_t> group_sequence_;
  traces::Phase phase_ = traces::Phase::Forward;
  int32_t layer_ = -1, micro_batch_ = -1, chunk_ = 0;
};

} // namespace gputwin
