// `gputwin memory`: per-GPU memory of the busiest pipeline stage, from the analytic models.
#include "commands.hpp"
#include "gputwin/sim/memory_output.hpp"
#include "gputwin/sim/resource_estimate.hpp"
#include "gputwin/sim/resource_flags.hpp"
#include "gputwin/sim/work_estimate.hpp"
#include "search_core.hpp"

#include "gputwin/common/checked_math.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/config/framework_yaml.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/parameter_count.hpp"
#include "gputwin/models/pipeline_schedule.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/sim/scenario.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/common/json_writer.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>

namespace gputwin::cli {

int run_memory(const std::vector<std::string>& args, std::ostream& out)
{
  ArgParser parser(
      "gputwin memory",
      "Per-GPU memory of the busiest pipeline stage under a parallel plan: activations stored for\n"
      "backward (times the micro-batches the schedule keeps in flight), the recompute and backward\n"
      "workspaces, and mixed-precision Adam model state (2 + 4 + 12 bytes per parameter, optimizer sharded\n"
      "over dp x cp with --zero 1). Unfused attention counts Megatron-LM's Table 2 (Korthikanti et al.\n"
      "2022); --attention flash counts what Megatron-Core with Transformer Engine keeps (the tensors its\n"
      "modules save, TE's FP8 weight caches and weight-gradient placeholders). The verdict compares the\n"
      "allocated peak plus a reserve (CUDA context, NCCL buffers, allocator fragmentation: --memory-reserve,\n"
      "or the framework's default) with the cluster's GPU, in GiB (bytes in --json). With pp > 1 and no\n"
      "--global-batch the pipeline is filled (pp micro-batches), as a training run would.\n\n"
      "example: gputwin memory --model gpt3-175b --tp 8 --pp 8 --micro-batch 1 --sp --recompute selective");
  add_model_flags(parser);
  add_plan_flags(parser);
  topo::add_cluster_flags(parser);
  parser.add_section("memory reserve");
  add_framework_flag(parser);
  parser.add_option("--memory-reserve", "GIB",
                    "GiB kept free for what the framework does not allocate itself (default: the framework's: "
                    "CUDA context + workspaces 0.5, NCCL 1, plus 3 % allocator fragmentation; none: 0)");
  parser.add_section("output");
  parser.add_switch("--json", "machine-readable output (bytes as integers; with the model, plan and cluster)");
  sim::add_max_work_flag(parser);
  ParsedArgs parsed = parser.parse(args);
  if (const std::optional<std::string> note =
          default_attention_for_gpu(parsed, topo::read_cluster(parsed).gpu.generation))
    std::cerr << "gputwin memory: note: " << *note << "\n";
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  const GptConfig model = model_from_flags(parsed);
  ParallelPlan plan = read_plan(parsed, model);
  // A pipeline holds its peak only once it is full: without --global-batch, pp micro-batches per pipeline (the
  // schedule's warm-up depth; interleaved schedules need that many anyway), not Megatron's one.
  const bool filled = plan.pp > 1 && !parsed.has("--global-batch") && !parsed.has("--plan");
  if (filled) {
    plan.global_batch = checked_product({plan.micro_batch, plan.dp, plan.pp}, "--global-batch");
    validate_plan(model, plan);
  }
  // The memory model walks every stage's pipeline schedule: refuse a schedule too long to walk, before it exists.
  sim::check_work(sim::estimate_plan_work(model, plan, false, false), sim::max_work(parsed), "the memory model");
  MemoryReserve reserve = default_memory_reserve(
      parsed.has("--framework") ? config::load_framework_profile(*parsed.value("--framework")).name
                                : std::string(default_framework_for(topo::read_cluster(parsed).gpu.generation)));
  if (const std::optional<std::string> text = parsed.value("--memory-reserve")) {
    double value = -1;
    size_t used = 0;
    try {
      value = std::stod(*text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text->size() || !std::isfinite(value) || value < 0 || value > 1e9)
      throw InputError("--memory-reserve: expected GiB >= 0, got '" + *text + "'");
    reserve = flat_memory_reserve(static_cast<int64_t>(std::llround(value * sim::bytes_per_gib)));
  }
  // As simulate: without --nodes the cluster is sized to the plan; --nodes is checked, not ignored.
  sim::Scenario scenario;
  scenario.plan = plan;
  scenario.cluster = topo::read_cluster_request(parsed);
  check_precision_supported(plan, topo::load_cluster(scenario.cluster));
  const topo::ClusterSpec cluster = sim::size_cluster(scenario);
  const StageMemory busiest = busiest_stage_memory(model, plan);
  std::vector<std::string> notes = plan_notes(parsed, plan);
  if (filled) // replaces plan_notes' "one micro-batch per pipeline"
    notes.front() = "--global-batch not given: the pipeline filled, global batch = micro-batch x dp x pp = " +
                    std::to_string(plan.micro_batch) + " x " + std::to_string(plan.dp) + " x " +
                    std::to_string(plan.pp) + " = " + std::to_string(plan.effective_global_batch()) + " (" +
                    std::to_string(plan.pp) + " micro-batches per pipeline, the most the schedule keeps in flight)";
  for (const std::string& note : notes)
    std::cerr << "gputwin memory: note: " << note << "\n";
  if (parsed.has("--json"))
    sim::write_memory_json(out, model, plan, busiest, reserve, cluster);
  else
    sim::print_memory_table(out, model, plan, busiest, reserve, cluster);
  return 0;
}

} // namespace gputwin::cli
