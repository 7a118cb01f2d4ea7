#pragma once
// The kernels the engine runs, behind one interface: the CPU reference backend implements it today and the
// CUDA backend (cuBLASLt + custom kernels) implements the same calls. Every kernel takes its outputs first,
// then inputs, then sizes. Floating inputs may be f32 or bf16 (read as fp32); outputs are rounded to their
// tensor's type, so an activation written into a bf16 tensor is stored in 16 bits as the paper assumes.

#include "gputwin/engine/comm/buffer_ops.hpp"
#include "gputwin/engine/core/tensor.hpp"
#include "gputwin/engine/trace/op_clock.hpp"

#include <array>
#include <cstdint>
#include <string>

namespace gputwin::engine {

// The attention core of one rank: `heads` local query heads of `head_dim`, over a micro-batch of `batch`
// sequences of `seq` tokens, with `kv_heads` K/V heads (grouped-query attention: query head j reads K/V group
// j / (heads / kv_heads); 0: kv_heads = heads, multi-head attention). qkv is (seq, batch, (heads + 2 kv_heads)
// head_dim) laid out [Q heads | K groups | V groups] (Megatron's per-rank layout); scores and probabilities are
// (batch, heads, seq, seq); the context is (seq, batch, heads * head_dim).
struct AttentionDims {
  int64_t batch = 1, heads = 1, seq = 1, head_dim = 1;
  int64_t kv_heads = 0;

  int64_t groups() const { return kv_heads > 0 ? kv_heads : heads; }
  int64_t heads_per_group() const { return heads / groups(); }
  int64_t group_of(int64_t head) const { return head / heads_per_group(); }
  int64_t qkv_width() const { return (heads + 2 * groups()) * head_dim; }
};

// Rotary position embedding (Su et al. 2021) of the Q and K parts of a qkv tensor laid out as AttentionDims
// says: rotate-half convention (Megatron-LM, Llama): in each head the pairs (c, c + head_dim / 2) are rotated by
// position x base^(-2c / head_dim). The token of row i has position `first_position` + i.
struct RopeDims {
  AttentionDims attention;
  int64_t first_position = 0;
  float base = 10000.0f;
};

// Where the elements of a dropout input sit in the whole logical tensor of the iteration, so that every
// sharding of it draws the same mask: the local tensor is local_dims (row-major, up to 4 dims, pad with 1);
// its element (i0, i1, i2, i3) is element (offsets + i) of a logical tensor of global_dims.
struct DropoutSite {
  uint64_t key = 0;      // dropout_key(seed, iteration, layer, site)
  float probability = 0; // of dropping an element
  std::array<int64_t, 4> local_dims{1, 1, 1, 1};
  std::array<int64_t, 4> offsets{0, 0, 0, 0};
  std::array<int64_t, 4> global_dims{1, 1, 1, 1};
};

struct AdamHyper {
  float learning_rate = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.95f, epsilon = 1e-8f;
  float weight_decay = 0.0f; // decoupled (AdamW)
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Where this backend's tensors live, and the allocator that puts them there (null: host memory).
  // RankContext::tensor allocates through it, so the model's tensors are on the backend's device.
  virtual Device device() const = 0;
  virtual DeviceAllocator* allocator() { return nullptr; }

  // Host access. Every host read or write of tensor data outside the backends goes through these (a device
  // tensor cannot be dereferenced on the host). They move the first `bytes` bytes of the tensor (host or this
  // backend's device), ordered after the ops launched before, and return when the copy is complete.
  // The defaults handle host tensors (memcpy) and throw for device tensors.
  virtual void upload(const Tensor& dst, const void* host, int64_t bytes);
  virtual void download(void* host, const Tensor& src, int64_t bytes);
  // dst's first `bytes` = src's (both on the same device), in stream order (memcpy on the host).
  virtual void copy_bytes(const Tensor& dst, const Tensor& src, int64_t bytes);
  // Waits until every op launched so far has finished (no-op where ops finish before returning, the CPU).
  virtual void synchronize() {}
  // Copies and reductions on this backend's device memory for an in-process communicator's collectives
  // (InProcessWorld::communicator), so device tensors are exchanged without host staging; null: host memory.
  // They run on the backend's communication stream.
  virtual BufferOps* buffer_ops() { return nullptr; }

