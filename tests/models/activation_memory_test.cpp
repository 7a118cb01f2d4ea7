// Activation memory against the paper: Table 2 exactly, Figure 7 and Figure 1 within stated bounds.
#include "data/korthikanti2022.hpp"

#include "gputwin/models/activation_memory.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/model_catalog.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace gputwin {
namespace {

const CatalogEntry& catalog(const char* name)
{
  const CatalogEntry* e = find_catalog_model(name);
  EXPECT_NE(e, nullptr) << name;
  return *e;
}

ParallelPlan paper_plan(const char* name, TpComm comm, Recompute recompute)
{
  ParallelPlan plan = catalog(name).paper_plan;
  plan.tp_comm = comm;
  plan.recompute = recompute;
  validate_plan(catalog(name).model, plan);
  return plan;
}

int64_t per_layer(const char* name, int64_t tp, TpComm comm, Recompute recompute)
{
  ParallelPlan plan = paper_plan(name, comm, recompute);
  plan.tp = tp;
  return activation_bytes_per_layer(catalog(name).model, plan);
}

TEST(ActivationMemory, Table2AllSixRowsExactForTheTable3Models)
{
  for (const auto& row : reference::table2) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(per_layer(row.name, 1, TpComm::AllReduce, Recompute::None), row.no_parallelism);
    EXPECT_EQ(per_layer(row.name, 8, TpComm::AllReduce, Recompute::None), row.tensor_parallel);
    EXPECT_EQ(per_layer(row.name, 8, TpComm::SequenceParallel, Recompute::None), row.tensor_sequence_parallel);
    EXPECT_EQ(per_layer(row.name, 8, TpComm::AllReduce, Recompute::Selective), row.tensor_parallel_selective);
    EXPECT_EQ(per_layer(row.name, 8, TpComm::SequenceParallel, Recompute::Selective),
              row.tensor_sequence_parallel_selective);
    EXPECT_EQ(per_layer(row.name, 8, TpComm::AllReduce, Recompute::Full), row.full_recompute);
  }
}

TEST(ActivationMemory, FullRecomputeWithSequenceParallelStoresTheShardedInput)
{
  // Not a Table 2 row: with SP the stored layer input is the sequence shard, 2 s b h / t.
  EXPECT_EQ(per_layer("gpt3-175b", 8, TpComm::SequenceParallel, Recompute::Full), 2 * 2048 * 12288 / 8);
}

TEST(ActivationMemory, AttentionScoreRatio5asOverH)
{
  // Section 5: 5as/h = 80 for GPT-3 and 64 for MT-NLG decides how much selective recompute saves.
  for (const auto& [name, expected] : {std::pair{"gpt3-175b", 80}, std::pair{"mt-nlg-530b", 64}}) {
    const GptConfig& m = catalog(name).model;
    EXPECT_EQ(5 * m.heads * m.seq_len % m.hidden, 0) << name;
    EXPECT_EQ(5 * m.heads * m.seq_len / m.hidden, expected) << name;
  }
}

TEST(ActivationMemory, SelectiveRecomputeSavingsQuotedInThePaper)
{
  // Section 5: with TP + SP, selective recompute saves 70% of the activation memory for GPT-3 and 65% for
  // MT-NLG.
  auto saving = [](const char* name) {
    return 1.0 - static_cast<double>(per_layer(name, 8, TpComm::SequenceParallel, Recompute::Selective)) /
                     static_cast<double>(per_layer(name, 8, TpComm::SequenceParallel, Recompute::None));
  };
  EXPECT_NEAR(saving("gpt3-175b"), 0.70, 0.005);
  EXPECT_NEAR(saving("mt-nlg-530b"), 0.65, 0.005);
}

TEST(ActivationMemory, Figure7PercentagesOfTheTensorParallelBaseline)
{
  // Bound: 0.1 percentage points (the figure is read off a bar chart). Two cells of the transcription
  // disagree with the paper's own Table 2 by more than that: for MT-NLG and 1T (both 5as/h = 64, t = 8, so
  // their percentages are identical) Table 2 gives selective = 13/21 = 61.905% and full = 2/21 = 9.524%,
  // against 62.04 and 9.42 transcribed. Those cells are held to 0.15 points; the rest to 0.1.
  for (const auto& row : reference::figure7) {
    SCOPED_TRACE(row.name);
    const double base = static_cast<double>(per_layer(row.name, 8, TpComm::AllReduce, Recompute::None));
    auto percent = [&](TpComm comm, Recompute r) {
      return 100.0 * static_cast<double>(per_layer(row.name, 8, comm, r)) / base;
    };
    const bool transcription_off = std::string(row.name) == "mt-nlg-530b" || std::string(row.name) == "gpt-1t";
    const double loose = transcription_off ? 0.15 : 0.1;
    EXPECT_NEAR(percent(TpComm::SequenceParallel, Recompute::None), row.sequence_parallel, 0.1);
    EXPECT_NEAR(percent(TpComm::AllReduce, Recompute::Selective), row.selective, loose);
    EXPECT_NEAR(percent(TpComm::SequenceParallel, Recompute::Selective), row.sequence_parallel_selective, 0.1);
    EXPECT_NEAR(percent(TpComm::AllReduce, Recompute::Full), row.full, loose);
  }
}

