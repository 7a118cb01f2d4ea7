#pragma once
// HuggingFace transformers model configurations (a checkpoint's config.json) as gputwin models:
//
//   {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_attention_heads": 32,
//    "num_key_value_heads": 8, "num_hidden_layers": 32, "intermediate_size": 14336, "vocab_size": 128256,
//    "max_position_embeddings": 8192, "hidden_act": "silu", "tie_word_embeddings": false, ...}
//
// The architecture ("architectures"[0]) picks the reader, one per architecture, each field by field: the dense
// Llama-style decoders (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM: gated SiLU MLP,
// RMSNorm, RoPE) and the mixtures of experts built on them (MixtralForCausalLM, Qwen2MoeForCausalLM,
// Qwen3MoeForCausalLM, DeepseekV2/V3ForCausalLM with multi-head latent attention, GptOssForCausalLM) into
// GptConfig::moe and ::mla. What gputwin approximates (sliding windows timed as full attention, GPT-OSS's attention
// sinks, Qwen's q/k/v biases and query/key norms) is named in the notes.

#include "gputwin/models/gpt_config.hpp"

#include <string>
#include <vector>

namespace gputwin::config {

struct HfModel {
  GptConfig model;                // named after the file (its name without the extension)
  std::vector<std::string> notes; // what the model approximates ("FILE: field: ..."), for the user
};

// Reads the config.json at `path`: seq_len is max_position_embeddings (a --seq-len flag overrides it later).
// Throws InputError "FILE:LINE:COLUMN: field: expected ..." for a missing or mistyped field, an architecture that
// is not supported (naming "architectures" and listing the supported ones), and a field gputwin cannot express (head_dim other than hidden / heads, biases on only some
// linear layers, attention dropout without hidden dropout, an MLP activation other than SiLU).
HfModel load_hf_config(const std::string& path);

// The architectures load_hf_config reads, comma-separated ("LlamaForCausalLM, MistralForCausalLM, ...").
std::string supported_hf_architectures();

} // namespace gputwin::config
