// `gputwin collective`: one NCCL collective simulated on a cluster, printed like nccl-tests' *_perf.
#include "gputwin/common/byte_size.hpp"
#include "commands.hpp"
#include "gputwin/sim/link_report_output.hpp"
#include "gputwin/sim/collective_output.hpp"
#include "gputwin/sim/resource_estimate.hpp"
#include "gputwin/sim/resource_flags.hpp"
#include "gputwin/sim/work_estimate.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/traces/collective_op.hpp"

#include <algorithm>
#include <optional>

namespace gputwin::cli {

namespace {

// The collective's ranks on the cluster (sized to hold them when --nodes is not given).
struct Placement {
  topo::ClusterSpec cluster;
  int64_t ranks = 0;
  int64_t ranks_per_node = 0;
  int64_t memory_limit_bytes = 0; // the resource guard's limit (--max-memory, else this machine's memory)
  std::vector<int> gpus;          // rank r runs on GPU gpus[r]
};


// The flags of `gputwin collective`.
ArgParser collective_parser()
{
  ArgParser parser(
      "gputwin collective",
      "Simulates one NCCL collective on a cluster and prints time, algbw and busbw per size with\n"
      "nccl-tests' definitions (algbw = size / time; busbw = algbw x 2(n-1)/n for all-reduce,\n"
      "(n-1)/n for all-gather, reduce-scatter and all-to-all, 1 for broadcast and send-recv).\n"
      "NCCL's own cost model picks the algorithm (ring, tree) and protocol (LL, LL128, Simple);\n"
      "the chosen algorithm's flows then share the cluster's links on SimGrid. Times are per call of\n"
      "calls issued back to back (nccl-tests): at least the host's time to issue one.\n\n"
      "example: gputwin collective --cluster dgx-a100 --nodes 16 --op all-reduce --ranks 128 --sweep 1M:8G");
  topo::add_cluster_flags(parser);
  parser.add_section("collective");
  parser.add_option("--op", "OP", collective_op_names());
  parser.add_option("--ranks", "R", "participating GPUs (default: every GPU of the cluster)");
  parser.add_option("--ranks-per-node", "K", "ranks placed on each node (default: all its GPUs)");
  parser.add_option("--bytes", "SIZE", "one size, e.g. 8G (binary multiples K, M, G, T)");
  parser.add_option("--sweep", "MIN:MAX[:F]", "sizes MIN, MIN*F, ... MAX (F = 2), e.g. 1M:8G");
  parser.add_option("--algo", "ring|tree|nvls|nvlstree|collnetdirect|collnetchain",
                    "force NCCL's algorithm (like NCCL_ALGO)");
  parser.add_option("--proto", "ll|ll128|simple", "force NCCL's protocol (like NCCL_PROTO)");
  parser.add_option("--rank-loads", "W,W,...",
                    "all-to-all-v: one load per rank (a MoE dispatch: rank i sends rank j size/n x W_j / mean W); "
                    "default every pair size/n");
  parser.add_switch("--two-hop", "all-to-all as DeepEP: RDMA to the sender's rail in the receiver's node, then NVLink");
  parser.add_option("--gpus-per-thread", "G",
                    "GPUs one host thread launches each call on, as nccl-tests -g G (default: all ranks when\n"
                    "they fit one node, as `all_reduce_perf -g 8`; else 1, as `mpirun -np N all_reduce_perf -g 1`)");
  sim::add_max_memory_flag(parser);
  parser.add_section("output");
  parser.add_switch("--json", "a JSON object: the cluster, op and ranks, and \"results\", a list of {bytes, time_s, "
                              "algbw_gbps, busbw_gbps, algorithm, protocol}");
  parser.add_optional_value("--link-report", "FILE",
                            "bytes and busy fraction per link and link kind over the whole run, the busiest links; "
                            "JSON into FILE if given");
  return parser;
}

// --op, --bytes or --sweep, --algo and --proto; throws InputError for a missing or bad one.
sim::CollectiveRequest read_collective_request(const ParsedArgs& parsed)
{
  sim::CollectiveRequest request;
  const std::optional<std::string> op_text = parsed.value("--op");
  if (!op_text)
    throw InputError("--op: required (expected " + collective_op_names() + ")");
  const std::optional<CollectiveOp> op = parse_collective_op(*op_text);
  if (!op)
    throw InputError("--op: expected " + collective_op_names() + ", got '" + *op_text + "'");
  request.op = *op;
  if (parsed.has("--bytes") == parsed.has("--sweep"))
    throw InputError("--bytes: expected exactly one of --bytes SIZE or --sweep MIN:MAX");
  if (parsed.has("--bytes"))
    request.sizes_bytes.push_back(parse_byte_size("--bytes", *parsed.value("--bytes")));
  else
    request.sizes_bytes = parse_size_sweep("--sweep", *parsed.value("--sweep"));
  if (const auto a = parsed.value("--algo")) {
    request.options.algorithm = sim::parse_nccl_algorithm(*a);
    if (!request.options.algorithm)
      throw InputError("--algo: expected ring|tree|nvls|nvlstree|collnetdirect|collnetchain, got '" + *a + "'");
  }
  if (const auto p = parsed.value("--proto")) {
    request.options.protocol = sim::parse_nccl_protocol(*p);
    if (!request.options.protocol)
      throw InputError("--proto: expected ll|ll128|simple, got '" + *p + "'");
  }
  if ((parsed.has("--rank-loads") || parsed.has("--two-hop")) && request.op != CollectiveOp::AllToAll)
    throw InputError(std::string(parsed.has("--two-hop") ? "--two-hop" : "--rank-loads") +
                     ": only for --op all-to-all (got --op " + to_string(request.op) + ")");
  if (const auto loads = parsed.value("--rank-loads")) {
    double sum = 0;
    size_t start = 0;
    while (start <= loads->size()) {
      const size_t comma = std::min(loads->find(',', start), loads->size());
      const double w = parse_number("--rank-loads", loads->substr(start, comma - start));
      if (w < 0)
        throw InputError("--rank-loads: expected non-negative loads, got " + loads->substr(start, comma - start));
      request.options.all_to_all.rank.push_back(w);
      sum += w;
      start = comma + 1;
    }
    if (!(sum > 0))
      throw InputError("--rank-loads: expected at least one positive load");
    for (double& w : request.options.all_to_all.rank) // normalised to mean 1: the op's size stays what each rank sends
      w *= static_cast<double>(request.options.all_to_all.rank.size()) / sum;
  }
  request.options.two_hop = parsed.has("--two-hop");
  return request;
}

// The cluster and the ranks on it from the cluster flags, --ranks and --ranks-per-node.
Placement place_collective_ranks(const ParsedArgs& parsed)
{
  Placement placement;
  // Without --nodes the cluster is sized to hold the ranks.
  topo::ClusterSpec& cluster = placement.cluster;
  cluster = topo::read_cluster(parsed);
  const int64_t per_node = parsed.integer("--ranks-per-node").value_or(cluster.gpus_per_node);
  if (per_node <= 0)
    throw InputError("--ranks-per-node: expected a positive integer, got " + std::to_string(per_node));
  const std::optional<int64_t> ranks_flag = parsed.integer("--ranks");
  if (ranks_flag && *ranks_flag <= 0)
    throw InputError("--ranks: expected a positive integer, got " + std::to_string(*ranks_flag));
  placement.memory_limit_bytes = sim::max_memory_bytes(parsed);
  if (ranks_flag && !parsed.has("--nodes")) {
    const int64_t nodes = (*ranks_flag + per_node - 1) / per_node;
    if (nodes > 100000)
      throw InputError("--ranks: " + std::to_string(*ranks_flag) + " ranks need more than 100000 nodes");
    sim::check_resources(sim::estimate_platform(nodes * cluster.gpus_per_node), placement.memory_limit_bytes, parsed,
                    "the collective");
    cluster = topo::read_cluster(parsed, static_cast<int>(nodes)); // the fault flags kept
  }
  const int64_t ranks = ranks_flag.value_or(static_cast<int64_t>(cluster.nodes) * per_node);
  // One rank communicates with nobody: NCCL's result would be a local copy, nccl-tests' bandwidth 0 by definition.
  if (ranks < 2)
    throw InputError("--ranks: a collective needs at least 2 ranks, got " + std::to_string(ranks) +
                     " (one rank moves no data over any link)");
  placement.ranks = ranks;
  placement.ranks_per_node = per_node;
  placement.gpus = sim::place_ranks(cluster, ranks, per_node);
  return placement;
}

// --gpus-per-thread, 1 to the ranks; by default all the ranks when they fit one node, else 1.
int64_t gpus_per_thread_flag(const ParsedArgs& parsed, const Placement& placement)
{
  const int64_t ranks = placement.ranks;
  const int64_t gpus_per_thread =
      parsed.integer("--gpus-per-thread").value_or(ranks <= placement.ranks_per_node ? ranks : 1);
  if (gpus_per_thread <= 0 || gpus_per_thread > ranks)
    throw InputError("--gpus-per-thread: expected 1.." + std::to_string(ranks) + ", got " +
                     std::to_string(gpus_per_thread));
  return gpus_per_thread;
}

// NCCL's plan of the collective at each size (its algorithm, protocol and flows), within the resource guard.
std::vector<sim::CollectivePlan> plan_sizes(const ParsedArgs& parsed, const topo::ClusterGraph& graph,
                                            const sim::CollectiveRequest& request, const Placement& placement)
{
  const int64_t ranks = placement.ranks;
  const int64_t gpus = placement.cluster.gpus();
  if (request.op == CollectiveOp::AllToAll) // n^2 flows per size, allocated while planning: estimated before
    sim::check_resources(sim::estimate_collective(gpus, static_cast<double>(ranks) * static_cast<double>(ranks) *
                                                  static_cast<double>(request.sizes_bytes.size())),
                    placement.memory_limit_bytes, parsed, "the collective");
  std::vector<sim::CollectivePlan> plans;
  try {
    for (const int64_t bytes : request.sizes_bytes)
      plans.push_back(
          sim::plan_collective(graph.spec(), request.op, placement.gpus, static_cast<double>(bytes), request.options));
  } catch (const std::invalid_argument& e) {
    throw InputError(std::string(parsed.has("--algo") ? "--algo: " : "--op: ") + e.what());
  }
  double flows = 0;
  for (const sim::CollectivePlan& p : plans)
    flows += static_cast<double>(p.flows.size());
  sim::check_resources(sim::estimate_collective(gpus, flows), placement.memory_limit_bytes, parsed, "the collective");
  return plans;
}

} // namespace

int run_collective(const std::vector<std::string>& args, std::ostream& out)
{
  ArgParser parser = collective_parser();
  const ParsedArgs parsed = parser.parse(args);
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }

