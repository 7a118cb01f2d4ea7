#pragma once
// The small pipelined plan the Chakra export, import and replay tests all write and read back: gpt-22b cut to 4
// layers, tp 2 · pp 2 · dp 2 with SP, global batch 8 on one node -- its workload and the simulate flags of it.

#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/workload.hpp"

#include <stdexcept>

namespace gputwin::testing {

inline constexpr const char* chakra_test_plan_flags =
    "--model gpt-22b --layers 4 --tp 2 --pp 2 --dp 2 --global-batch 8 --sp --nodes 1";

inline Workload chakra_test_plan_workload()
{
  const CatalogEntry* entry = find_catalog_model("gpt-22b");
  if (entry == nullptr)
    throw std::runtime_error("gpt-22b is not in the model catalog");
  GptConfig model = entry->model;
  model.layers = 4;
  ParallelPlan plan;
  plan.tp = 2;
  plan.pp = 2;
  plan.dp = 2;
  plan.global_batch = 8;
  plan.tp_comm = TpComm::SequenceParallel;
  return make_workload(model, plan);
}

} // namespace gputwin::testing
