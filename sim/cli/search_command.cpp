// `gputwin search`: every parallel plan of a model on N GPUs that fits memory, ranked by the fast estimator,
// the best K confirmed by the full flow-level simulation (sim/study: simulated_search.hpp, search_output.hpp).
#include "commands.hpp"
#include "gputwin/sim/resource_estimate.hpp"
#include "gputwin/sim/resource_flags.hpp"
#include "gputwin/sim/work_estimate.hpp"
#include "search_core.hpp"

#include "gputwin/common/output_file.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/sim/search_output.hpp"
#include "gputwin/topologies/cluster_flags.hpp"

#include <iostream>

namespace gputwin::cli {

int run_search(const std::vector<std::string>& args, std::ostream& out)
{
  ArgParser parser("gputwin search",
                   "Searches the parallel plans of a model on N GPUs: enumerates tp (within a node), pp, dp,\n"
                   "micro-batch and schedule (1F1B, interleaved), with flash attention on sequences of 8192 tokens\n"
                   "or more also cp 1, 2, 4, 8; keeps SP and ZeRO-1 on where they apply and the cheapest recompute\n"
                   "that fits (MoE and MLA models: Megatron-Core's recompute modules before full recompute),\n"
                   "drops plans the memory model says do not fit the GPU, ranks the rest with the fast\n"
                   "estimator (no SimGrid; transfers sharing a link slow each other once), each with every\n"
                   "Megatron-Core overlap that applies (--tp-comm-overlap with SP, --overlap-grad-reduce with\n"
                   "dp x cp > 1, --overlap-param-gather with ZeRO-1) and with none, the faster kept, and simulates the\n"
                   "best K with the full flow-level simulation, printed ranked by simulated time.\n\n"
                   "example: gputwin search --model gpt3-175b --gpus 64 --global-batch 64 --top 5");
  add_model_flags(parser);
  parser.add_option("--gpus", "N", "GPUs of the job (a multiple of the cluster's GPUs per node, or fewer than one node)");
  parser.add_option("--global-batch", "B", "samples per iteration (default: N)");
  add_search_space_flags(parser, true);
  parser.add_option("--top", "K", "plans confirmed by the full simulation and printed (default 5)");
  add_gpu_model_flags(parser);
  add_framework_flag(parser);
  parser.add_option("--jobs", "N", "threads for the estimates (default: the machine's cores)");
  sim::add_max_work_flag(parser);
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
  const FrameworkProfile framework =
      framework_from_flags(parsed, default_framework_for(request.cluster.gpu.generation));

  const bool json = parsed.has("--json");
  const topo::ClusterGraph graph(request.cluster);
  size_t ruled_out = 0;
  const std::vector<SimulatedCandidate> ranked =
      rank_and_simulate(request.cluster, graph, model, request.plans.fitting, request.gpu, framework, request.jobs,
                        request.top, "search", !json, &ruled_out);
  if (const auto file = parsed.value("--csv"))
    write_file_atomically(*file, [&](std::ostream& csv) { sim::write_search_csv(csv, ranked); }, "--csv");
  if (json)
    sim::write_search_json(out, ranked);
  else
    sim::print_search_table(out, model, request, ranked, ruled_out);
  return 0;
}

} // namespace gputwin::cli
