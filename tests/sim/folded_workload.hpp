#pragma once
// A small folded workload and a collective op on one of its groups, for the tests of the comm sources
// (comm_expansion_test.cpp, latency_bound_test.cpp).

#include "gputwin/models/workload.hpp"
#include "gputwin/traces/op_graph.hpp"

namespace gputwin::testing {

// A small GPT: hidden 1024, 16 heads, 8 layers, sequence 512, vocabulary 1024.
inline GptConfig small_test_model()
{
  return GptConfig{"test", 1024, 16, 8, 512, 1024};
}

// tp 4, pp 2, dp 4 (32 ranks: 4 DGX nodes): a TP group is half a node, a DP group spans nodes.
inline Workload tp4_pp2_dp4_workload()
{
  const GptConfig model = small_test_model();
  ParallelPlan p;
  p.tp = 4;
  p.pp = 2;
  p.dp = 4;
  p.micro_batch = 1;
  p.global_batch = 8;
  validate_plan(model, p);
  return make_workload(model, p);
}

// A collective of `kind` and `bytes` on workload group `group`.
inline traces::Op collective_on(int32_t group, CollectiveOp kind, double bytes)
{
  traces::Op op;
  op.kind = traces::OpKind::Collective;
  op.collective = kind;
  op.group = group;
  op.bytes = bytes;
  return op;
}

} // namespace gputwin::testing
