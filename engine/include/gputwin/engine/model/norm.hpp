#pragma once
// The model's normalisation, LayerNorm (gamma, beta) or RMSNorm (gamma only; GptConfig::norm), as one
// parameter pair and the two calls every norm site (ln1, ln2, the final norm) makes. Its ops keep the
// vocabulary's ln*.fwd/bwd names at the vocabulary's cost of the configured norm.

#include "gputwin/engine/model/parameter_store.hpp"

namespace gputwin::engine {

struct NormParameters {
  Parameter* gamma = nullptr;
  Parameter* beta = nullptr; // LayerNorm only

  // Declares `prefix`.gamma (and `prefix`.beta with LayerNorm): replicated over tp, partial under SP.
  static NormParameters declare(const RankContext& ctx, ParameterStore& store, const std::string& prefix);

  // out (rows, h) = norm(in).
  void forward(RankContext& ctx, Tensor& out, const Tensor& in, int64_t rows) const;
  // d_in (rows, h) from d_out and the stored input; accumulates gamma's (and beta's) gradients.
  void backward(RankContext& ctx, Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t rows) const;
};

} // namespace gputwin::engine
