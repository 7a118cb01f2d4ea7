#pragma once
// compute_duration_s of the ops of one workload, computed once per distinct op: a stage issues the same few kernels
// for every layer and micro-batch (gpt3-175b's interleaved plans: ~50 distinct of 10^5-10^6 ops), and the GEMM
// model (efficiency tables, wave quantisation, kernel classification by name) is most of building an estimate.
// Keyed by everything compute_duration_s reads (kind, name, FLOPs, bytes, GEMM shape); the value is the call's own
// double, so every executor's results stay byte-identical. One per thread (not synchronised).

#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gputwin {

class ComputeDurationMemo {
public:
  explicit ComputeDurationMemo(const GpuComputeModel& gpu) : gpu_(gpu) {}

  // The op's measured duration when it has one (duration_ns >= 0), else compute_duration_s(gpu, op).
  double operator()(const traces::Op& op);

  size_t distinct_ops() const { return memo_.size(); }

private:
  struct Key { // the numbers first: equality compares in this order, and they tell most ops apart
    double flops, bytes;
    traces::GemmShape gemm;
    traces::OpKind kind;
    std::string_view name; // points into `names_` once stored
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };

  const GpuComputeModel& gpu_;
  std::unordered_map<Key, double, KeyHash> memo_;
  std::unordered_map<std::string, int> names_; // owns the names the keys view (node-based: views stay valid)
};

} // namespace gputwin
