// `gputwin search`: every parallel plan of a model on N GPUs that fits memory, ranked by the fast estimator,
// the best K confirmed by the full flow-level simulation.
#include "gputwin/sim/report_json.hpp"
#include "commands.hpp"
#include "resource_estimate.hpp"
#include "search_core.hpp"
#include "sweep_csv.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/sim/plan_search.hpp"
#include "gputwin/topologies/cluster_flags.hpp"

#include <iostream>
#include "gputwin/common/json_writer.hpp"
#include "gputwin/common/output_file.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>

namespace gputwin::cli {

namespace {

using Ranked = SimulatedCandidate;


void write_csv(std::ostream& out, const std::vector<Ranked>& ranked)
{
  out << "rank,tp,pp,dp,micro_batch,global_batch,schedule,chunks,recompute,sp,zero,attention,iteration_time_s,"
         "estimated_iteration_time_s,tokens_per_s,mfu,bubble_fraction,exposed_communication_s,peak_memory_bytes,cp,"
         "fp8,tp_comm_overlap,overlap_grad_reduce,overlap_param_gather\n";
  char line[512];
  for (size_t i = 0; i < ranked.size(); ++i) {
    const Ranked& r = ranked[i];
    const ParallelPlan& p = r.estimate.candidate.plan;
    const WorkloadOptions& o = r.estimate.candidate.options;
    std::snprintf(line, sizeof line,
                  "%zu,%lld,%lld,%lld,%lld,%lld,%s,%lld,%s,%d,%d,%s,%.9g,%.9g,%.9g,%.6g,%.6g,%.9g,%lld,%lld,%s,%d,%d,%d\n",
                  i + 1, static_cast<long long>(p.tp), static_cast<long long>(p.pp), static_cast<long long>(p.dp),
                  static_cast<long long>(p.micro_batch), static_cast<long long>(p.effective_global_batch()),
                  to_string(p.schedule).c_str(), static_cast<long long>(p.chunks), to_string(p.recompute).c_str(),
                  p.sequence_parallel() ? 1 : 0, p.zero_stage, to_string(p.attention).c_str(), r.report.iteration_time_s,
                  r.estimate.iteration_time_s, r.report.tokens_per_s, r.report.mfu_bf16, r.report.bubble_fraction,
                  r.report.exposed_comm_s,
                  static_cast<long long>(r.estimate.candidate.peak_memory_bytes), static_cast<long long>(p.cp),
                  precision_csv_cell(p).c_str(), o.tp_comm_overlap ? 1 : 0, o.overlap_grad_reduce ? 1 : 0,
                  o.overlap_param_gather ? 1 : 0);
    out << line;
  }
}

} // namespace

int run_search(const std::vector<std::string>& args, std::ostream& out)
{
  ArgParser parser("gputwin search",
                   "Searches the parallel plans of a model on N GPUs: enumerates tp (within a node), pp, dp,\n"
                   "micro-batch and schedule (1F1B, interleaved), with flash attention on sequences of 8192 tokens\n"
                   "or more also cp 1, 2, 4, 8; keeps SP and ZeRO-1 on where they apply and the cheapest recompute\n"
                   "that fits, drops plans the memory model says do not fit the GPU, ranks the rest with the fast\n"
                   "estimator (no SimGrid; transfers sharing a link slow each other once), each with every\n"
                   "Megatron-Core overlap that applies (--tp-comm-overlap with SP, --overlap-grad-reduce with\n"
                   "dp x cp > 1, --overlap-param-gather with ZeRO-1) and with none, the faster kept, and simulates the\n"
                   "best K with the full flow-level simulation, printed ranked by simulated time.\n\n"
                   "example: gputwin search --model gpt3-175b --gpus 64 --global-batch 64 --top 5");
  add_model_flags(parser);
  parser.add_option("--gpus", "N", "GPUs of the job (a multiple of the cluster's GPUs per node, or fewer than one node)");
  parser.add_option("--global-batch", "B", "samples per iteration (default: N)");
  parser.add_option("--attention", "KERNEL", "attention kernel of every plan: unfused|flash (default unfused)");
  parser.add_option("--micro-batches", "LIST", "micro-batch sizes to try (default 1,2,4,8)");
  parser.add_switch("--fp8", "every plan with FP8 linear-layer GEMMs (Transformer Engine; H100/H200)");
  add_precision_flag(parser);
  parser.add_option("--cp", "LIST",
                    "context-parallel sizes to try, e.g. 1,2,4,8 (needs --attention flash; default 1,2,4,8 with flash "
                    "attention and --seq-len >= 8192, else 1)");
  parser.add_switch("--no-overlaps", "plans without Megatron-Core's overlaps (default: each plan estimated with every "
                                     "overlap that applies and with none, the faster kept)");
  parser.add_option("--top", "K", "plans confirmed by the full simulation and printed (default 5)");
  add_gpu_model_flags(parser);
  add_framework_flag(parser);
  parser.add_option("--jobs", "N", "threads for the estimates (default: the machine's cores)");
  add_max_work_flag(parser);
  topo::add_cluster_flags(parser);
  parser.add_section("output");
  parser.add_switch("--json", "machine-readable list, best first");
  parser.add_option("--csv", "FILE", "also write the ranked plans as CSV");
  ParsedArgs parsed = parser.parse(args);
  if (const std::optional<std::string> note =
          default_attention_for_gpu(parsed, topo::read_cluster(parsed).gpu.generation))
    std::cerr << "gputwin search: note: " << *note << "\n";
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  check_output_flags(parsed, {"--csv"}); // before the search: a typo fails at once
  const GptConfig model = model_from_flags(parsed);
  const SearchRequest request = read_search_request(parsed, model, 5, "(the GPUs of the job)");
  const topo::ClusterSpec& cluster = request.cluster;
  const int64_t gpus = request.gpus, global_batch = request.global_batch;
  const sim::PlanEnumeration& plans = request.plans;
  const FrameworkProfile framework = framework_from_flags(parsed, default_framework_for(cluster.gpu.generation));

  const bool json = parsed.has("--json");
  const topo::ClusterGraph graph(cluster);
  size_t ruled_out = 0;
  const std::vector<Ranked> ranked = rank_and_simulate(cluster, graph, model, plans.fitting, request.gpu,
                                                       framework, request.jobs, request.top, "search", !json,
                                                       &ruled_out);
  const size_t confirmed = ranked.size();

  if (const auto file = parsed.value("--csv"))
    write_file_atomically(*file, [&](std::ostream& csv) { write_csv(csv, ranked); }, "--csv");
  if (json) {
    JsonWriter w(out);
    w.begin_array();
    for (const Ranked& r : ranked) {
      w.begin_object();
      sim::write_plan_json(w, r.estimate.candidate.plan);
      sim::write_overlaps_json(w, r.estimate.candidate.options);
      w.field("iteration_time_s", r.report.iteration_time_s);
      w.field("estimated_iteration_time_s", r.estimate.iteration_time_s);
      w.field("tokens_per_s", r.report.tokens_per_s);
      w.field("mfu", r.report.mfu_bf16);
      w.field("bubble_fraction", r.report.bubble_fraction);
      w.field("exposed_communication_s", r.report.exposed_comm_s);
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
      << gib(cluster.gpu.hbm_bytes) << " GiB even with full recompute; " << plans.fitting.size() << " fit: "
      << plans.fitting.size() - ruled_out << " estimated ("
      << std::count_if(plans.fitting.begin(), plans.fitting.end(),
                       [](const sim::PlanCandidate& c) { return any_overlap(c.options); })
      << " of all with overlaps that apply, tried where they could rank), " << ruled_out
      << " ruled out by a lower bound (compute alone or contention-free); best " << confirmed << " simulated\n\n";
  char line[512];
  std::snprintf(line, sizeof line, "%4s  %-58s %-9s %-13s %10s %10s %12s %6s %7s %9s %8s\n", "rank", "plan",
                "attention", "overlaps", "sim s", "est s", "tokens/s", "MFU", "bubble", "exp.comm", "mem GiB");
  out << line;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const Ranked& r = ranked[i];
    const ParallelPlan& p = r.estimate.candidate.plan;
    char plan_text[128];
    const std::string tp_cp = "tp " + std::to_string(p.tp) + (p.cp > 1 ? " cp " + std::to_string(p.cp) : "") +
                              (p.ep > 1 || p.etp > 0 ? " ep " + std::to_string(p.ep) + " etp " + std::to_string(p.expert_tp())
                                                     : "");
    std::snprintf(plan_text, sizeof plan_text, "%s pp %lld dp %lld mb %lld %s%s %s%s%s%s", tp_cp.c_str(),
                  static_cast<long long>(p.pp), static_cast<long long>(p.dp),
                  static_cast<long long>(p.micro_batch), to_string(p.schedule).c_str(),
                  p.schedule == Schedule::Interleaved ? (" v" + std::to_string(p.chunks)).c_str() : "",
                  to_string(p.recompute).c_str(), p.sequence_parallel() ? " sp" : "",
                  p.fsdp ? " fsdp" : p.zero_stage ? (" zero" + std::to_string(p.zero_stage)).c_str() : "",
                  p.quantized() ? (" " + to_string(p.precision)).c_str() : "");
    std::snprintf(line, sizeof line, "%4zu  %-58s %-9s %-13s %10.4f %10.4f %12.0f %5.1f%% %7.3f %9.4f %8s\n", i + 1,
                  plan_text, to_string(p.attention).c_str(), sim::overlaps_text(r.estimate.candidate.options).c_str(),
                  r.report.iteration_time_s, r.estimate.iteration_time_s, r.report.tokens_per_s, 100 * r.report.mfu_bf16,
                  r.report.bubble_fraction, r.report.exposed_comm_s, gib(r.estimate.candidate.peak_memory_bytes).c_str());
    out << line;
  }
  return 0;
}

} // namespace gputwin::cli