  // Streams. An asynchronous backend (CUDA) runs compute and communication on two streams; the engine orders
  // them around every collective and message: the communication stream first waits for the compute issued
  // so far, and after the exchange the compute stream waits for it. No-ops where calls finish before
  // returning (the CPU).
  virtual void communication_waits_for_compute() {}
  virtual void compute_waits_for_communication() {}
  // The clock that times this backend's ops on its streams (CUDA events); null: the host's steady clock.
  virtual OpClock* op_clock() { return nullptr; }
  // Names the calls between begin_range and end_range for a profiler (NVTX on CUDA, so Nsight shows the trace's
  // op names); ranges nest. No-ops by default.
  virtual void begin_range(const std::string& name) { (void)name; }
  virtual void end_range() {}

  // C (m, n) = alpha op(A) op(B) + beta C with op(A) (m, k) and op(B) (k, n), each row-major before the
  // optional transpose. Sums over k in index order in fp32. C is f32, or bf16 with beta = 0.
  virtual void gemm(Tensor& c, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, int64_t m,
                    int64_t n, int64_t k, float alpha, float beta) = 0;

  // out (rows, cols) = (x - mean) / sqrt(var + eps) * gamma + beta, per row.
  virtual void layernorm_forward(Tensor& out, const Tensor& in, const Tensor& gamma, const Tensor& beta, int64_t rows,
                                 int64_t cols, float eps) = 0;
  // d_in = the layernorm's input gradient; d_gamma, d_beta (f32) += their gradients. Mean and variance are
  // recomputed from `in`, so backward needs only the stored input (as Table 2 counts).
  virtual void layernorm_backward(Tensor& d_in, Tensor& d_gamma, Tensor& d_beta, const Tensor& d_out, const Tensor& in,
                                  const Tensor& gamma, int64_t rows, int64_t cols, float eps) = 0;

  // RMSNorm (Zhang & Sennrich 2019): out (rows, cols) = x / sqrt(mean(x^2) + eps) * gamma, per row.
  virtual void rmsnorm_forward(Tensor& out, const Tensor& in, const Tensor& gamma, int64_t rows, int64_t cols,
                               float eps) = 0;
  // d_in = its input gradient; d_gamma (f32) += gamma's gradient. The rms is recomputed from `in`.
  virtual void rmsnorm_backward(Tensor& d_in, Tensor& d_gamma, const Tensor& d_out, const Tensor& in,
                                const Tensor& gamma, int64_t rows, int64_t cols, float eps) = 0;

  // Rotates the Q and K parts of qkv in place (V is left as it is).
  virtual void rope_forward(Tensor& qkv, const RopeDims& dims) = 0;
  // The gradient through the rotation, in place on the Q and K parts of d_qkv: the inverse rotation.
  virtual void rope_backward(Tensor& d_qkv, const RopeDims& dims) = 0;

  // SwiGLU (Shazeer 2020): in (rows, 2 cols) is [gate | up] per row, out (rows, cols) = silu(gate) * up.
  virtual void swiglu_forward(Tensor& out, const Tensor& in, int64_t rows, int64_t cols) = 0;
  // d_in (rows, 2 cols) = [d gate | d up] from d_out (rows, cols); d_in must not alias d_out.
  virtual void swiglu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t rows, int64_t cols) = 0;

