#include "gputwin/models/flops.hpp"

#include "gputwin/models/flash_attention_cost.hpp"

#include <stdexcept>

namespace gputwin {

double layer_forward_flops(const GptConfig& model, int64_t samples)
{
  const double B = static_cast<double>(samples), s = static_cast<double>(model.seq_len),
               h = static_cast<double>(model.hidden), kv = static_cast<double>(model.kv_dim()),
               fc1 = static_cast<double>(model.fc1_width()), f = static_cast<double>(model.ffn());
  const double linears = 2.0 * h * (h + 2.0 * kv) + 2.0 * h * h + 2.0 * h * fc1 + 2.0 * f * h; // per token
  return B * s * linears + 4.0 * B * s * s * h;
}

double logits_forward_flops(const GptConfig& model, int64_t samples)
{
  const double B = static_cast<double>(samples), s = static_cast<double>(model.seq_len),
               h = static_cast<double>(model.hidden), v = static_cast<double>(model.vocab);
  return 2.0 * B * s * h * v;
}

double model_flops_per_iteration(const GptConfig& model, int64_t global_batch)
{
  // Forward + backward = 3 x forward, for every layer and the logits.
  const double L = static_cast<double>(model.layers);
  return 3.0 * (L * layer_forward_flops(model, global_batch) + logits_forward_flops(model, global_batch));
}

double hardware_flops_per_iteration(const GptConfig& model, int64_t global_batch, Recompute recompute,
                                    AttentionKernel attention, int64_t cp)
{
  const double L = static_cast<double>(model.layers);
  const double model_flops = model_flops_per_iteration(model, global_batch);
  if (attention == AttentionKernel::Flash) {
    const double B = static_cast<double>(global_batch), s = static_cast<double>(model.seq_len),
                 h = static_cast<double>(model.heads * model.head_dim());
    // The dense attention core the model FLOPs count (forward 4 B s^2 h per layer, backward twice that), and
    // what the causal fused kernels execute of it: forward 2 products, backward 5 (Q K^T again inside it),
    // each over the computed tile fraction (one context-parallel rank: half of its load-balanced share).
    const double dense_core = 12.0 * B * L * s * s * h;
    const double fraction = cp > 1 ? 0.5 : causal_tile_fraction(model.seq_len, flash_tile_tokens);
    const double executed_core = 14.0 * B * L * s * s * h * fraction;
    const double rerun = recompute == Recompute::Full
                             ? L * (layer_forward_flops(model, global_batch) - 4.0 * B * s * s * h * (1.0 - fraction))
                             : 0.0;
    return model_flops - dense_core + executed_core + rerun;
  }
  switch (recompute) {
  case Recompute::None: return model_flops;
  case Recompute::Selective: {
    const double B = static_cast<double>(global_batch), s = static_cast<double>(model.seq_len),
                 h = static_cast<double>(model.hidden);
    return model_flops + 12.0 * B * L * s * s * h; // Appendix A: s/(6h) becomes s/(3h)
  }
  case Recompute::Full: return model_flops + L * layer_forward_flops(model, global_batch);
  }
  return model_flops;
}

double linear_flops_per_iteration(const GptConfig& model, int64_t global_batch, Recompute recompute)
{
  const double B = static_cast<double>(global_batch), s = static_cast<double>(model.seq_len),
               h = static_cast<double>(model.heads * model.head_dim());
  const double linear_forward = static_cast<double>(model.layers) * (layer_forward_flops(model, global_batch) - 4.0 * B * s * s * h);
  return linear_forward * (recompute == Recompute::Full ? 4.0 : 3.0);
}

double flops_utilization(double flops_per_iteration, double iteration_seconds, int64_t gpus, double peak_flops_per_gpu)
{
  if (iteration_seconds <= 0 || gpus <= 0 || peak_flops_per_gpu <= 0)
    throw std::invalid_argument("flops_utilization: time, GPUs and peak must be positive");
  return flops_per_iteration / (iteration_seconds * static_cast<double>(gpus) * peak_flops_per_gpu);
}

} // namespace gputwin
