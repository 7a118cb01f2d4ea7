// The op vocabulary (models/op_vocabulary.hpp) and the plan metadata (models/plan_metadata.hpp): the two tables
// the engine and the workload generator share.
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/kernel_class.hpp"
#include "gputwin/models/layer_ops.hpp"
#include "gputwin/models/op_vocabulary.hpp"
#include "gputwin/models/plan_metadata.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace gputwin {
namespace {

TEST(OpVocabulary, NamesAreUniqueAndReadBack)
{
  std::set<std::string> names;
  for (int i = 0; i < op_name_count; ++i) {
    const auto op = static_cast<OpName>(i);
    const std::string name = op_name(op);
    EXPECT_TRUE(names.insert(name).second) << "duplicate " << name;
    EXPECT_EQ(parse_op_name(name), op) << name;
  }
  EXPECT_EQ(parse_op_name("qkv"), std::nullopt);
}

// Every compute op sized by the layer shape has a cost; a GEMM's is 2 m n k batch FLOPs; its kernel class (the
// compute model's choice for memory-bound ops, from the name) is the class its name says.
TEST(OpVocabulary, ComputeCostsAndKernelClasses)
{
  LayerShape s;
  s.s = 64;
  s.b = 2;
  s.h = 128;
  s.a = 4;
  s.g = 4; // multi-head attention
  s.f = 4 * 128;
  s.t = 2;
  s.sp = true;
  s.vocab_per_rank = 128;
  const OpCost qkv = op_cost(OpName::QkvFwd, s);
  EXPECT_EQ(qkv.gemm, (traces::GemmShape{128, 192, 128, 1}));
  EXPECT_DOUBLE_EQ(qkv.flops, 2.0 * 128 * 192 * 128);
  EXPECT_DOUBLE_EQ(qkv.bytes, 2.0 * (128 * 128 + 128 * 192 + 128 * 192));
  // The engine's fused pairs cost what their two GEMMs cost.
  for (const OpName fused : {OpName::AttnContextBwd, OpName::AttnScoresBwd}) {
    const std::optional<FusedPair> pair = engine_fused_pair(fused);
    ASSERT_TRUE(pair);
    EXPECT_DOUBLE_EQ(op_cost(fused, s).flops, op_cost(pair->first, s).flops + op_cost(pair->second, s).flops);
    EXPECT_DOUBLE_EQ(op_cost(fused, s).bytes, op_cost(pair->first, s).bytes + op_cost(pair->second, s).bytes);
  }
  EXPECT_EQ(classify_kernel(op_name(OpName::Ln1Bwd), false), KernelClass::LayerNorm);
  EXPECT_EQ(classify_kernel(op_name(OpName::AttnSoftmaxFwd), false), KernelClass::Softmax);
  EXPECT_EQ(classify_kernel(op_name(OpName::DropoutAddFwd), false), KernelClass::Dropout);
  EXPECT_EQ(classify_kernel(op_name(OpName::GeluBwd), false), KernelClass::Gelu);
  EXPECT_EQ(classify_kernel(op_name(OpName::CrossEntropyMaxFwd), false), KernelClass::CrossEntropy);
  EXPECT_EQ(classify_kernel(op_name(OpName::OptimizerAdam), false), KernelClass::Optimizer);
  EXPECT_THROW(op_cost(OpName::OptimizerAdam, s), std::logic_error);
  EXPECT_THROW(op_cost(OpName::TpAllGather, s), std::logic_error);
  EXPECT_DOUBLE_EQ(tp_collective_bytes(OpName::TpAllGather, s), 2.0 * 64 * 2 * 128);
  EXPECT_DOUBLE_EQ(pipeline_message_bytes(s), 2.0 * 32 * 2 * 128); // sharded by SP
  EXPECT_FALSE(pipeline_scatter_gather(s));
  // Without SP, Megatron's scatter/gather: each TP rank sends 1/t, the receiver all-gathers the whole message.
  s.sp = false;
  EXPECT_TRUE(pipeline_scatter_gather(s));
  EXPECT_DOUBLE_EQ(pipeline_message_bytes(s), 2.0 * 64 * 2 * 128 / 2);
  EXPECT_DOUBLE_EQ(pipeline_gather_bytes(s), 2.0 * 64 * 2 * 128);
  s.t = 1;
  EXPECT_FALSE(pipeline_scatter_gather(s));
  EXPECT_DOUBLE_EQ(pipeline_message_bytes(s), 2.0 * 64 * 2 * 128);
}

TEST(PlanMetadata, RoundTripsEveryPlanField)
{
  GptConfig m{"tiny", 128, 4, 4, 64, 128};
  ParallelPlan p;
  p.tp = 2;
  p.pp = 2;
  p.dp = 3;
  p.micro_batch = 2;
  p.global_batch = 24;
  p.chunks = 2;
  p.schedule = Schedule::Interleaved;
  p.tp_comm = TpComm::SequenceParallel;
  p.recompute = Recompute::Selective;
  p.attention = AttentionKernel::Flash;
  p.zero_stage = 1;
  Metadata md{{"device", "cpu"}};
  write_plan_metadata(m, p, md);
  EXPECT_EQ(md.at("device"), "cpu");
  EXPECT_EQ(md.at("micro_batches"), "4"); // 24 / (2 x 3)
  const PlanMetadata back = read_plan_metadata(md, "t.json");
  EXPECT_EQ(back.model.name, "tiny");
  EXPECT_EQ(back.model.hidden, 128);
  EXPECT_EQ(back.model.seq_len, 64);
  EXPECT_EQ(back.plan.tp, 2);
  EXPECT_EQ(back.plan.pp, 2);
  EXPECT_EQ(back.plan.dp, 3);
  EXPECT_EQ(back.plan.global_batch, 24);
  EXPECT_EQ(back.plan.chunks, 2);
  EXPECT_EQ(back.plan.schedule, Schedule::Interleaved);
  EXPECT_TRUE(back.plan.sequence_parallel());
  EXPECT_EQ(back.plan.recompute, Recompute::Selective);
  EXPECT_EQ(back.plan.attention, AttentionKernel::Flash);
  EXPECT_EQ(back.plan.zero_stage, 1);
}

TEST(PlanMetadata, OlderTracesTakeDefaultsAndBadValuesAreNamed)
{
  Metadata md{{"hidden", "128"}, {"heads", "4"},       {"layers", "2"},      {"seq_len", "64"},
              {"vocab", "128"},  {"tp", "1"},          {"pp", "1"},          {"dp", "1"},
              {"micro_batch", "1"}, {"global_batch", "1"}};
  const PlanMetadata old = read_plan_metadata(md, "old.json");
  EXPECT_EQ(old.plan.attention, AttentionKernel::Unfused);
  EXPECT_EQ(old.plan.schedule, Schedule::OneFOneB);
  EXPECT_EQ(old.plan.zero_stage, 0);

  auto message = [](const Metadata& bad) {
    try {
      read_plan_metadata(bad, "t.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Metadata no_tp = md;
  no_tp.erase("tp");
  EXPECT_EQ(message(no_tp), "t.json: the metadata has no 'tp' (expected the model and plan of the run)");
  Metadata text_tp = md;
  text_tp["tp"] = "2x";
  EXPECT_EQ(message(text_tp), "t.json: the metadata's 'tp' is not an integer: '2x'");
  Metadata bad_recompute = md;
  bad_recompute["recompute"] = "some";
  EXPECT_EQ(message(bad_recompute), "t.json: the metadata's 'recompute' is 'some' (expected none|selective|full)");
}

} // namespace
} // namespace gputwin
