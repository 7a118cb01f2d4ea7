// `gputwin collective`: one NCCL collective simulated on a cluster, printed like nccl-tests' *_perf.
#include "gputwin/common/byte_size.hpp"
#include "commands.hpp"
#include "gputwin/sim/link_report_output.hpp"
#include "gputwin/sim/report_json.hpp"
#include "resource_estimate.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/collective_executor.hpp"
#include "gputwin/sim/steady_state.hpp" // shortcuts_enabled
#include "gputwin/sim/stream_alone.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/traces/collective_op.hpp"
#include "gputwin/common/json_writer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>

namespace gputwin::cli {

namespace {

struct Row {
  int64_t bytes = 0;
  double time_s = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  std::string algorithm, protocol;
};

// Rank r on node r / per_node, local GPU r % per_node: ranks fill nodes in order, as mpirun places them.
std::vector<int> place_ranks(const topo::ClusterSpec& cluster, int64_t ranks, int64_t per_node)
{
  if (per_node > cluster.gpus_per_node)
    throw InputError("--ranks-per-node: " + std::to_string(per_node) + " is more than the " +
                     std::to_string(cluster.gpus_per_node) + " GPUs of a " + cluster.name + " node");
  const int64_t nodes_needed = (ranks + per_node - 1) / per_node;
  if (nodes_needed > cluster.nodes)
    throw InputError("--ranks: " + std::to_string(ranks) + " ranks at " + std::to_string(per_node) + " per node need " +
                     std::to_string(nodes_needed) + " nodes, but the cluster has " + std::to_string(cluster.nodes) +
                     " (expected at most " + std::to_string(cluster.nodes * per_node) + " ranks, or a larger --nodes)");
  std::vector<int> gpus;
  for (int64_t r = 0; r < ranks; ++r)
    gpus.push_back(static_cast<int>((r / per_node) * cluster.gpus_per_node + r % per_node));
  return gpus;
}

// `value` right-aligned in `width` characters: fixed-point with `precision` decimals where that fits, else in
// exponent form (a 1e-300 GB/s link takes 1e300 s), so the columns stay aligned for any value.
std::string column(double value, int width, int precision)
{
  char text[64];
  if (!std::isfinite(value)) {
    std::snprintf(text, sizeof text, "%*s", width, std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf");
    return text;
  }
  const int n = std::snprintf(text, sizeof text, "%*.*f", width, precision, value);
  if (n > width || (value != 0 && std::fabs(value) < std::pow(10.0, -precision)))
    std::snprintf(text, sizeof text, "%*.*e", width, std::max(0, width - 7 - (value < 0 ? 1 : 0)), value);
  return text;
}

// The collective the flags ask for: the op, its sizes, and the algorithm and protocol forced on NCCL.
struct CollectiveRequest {
  CollectiveOp op{};
  std::vector<int64_t> sizes_bytes;
  sim::CollectiveOptions options; // --algo and --proto; gpus_per_thread set once the ranks are placed
};

// The collective's ranks on the cluster (sized to hold them when --nodes is not given).
struct Placement {
  topo::ClusterSpec cluster;
  int64_t ranks = 0;
  int64_t ranks_per_node = 0;
  int64_t memory_limit_bytes = 0; // the resource guard's limit (--max-memory, else this machine's memory)
  std::vector<int> gpus;          // rank r runs on GPU gpus[r]
};

// What SimGrid gave for the plans, one per size, run back to back in one stream.
struct CollectiveRun {
  std::vector<sim::PlanTiming> timings;   // one per plan, in order
  std::optional<sim::LinkReport> links;   // with --link-report, when the run took any time
  size_t link_count = 0, route_count = 0; // the platform's
  double wall_s = 0;                      // the simulation's wall-clock time
};

// The nccl-tests table of the rows, then how much was simulated in what wall-clock time.
void print_table(std::ostream& out, const topo::ClusterSpec& cluster, CollectiveOp op, int64_t ranks,
                 const std::vector<sim::CollectivePlan>& plans, const std::vector<Row>& rows, const CollectiveRun& run)
{
  const sim::CollectivePlan& first = plans.front();
  char line[256];
  std::snprintf(line, sizeof line, "# gputwin collective: %s, %lld ranks on %d node(s) of %s, %d channel(s)\n",
                to_string(op).c_str(), static_cast<long long>(ranks), first.nodes, cluster.name.c_str(),
                first.channels);
  out << line;
  out << "#\n#          size       time     algbw     busbw   algo   proto\n"
         "#           (B)       (us)    (GB/s)    (GB/s)\n";
  for (const Row& r : rows) {
    std::snprintf(line, sizeof line, "%15lld %s %s %s   %-5s  %s\n", static_cast<long long>(r.bytes),
                  column(r.time_s * 1e6, 10, 2).c_str(), column(r.algbw_gbps, 9, 2).c_str(),
                  column(r.busbw_gbps, 9, 2).c_str(), r.algorithm.c_str(), r.protocol.c_str());
    out << line;
  }
  size_t flow_count = 0;
  for (const auto& p : plans)
    flow_count += p.flows.size();
  std::snprintf(line, sizeof line, "# simulated %zu flows over %zu links and %zu routes in %.2f s wall\n", flow_count,
                run.link_count, run.route_count, run.wall_s);
  out << line;
}

void print_json(std::ostream& out, const Placement& placement, const CollectiveRequest& request,
                int64_t gpus_per_thread, const std::vector<Row>& rows, const topo::ClusterGraph& graph,
                const sim::LinkReport* links)
{
  const sim::CollectiveOptions& options = request.options;
  JsonWriter json(out);
  json.begin_object();
  sim::write_cluster_json(json, placement.cluster);
  json.field("op", to_string(request.op));
  json.field("ranks", placement.ranks);
  json.field("ranks_per_node", placement.ranks_per_node);
  json.field("gpus_per_thread", gpus_per_thread);
  json.field("forced_algorithm", options.algorithm ? to_string(*options.algorithm) : std::string("none"));
  json.field("forced_protocol", options.protocol ? to_string(*options.protocol) : std::string("none"));
  json.key("results");
  json.begin_array();
  for (const Row& r : rows) {
    json.begin_object();
    json.field("bytes", r.bytes);
    json.field("time_s", r.time_s);
    json.field("algbw_gbps", r.algbw_gbps);
    json.field("busbw_gbps", r.busbw_gbps);
    json.field("algorithm", r.algorithm);
    json.field("protocol", r.protocol);
    json.end_object();
  }
  json.end_array();
  if (links)
    sim::write_link_report_json(json, graph, *links);
  json.end_object();
}

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
  add_max_memory_flag(parser);
  parser.add_section("output");
  parser.add_switch("--json", "a JSON object: the cluster, op and ranks, and \"results\", a list of {bytes, time_s, "
                              "algbw_gbps, busbw_gbps, algorithm, protocol}");
  parser.add_optional_value("--link-report", "FILE",
                            "bytes and busy fraction per link and link kind over the whole run, the busiest links; "
                            "JSON into FILE if given");
  return parser;
}

// --op, --bytes or --sweep, --algo and --proto; throws InputError for a missing or bad one.
CollectiveRequest read_collective_request(const ParsedArgs& parsed)
{
  CollectiveRequest request;
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
  placement.memory_limit_bytes = max_memory_bytes(parsed);
  if (ranks_flag && !parsed.has("--nodes")) {
    const int64_t nodes = (*ranks_flag + per_node - 1) / per_node;
    if (nodes > 100000)
      throw InputError("--ranks: " + std::to_string(*ranks_flag) + " ranks need more than 100000 nodes");
    check_resources(estimate_platform(nodes * cluster.gpus_per_node), placement.memory_limit_bytes, parsed,
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
  placement.gpus = place_ranks(cluster, ranks, per_node);
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
                                            const CollectiveRequest& request, const Placement& placement)
{
  const int64_t ranks = placement.ranks;
  const int64_t gpus = placement.cluster.gpus();
  if (request.op == CollectiveOp::AllToAll) // n^2 flows per size, allocated while planning: estimated before
    check_resources(estimate_collective(gpus, static_cast<double>(ranks) * static_cast<double>(ranks) *
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
  check_resources(estimate_collective(gpus, flows), placement.memory_limit_bytes, parsed, "the collective");
  return plans;
}

// The plans run back to back in one stream, timed without SimGrid (nothing else is on the network), or on SimGrid
// with `link_report` (the links' load over the run) or GPUTWIN_EXACT.
CollectiveRun run_plans(const topo::ClusterGraph& graph, const std::vector<sim::CollectivePlan>& plans,
                        bool link_report)
{
  std::vector<const sim::CollectivePlan*> stream;
  for (const sim::CollectivePlan& p : plans)
    stream.push_back(&p);
  CollectiveRun run;
  const auto wall_start = std::chrono::steady_clock::now();
  if (!link_report && sim::shortcuts_enabled()) { // one stream alone: no flow would reach SimGrid (stream_alone.hpp)
    sim::StreamAloneStats stats;
    run.timings = sim::time_stream_alone(graph, stream, &stats);
    run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    run.link_count = stats.links;
    run.route_count = stats.routes;
    return run;
  }
  const sim::SimgridPlatform platform(graph, sim::flow_pairs(stream));
  sim::FlowLog flow_log;
  std::vector<std::vector<sim::PlanTiming>> timings =
      sim::run_collective_streams(platform, graph, {stream}, true, link_report ? &flow_log : nullptr);
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  run.timings = std::move(timings[0]);
  run.link_count = platform.link_count();
  run.route_count = platform.route_count();
  if (link_report && !run.timings.empty() && run.timings.back().end_s > 0)
    run.links = sim::link_report(graph, flow_log, run.timings.back().end_s);
  return run;
}

// One row per size: its time per call, algbw and busbw (nccl-tests' definitions), and NCCL's choice.
std::vector<Row> result_rows(const CollectiveRequest& request, int64_t ranks,
                             const std::vector<sim::CollectivePlan>& plans, const std::vector<sim::PlanTiming>& timings)
{
  std::vector<Row> rows;
  for (size_t i = 0; i < plans.size(); ++i) {
    Row r;
    r.bytes = request.sizes_bytes[i];
    // nccl-tests times calls issued back to back: the host's issue time bounds each from below.
    r.time_s = sim::nccl_back_to_back_call_s(timings[i].duration_s(), plans[i].host_issue_s);
    r.algbw_gbps = r.time_s > 0 ? static_cast<double>(r.bytes) / r.time_s / 1e9 : 0.0;
    r.busbw_gbps = r.algbw_gbps * bus_bandwidth_factor(request.op, static_cast<int>(ranks));
    r.algorithm = to_string(plans[i].choice.algorithm);
    r.protocol = to_string(plans[i].choice.protocol);
    rows.push_back(r);
  }
  return rows;
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

  CollectiveRequest request = read_collective_request(parsed);
  const Placement placement = place_collective_ranks(parsed);
  if (!request.options.all_to_all.rank.empty() &&
      static_cast<int64_t>(request.options.all_to_all.rank.size()) != placement.ranks)
    throw InputError("--rank-loads: " + std::to_string(request.options.all_to_all.rank.size()) + " loads for " +
                     std::to_string(placement.ranks) + " ranks (expected one per rank)");
  const topo::ClusterGraph graph(placement.cluster);
  const int64_t gpus_per_thread = gpus_per_thread_flag(parsed, placement);
  request.options.gpus_per_thread = static_cast<int>(gpus_per_thread);
  const std::vector<sim::CollectivePlan> plans = plan_sizes(parsed, graph, request, placement);

  const CollectiveRun run = run_plans(graph, plans, parsed.has("--link-report"));
  const std::vector<Row> rows = result_rows(request, placement.ranks, plans, run.timings);
  const std::string link_file = parsed.value("--link-report").value_or("");
  if (run.links && !link_file.empty())
    sim::write_link_report_file(link_file, graph, *run.links);
  const sim::LinkReport* inline_links = run.links && link_file.empty() ? &*run.links : nullptr;
  if (parsed.has("--json")) {
    print_json(out, placement, request, gpus_per_thread, rows, graph, inline_links);
  } else {
    print_table(out, placement.cluster, request.op, placement.ranks, plans, rows, run);
    if (inline_links)
      sim::print_link_report(out, graph, *inline_links);
  }
  return 0;
}

} // namespace gputwin::cli
