// Parameter counts and model-state memory (weights, gradients, Adam states; ZeRO-1, 2, 3 and FSDP).
#include "data/korthikanti2022.hpp"

#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/parameter_count.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace gputwin {
namespace {

TEST(ParameterCount, Gpt3WholeModelByHand)
{
  // 96 x (12 h^2 + 13 h) + v h + s h + 2 h with h = 12288, v = 51200, s = 2048.
  const GptConfig& gpt3 = find_catalog_model("gpt3-175b")->model;
  EXPECT_EQ(layer_parameters(gpt3), 12LL * 12288 * 12288 + 13 * 12288);
  EXPECT_EQ(model_parameters(gpt3, 1), 174615846912);
}

TEST(ParameterCount, VocabularyPaddedToAMultipleOf128TimesTp)
{
  GptConfig gpt2{"gpt2", 768, 12, 12, 1024, 50257};
  EXPECT_EQ(padded_vocab(gpt2, 1), 50304);
  EXPECT_EQ(padded_vocab(gpt2, 8), 51200);
  EXPECT_EQ(padded_vocab(find_catalog_model("gpt-1t")->model, 8), 51200);
}

TEST(ParameterCount, PerGpuSplitsAndStages)
{
  const GptConfig& m = find_catalog_model("gpt-22b")->model; // h = 6144, L = 48
  // (12 h^2 + 7 h)/t + 6 h
  EXPECT_EQ(layer_parameters_per_gpu(m, 8), (12LL * 6144 * 6144 + 7 * 6144) / 8 + 6 * 6144);
  EXPECT_EQ(layer_parameters_per_gpu(m, 1), layer_parameters(m));
  ParallelPlan plan;
  plan.tp = 8;
  // p = 1: all layers, the embedding shard, the position embedding and the final layernorm.
  EXPECT_EQ(stage_parameters_per_gpu(m, plan, 0), 2771853312);
  // Summed over the tp ranks, a p = 1, t = 1 model is the whole model.
  plan.tp = 1;
  EXPECT_EQ(stage_parameters_per_gpu(m, plan, 0), model_parameters(m, 1));
  // p = 4: the last stage has the tied output copy and the final layernorm, the middle ones only layers.
  plan.pp = 4;
  const int64_t layers12 = 12 * layer_parameters(m);
  EXPECT_EQ(stage_parameters_per_gpu(m, plan, 1), layers12);
  EXPECT_EQ(stage_parameters_per_gpu(m, plan, 0), layers12 + 51200LL * 6144 + 2048LL * 6144);
  EXPECT_EQ(stage_parameters_per_gpu(m, plan, 3), layers12 + 51200LL * 6144 + 2 * 6144);
}

TEST(ModelStateMemory, EighteenBytesPerParameterAndZero1)
{
  ParallelPlan plan;
  plan.dp = 4;
  ModelStateMemory m = model_state_memory(1000, plan);
  EXPECT_EQ(m.weight_bytes, 2000);
  EXPECT_EQ(m.gradient_bytes, 4000);
  EXPECT_EQ(m.optimizer_bytes, 12000);
  EXPECT_EQ(m.total_bytes, 18000);
  plan.zero_stage = 1;
  m = model_state_memory(1000, plan);
  EXPECT_EQ(m.optimizer_bytes, 3000);
  EXPECT_EQ(m.total_bytes, 9000);
  plan.dp = 7; // 12000 / 7 rounded up: every replica owns a whole shard
  EXPECT_EQ(model_state_memory(1000, plan).optimizer_bytes, 1715);
}

TEST(ModelStateMemory, Zero2ShardsTheGradientsZero3TheWeightsFsdpKeepsNoBf16Copy)
{
  ParallelPlan plan;
  plan.dp = 2;
  plan.cp = 2; // shards over dp x cp = 4
  plan.zero_stage = 2;
  ModelStateMemory m = model_state_memory(1000, plan);
  EXPECT_EQ(m.weight_bytes, 2000);
  EXPECT_EQ(m.gradient_bytes, 1000);
  EXPECT_EQ(m.optimizer_bytes, 3000);
  plan.zero_stage = 3;
  m = model_state_memory(1000, plan);
  EXPECT_EQ(m.weight_bytes, 500);
  EXPECT_EQ(m.total_bytes, 18000 / 4);
  plan.fsdp = true; // FSDP2: FP32 parameter (the master weight) + FP32 gradient + Adam moments, 16 bytes, sharded
  m = model_state_memory(1000, plan);
  EXPECT_EQ(m.weight_bytes, 0);
  EXPECT_EQ(m.total_bytes, 16000 / 4);
  plan.fsdp = false;
  plan.grad_reduce_bf16 = true;
  EXPECT_EQ(model_state_memory(1000, plan).gradient_bytes, 500);
  plan.dp = 7;
  plan.cp = 1; // rounded up: every rank owns a whole shard
  EXPECT_EQ(model_state_memory(1000, plan).weight_bytes, 286);
}

TEST(ModelStateMemory, ShardedUnitsAddUpToTheStage)
{
  // Tied GPT with p = 1: the output unit owns the final norm and gathers the word embedding again.
  const GptConfig& gpt = find_catalog_model("gpt-22b")->model; // h 6144, L 48, v 51200, s 2048, LayerNorm
  ParallelPlan plan;
  plan.tp = 8;
  ShardedUnits u = sharded_units(gpt, plan, 0);
  EXPECT_EQ(u.embedding, 51200LL / 8 * 6144 + 2048LL * 6144);
  EXPECT_EQ(u.layer, layer_parameters_per_gpu(gpt, 8));
  EXPECT_EQ(u.layers, 48);
  EXPECT_EQ(u.output, 2 * 6144);
  EXPECT_EQ(u.output_gathered, 2 * 6144 + 51200LL / 8 * 6144);
  for (const int64_t pp : {1, 2, 4}) {
    plan.pp = pp;
    for (int64_t stage = 0; stage < pp; ++stage) {
      u = sharded_units(gpt, plan, stage);
      EXPECT_EQ(u.embedding + u.layers * u.layer + u.output, stage_parameters_per_gpu(gpt, plan, stage)) << pp;
    }
  }
  // The peak of two units: embedding + layer, two layers, layer + output, each at its own bytes.
  ShardedUnits toy;
  toy.embedding = 50;
  toy.layer = 30;
  toy.layers = 3;
  toy.output_gathered = 20;
  EXPECT_EQ(peak_two_unit_bytes(toy, 2, 2), 2 * (50 + 30));
  EXPECT_EQ(peak_two_unit_bytes(toy, 4, 1), 2 * 4 * 30);
  toy.layers = 1;
  EXPECT_EQ(peak_two_unit_bytes(toy, 4, 1), 50 + 4 * 30);
}

// `gputwin memory --model llama3-70b --cluster dgx-h100 --dp 64 --zero 3` (flash attention, Megatron-Core + TE),
// term by term: 18 bytes per parameter over 64 ranks, plus two units' whole weights (BF16) and gradients (FP32)
// and TE's weight-gradient placeholders.
TEST(ModelStateMemory, Llama3_70bZero3OverSixtyFourRanksByHand)
{
  const GptConfig& llama = find_catalog_model("llama3-70b")->model;
  ParallelPlan plan;
  plan.dp = 64;
  plan.attention = AttentionKernel::Flash;
  plan.zero_stage = 3;
  ASSERT_NO_THROW(validate_plan(llama, plan));
  const int64_t h = 8192, kv = 8 * 128, f = 28672, v = 128256, layers = 80;
  // QKV h (h + 2 g d), projection h^2, fc1 h 2F (SwiGLU's gate and up), fc2 F h, two RMSNorms; no biases.
  const int64_t layer = h * (h + 2 * kv) + h * h + h * 2 * f + f * h + 2 * h;
  const int64_t embedding = v * h;  // 128256 is already a multiple of 128
  const int64_t output = v * h + h; // untied output matrix + final RMSNorm
  const int64_t params = layers * layer + embedding + output;
  EXPECT_EQ(layer, 855654400);
  EXPECT_EQ(params, 70553706496);
  ASSERT_EQ(params % 64, 0);
  const int64_t shard = params / 64;

  const ModelStateMemory m = stage_model_state_memory(llama, plan, 0);
  EXPECT_EQ(m.parameters, params);
  EXPECT_EQ(m.weight_bytes, 2 * shard);
  EXPECT_EQ(m.gradient_bytes, 4 * shard);
  EXPECT_EQ(m.optimizer_bytes, 12 * shard);
  EXPECT_EQ(m.weight_bytes + m.gradient_bytes + m.optimizer_bytes, 18 * shard); // 18 B/param / 64
  // Two units alive: the output layer is the larger of the two ends (its final norm), so layer + output.
  ASSERT_GT(output, embedding);
  EXPECT_EQ(m.gathered_weight_bytes, 2 * (layer + output));
  EXPECT_EQ(m.gathered_gradient_bytes, 4 * (layer + output));
  EXPECT_EQ(m.fp8_cache_bytes, 0);
  const int64_t placeholder = 2 * h * (h + 2 * kv + h + 2 * f + f); // one layer's linear weights in BF16 (TE)
  EXPECT_EQ(m.wgrad_placeholder_bytes, placeholder);
  EXPECT_EQ(m.total_bytes, 18 * shard + 6 * (layer + output) + placeholder);
  EXPECT_EQ(busiest_stage_memory(llama, plan).state.total_bytes, m.total_bytes);

  // ZeRO-2 keeps the weights whole and gathers nothing; the gradient buffers of two units stay.
  plan.zero_stage = 2;
  const ModelStateMemory z2 = stage_model_state_memory(llama, plan, 0);
  EXPECT_EQ(z2.weight_bytes, 2 * params);
  EXPECT_EQ(z2.gradient_bytes, 4 * shard);
  EXPECT_EQ(z2.gathered_weight_bytes, 0);
  EXPECT_EQ(z2.gathered_gradient_bytes, 4 * (layer + output));
  // ZeRO-1: as before, nothing gathered.
  plan.zero_stage = 1;
  const ModelStateMemory z1 = stage_model_state_memory(llama, plan, 0);
  EXPECT_EQ(z1.gradient_bytes, 4 * params);
  EXPECT_EQ(z1.gathered_weight_bytes + z1.gathered_gradient_bytes, 0);

  // --fsdp: 16 sharded bytes per parameter (no BF16 copy), the same gathered units.
  plan.zero_stage = 3;
  plan.fsdp = true;
  const ModelStateMemory fsdp = stage_model_state_memory(llama, plan, 0);
  EXPECT_EQ(fsdp.weight_bytes + fsdp.gradient_bytes + fsdp.optimizer_bytes, 16 * shard);
  EXPECT_EQ(fsdp.gathered_weight_bytes, m.gathered_weight_bytes);

  // FP8 parameters under ZeRO-3: layers gathered at 1 byte (the output layer stays BF16), the transposes of the
  // two gathered layers only, the weights' shard without the BF16 layer copy.
  plan.fsdp = false;
  plan.precision = GemmPrecision::Fp8;
  plan.fp8_param_gather = true;
  const ModelStateMemory fp8 = stage_model_state_memory(llama, plan, 0);
  EXPECT_EQ(fp8.gathered_weight_bytes, std::max(1 * layer + 2 * output, 2 * 1 * layer));
  EXPECT_EQ(fp8.fp8_cache_bytes, 2 * layer);
  EXPECT_EQ(fp8.weight_bytes, (2 * params - layers * layer + 63) / 64);
}

TEST(ModelStateMemory, Figure1ParametersAndOptimizerPerGpu)
{
  // Bound: 1%. The figure counts the transformer layers of one stage (12 h^2 per layer, 18 bytes per
  // parameter); we count their biases and layernorms too. The embedding (on the first stage) is left out,
  // as in the figure.
  constexpr double gib = 1024.0 * 1024.0 * 1024.0;
  for (const auto& row : reference::figure1) {
    SCOPED_TRACE(row.name);
    const CatalogEntry& e = *find_catalog_model(row.name);
    const int64_t layer_params = e.model.layers / e.paper_plan.pp * layer_parameters_per_gpu(e.model, e.paper_plan.tp);
    const double state_gib = static_cast<double>(model_state_memory(layer_params, e.paper_plan).total_bytes) / gib;
    EXPECT_NEAR(state_gib, row.params_and_optimizer_gib, 0.01 * row.params_and_optimizer_gib);
  }
}

TEST(MemoryReport, BusiestStageIsTheLargestOfAllStages)
{
  for (const CatalogEntry& e : model_catalog()) {
    for (const Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
      ParallelPlan plan = e.paper_plan;
      plan.recompute = r;
      plan.tp_comm = TpComm::SequenceParallel;
      const StageMemory busiest = busiest_stage_memory(e.model, plan);
      int64_t largest = 0;
      for (const StageMemory& s : all_stage_memory(e.model, plan))
        largest = std::max(largest, s.total_bytes);
      EXPECT_EQ(busiest.total_bytes, largest) << e.model.name << " " << to_string(r);
      EXPECT_EQ(busiest.total_bytes,
                busiest.activations.total_bytes + busiest.recompute_workspace_bytes +
                    busiest.backward_workspace_bytes + busiest.state.total_bytes);
    }
  }
}

TEST(MemoryReport, TinyPipelineLastStageCanBeTheBusiest)
{
  // A huge vocabulary puts the fp32 logits and the output-layer copy on the last stage above the first.
  GptConfig m{"wide-vocab", 256, 4, 4, 512, 1 << 20};
  ParallelPlan plan;
  plan.pp = 2;
  plan.global_batch = 2;
  const StageMemory busiest = busiest_stage_memory(m, plan);
  EXPECT_EQ(busiest.stage, 1);
}

} // namespace
} // namespace gputwin
