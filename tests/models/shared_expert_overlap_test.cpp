// --moe-shared-expert-overlap in the generated programs (layer_ops.cpp shared_experts_beside_exchanges): a MoE
// layer's token all-to-alls leave the compute stream, each after the op before it, and the shared experts' part that
// Megatron-Core runs in the exchange's shadow (fc1 and the activation beside the dispatch, fc2 beside the combine;
// in backward fc2 and the activation beside the combine's exchange, fc1 beside the dispatch's) is issued between the
// exchange and the first op that waits for it. The program is still a program, with the same ops as without.
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/op_emitter.hpp"
#include "gputwin/models/workload.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace gputwin {
namespace {

// DeepSeek-V3 cut to 4 layers: 3 dense, then one MoE layer with its shared expert.
GptConfig one_moe_layer()
{
  GptConfig m = find_catalog_model("deepseek-v3")->model;
  m.layers = 4;
  m.seq_len = 1024;
  m.moe.mtp_layers = 0;
  return m;
}

traces::RankProgram program(bool overlap)
{
  ParallelPlan p;
  p.tp = 2;
  p.ep = 8;
  p.dp = 8;
  p.global_batch = 8; // one micro-batch per rank
  p.zero_stage = 1;
  p.attention = AttentionKernel::Flash;
  WorkloadOptions options;
  options.moe_shared_expert_overlap = overlap;
  return stage_program(make_workload(one_moe_layer(), p, options), 0);
}

// The first op after `from` on the compute stream that lists `exchange` among its dependencies.
size_t first_waiting(const traces::RankProgram& p, size_t from, int64_t exchange)
{
  for (size_t i = from; i < p.ops.size(); ++i) {
    const traces::Op& op = p.ops[i];
    if (op.stream == compute_stream && std::find(op.deps.begin(), op.deps.end(), exchange) != op.deps.end())
      return i;
  }
  return p.ops.size();
}

TEST(SharedExpertOverlap, ExchangesMoveAsideAndTheSharedExpertsRunInTheirShadow)
{
  const traces::RankProgram serial = program(false), overlapped = program(true);
  std::map<std::string, int> serial_ops, overlapped_ops;
  for (const traces::Op& op : serial.ops)
    ++serial_ops[op.name + "/" + traces::to_string(op.phase)];
  for (const traces::Op& op : overlapped.ops)
    ++overlapped_ops[op.name + "/" + traces::to_string(op.phase)];
  EXPECT_EQ(overlapped_ops, serial_ops);

  // Which shared-expert op each exchange shadows, by the exchange and its phase.
  const std::map<std::string, std::string> shadowed = {{"moe.dispatch", "fc1.fwd"},
                                                       {"moe.combine", "fc2.fwd"},
                                                       {"moe.combine.bwd", "fc2.dgrad"},
                                                       {"moe.dispatch.bwd", "fc1.dgrad"}};
  int exchanges = 0;
  for (size_t i = 0; i < overlapped.ops.size(); ++i) {
    const traces::Op& op = overlapped.ops[i];
    EXPECT_EQ(op.id, static_cast<int64_t>(i));
    for (const int64_t d : op.deps)
      EXPECT_LT(d, op.id) << op.name;
    const auto shadow = shadowed.find(op.name);
    if (shadow == shadowed.end())
      continue;
    ++exchanges;
    EXPECT_EQ(op.stream, ep_stream) << op.name;
    ASSERT_EQ(op.deps.size(), 1u) << op.name;
    EXPECT_EQ(overlapped.ops[static_cast<size_t>(op.deps[0])].stream, compute_stream) << op.name;
    const size_t waiting = first_waiting(overlapped, i + 1, op.id);
    ASSERT_LT(waiting, overlapped.ops.size()) << op.name << ": nothing waits for it";
    bool shared_in_shadow = false;
    for (size_t k = i + 1; k < waiting; ++k)
      shared_in_shadow = shared_in_shadow || overlapped.ops[k].name == shadow->second;
    EXPECT_TRUE(shared_in_shadow) << op.name << " does not shadow " << shadow->second;
  }
  EXPECT_EQ(exchanges, 4); // one MoE layer: dispatch and combine, forward and backward
  for (const traces::Op& op : serial.ops) {
    if (shadowed.count(op.name) != 0) {
      EXPECT_EQ(op.stream, compute_stream) << op.name;
    }
  }
}

} // namespace
} // namespace gputwin
