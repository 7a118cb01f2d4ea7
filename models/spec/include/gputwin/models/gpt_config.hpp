#pragma once
// The shape of a decoder-only transformer: what every memory, FLOPs and workload formula is a function of.
// The defaults are the 2022 paper's GPT (multi-head attention, 4h GeLU MLP, LayerNorm, learned positions,
// tied embeddings, biases, dropout); the architecture fields express Llama-style models on top.

#include "gputwin/models/moe_config.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace gputwin {

enum class Activation {
  Gelu,   // fc1 h -> F, GeLU, fc2 F -> h
  SwiGlu, // fc1 h -> 2F (gate and up projections), silu(gate) * up, fc2 F -> h (Shazeer 2020)
  SquaredRelu, // fc1 h -> F, relu(x)^2, fc2 F -> h (So et al. 2021, "Primer"; Nemotron-4)
};
enum class Norm {
  LayerNorm, // (x - mean) / std * gamma + beta
  RmsNorm,   // x / rms(x) * gamma (Zhang & Sennrich 2019): no mean, no beta
};
enum class PositionEmbedding {
  Learned, // an s x h table added to the word embedding
  Rope,    // rotary embedding applied to Q and K in every layer (Su et al. 2021): no parameters
};

// Notation of Korthikanti et al. 2022: h = hidden, a = heads, L = layers, s = seq_len, v = vocab; g = query
// groups (K/V heads), F = MLP width.
struct GptConfig {
  std::string name;
  int64_t hidden = 0;  // h
  int64_t heads = 0;   // a
  int64_t layers = 0;  // L
  int64_t seq_len = 0; // s, tokens per sample
  int64_t vocab = 0;   // v, before padding for the vocabulary-parallel split
  // Architecture (defaults: the paper's GPT).
  int64_t query_groups = 0; // g, K/V heads (grouped-query attention); 0: g = a (multi-head attention)
  int64_t ffn_hidden = 0;   // F, MLP width; 0: 4h
  int64_t head_size = 0;    // d, width of one attention head; 0: h / a (Qwen3: 128 with h 4096, a 64; gpt-oss: 64)
  Activation activation = Activation::Gelu;
  Norm norm = Norm::LayerNorm;
  PositionEmbedding position = PositionEmbedding::Learned;
  bool tie_embeddings = true; // the output layer reuses the word embedding
  bool bias = true;           // linear layers have biases
  bool dropout = true;        // hidden and attention dropout (GPT-3: p = 0.1); Llama trains without
  MoeConfig moe{};            // mixture of experts (moe_config.hpp); experts = 0: every MLP dense
  MlaConfig mla{};            // multi-head latent attention; kv_lora_rank = 0: MHA/GQA

  int64_t head_dim() const { return head_size > 0 ? head_size : hidden / heads; }
  // Width of the attention's queries (and of the output projection's input): a d, = h unless head_size is set.
  int64_t attention_width() const { return heads * head_dim(); }
  int64_t kv_heads() const { return query_groups > 0 ? query_groups : heads; }
  int64_t kv_dim() const { return kv_heads() * head_dim(); } // width of K (and of V)
  int64_t ffn() const { return ffn_hidden > 0 ? ffn_hidden : 4 * hidden; }
  // Output width of the first MLP linear: F, or 2F for the gated SwiGLU.
  int64_t fc1_width() const { return activation == Activation::SwiGlu ? 2 * ffn() : ffn(); }
  // Whether transformer layer `layer` (global index) has a MoE MLP (moe_config.hpp: dense first layers, period).
  bool is_moe_layer(int64_t layer) const
  {
    return moe.enabled() && layer >= moe.dense_first_layers && (layer + 1) % moe.layer_period == 0;
  }
  int64_t moe_layer_count() const; // layers with a MoE MLP
  bool gpt_architecture() const
  {
    return !moe.enabled() && !mla.enabled() && head_size == 0 && query_groups == 0 && ffn_hidden == 0 && activation == Activation::Gelu && norm == Norm::LayerNorm &&
           position == PositionEmbedding::Learned && tie_embeddings && bias && dropout;
  }
};

std::string to_string(Activation a);        // "gelu", "swiglu", "squared-relu"
std::string to_string(Norm n);              // "layernorm", "rmsnorm"
std::string to_string(PositionEmbedding p); // "learned", "rope"
std::optional<Activation> parse_activation(const std::string& text);
std::optional<Norm> parse_norm(const std::string& text);
std::optional<PositionEmbedding> parse_position(const std::string& text);

// Throws InputError naming the offending flag (`--hidden`, `--num-query-groups`, ...) if a size is not positive,
// the hidden size does not split evenly into heads, or the heads do not split evenly into query groups.
void validate_model(const GptConfig& model);

} // namespace gputwin