  // GeLU, tanh approximation (GPT-2/Megatron), elementwise over n elements.
  virtual void gelu_forward(Tensor& out, const Tensor& in, int64_t n) = 0;
  virtual void gelu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t n) = 0;

  // Squared ReLU (So et al. 2021; Nemotron-4's MLP), elementwise over n elements: out = max(in, 0)^2.
  virtual void squared_relu_forward(Tensor& out, const Tensor& in, int64_t n) = 0;
  // d_in = d_out * 2 max(in, 0); d_in may alias d_out.
  virtual void squared_relu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t n) = 0;

  // scores (f32) = Q K^T / sqrt(head_dim) for key j <= query i (the causal part; the rest is left 0).
  virtual void attention_scores_forward(Tensor& scores, const Tensor& qkv, const AttentionDims& dims) = 0;
  // d_qkv's Q and K parts = the gradients of the scores (dK summed over the heads of its group); its V part is
  // left unchanged.
  virtual void attention_scores_backward(Tensor& d_qkv, const Tensor& d_scores, const Tensor& qkv,
                                         const AttentionDims& dims) = 0;
  // Softmax of each row of `rows` rows of seq scores over keys j <= i, i = row % seq; 0 above the diagonal.
  virtual void causal_softmax_forward(Tensor& probs, const Tensor& scores, int64_t rows, int64_t seq) = 0;
  virtual void causal_softmax_backward(Tensor& d_scores, const Tensor& d_probs, const Tensor& probs, int64_t rows,
                                       int64_t seq) = 0;
  // context (seq, batch, heads * head_dim) = probs V.
  virtual void attention_context_forward(Tensor& context, const Tensor& probs, const Tensor& qkv,
                                         const AttentionDims& dims) = 0;
  // d_probs (f32) and the V part of d_qkv (summed over the heads of each group) from the context gradient.
  virtual void attention_context_backward(Tensor& d_probs, Tensor& d_qkv, const Tensor& d_context, const Tensor& probs,
                                          const Tensor& qkv, const AttentionDims& dims) = 0;

  // Fused attention core (FlashAttention-2's algorithm, Dao 2023; `--attention flash`): context =
  // dropout(causal_softmax(Q K^T / sqrt(head_dim))) V, computed over query tiles x key tiles of
  // fused_attention_tile_tokens() with an online softmax, never materialising a (seq, seq) tensor. Also writes
  // lse (f32, (batch, heads, seq)): the log-sum-exp of each scaled causal score row, and rng_state (16 bytes,
  // FlashAttention's (seed, offset)): the dropout key and the logical position of this rank's first (sample,
  // head) block in the (B, a, s, s) probabilities, from which backward redraws the mask. `dropout` is the
  // probabilities' site as dropout_forward takes it, so the kept elements are the unfused path's exactly.
  // REQUIRES: fused_attention_tile_tokens() > 0 (the default implementation throws).
  virtual void flash_attention_forward(Tensor& context, Tensor& lse, Tensor& rng_state, const Tensor& qkv,
                                       const AttentionDims& dims, const DropoutSite& dropout);
  // Its backward: all of d_qkv (Q, K, V parts, f32) from d_context, rebuilding P = exp(S - lse) tile by tile
  // and the dropout mask from rng_state (of `dropout`, only probability and global_dims are read).
  virtual void flash_attention_backward(Tensor& d_qkv, const Tensor& d_context, const Tensor& context,
                                        const Tensor& lse, const Tensor& rng_state, const Tensor& qkv,
                                        const AttentionDims& dims, const DropoutSite& dropout);
  // Tile edge (tokens) of this backend's fused attention kernels; 0: it has none (`--attention flash` refused).
  virtual int64_t fused_attention_tile_tokens() const { return 0; }

  // out = in * mask / (1 - p), mask (u8) = 1 where counter_uniform(key, logical position) >= p.
  virtual void dropout_forward(Tensor& out, Tensor& mask, const Tensor& in, const DropoutSite& site) = 0;
  virtual void dropout_backward(Tensor& d_in, const Tensor& d_out, const Tensor& mask, float probability) = 0;

  // Vocabulary-parallel embedding lookup: out (n, h) = table row (token - vocab_start) for tokens this rank
  // owns ([vocab_start, vocab_start + owned_rows)), 0 for the others (summed over ranks afterwards).
  virtual void embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& table, int64_t vocab_start,
                                 int64_t owned_rows, int64_t n, int64_t h) = 0;
  // d_table (f32) += the rows of d_out of the tokens this rank owns, in token order.
  virtual void embedding_backward(Tensor& d_table, const Tensor& d_out, const Tensor& tokens, int64_t vocab_start,
                                  int64_t owned_rows, int64_t n, int64_t h) = 0;

  // Fused vocabulary-parallel cross-entropy (Megatron-LM): logits (rows, cols) f32 hold this rank's vocabulary
  // slice [vocab_start, vocab_start + valid_cols) (columns past valid_cols are padding and ignored).
  // Step 1: the row maxima of the slice (then all-reduced with max over the tensor-parallel group).
  virtual void cross_entropy_local_max(Tensor& row_max, const Tensor& logits, int64_t rows, int64_t cols,
                                       int64_t valid_cols) = 0;
  // Step 2: sum of exp(logit - max) over the slice and the target's logit if this rank owns it, else 0 (both
  // then all-reduced with sum: only 2 values per token cross ranks, not the vocabulary).
  virtual void cross_entropy_local_sums(Tensor& sum_exp, Tensor& target_logit, const Tensor& logits,
                                        const Tensor& targets, const Tensor& row_max, int64_t rows, int64_t cols,
                                        int64_t valid_cols, int64_t vocab_start) = 0;
  // d_logits = scale (softmax - one_hot(target)) over the slice.
  virtual void cross_entropy_backward(Tensor& d_logits, const Tensor& logits, const Tensor& targets,
                                      const Tensor& row_max, const Tensor& sum_exp, int64_t rows, int64_t cols,
                                      int64_t valid_cols, int64_t vocab_start, float scale) = 0;

  // Mixture of experts (Megatron-Core moe/router.py and moe_utils.py). The defaults throw: a backend without
  // these kernels cannot run a MoE model (train refuses it first, backend_factory.hpp).
  // Softmax router top-k (Mixtral): probs (tokens, experts) f32 = the softmax of each logits row; indices
  // (tokens, topk) i32 = the k most probable experts in descending order (the lower index first on a tie);
  // weights (tokens, topk) f32 = their probabilities normalised to sum 1.
  virtual void router_topk_forward(Tensor& probs, Tensor& indices, Tensor& weights, const Tensor& logits,
                                   int64_t tokens, int64_t experts, int64_t topk);
  // d_logits (tokens, experts) f32 from d_weights (tokens, topk): through the normalisation and the softmax.
  virtual void router_topk_backward(Tensor& d_logits, const Tensor& d_weights, const Tensor& probs,
                                    const Tensor& indices, const Tensor& weights, int64_t tokens, int64_t experts,
                                    int64_t topk);
  // permuted (tokens x topk, h): row positions[t topk + j] = row t of in (the routed copies in expert order).
  virtual void moe_permute_forward(Tensor& permuted, const Tensor& in, const Tensor& positions, int64_t tokens,
                                   int64_t topk, int64_t h);
  // d_in (tokens, h) f32 = the sum over j = 0..topk-1, in order, of row positions[t topk + j] of d_permuted.
  virtual void moe_permute_backward(Tensor& d_in, const Tensor& d_permuted, const Tensor& positions, int64_t tokens,
                                    int64_t topk, int64_t h);
  // out (tokens, h) f32 = the sum over j, in order, of weights[t, j] x row positions[t topk + j] of expert_out.
  virtual void moe_unpermute_forward(Tensor& out, const Tensor& expert_out, const Tensor& weights,
                                     const Tensor& positions, int64_t tokens, int64_t topk, int64_t h);
  // d_expert_out row positions[t topk + j] = weights[t, j] d_out row t; d_weights[t, j] (f32) = d_out row t .
  // row positions[t topk + j] of expert_out (summed in index order).
  virtual void moe_unpermute_backward(Tensor& d_expert_out, Tensor& d_weights, const Tensor& d_out,
                                      const Tensor& expert_out, const Tensor& weights, const Tensor& positions,
                                      int64_t tokens, int64_t topk, int64_t h);

  // One Adam step (Kingma & Ba, with bias correction; decoupled weight decay) on n fp32 master weights.
  // `step` counts from 1.
  virtual void adam_step(Tensor& master, Tensor& momentum, Tensor& variance, const Tensor& grad, int64_t n,
                         const AdamHyper& hyper, int64_t step) = 0;

  // out = a + b over n elements.
  virtual void add(Tensor& out, const Tensor& a, const Tensor& b, int64_t n) = 0;
  // out (rows, cols) = in + bias (broadcast over rows); out may alias in.
  virtual void add_bias(Tensor& out, const Tensor& in, const Tensor& bias, int64_t rows, int64_t cols) = 0;
  // d_bias (f32) += the column sums of d_out (rows, cols), rows in order.
  virtual void bias_backward(Tensor& d_bias, const Tensor& d_out, int64_t rows, int64_t cols) = 0;
  // out = in converted to out's type (round to nearest even into bf16), n elements.
  virtual void copy(Tensor& out, const Tensor& in, int64_t n) = 0;
  // out (f32) += in, n elements.
  virtual void accumulate(Tensor& out, const Tensor& in, int64_t n) = 0;
  // Sets every element of t to zero.
  virtual void zero(Tensor& t) = 0;
};

// A profiler range around a scope (Backend::begin_range / end_range).
class BackendRange {
public:
  BackendRange(Backend& backend, const std::string& name) : backend_(backend) { backend_.begin_range(name); }
  ~BackendRange() { backend_.end_range(); }
  BackendRange(const BackendRange&) = delete;
  BackendRange& operator=(const BackendRange&) = delete;

private:
  Backend& backend_;
};

} // namespace gputwin::engine
