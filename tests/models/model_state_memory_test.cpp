// Parameter counts and model-state memory (weights, gradients, Adam states; ZeRO-1).
#include "data/korthikanti2022.hpp"

#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/parameter_count.hpp"

#include <gtest/gtest.h>

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
