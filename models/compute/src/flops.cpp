#include "gputwin/models/flops.hpp"

#include "gputwin/models/flash_attention_cost.hpp"

#include <stdexcept>

namespace gputwin {

namespace {

// Forward FLOPs per token of the attention block's linears: GQA 2 (h (a d + 2 g d) + a d h) (a d = h unless the
// head size is set); MLA (Megatron-LM
// training.py num_floating_point_operations, multi_latent_attention branch) 2 (q_lora (h + a (d_nope + d_rope) + 1)
// [or h a (d_nope + d_rope) without q_lora] + kv_lora (h + a (d_nope + d_v) + 1) + h d_rope + a d_v h), the +1s
// being the q and kv norms.
double attention_linear_flops_per_token(const GptConfig& model)
{
  const double h = static_cast<double>(model.hidden), a = static_cast<double>(model.heads);
  if (!model.mla.enabled()) {
    const double kv = static_cast<double>(model.kv_dim()), q = static_cast<double>(model.attention_width());
    return 2.0 * h * (q + 2.0 * kv) + 2.0 * q * h;
  }
  const MlaConfig& m = model.mla;
  const double qk = static_cast<double>(m.qk_head_dim()), v = static_cast<double>(m.v_head_dim),
               q_lora = static_cast<double>(m.q_lora_rank), kv_lora = static_cast<double>(m.kv_lora_rank);
  const double q = m.q_lora_rank > 0 ? q_lora * (h + a * qk + 1.0) : h * a * qk;
  const double kv = kv_lora * (h + a * (static_cast<double>(m.qk_nope_head_dim) + v) + 1.0) +
                    h * static_cast<double>(m.qk_rope_head_dim);
  return 2.0 * (q + kv + a * v * h);
}

// Forward FLOPs per token of an MLP of width f: 2 (h f' + f h), f' = 2f gated.
double mlp_flops_per_token(const GptConfig& model, int64_t f)
{
  const double h = static_cast<double>(model.hidden), width = static_cast<double>(f);
  const double fc1 = model.activation == Activation::SwiGlu ? 2.0 * width : width;
  return 2.0 * (h * fc1 + width * h);
}

// Forward FLOPs per token of layer `layer`'s MLP: dense (width F), or MoE: the top-k routed experts, the shared
// experts and the router 2 h E (Megatron's count omits the router, < 0.1 % of a MoE layer).
double layer_mlp_flops_per_token(const GptConfig& model, int64_t layer)
{
  if (!model.is_moe_layer(layer))
    return mlp_flops_per_token(model, model.ffn());
  const MoeConfig& m = model.moe;
  return static_cast<double>(m.topk) * mlp_flops_per_token(model, m.expert_ffn_hidden) +
         (m.shared_width() > 0 ? mlp_flops_per_token(model, m.shared_width()) : 0.0) +
         2.0 * static_cast<double>(model.hidden) * static_cast<double>(m.experts);
}

// Forward FLOPs of the attention core for B samples, dense (no causal halving): 2 B s^2 a (d_qk + d_v) = 4 B s^2 hc.
double attention_core_forward_flops(const GptConfig& model, int64_t samples)
{
  const double B = static_cast<double>(samples), s = static_cast<double>(model.seq_len);
  return 4.0 * B * s * s * attention_core_width(model);
}

// Forward FLOPs of every transformer layer and the MTP modules (each a layer like the last one, DeepSeek-V3, plus
// eh_proj 2h -> h), for B samples.
double all_layers_forward_flops(const GptConfig& model, int64_t samples)
{
  double total = 0;
  for (int64_t l = 0; l < model.layers; ++l)
    total += layer_forward_flops(model, samples, l);
  const double B = static_cast<double>(samples), s = static_cast<double>(model.seq_len),
               h = static_cast<double>(model.hidden);
  const double mtp = static_cast<double>(model.moe.mtp_layers);
  return total + mtp * (layer_forward_flops(model, samples, model.layers - 1) + 2.0 * B * s * 2.0 * h * h);
}

// The share of the dense s^2 attention core a causal fused kernel computes: its tiles on or below the diagonal, or
// on one context-parallel rank half of its load-balanced share.
double fused_core_fraction(const GptConfig& model, int64_t cp)
{
  return cp > 1 ? 0.5 : causal_tile_fraction(model.seq_len, flash_tile_tokens);
}

bool uniform_layers(const GptConfig& model)
{
  return !model.moe.enabled() && !model.mla.enabled();
}

} // namespace

double attention_core_width(const GptConfig& model)
{
  if (!model.mla.enabled())
    return static_cast<double>(model.heads * model.head_dim());
  return static_cast<double>(model.heads) *
         static_cast<double>(model.mla.qk_head_dim() + model.mla.v_head_dim) / 2.0;
}

double layer_forward_flops(const GptConfig& model, int64_t samples)
{
  const double B = static_cast<double>(samples), s = static_cast<double>(model.seq_len),
               h = static_cast<double>(model.hidden), kv = static_cast<double>(model.kv_dim()),
               fc1 = static_cast<double>(model.fc1_width()), f = static_cast<double>(model.ffn()),
               q = static_cast<double>(model.attention_width()); // a d: h unless the head size is set
  if (!uniform_layers(model))
    return B * s * (attention_linear_flops_per_token(model) + mlp_flops_per_token(model, model.ffn())) +
           attention_core_forward_flops(model, samples);
  const double linears = 2.0 * h * (q + 2.0 * kv) + 2.0 * q * h + 2.0 * h * fc1 + 2.0 * f * h; // per token
  return B * s * linears + 4.0 * B * s * s * q;
}

double layer_forward_flops(const GptConfig& model, int64_t samples, int64_t layer)
{
  if (!model.is_moe_layer(layer))
    return layer_forward_flops(model, samples);
  const double B = static_cast<double>(samples), s = static_cast<double>(model.seq_len);
  return B * s * (attention_linear_flops_per_token(model) + layer_mlp_flops_per_token(model, layer)) +
         attention_core_forward_flops(model, samples);
}

double logits_forward_flops(const GptConfig& model, int64_t samples)
{
  const double B = static_cast<double>(samples), s = static_cast<double>(model.seq_len),
               h = static_cast<double>(model.hidden), v = static_cast<double>(model.vocab);
  return 2.0 * B * s * h * v;
}

double model_flops_per_iteration(const GptConfig& model, int64_t global_batch)
{
  // Forward + backward = 3 x forward, for every layer and the logits (once more per MTP module).
  if (!uniform_layers(model))
    return 3.0 * (all_layers_forward_flops(model, global_batch) +
                  (1.0 + static_cast<double>(model.moe.mtp_layers)) * logits_forward_flops(model, global_batch));
  const double L = static_cast<double>(model.layers);
  return 3.0 * (L * layer_forward_flops(model, global_batch) + logits_forward_flops(model, global_batch));
}

double hardware_flops_per_iteration(const GptConfig& model, int64_t global_batch, Recompute recompute,
                                    AttentionKernel attention, int64_t cp)
{
  // Transformer layers whose attention core and forward the formulas below count: the MTP modules' too.
  const double L = static_cast<double>(model.layers + model.moe.mtp_layers);
  const double model_flops = model_flops_per_iteration(model, global_batch);
  const double layers_forward = uniform_layers(model) ? L * layer_forward_flops(model, global_batch)
                                                      : all_layers_forward_flops(model, global_batch);
  const double B = static_cast<double>(global_batch), s = static_cast<double>(model.seq_len),
               h = attention_core_width(model);
  if (attention == AttentionKernel::Flash) {
    // The dense attention core the model FLOPs count (forward 4 B s^2 h per layer, backward twice that), and
    // what the causal fused kernels execute of it: forward 2 products, backward 5 (Q K^T again inside it),
    // each over the computed tile fraction (one context-parallel rank: half of its load-balanced share).
    const double dense_core = 12.0 * B * L * s * s * h;
    const double fraction = fused_core_fraction(model, cp);
    const double executed_core = 14.0 * B * L * s * s * h * fraction;
    const double skipped = 4.0 * B * s * s * h * (1.0 - fraction); // per layer, of the rerun forward's core
    double rerun = 0.0;
    if (recompute == Recompute::Full)
      rerun = uniform_layers(model) ? L * (layer_forward_flops(model, global_batch) - skipped)
                                    : layers_forward - L * skipped;
    return model_flops - dense_core + executed_core + rerun;
  }
  switch (recompute) {
  case Recompute::None: return model_flops;
  case Recompute::Selective: return model_flops + 12.0 * B * L * s * s * h; // Appendix A: s/(6h) becomes s/(3h)
  case Recompute::Full: return model_flops + layers_forward;
  }
  return model_flops;
}

RecomputeModuleFlops recompute_module_flops(const GptConfig& model, int64_t global_batch, const ParallelPlan& plan)
{
  RecomputeModuleFlops r;
  if (plan.recompute != Recompute::Selective || plan.recompute_modules.empty())
    return r;
  const double B = static_cast<double>(global_batch), s = static_cast<double>(model.seq_len);
  const double tokens = B * s;
  double linear_per_token = 0; // summed over the layers
  double core = 0;
  const auto layer = [&](int64_t l) {
    if (recomputes(plan, RecomputeModule::CoreAttn)) {
      const double fraction = plan.attention == AttentionKernel::Flash ? fused_core_fraction(model, plan.cp) : 1.0;
      core += attention_core_forward_flops(model, global_batch) * fraction;
    }
    if (model.mla.enabled() && recomputes(plan, RecomputeModule::MlaUpProj)) {
      const MlaConfig& m = model.mla;
      const double a = static_cast<double>(model.heads);
      const double q = m.q_lora_rank > 0 ? static_cast<double>(m.q_lora_rank) * a * static_cast<double>(m.qk_head_dim())
                                         : static_cast<double>(model.hidden) * a * static_cast<double>(m.qk_head_dim());
      linear_per_token += 2.0 * (q + static_cast<double>(m.kv_lora_rank) * a *
                                         static_cast<double>(m.qk_nope_head_dim + m.v_head_dim));
    }
    if (!model.is_moe_layer(l)) {
      if (recomputes(plan, RecomputeModule::Mlp))
        linear_per_token += mlp_flops_per_token(model, model.ffn());
    } else if (recomputes(plan, RecomputeModule::Moe)) {
      linear_per_token += layer_mlp_flops_per_token(model, l);
    } else if (model.moe.shared_width() > 0 && recomputes(plan, RecomputeModule::SharedExperts)) {
      linear_per_token += mlp_flops_per_token(model, model.moe.shared_width());
    }
  };
  for (int64_t l = 0; l < model.layers; ++l)
    layer(l);
  for (int64_t i = 0; i < model.moe.mtp_layers; ++i)
    layer(model.layers - 1);
  r.linear = tokens * linear_per_token;
  r.total = r.linear + core;
  return r;
}

double linear_flops_per_iteration(const GptConfig& model, int64_t global_batch, Recompute recompute)
{
  const double B = static_cast<double>(global_batch), s = static_cast<double>(model.seq_len),
               h = attention_core_width(model);
  const double L = static_cast<double>(model.layers + model.moe.mtp_layers);
  const double layers_forward = uniform_layers(model) ? L * layer_forward_flops(model, global_batch)
                                                      : all_layers_forward_flops(model, global_batch);
  const double linear_forward = uniform_layers(model)
                                    ? L * (layer_forward_flops(model, global_batch) - 4.0 * B * s * s * h)
                                    : layers_forward - L * 4.0 * B * s * s * h;
  return linear_forward * (recompute == Recompute::Full ? 4.0 : 3.0);
}

double flops_utilization(double flops_per_iteration, double iteration_seconds, int64_t gpus, double peak_flops_per_gpu)
{
  if (iteration_seconds <= 0 || gpus <= 0 || peak_flops_per_gpu <= 0)
    throw std::invalid_argument("flops_utilization: time, GPUs and peak must be positive");
  return flops_per_iteration / (iteration_seconds * static_cast<double>(gpus) * peak_flops_per_gpu);
}

} // namespace gputwin
