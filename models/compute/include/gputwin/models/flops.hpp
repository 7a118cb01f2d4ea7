#pragma once
// FLOPs of a GPT training iteration and the utilisation figures derived from them
// (Korthikanti et al. 2022, Appendix A; Narayanan et al. 2021, Section 5.1).

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <cstdint>

namespace gputwin {

// Forward FLOPs of one transformer layer for B samples: the four linears, 2 B s (h (a d + 2 g d) + a d h + h F' +
// F h) (F' = F, or 2F with SwiGLU), + 4 B s^2 a d (Q K^T and attention over V, dense); a d = h unless the head size
// is set (GptConfig::head_size: Qwen3, gpt-oss). The paper's GPT: 24 B s h^2 + 4 B s^2 h.
// With MLA (model.mla) the attention linears are Megatron's MLA count (flops.cpp) and the core 4 B s^2 hc; for a
// MoE model this is one of its dense layers (MLP of width F).
double layer_forward_flops(const GptConfig& model, int64_t samples);

// Forward FLOPs of transformer layer `layer` (global index) for B samples: a dense layer as above, or a MoE layer
// with its MLP replaced by the top-k routed experts 2 k (h F_e' + F_e h), the shared experts 2 (h F_s' + F_s h)
// and the router 2 h E per token (Megatron-LM megatron/training/training.py num_floating_point_operations, NVIDIA/
// Megatron-LM d98e8a6, counts the same experts at top-k and omits the router).
double layer_forward_flops(const GptConfig& model, int64_t samples, int64_t layer);

// The width hc of the attention core: Q K^T and attention over V take 4 B s^2 hc forward (dense). MHA/GQA: a d;
// MLA: a (d_nope + d_rope + d_v) / 2 (Q K^T over d_nope + d_rope, the values d_v wide).
double attention_core_width(const GptConfig& model);

// Forward FLOPs of the output layer (logits) for B samples: 2 B s h v.
double logits_forward_flops(const GptConfig& model, int64_t samples);

// Model FLOPs per iteration of `global_batch` samples: forward + backward (= 2 x forward) of every layer and
// the logits, 72 B L s h^2 (1 + s/(6h) + v/(12 h L)). Independent of how the work is executed. Mixture of experts
// and MLA: every layer by layer_forward_flops(model, B, layer); each MTP module (DeepSeek-V3) adds a layer like
// the last one, its eh_proj 2h -> h and another logits, as Megatron's num_floating_point_operations counts them.
// The attention core stays dense (s^2, not halved for the causal mask as Megatron-Core now counts it, see below).
double model_flops_per_iteration(const GptConfig& model, int64_t global_batch);

// FLOPs the hardware executes, including recompute, with the unfused attention core:
//   none       the model FLOPs;
//   selective  72 B L s h^2 (1 + s/(3h) + v/(12 h L)) as the paper's Appendix A states it (it counts the
//              recomputed attention core as 12 B L s^2 h, three times that core's 4 B s^2 h forward
//              per layer; kept so MFU/HFU compare with the paper's Table 5);
//   full       96 B L s h^2 (1 + s/(6h) + v/(16 h L)): every layer's forward runs twice.
// With flash attention these are the FLOPs the causal fused kernels execute (what the simulated ops carry,
// flash_attention_cost.hpp): the dense core of the model FLOPs (12 B L s^2 h) is replaced by forward 2 and
// backward 5 products (Q K^T again inside the fused backward) over the computed tile fraction f,
// 14 B L s^2 h f, f = nb (nb + 1) / (2 nb^2) with 128-token tiles, or 1/2 with context parallelism (cp > 1:
// the load-balanced ring's share); selective recompute recomputes nothing more, full recompute reruns each
// layer's forward with its core at f. So HFU <= 100% whenever no op runs above peak.
// MFU's model FLOPs keep the dense s^2 convention of Korthikanti et al. 2022 and Narayanan et al. 2021 (the
// paper tables and Megatron-LM 2022's throughput report); Megatron-Core's num_floating_point_operations
// (megatron/training/training.py) has since halved the core for the causal mask, so at long sequences the
// same run reads a lower MFU there.
double hardware_flops_per_iteration(const GptConfig& model, int64_t global_batch, Recompute recompute,
                                    AttentionKernel attention = AttentionKernel::Unfused, int64_t cp = 1);

// What Megatron-Core's --recompute-modules (ParallelPlan::recompute_modules) rerun on top of
// hardware_flops_per_iteration(model, B, Recompute::None, ...), for B samples over every layer (the MTP modules'
// as the last layer's): core_attn the attention core's forward as executed (unfused 4 B s^2 hc, fused at the
// causal tile fraction), mla_up_proj the q and kv up projections 2 B s (q_lora a d_qk + kv_lora a (d_nope + d_v)),
// mlp the dense layers' MLP forward, moe the MoE layers' (top-k experts, shared experts, router), shared_experts
// the shared experts' forward; layernorm and moe_act are elementwise (no FLOPs counted). `linear`: the part in
// linear-layer GEMMs (run at the plan's precision). Zero when no modules are listed.
struct RecomputeModuleFlops {
  double total = 0;
  double linear = 0;
};
RecomputeModuleFlops recompute_module_flops(const GptConfig& model, int64_t global_batch, const ParallelPlan& plan);

// The part of the hardware FLOPs in the transformer layers' linear GEMMs (QKV, projection, MLP; forward,
// dgrad, wgrad, and the forward rerun of full recompute): what Transformer Engine runs in FP8 with --fp8 (the
// attention core and the logits stay BF16).
double linear_flops_per_iteration(const GptConfig& model, int64_t global_batch, Recompute recompute);

// Model FLOPs utilisation: model FLOPs / (iteration time x GPUs x peak FLOP/s per GPU). HFU is the same ratio
// with the hardware FLOPs. REQUIRES: iteration_seconds, gpus and peak_flops_per_gpu > 0.
double flops_utilization(double flops_per_iteration, double iteration_seconds, int64_t gpus, double peak_flops_per_gpu);

} // namespace gputwin