TEST(ActivationMemory, Figure1ActivationsPerGpuOfTheFirstStage)
{
  // Bound: 1%. The figure counts the transformer layers held by the first stage at its peak (1F1B: L layers'
  // worth; interleaved x (1 + (p-1)/(pv))). It leaves out the embedding/output terms of Section 4.2.3 (tested
  // in EmbeddingAndOutputExtraTerms): for 1T with SP + selective the paper's own s b h p / t term alone is
  // 0.39 GiB, 1.5% of the bar.
  constexpr double gib = 1024.0 * 1024.0 * 1024.0;
  for (const auto& row : reference::figure1) {
    SCOPED_TRACE(row.name);
    const GptConfig& model = catalog(row.name).model;
    const StageActivations tp_only =
        stage_activation_memory(model, paper_plan(row.name, TpComm::AllReduce, Recompute::None), 0);
    const StageActivations sp_sel =
        stage_activation_memory(model, paper_plan(row.name, TpComm::SequenceParallel, Recompute::Selective), 0);
    EXPECT_NEAR(static_cast<double>(tp_only.layer_bytes) / gib, row.activations_tp_only_gib,
                0.01 * row.activations_tp_only_gib);
    EXPECT_NEAR(static_cast<double>(sp_sel.layer_bytes) / gib, row.activations_sp_selective_gib,
                0.01 * row.activations_sp_selective_gib);
  }
}

TEST(ActivationMemory, PipelineFirstStageHoldsTheScheduleCounts)
{
  const GptConfig& model = catalog("gpt3-175b").model; // L = 96
  ParallelPlan plan;
  plan.tp = 8;
  plan.pp = 8;
  plan.tp_comm = TpComm::SequenceParallel;
  plan.global_batch = 64; // 64 micro-batches
  const int64_t per = activation_bytes_per_layer(model, plan);

  // 1F1B: p micro-batches of L/p layers = L layers' worth.
  EXPECT_EQ(stage_activation_memory(model, plan, 0).layer_bytes, per * 96);
  // Last stage: one micro-batch of L/p layers.
  EXPECT_EQ(stage_activation_memory(model, plan, 7).layer_bytes, per * 12);
  // Interleaved, v = 3: x (1 + (p-1)/(p v)) = 1 + 7/24, i.e. 124 layers' worth.
  plan.schedule = Schedule::Interleaved;
  plan.chunks = 3;
  EXPECT_EQ(stage_activation_memory(model, plan, 0).layer_bytes, per * 96 * 31 / 24);
  // GPipe: all 64 micro-batches of 12 layers.
  plan.schedule = Schedule::GPipe;
  plan.chunks = 1;
  EXPECT_EQ(stage_activation_memory(model, plan, 0).layer_bytes, per * 12 * 64);
  // Fewer micro-batches than stages: 1F1B holds only those.
  plan.schedule = Schedule::OneFOneB;
  plan.global_batch = 3;
  EXPECT_EQ(stage_activation_memory(model, plan, 0).layer_bytes, per * 12 * 3);
}

TEST(ActivationMemory, EmbeddingAndOutputExtraTermsOfSection4)
{
  // (s b h L / t)(p / L + delta(p = 1)(4 / L)(1 + v / h)) with TP + SP.
  const GptConfig& model = catalog("gpt-22b").model;
  const ParallelPlan plan = paper_plan("gpt-22b", TpComm::SequenceParallel, Recompute::Selective); // p = 1
  const int64_t sbh = 2048LL * 4 * 6144;
  const StageActivations a = stage_activation_memory(model, plan, 0);
  EXPECT_EQ(a.embedding_bytes, sbh / 8);                               // p / L term, p = 1
  EXPECT_EQ(a.output_bytes, 4 * sbh / 8 + 4LL * 2048 * 4 * 51200 / 8); // 4 sbh / t (1 + v / h)

  ParallelPlan piped = paper_plan("gpt-1t", TpComm::SequenceParallel, Recompute::Selective); // p = 64, 1F1B
  const StageActivations first = stage_activation_memory(catalog("gpt-1t").model, piped, 0);
  EXPECT_EQ(first.embedding_bytes, 2048LL * 25600 / 8 * 64); // s b h p / t
  EXPECT_EQ(first.output_bytes, 0);                          // the output layer is on the last stage
}

TEST(ActivationMemory, RecomputeWorkspace)
{
  const GptConfig& model = catalog("gpt3-175b").model;
  ParallelPlan plan = paper_plan("gpt3-175b", TpComm::SequenceParallel, Recompute::None);
  EXPECT_EQ(recompute_workspace_bytes(model, plan), 0);
  plan.recompute = Recompute::Selective;
  EXPECT_EQ(recompute_workspace_bytes(model, plan), 5LL * 96 * 2048 * 2048 / 8);
  plan.recompute = Recompute::Full;
  EXPECT_EQ(recompute_workspace_bytes(model, plan), 358612992); // Table 2, TP + SP row
}

} // namespace
} // namespace gputwin
