#pragma once
// The training data: a synthetic language generated deterministically from a seed, with learnable
// structure. Each token has four possible successors (chosen by a hash of the seed and the token) with
// probabilities 0.60, 0.25, 0.10 and 0.05, so a model that learns the transitions reaches about 1.07 nats
// per token from ln(v) at initialisation. Sample k is a pure function of (seed, k): every parallel plan
// trains on the same tokens.

#include <cstdint>
#include <vector>

namespace gputwin::engine {

class SyntheticCorpus {
public:
  SyntheticCorpus(int64_t vocab, uint64_t seed);

  // The tokens of sample `sample` (counted over the whole run): `length` ids in [0, vocab).
  std::vector<int32_t> sample(int64_t sample, int64_t length) const;
  // The successor of `token` that a uniform number `u` in [0, 1) selects.
  int32_t successor(int32_t token, float u) const;
  // Entropy of the next token given the current one, nats: the best loss a model can reach.
  static double entropy_nats();

private:
  int64_t vocab_;
  uint64_t seed_;
  std::vector<int32_t> successors_; // vocab x 4
};

} // namespace gputwin::engine