  sim::CollectiveRequest request = read_collective_request(parsed);
  const Placement placement = place_collective_ranks(parsed);
  if (!request.options.all_to_all.rank.empty() &&
      static_cast<int64_t>(request.options.all_to_all.rank.size()) != placement.ranks)
    throw InputError("--rank-loads: " + std::to_string(request.options.all_to_all.rank.size()) + " loads for " +
                     std::to_string(placement.ranks) + " ranks (expected one per rank)");
  const topo::ClusterGraph graph(placement.cluster);
  const int64_t gpus_per_thread = gpus_per_thread_flag(parsed, placement);
  request.options.gpus_per_thread = static_cast<int>(gpus_per_thread);
  const std::vector<sim::CollectivePlan> plans = plan_sizes(parsed, graph, request, placement);

  const sim::CollectiveRun run = sim::run_collective_plans(graph, plans, parsed.has("--link-report"));
  const std::vector<sim::CollectiveResultRow> rows = sim::collective_result_rows(request, placement.ranks, plans, run.timings);
  const std::string link_file = parsed.value("--link-report").value_or("");
  if (run.links && !link_file.empty())
    sim::write_link_report_file(link_file, graph, *run.links);
  const sim::LinkReport* inline_links = run.links && link_file.empty() ? &*run.links : nullptr;
  if (parsed.has("--json")) {
    const sim::CollectivePlacement where{placement.ranks, placement.ranks_per_node, gpus_per_thread};
    sim::write_collective_json(out, placement.cluster, where, request, rows, graph, inline_links);
  } else {
    sim::print_collective_table(out, placement.cluster, request.op, placement.ranks, plans, rows, run);
    if (inline_links)
      sim::print_link_report(out, graph, *inline_links);
  }
  return 0;
}

} // namespace gputwin::cli
