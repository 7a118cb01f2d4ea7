#pragma once
// Mixed-precision Adam (Micikevicius et al. 2018 as Megatron-LM runs it): bf16 weights for the kernels, fp32
// gradients, fp32 master weights, momentum and variance (12 bytes per parameter), optionally sharded over
// the data-parallel replicas (ZeRO-1, Rajbhandari et al. 2020: reduce-scatter the gradients, update the
// owned shard, all-gather the new bf16 weights), and the gradient reductions before the step.

#include "gputwin/engine/model/parameter_store.hpp"
#include "gputwin/models/parameter_count.hpp"

#include <vector>

namespace gputwin::engine {

class MixedPrecisionAdam {
public:
  // `master` holds the initial fp32 values of the whole flat parameter buffer (ParameterStore::finalize).
  MixedPrecisionAdam(RankContext& ctx, ParameterStore& store, const std::vector<float>& master);

  // Elements of the flat buffers, padded to a multiple of dp so ZeRO-1 shards are equal.
  static int64_t padded_elements(int64_t total, int64_t dp) { return data_parallel_buffer_elements(total, dp); }

  // Makes every gradient complete: tp all-reduce of the gradients sequence parallelism leaves partial,
  // all-reduce of the tied word embedding over the embedding group (first and last stage), then the
  // data-parallel all-reduce (ZeRO-0) or reduce-scatter into this replica's shard (ZeRO-1).
  void reduce_gradients();
  // One Adam step on the master weights this rank owns and the new bf16 weights (all-gathered with ZeRO-1).
  void step();
  void zero_gradients();
  int64_t steps() const { return step_; }

private:
  void all_reduce_sp_partial_gradients();
  void reduce_dense_and_expert_gradients();
  RankContext& ctx_;
  ParameterStore& store_;
  int64_t shard_elements_, shard_offset_; // the part of the flat buffer this rank updates
  Tensor master_, momentum_, variance_;   // Optimizer, fp32, shard_elements_
  Tensor grad_shard_;                     // ZeRO-1: the reduce-scattered gradient shard (Workspace)
  int64_t step_ = 0;
};

} // namespace gputwin::engine
