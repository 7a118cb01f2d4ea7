#pragma once
// The MLP block of a mixture-of-experts layer on one rank (Megatron-Core MoELayer with the alltoall token
// dispatcher, moe/token_dispatcher.py MoEAlltoAllTokenDispatcher; experts whole on their EP rank, etp = 1):
//
//   ln2 (T, h) -> router (h -> E logits) -> softmax, top-k, weights normalised over the k (Mixtral)
//      -> permute the T k routed copies into expert order -> all-to-all(-v) to the experts' EP ranks
//      -> each local expert's MLP over its rows (a grouped GEMM: one GEMM per (source rank, expert) block)
//      -> all-to-all(-v) back -> unpermute: out[t] = sum_j w[t, j] expert_j(ln2[t])          (T, h) f32
//
// T = the tokens of the residual stream on this rank (the SP shard with tp > 1: Megatron-Core requires SP with
// MoE and TP). The received rows are ordered by source EP rank, then local expert, then the source's token
// order. Ops are the vocabulary's (models/op_vocabulary.hpp) in the workload generator's order; the dispatch
// and combine are recorded only with ep > 1. Expert parameters are ParameterSpec::expert (their gradients are
// reduced over the expert data-parallel group); the router is replicated and partial under SP.

#include "gputwin/engine/model/parameter_store.hpp"

#include <vector>

namespace gputwin::engine {

// What one micro-batch's MoE forward keeps for backward.
struct MoeActivations {
  Tensor probs;     // (T, E) f32 router softmax
  Tensor indices;   // (T, k) i32 chosen experts
  Tensor weights;   // (T, k) f32 normalised top-k probabilities
  Tensor positions; // (T k) i32 row of each routed copy (t, j) in expert order
  Tensor expert_in; // (R, h) bf16 the rows this rank's experts received (fc1 input)
  Tensor fc1_out;   // (R, fc1 width) bf16
  Tensor act_out;   // (R, F_e) bf16 (fc2 input)
  Tensor combined;  // (T k, h) bf16 the experts' outputs back in expert order (unpermute input)
  // Host routing: rows sent to / received from each EP rank, and rows of each (source rank, local expert) block.
  std::vector<int64_t> send_rows, recv_rows, block_rows;

  std::vector<Tensor*> tensors();
  int64_t bytes() const;
};

class MoeMlp {
public:
  // Declares the router and this EP rank's experts of layer `layer` in `store`.
  MoeMlp(RankContext& ctx, ParameterStore& store, int64_t layer);

  // out (T, h) f32 from ln2 (T, h) bf16; fills `acts`.
  Tensor forward(const Tensor& ln2, MoeActivations& acts);
  // d_ln2 (T, h) f32 from d_out (T, h); accumulates the router's and the local experts' gradients.
  Tensor backward(const Tensor& d_out, const Tensor& ln2, MoeActivations& acts);

private:
  int64_t local_experts() const { return static_cast<int64_t>(fc1_.size()); }
  int64_t fc1_width() const; // F_e, or 2 F_e with SwiGLU [gate | up]
  // Host routing of the permute: positions, and the rows per expert (E).
  std::vector<int64_t> route(MoeActivations& acts);
  // Runs fn(expert, first row, rows) for every non-empty (source rank, local expert) block of the received rows.
  template <typename Fn>
  void for_each_block(const MoeActivations& acts, Fn&& fn) const;
  void dispatch(const Tensor& permuted, MoeActivations& acts);
  void experts_forward(MoeActivations& acts, Tensor& expert_out);
  Tensor experts_backward(const Tensor& d_expert_out, MoeActivations& acts); // returns d_expert_in (R, h) bf16

  RankContext& ctx_;
  int64_t layer_;
  Parameter* router_;
  std::vector<Parameter*> fc1_, fc2_; // the local experts', in expert order
};

template <typename Fn>
inline void MoeMlp::for_each_block(const MoeActivations& acts, Fn&& fn) const
{
  int64_t row = 0;
  for (size_t b = 0; b < acts.block_rows.size(); ++b) {
    const int64_t rows = acts.block_rows[b];
    if (rows > 0)
      fn(static_cast<int64_t>(b) % local_experts(), row, rows);
    row += rows;
  }
}

} // namespace gputwin::engine
