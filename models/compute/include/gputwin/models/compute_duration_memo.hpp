#pragma once
// compute_duration_s of the ops of one workload, computed once per distinct op: a stage issues the same few kernels
// for every layer and micro-batch (gpt3-175b's interleaved plans: ~50 distinct of 10^5-10^6 ops), and the GEMM
// model (efficiency tables, wave quantisation, kernel classification by name) is most of building an estimate.
// Keyed by everything compute_duration_s reads (kind, name, FLOPs, bytes, GEMM shape); the value is the call's own
// double, so every executor's results stay byte-identical. One per thread (not synchronised).
// Every op of a workload is looked up (several times: estimate, interference, simulation), so the table is a small
// open-addressed one whose keys hold a name of up to 16 bytes whole (compared as three words, not as a string).

#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace gputwin {

class ComputeDurationMemo {
public:
  explicit ComputeDurationMemo(const GpuComputeModel& gpu) : gpu_(gpu) {}

  // The op's measured duration when it has one (duration_ns >= 0), else compute_duration_s(gpu, op).
  double operator()(const traces::Op& op);

  size_t distinct_ops() const { return distinct_; }

private:
  struct Key { // the numbers first: equality compares in this order, and they tell most ops apart
    double flops = 0, bytes = 0;
    traces::GemmShape gemm;
    traces::OpKind kind = traces::OpKind::Compute;
    uint64_t name_size = 0, name_head = 0, name_tail = 0; // the name's length, first and last (up to) 8 bytes
    std::string_view name;                                // points into `names_` once stored
    Key() = default;
    explicit Key(const traces::Op& op);
    // Equal keys: 0.0 and -0.0 alike, a NaN never equal (as ==); a name of up to 16 bytes is its three words.
    bool operator==(const Key& o) const;
    uint64_t hash() const;
  };
  struct Slot {
    uint64_t hash = 0;
    bool used = false;
    Key key;
    double duration_s = 0;
  };

  // The slot holding `key`, or the empty one where it would go.
  Slot& find(const Key& key, uint64_t hash);
  void grow();

  const GpuComputeModel& gpu_;
  std::vector<Slot> slots_; // a power of two of them, at most half used; linear probing
  size_t distinct_ = 0;
  std::unordered_set<std::string> names_; // owns the names the keys view (node-based: views stay valid)
};

} // namespace gputwin
