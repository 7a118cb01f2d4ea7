#include "gputwin/engine/model/norm.hpp"

namespace gputwin::engine {

NormParameters NormParameters::declare(const RankContext& ctx, ParameterStore& store, const std::string& prefix)
{
  const Sharding replicated{-1, 1};
  NormParameters n;
  n.gamma = &store.add(ctx, ParameterSpec{prefix + ".gamma", 1, ctx.hidden(), replicated, ParameterInit::Ones, true});
  if (ctx.model.norm == Norm::LayerNorm)
    n.beta = &store.add(ctx, ParameterSpec{prefix + ".beta", 1, ctx.hidden(), replicated, ParameterInit::Zeros, true});
  return n;
}

void NormParameters::forward(RankContext& ctx, Tensor& out, const Tensor& in, int64_t rows) const
{
  const float eps = ctx.options.layernorm_epsilon;
  if (beta)
    ctx.backend.layernorm_forward(out, in, gamma->weight, beta->weight, rows, ctx.hidden(), eps);
  else
    ctx.backend.rmsnorm_forward(out, in, gamma->weight, rows, ctx.hidden(), eps);
}

void NormParameters::backward(RankContext& ctx, Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t rows) const
{
  const float eps = ctx.options.layernorm_epsilon;
  if (beta)
    ctx.backend.layernorm_backward(d_in, gamma->grad, beta->grad, d_out, in, gamma->weight, rows, ctx.hidden(), eps);
  else
    ctx.backend.rmsnorm_backward(d_in, gamma->grad, d_out, in, gamma->weight, rows, ctx.hidden(), eps);
}

} // namespace gputwin::engine
