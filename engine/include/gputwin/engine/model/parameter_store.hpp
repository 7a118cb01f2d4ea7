#pragma once
// The parameters one rank holds, each the local shard of a logical parameter of the unsharded model, with
// bf16 weights and fp32 gradients as views into two flat buffers (one gradient all-reduce per iteration,
// Megatron-LM's contiguous grad buffer). Values are a pure function of (seed, parameter name, logical
// element), so every parallel plan starts from the same model.

#include "gputwin/engine/parallel/rank_context.hpp"

#include <deque>
#include <string>
#include <vector>

namespace gputwin::engine {

enum class ParameterInit { Normal, ScaledNormal, Ones, Zeros };

// How a logical (rows, cols) parameter is split over the tp ranks.
struct Sharding {
  int dim = -1;       // -1: replicated; 0: rows split; 1: columns split
  int64_t blocks = 1; // the split dimension is `blocks` equal blocks, each split over the ranks (SwiGLU [gate|up]: 2)
  // Blocks of unequal logical extents instead, each split over the ranks: rank r holds block 0's share r, then
  // block 1's, ... (grouped-query QKV [Q h | K g d | V g d]: each rank holds whole query heads and K/V groups).
  std::vector<int64_t> block_extents = {};
};

struct ParameterSpec {
  std::string name;           // "layers.3.qkv.weight": the same on every plan
  int64_t rows = 0, cols = 0; // logical shape (a vector is 1 x cols)
  Sharding sharding;
  ParameterInit init = ParameterInit::Normal;
  // With sequence parallelism, each tp rank sees only its sequence shard, so the gradient of this replicated
  // parameter is partial and is all-reduced over the tp group (layernorms, row-parallel biases, positions).
  bool partial_under_sp = false;
  // Rows including padding when rows are split (dim 0, one block), as Megatron-LM pads the vocabulary to a
  // multiple of 128 t; 0: rows split evenly (rounded up). Padding rows are zero and never real tokens.
  int64_t padded_rows = 0;
  // A routed expert's parameter (mixture of experts): held by its EP rank only, its gradient reduced over the
  // expert data-parallel group instead of dp; the flat buffers hold every expert parameter after the dense ones.
  bool expert = false;
};

struct Parameter {
  ParameterSpec spec;
  int64_t local_rows = 0, local_cols = 0;
  int64_t offset = 0; // first element in the flat buffers
  Tensor weight;      // bf16 (local_rows, local_cols), a view
  Tensor grad;        // f32, a view

  int64_t numel() const { return local_rows * local_cols; }
};

// The word embedding (v x h, rows split over tp, the vocabulary padded as Megatron-LM pads it).
ParameterSpec word_embedding_spec(const RankContext& ctx);
// The untied output layer's own matrix (GptConfig::tie_embeddings false): the word embedding's shape and split.
ParameterSpec output_weight_spec(const RankContext& ctx);

class ParameterStore {
public:
  // Declares a parameter; the reference stays valid. Call before finalize().
  Parameter& add(const RankContext& ctx, ParameterSpec spec);
  // Allocates the flat buffers (bf16 Weights and fp32 Gradients, `padded_elements` >= total elements) and
  // fills `master` (fp32, returned) with the initial values.
  std::vector<float> finalize(RankContext& ctx, int64_t padded_elements);

  int64_t total_elements() const { return total_; }
  // Elements of the dense parameters: [0, dense_elements()) of the flat buffers (the expert ones follow).
  int64_t dense_elements() const;
  std::deque<Parameter>& parameters() { return parameters_; }
  const std::deque<Parameter>& parameters() const { return parameters_; }
  Tensor& weights() { return weights_; }
  Tensor& grads() { return grads_; }
  Parameter* find(const std::string& name);

private:
  std::deque<Parameter> parameters_;
  int64_t total_ = 0;
  Tensor weights_, grads_;
};

// The logical flat index (row x cols + col) of local element `local` of `p` on tp rank `tp_rank` of `tp`
// ranks, or -1 for padding (vocabulary rows past v).
int64_t logical_index(const Parameter& p, int64_t local, int64_t tp_rank, int64_t tp);

// The initial value of logical element `index` of `spec` (deterministic, independent of the plan).
float initial_value(const ParameterSpec& spec, int64_t index, const EngineOptions& options, int64_t layers);

} // namespace gputwin::engine
