#pragma once
// FLOPs of a GPT training iteration and the utilisation figures derived from them
// (Korthikanti et al. 2022, Appendix A; Narayanan et al. 2021, Section 5.1).

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <cstdint>

namespace gputwin {

// Forward FLOPs of one transformer layer for B samples: the four linears, 2 B s (h (h + 2 g d) + h^2 + h F' + F h)
// (F' = F, or 2F with SwiGLU), + 4 B s^2 h (Q K^T and attention over V, dense). The paper's GPT: 24 B s h^2 +
// 4 B s^2 h.
double layer_forward_flops(const GptConfig& model, int64_t samples);

// Forward FLOPs of the output layer (logits) for B samples: 2 B s h v.
double logits_forward_flops(const GptConfig& model, int64_t samples);

// Model FLOPs per iteration of `global_batch` samples: forward + backward (= 2 x forward) of every layer and
// the logits, 72 B L s h^2 (1 + s/(6h) + v/(12 h L)). Independent of how the work is executed.
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

// The part of the hardware FLOPs in the transformer layers' linear GEMMs (QKV, projection, MLP; forward,
// dgrad, wgrad, and the forward rerun of full recompute): what Transformer Engine runs in FP8 with --fp8 (the
// attention core and the logits stay BF16).
double linear_flops_per_iteration(const GptConfig& model, int64_t global_batch, Recompute recompute);

// Model FLOPs utilisation: model FLOPs / (iteration time x GPUs x peak FLOP/s per GPU). HFU is the same ratio
// with the hardware FLOPs. REQUIRES: iteration_seconds, gpus and peak_flops_per_gpu > 0.
double flops_utilization(double flops_per_iteration, double iteration_seconds, int64_t gpus, double peak_flops_per_gpu);

} // namespace gputwin
