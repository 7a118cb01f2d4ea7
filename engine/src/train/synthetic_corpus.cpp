#include "gputwin/engine/train/synthetic_corpus.hpp"

#include "gputwin/engine/backend/counter_rng.hpp"

#include <cmath>

namespace gputwin::engine {

namespace {
constexpr float successor_probability[4] = {0.60f, 0.25f, 0.10f, 0.05f};
}

SyntheticCorpus::SyntheticCorpus(int64_t vocab, uint64_t seed) : vocab_(vocab), seed_(seed)
{
  successors_.resize(static_cast<size_t>(vocab * 4));
  for (int64_t t = 0; t < vocab; ++t)
    for (int64_t k = 0; k < 4; ++k)
      successors_[static_cast<size_t>(t * 4 + k)] = static_cast<int32_t>(
          mix64(mix64(seed ^ 0x636f72707573ull) ^ static_cast<uint64_t>(t * 4 + k)) % static_cast<uint64_t>(vocab));
}

int32_t SyntheticCorpus::successor(int32_t token, float u) const
{
  float cumulative = 0;
  for (int64_t k = 0; k < 4; ++k) {
    cumulative += successor_probability[k];
    if (u < cumulative || k == 3)
      return successors_[static_cast<size_t>(token * 4 + k)];
  }
  return 0;
}

std::vector<int32_t> SyntheticCorpus::sample(int64_t sample, int64_t length) const
{
  const uint64_t key = mix64(mix64(seed_ ^ 0x73616d706c65ull) ^ static_cast<uint64_t>(sample));
  std::vector<int32_t> tokens(static_cast<size_t>(length));
  tokens[0] = static_cast<int32_t>(mix64(key) % static_cast<uint64_t>(vocab_));
  for (int64_t i = 1; i < length; ++i)
    tokens[static_cast<size_t>(i)] =
        successor(tokens[static_cast<size_t>(i - 1)], counter_uniform(key, static_cast<uint64_t>(i)));
  return tokens;
}

double SyntheticCorpus::entropy_nats()
{
  double h = 0;
  for (const float p : successor_probability)
    h -= static_cast<double>(p) * std::log(static_cast<double>(p));
  return h;
}

} // namespace gputwin::engine
