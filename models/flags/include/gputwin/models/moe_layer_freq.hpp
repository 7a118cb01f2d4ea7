#pragma once
// Megatron-LM's --moe-layer-freq (megatron/training/arguments.py moe_freq_type, TransformerConfig.moe_layer_freq):
// an integer N -- layer i has experts when i % N == 0 -- or a Python list expression of one 0 (dense) or 1 (MoE) per
// layer, built from lists, repetition and concatenation: "([0]*3+[1]*58)" (DeepSeek-V3), "([1]*3+[0]*1)*3",
// "[0,1]*24" (Llama 4 Maverick). gputwin's MoeConfig holds the patterns "the first d layers dense, then every P-th
// layer" ((layer + 1) % P == 0); others are refused.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gputwin {

// One 0/1 per layer. Throws std::invalid_argument with a one-line reason for a malformed expression, a value
// other than 0 or 1, or a pattern whose length is not `layers` (Megatron asserts it).
std::vector<int> moe_layer_pattern(const std::string& text, int64_t layers);

struct MoeLayerLayout {
  int64_t dense_first_layers = 0;
  int64_t layer_period = 1;
};

// The layout that gives exactly `pattern` (the fewest dense first layers), or nullopt when none does or no layer has
// experts.
std::optional<MoeLayerLayout> moe_layer_layout(const std::vector<int>& pattern);

} // namespace gputwin
