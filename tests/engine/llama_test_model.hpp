#pragma once
// The Llama-style layers the engine tests put on their tiny GPTs: grouped-query attention (2 K/V groups), SwiGLU
// of a given width, RMSNorm, rotary positions, no biases, no dropout, an untied output layer.
#include "gputwin/models/gpt_config.hpp"

#include <cstdint>

namespace gputwin {

inline GptConfig with_llama_layers(GptConfig m, int64_t ffn_hidden)
{
  m.query_groups = 2;
  m.ffn_hidden = ffn_hidden;
  m.activation = Activation::SwiGlu;
  m.norm = Norm::RmsNorm;
  m.position = PositionEmbedding::Rope;
  m.tie_embeddings = false;
  m.bias = false;
  m.dropout = false;
  return m;
}

} // namespace gputwin
