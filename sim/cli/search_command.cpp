// `gputwin search`: every parallel plan of a model on N GPUs that fits memory, ranked by the fast estimator,
// the best K confirmed by the full flow-level simulation.
#include "commands.hpp"
#include "search_core.hpp"

#include "gputwin/models/input_error.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/sim/plan_search.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/traces/json_writer.hpp"
#include "gputwin/traces/output_file.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>

namespace gputwin::cli {

namespace {

using Ranked = SimulatedCandidate;


void write_csv(std::ostream& out, const std::vector<Ranked>& ranked)
{
  out << "rank,tp,pp,dp,micro_batch,global_batch,schedule,chunks,recompute,sp,zero,attention,iteration_time_s,"
         "estimated_iteration_time_s,tokens_per_s,mfu,bubble_fraction,exposed_communication_s,peak_memory_bytes\n";
  char line[512];
  for (size_t i = 0; i < ranked.size(); ++i) {
    const Ranked& r = ranked[i];
    const ParallelPlan& p = r.estimate.candidate.plan;
    std::snprintf(line, sizeof line, "%zu,%lld,%lld,%lld,%lld,%lld,%s,%lld,%s,%d,%d,%s,%.9g,%.9g,%.9g,%.6g,%.6g,%.9g,%lld\n",
                  i + 1, static_cast<long long>(p.tp), static_cast<long long>(p.pp), static_cast<long long>(p.dp),
                  static_cast<long long>(p.micro_batch), static_cast<long long>(p.effective_global_batch()),
                  to_string(p.schedule).c_str(), static_cast<long long>(p.chunks), to_string(p.recompute).c_str(),
                  p.sequence_parallel() ? 1 : 0, p.zero_stage, to_string(p.attention).c_str(), r.iteration_time_s,
                  r.estimate.iteration_time_s, r.tokens_per_s, r.mfu, r.bubble_fraction, r.exposed_comm_s,
                  static_cast<long long>(r.estimate.candidate.peak_memory_bytes));
    out << line;
  }
}

} // namespace

int run_search(const std::vector<std::string>& args, std::ostream& out)
{
  ArgParser parser("gputwin search",
                   "Searches the parallel plans of a model on N GPUs: enumerates tp (within a node), pp, dp,\n"
                   "micro-batch and schedule (1F1B, interleaved), keeps SP and ZeRO-1 on where they apply and the\n"
                   "cheapest recompute that fits, drops plans the memory model says do not fit the GPU, ranks\n"
                   "the rest with the fast estimator (no SimGrid: contention-free network) and simulates the\n"
                   "best K with the full flow-level simulation, printed ranked by simulated time.\n\n"
                   "example: gputwin search --model gpt3-175b --gpus 64 --global-batch 64 --top 5");
  add_model_flags(parser);
  parser.add_option("--gpus", "N", "GPUs of the job (a multiple of the cluster's GPUs per node, or fewer than one node)");
  parser.add_option("--global-batch", "B", "samples per iteration (default: N)");
  parser.add_option("--attention", "KERNEL", "attention kernel of every plan: unfused|flash (default unfused)");
  parser.add_option("--micro-batches", "LIST", "micro-batch sizes to try (default 1,2,4,8)");
  parser.add_option("--top", "K", "plans confirmed by the full simulation and printed (default 5)");
  add_gpu_model_flags(parser);
  add_framework_flag(parser);
  parser.add_option("--jobs", "N", "threads for the estimates (default: the machine's cores)");
  topo::add_cluster_flags(parser);
  parser.add_section("output");
  parser.add_switch("--json", "machine-readable list, best first");
  parser.add_option("--csv", "FILE", "also write the ranked plans as CSV");
  const ParsedArgs parsed = parser.parse(args);
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  const GptConfig model = model_from_flags(parsed);
  if (!parsed.has("--gpus"))
    throw InputError("--gpus: required (the GPUs of the job)");
  const int64_t gpus = parsed.integer("--gpus").value_or(0);
  if (gpus < 1 || gpus > 1000000)
    throw InputError("--gpus: expected an integer in [1, 1000000], got " + *parsed.value("--gpus"));
  const int64_t global_batch = parsed.integer("--global-batch").value_or(gpus);
  if (global_batch < 1)
    throw InputError("--global-batch: expected a positive integer, got " + *parsed.value("--global-batch"));
  const int64_t top = parsed.integer("--top").value_or(5);
  if (top < 1)
    throw InputError("--top: expected a positive integer, got " + *parsed.value("--top"));
  const int jobs = static_cast<int>(
      parsed.integer("--jobs").value_or(std::max<unsigned>(1, std::thread::hardware_concurrency())));
  if (jobs < 1 || jobs > 1024)
    throw InputError("--jobs: expected an integer in [1, 1024], got " + *parsed.value("--jobs"));
  sim::SearchSpace space;
  if (const auto kernel = parsed.value("--attention")) {
    const auto parsed_kernel = parse_attention(*kernel);
    if (!parsed_kernel)
      throw InputError("--attention: expected unfused|flash, got '" + *kernel + "'");
    space.attention = *parsed_kernel;
  }
  if (const auto list = parsed.value("--micro-batches")) {
    space.micro_batches.clear();
    size_t begin = 0;
    while (begin <= list->size()) {
      const size_t end = std::min(list->find(',', begin), list->size());
      const std::string item = list->substr(begin, end - begin);
      char* rest = nullptr;
      const long long value = std::strtoll(item.c_str(), &rest, 10);
      if (item.empty() || *rest != '\0' || value < 1 || value > 1 << 20)
        throw InputError("--micro-batches: expected a comma-separated list of positive integers, got '" + *list + "'");
      space.micro_batches.push_back(value);
      begin = end + 1;
    }
  }

  topo::ClusterSpec cluster = topo::read_cluster(parsed);
  if (gpus > cluster.gpus_per_node && gpus % cluster.gpus_per_node != 0)
    throw InputError("--gpus: " + std::to_string(gpus) + " is not a multiple of " + cluster.name + "'s " +
                     std::to_string(cluster.gpus_per_node) + " GPUs per node (expected whole nodes)");
  const int64_t nodes = std::max<int64_t>(1, gpus / cluster.gpus_per_node);
  if (!parsed.has("--nodes"))
    cluster = topo::load_cluster(parsed.value("--cluster").value_or(topo::default_cluster), static_cast<int>(nodes),
                                 parsed.values("--set"));
  else if (gpus > cluster.gpus())
    throw InputError("--nodes: " + std::to_string(cluster.nodes) + " nodes of " + cluster.name + " have " +
                     std::to_string(cluster.gpus()) + " GPUs, fewer than --gpus " + std::to_string(gpus));
  const GpuComputeModel gpu =
      compute_model_for_gpu(parsed, cluster.gpu.kind, cluster.gpu.peak_bf16_flops, cluster.gpu.hbm_bytes_per_s);
  const FrameworkProfile framework = framework_from_flags(parsed, default_framework);

  const sim::PlanEnumeration plans =
      enumerate_plans(model, gpus, global_batch, std::min<int64_t>(gpus, cluster.gpus_per_node), cluster.gpu.hbm_bytes, space);
  if (plans.shapes == 0)
    throw InputError("--gpus: no parallel plan of " + model.name + " (heads " + std::to_string(model.heads) +
                     ", layers " + std::to_string(model.layers) + ") splits over " + std::to_string(gpus) +
                     " GPUs with global batch " + std::to_string(global_batch) +
                     " (tp must divide the heads, pp the layers, dp the global batch)");
  if (plans.fitting.empty())
    throw InputError("no plan fits: the smallest, " + describe_plan(plans.smallest.plan) + ", needs " +
                     gib(plans.smallest.peak_memory_bytes) + " GiB per GPU but the " + cluster.gpu.kind + " has " +
                     gib(cluster.gpu.hbm_bytes) + " GiB (more GPUs, a smaller global batch, or --attention flash)");

  const bool json = parsed.has("--json");
  const topo::ClusterGraph graph(cluster);
  const std::vector<Ranked> ranked = rank_and_simulate(cluster, graph, model, plans.fitting, gpu, framework, jobs,
                                                       static_cast<size_t>(top), "search", !json);
  const size_t confirmed = ranked.size();

  if (const auto file = parsed.value("--csv"))
    write_file_atomically(*file, [&](std::ostream& csv) { write_csv(csv, ranked); }, "--csv");
  if (json) {
    traces::JsonWriter w(out);
    w.begin_array();
    for (const Ranked& r : ranked) {
      w.begin_object();
      write_plan_json(w, r.estimate.candidate.plan);
      w.field("iteration_time_s", r.iteration_time_s);
      w.field("estimated_iteration_time_s", r.estimate.iteration_time_s);
      w.field("tokens_per_s", r.tokens_per_s);
      w.field("mfu", r.mfu);
      w.field("bubble_fraction", r.bubble_fraction);
      w.field("exposed_communication_s", r.exposed_comm_s);
      w.field("peak_memory_bytes", r.estimate.candidate.peak_memory_bytes);
      w.end_object();
    }
    w.end_array();
    out << "\n";
    return 0;
  }
  out << "model    " << model.name << " on " << gpus << " GPUs of " << cluster.name << ", global batch " << global_batch
      << "\n";
  out << "plans    " << plans.shapes << " valid splits; " << plans.too_big << " do not fit "
      << gib(cluster.gpu.hbm_bytes) << " GiB even with full recompute; " << plans.fitting.size()
      << " estimated; best " << confirmed << " simulated\n\n";
  char line[512];
  std::snprintf(line, sizeof line, "%4s  %-58s %10s %10s %12s %6s %7s %9s %8s\n", "rank", "plan", "sim s", "est s",
                "tokens/s", "MFU", "bubble", "exp.comm", "mem GiB");
  out << line;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const Ranked& r = ranked[i];
    const ParallelPlan& p = r.estimate.candidate.plan;
    char plan_text[128];
    std::snprintf(plan_text, sizeof plan_text, "tp %lld pp %lld dp %lld mb %lld %s%s %s%s%s",
                  static_cast<long long>(p.tp), static_cast<long long>(p.pp), static_cast<long long>(p.dp),
                  static_cast<long long>(p.micro_batch), to_string(p.schedule).c_str(),
                  p.schedule == Schedule::Interleaved ? (" v" + std::to_string(p.chunks)).c_str() : "",
                  to_string(p.recompute).c_str(), p.sequence_parallel() ? " sp" : "", p.zero_stage ? " zero1" : "");
    std::snprintf(line, sizeof line, "%4zu  %-58s %10.4f %10.4f %12.0f %5.1f%% %7.3f %9.4f %8s\n", i + 1, plan_text,
                  r.iteration_time_s, r.estimate.iteration_time_s, r.tokens_per_s, 100 * r.mfu, r.bubble_fraction,
                  r.exposed_comm_s, gib(r.estimate.candidate.peak_memory_bytes).c_str());
    out << line;
  }
  return 0;
}

} // namespace gputwin::cli
