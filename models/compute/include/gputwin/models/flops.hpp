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
// With flash attention the fused backward recomputes Q K^T (2 B s^2 h per layer; its backward is 2.5 x the
// 4 B s^2 h forward instead of 2 x), and selective recompute recomputes nothing more:
//   none, selective  72 B L s h^2 (1 + 7s/(36h) + v/(12 h L)) = model FLOPs + 2 B L s^2 h
//   full             the full-recompute figure above + 2 B L s^2 h
// Like the model FLOPs these count the attention products densely (all s^2 scores, the paper's convention, so
// HFU compares across kernels); a causal flash kernel executes only the tiles on or below the diagonal,
// about half of the attention FLOPs (flash_attention_cost.hpp; the simulated ops carry that count).
double hardware_flops_per_iteration(const GptConfig& model, int64_t global_batch, Recompute recompute,
                                    AttentionKernel attention = AttentionKernel::Unfused);

// Model FLOPs utilisation: model FLOPs / (iteration time x GPUs x peak FLOP/s per GPU). HFU is the same ratio
// with the hardware FLOPs. REQUIRES: iteration_seconds, gpus and peak_flops_per_gpu > 0.
double flops_utilization(double flops_per_iteration, double iteration_seconds, int64_t gpus, double peak_flops_per_gpu);

} // namespace gputwin
