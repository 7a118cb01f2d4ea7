// Megatron-Core + Transformer Engine model state and transients, each term by hand from the source it cites
// (models/memory/include/gputwin/models/model_state_memory.hpp, activation_memory.hpp, memory_report.hpp).
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/parameter_count.hpp"

#include <gtest/gtest.h>

namespace gputwin {
namespace {

// Llama 3 8B at tp 1, one stage: 32 layers of 218,112,000 parameters (h 4096, g d 1024, F 14336, SwiGLU,
// RMSNorm), embedding and untied output 2 x 128256 x 4096.
ParallelPlan eight_b_plan()
{
  ParallelPlan p;
  p.cp = 2;
  p.dp = 4;
  p.zero_stage = 1;
  p.attention = AttentionKernel::Flash;
  return p;
}

const GptConfig& eight_b()
{
  return find_catalog_model("llama3-8b")->model;
}

TEST(TeModelState, GradientBufferIsFp32UnlessReducedInBf16)
{
  ParallelPlan p = eight_b_plan();
  const int64_t n = stage_parameters_per_gpu(eight_b(), p, 0);
  EXPECT_EQ(stage_model_state_memory(eight_b(), p, 0).gradient_bytes, 4 * n);
  p.grad_reduce_bf16 = true;
  EXPECT_EQ(stage_model_state_memory(eight_b(), p, 0).gradient_bytes, 2 * n);
}

TEST(TeModelState, Fp8CachesAndFp8ParamGather)
{
  ParallelPlan p = eight_b_plan();
  const int64_t n = stage_parameters_per_gpu(eight_b(), p, 0);
  const int64_t layers = 32 * layer_parameters_per_gpu(eight_b(), 1);
  EXPECT_EQ(layers, 32LL * 218112000);
  const ModelStateMemory bf16 = stage_model_state_memory(eight_b(), p, 0);
  EXPECT_EQ(bf16.fp8_cache_bytes, 0);
  p.precision = GemmPrecision::Fp8;
  const ModelStateMemory cached = stage_model_state_memory(eight_b(), p, 0);
  EXPECT_EQ(cached.weight_bytes, 2 * n);          // the BF16 weights stay
  EXPECT_EQ(cached.fp8_cache_bytes, 2 * layers);  // FP8 weight + FP8 transpose, every layer, kept across steps
  p.fp8_param_gather = true;
  const ModelStateMemory fp8_params = stage_model_state_memory(eight_b(), p, 0);
  EXPECT_EQ(fp8_params.weight_bytes, 2 * n - layers); // layers' weights FP8 (1 byte), embeddings BF16
  EXPECT_EQ(fp8_params.fp8_cache_bytes, layers);      // the transpose only
  EXPECT_EQ(cached.total_bytes - fp8_params.total_bytes, 2 * layers);
}

TEST(TeModelState, WeightGradientPlaceholdersOnlyWithTe)
{
  ParallelPlan p = eight_b_plan();
  // h (h + 2 g d + h + 2F + F) x 2 bytes: 2 x 4096 x (4096 + 2048 + 4096 + 28672 + 14336).
  EXPECT_EQ(stage_model_state_memory(eight_b(), p, 0).wgrad_placeholder_bytes, 2LL * 4096 * 53248);
  p.attention = AttentionKernel::Unfused; // the paper's Megatron-LM
  p.cp = 1;
  EXPECT_EQ(stage_model_state_memory(eight_b(), p, 0).wgrad_placeholder_bytes, 0);
}

TEST(TeTransients, OutputLayerBackwardDependsOnTheLossFusion)
{
  ParallelPlan p = eight_b_plan();
  const int64_t s = 4096, h = 4096, v = 128256;
  // Unfused loss: fp32 logits kept (4 s v), and backward adds the output layer's BF16 wgrad placeholder (2 v h),
  // its input gradient (2 s h) and the BF16 logits gradient (2 s v).
  StageMemory m = stage_memory(eight_b(), p, 0);
  EXPECT_EQ(m.activations.output_bytes, 4 * s * v + 4 * s * h + 4 * s);
  EXPECT_EQ(m.backward_workspace_bytes, 2 * v * h + 2 * s * h + 2 * s * v);
  p.cross_entropy_fusion = true; // TE keeps the BF16 logits and writes the gradient into them
  m = stage_memory(eight_b(), p, 0);
  EXPECT_EQ(m.activations.output_bytes, 2 * s * v + 4 * s * h + 4 * s);
  EXPECT_EQ(m.backward_workspace_bytes, 2 * v * h + 2 * s * h);
  // The paper's stack counts no backward transient.
  p.attention = AttentionKernel::Unfused;
  p.cp = 1;
  EXPECT_EQ(stage_memory(eight_b(), p, 0).backward_workspace_bytes, 0);
}

TEST(TeTransients, FirstStageOfAPipelineHasNoOutputLayerTransient)
{
  ParallelPlan p = eight_b_plan();
  p.pp = 2;
  p.global_batch = 8;
  const StageMemory first = stage_memory(eight_b(), p, 0);
  // fc2's input gradient (s F) and SwiGLU's (s 2F), BF16.
  EXPECT_EQ(first.backward_workspace_bytes, 2LL * 4096 * 3 * 14336);
}

TEST(MemoryReserve, DefaultsPerFrameworkAndFlat)
{
  EXPECT_EQ(default_memory_reserve("none").bytes(1LL << 40), 0);
  const MemoryReserve engine = default_memory_reserve("gputwin-engine");
  EXPECT_EQ(engine.bytes(0), engine.bytes(1LL << 36)); // no allocator slack
  const MemoryReserve torch = default_memory_reserve("megatron-lm");
  EXPECT_EQ(torch.bytes(0), (512LL + 1024) << 20);
  EXPECT_EQ(torch.bytes(100LL << 30) - torch.bytes(0), 3LL << 30); // 3 % of 100 GiB
  EXPECT_EQ(default_memory_reserve("nemo").bytes(1 << 30), torch.bytes(1 << 30));
  EXPECT_EQ(flat_memory_reserve(5LL << 30).bytes(100LL << 30), 5LL << 30);
}

} // namespace
} // namespace gputwin
