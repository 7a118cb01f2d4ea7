#pragma once
// The shape of a GPT model: what every memory, FLOPs and workload formula is a function of.

#include <cstdint>
#include <string>

namespace gputwin {

// Notation of Korthikanti et al. 2022: h = hidden, a = heads, L = layers, s = seq_len, v = vocab.
struct GptConfig {
  std::string name;
  int64_t hidden = 0;  // h
  int64_t heads = 0;   // a
  int64_t layers = 0;  // L
  int64_t seq_len = 0; // s, tokens per sample
  int64_t vocab = 0;   // v, before padding for the vocabulary-parallel split

  int64_t head_dim() const { return hidden / heads; }
};

// Throws InputError naming the offending flag (`--hidden`, ...) if a size is not positive or the hidden
// size does not split evenly into heads.
void validate_model(const GptConfig& model);

} // namespace gputwin
