#include "gputwin/sim/collective_output.hpp"

#include "gputwin/common/json_writer.hpp"
#include "gputwin/sim/link_report_output.hpp"
#include "gputwin/sim/report_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gputwin::sim {

namespace {

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

} // namespace

// The nccl-tests table of the rows, then how much was simulated in what wall-clock time.
void print_collective_table(std::ostream& out, const topo::ClusterSpec& cluster, CollectiveOp op, int64_t ranks,
                            const std::vector<CollectivePlan>& plans, const std::vector<CollectiveResultRow>& rows,
                            const CollectiveRun& run)
{
  const CollectivePlan& first = plans.front();
  char line[256];
  std::snprintf(line, sizeof line, "# gputwin collective: %s, %lld ranks on %d node(s) of %s, %d channel(s)\n",
                to_string(op).c_str(), static_cast<long long>(ranks), first.nodes, cluster.name.c_str(),
                first.channels);
  out << line;
  out << "#\n#          size       time     algbw     busbw   algo   proto\n"
         "#           (B)       (us)    (GB/s)    (GB/s)\n";
  for (const CollectiveResultRow& r : rows) {
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

void write_collective_json(std::ostream& out, const topo::ClusterSpec& cluster, const CollectivePlacement& placement,
                           const CollectiveRequest& request, const std::vector<CollectiveResultRow>& rows,
                           const topo::ClusterGraph& graph, const LinkReport* links)
{
  const CollectiveOptions& options = request.options;
  JsonWriter json(out);
  json.begin_object();
  write_cluster_json(json, cluster);
  json.field("op", to_string(request.op));
  json.field("ranks", placement.ranks);
  json.field("ranks_per_node", placement.ranks_per_node);
  json.field("gpus_per_thread", placement.gpus_per_thread);
  json.field("forced_algorithm", options.algorithm ? to_string(*options.algorithm) : std::string("none"));
  json.field("forced_protocol", options.protocol ? to_string(*options.protocol) : std::string("none"));
  json.key("results");
  json.begin_array();
  for (const CollectiveResultRow& r : rows) {
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
    write_link_report_json(json, graph, *links);
  json.end_object();
}

} // namespace gputwin::sim
