#pragma once
// The plan a CLI JSON report ran, read back in tests (for tests that link the models library).

#include "json_report.hpp"

#include "gputwin/models/parallel_plan.hpp"

namespace gputwin::testing {

// The `plan` object every simulate/goodput/search report repeats, read back as a ParallelPlan.
inline ParallelPlan plan_of(const traces::JsonValue& report)
{
  const traces::JsonValue& p = member(report, "plan");
  ParallelPlan plan;
  plan.tp = *member(p, "tp").as_int64();
  plan.pp = *member(p, "pp").as_int64();
  plan.dp = *member(p, "dp").as_int64();
  plan.micro_batch = *member(p, "micro_batch").as_int64();
  plan.global_batch = *member(p, "global_batch").as_int64();
  plan.chunks = *member(p, "chunks").as_int64();
  plan.schedule = *parse_schedule(member(p, "schedule").text);
  plan.recompute = *parse_recompute(member(p, "recompute").text);
  plan.attention = *parse_attention(member(p, "attention").text);
  plan.tp_comm = member(p, "sp").boolean ? TpComm::SequenceParallel : TpComm::AllReduce;
  plan.zero_stage = static_cast<int>(*member(p, "zero").as_int64());
  return plan;
}

} // namespace gputwin::testing
