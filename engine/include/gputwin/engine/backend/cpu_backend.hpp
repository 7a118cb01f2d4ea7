#pragma once
// The CPU reference backend: fp32 compute, single-threaded per rank (each rank is a thread), deterministic
// (every reduction runs in index order, so results do not depend on thread timing or buffer addresses).

#include "gputwin/engine/backend/backend.hpp"

namespace gputwin::engine {

class CpuBackend final : public Backend {
public:
  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::Cpu; }

  void gemm(Tensor& c, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, int64_t m, int64_t n,
            int64_t k, float alpha, float beta) override;
  void layernorm_forward(Tensor& out, const Tensor& in, const Tensor& gamma, const Tensor& beta, int64_t rows,
                         int64_t cols, float eps) override;
  void layernorm_backward(Tensor& d_in, Tensor& d_gamma, Tensor& d_beta, const Tensor& d_out, const Tensor& in,
                          const Tensor& gamma, int64_t rows, int64_t cols, float eps) override;
  void rmsnorm_forward(Tensor& out, const Tensor& in, const Tensor& gamma, int64_t rows, int64_t cols,
                       float eps) override;
  void rmsnorm_backward(Tensor& d_in, Tensor& d_gamma, const Tensor& d_out, const Tensor& in, const Tensor& gamma,
                        int64_t rows, int64_t cols, float eps) override;
  void rope_forward(Tensor& qkv, const RopeDims& dims) override;
  void rope_backward(Tensor& d_qkv, const RopeDims& dims) override;
  void swiglu_forward(Tensor& out, const Tensor& in, int64_t rows, int64_t cols) override;
  void swiglu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t rows, int64_t cols) override;
  void gelu_forward(Tensor& out, const Tensor& in, int64_t n) override;
  void gelu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t n) override;
  void squared_relu_forward(Tensor& out, const Tensor& in, int64_t n) override;
  void squared_relu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t n) override;
  void attention_scores_forward(Tensor& scores, const Tensor& qkv, const AttentionDims& dims) override;
  void attention_scores_backward(Tensor& d_qkv, const Tensor& d_scores, const Tensor& qkv,
                                 const AttentionDims& dims) override;
  void causal_softmax_forward(Tensor& probs, const Tensor& scores, int64_t rows, int64_t seq) override;
  void causal_softmax_backward(Tensor& d_scores, const Tensor& d_probs, const Tensor& probs, int64_t rows,
                               int64_t seq) override;
  void attention_context_forward(Tensor& context, const Tensor& probs, const Tensor& qkv,
                                 const AttentionDims& dims) override;
  void attention_context_backward(Tensor& d_probs, Tensor& d_qkv, const Tensor& d_context, const Tensor& probs,
                                  const Tensor& qkv, const AttentionDims& dims) override;
  void flash_attention_forward(Tensor& context, Tensor& lse, Tensor& rng_state, const Tensor& qkv,
                               const AttentionDims& dims, const DropoutSite& dropout) override;
  void flash_attention_backward(Tensor& d_qkv, const Tensor& d_context, const Tensor& context, const Tensor& lse,
                                const Tensor& rng_state, const Tensor& qkv, const AttentionDims& dims,
                                const DropoutSite& dropout) override;
  // Small tiles, so that the engine's test sequences (16, 64 tokens) span several and exercise the online
  // softmax across tiles and the skipped tiles above the causal diagonal.
  int64_t fused_attention_tile_tokens() const override { return 8; }
  void dropout_forward(Tensor& out, Tensor& mask, const Tensor& in, const DropoutSite& site) override;
  void dropout_backward(Tensor& d_in, const Tensor& d_out, const Tensor& mask, float probability) override;
  void embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& table, int64_t vocab_start,
                         int64_t owned_rows, int64_t n, int64_t h) override;
  void embedding_backward(Tensor& d_table, const Tensor& d_out, const Tensor& tokens, int64_t vocab_start,
                          int64_t owned_rows, int64_t n, int64_t h) override;
  void cross_entropy_local_max(Tensor& row_max, const Tensor& logits, int64_t rows, int64_t cols,
                               int64_t valid_cols) override;
  void cross_entropy_local_sums(Tensor& sum_exp, Tensor& target_logit, const Tensor& logits, const Tensor& targets,
                                const Tensor& row_max, int64_t rows, int64_t cols, int64_t valid_cols,
                                int64_t vocab_start) override;
  void cross_entropy_backward(Tensor& d_logits, const Tensor& logits, const Tensor& targets, const Tensor& row_max,
                              const Tensor& sum_exp, int64_t rows, int64_t cols, int64_t valid_cols,
                              int64_t vocab_start, float scale) override;
  void router_topk_forward(Tensor& probs, Tensor& indices, Tensor& weights, const Tensor& logits, int64_t tokens,
                           int64_t experts, int64_t topk) override;
  void router_topk_backward(Tensor& d_logits, const Tensor& d_weights, const Tensor& probs, const Tensor& indices,
                            const Tensor& weights, int64_t tokens, int64_t experts, int64_t topk) override;
  void moe_permute_forward(Tensor& permuted, const Tensor& in, const Tensor& positions, int64_t tokens, int64_t topk,
                           int64_t h) override;
  void moe_permute_backward(Tensor& d_in, const Tensor& d_permuted, const Tensor& positions, int64_t tokens,
                            int64_t topk, int64_t h) override;
  void moe_unpermute_forward(Tensor& out, const Tensor& expert_out, const Tensor& weights, const Tensor& positions,
                             int64_t tokens, int64_t topk, int64_t h) override;
  void moe_unpermute_backward(Tensor& d_expert_out, Tensor& d_weights, const Tensor& d_out, const Tensor& expert_out,
                              const Tensor& weights, const Tensor& positions, int64_t tokens, int64_t topk,
                              int64_t h) override;
  void adam_step(Tensor& master, Tensor& momentum, Tensor& variance, const Tensor& grad, int64_t n,
                 const AdamHyper& hyper, int64_t step) override;
  void add(Tensor& out, const Tensor& a, const Tensor& b, int64_t n) override;
  void add_bias(Tensor& out, const Tensor& in, const Tensor& bias, int64_t rows, int64_t cols) override;
  void bias_backward(Tensor& d_bias, const Tensor& d_out, int64_t rows, int64_t cols) override;
  void copy(Tensor& out, const Tensor& in, int64_t n) override;
  void accumulate(Tensor& out, const Tensor& in, int64_t n) override;
  void zero(Tensor& t) override;
};

} // namespace gputwin::engine
