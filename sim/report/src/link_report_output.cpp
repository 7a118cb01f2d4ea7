#include "gputwin/sim/link_report_output.hpp"

#include "gputwin/common/output_file.hpp"

#include <algorithm>
#include <cstdio>

namespace gputwin::sim {

namespace {

const std::string& link_name(const topo::ClusterGraph& graph, int link)
{
  return graph.links()[static_cast<size_t>(link)].name;
}

void write_exposed_json(JsonWriter& json, const topo::ClusterGraph& graph, const sim::ExposedAttribution& e)
{
  json.key("exposed_communication");
  json.begin_object();
  json.field("stage", int64_t{0});
  json.field("exposed_s", e.exposed_s);
  json.field("unattributed_s", e.unattributed_s);
  json.key("by_kind");
  json.begin_array();
  for (const auto& [kind, seconds] : e.kinds) {
    json.begin_object();
    json.field("kind", sim::to_string(kind));
    json.field("seconds", seconds);
    json.end_object();
  }
  json.end_array();
  json.key("by_link");
  json.begin_array();
  for (size_t i = 0; i < e.links.size() && i < link_report_top; ++i) {
    json.begin_object();
    json.field("name", link_name(graph, e.links[i].first));
    json.field("kind", sim::to_string(sim::link_class(graph, e.links[i].first)));
    json.field("seconds", e.links[i].second);
    json.end_object();
  }
  json.end_array();
  json.end_object();
}

} // namespace

void write_link_report_json(JsonWriter& json, const topo::ClusterGraph& graph, const sim::LinkReport& report)
{
  json.key("links");
  json.begin_array();
  for (const sim::LinkUse& use : report.links) {
    json.begin_object();
    json.field("name", link_name(graph, use.link));
    json.field("kind", sim::to_string(sim::link_class(graph, use.link)));
    json.field("bytes", use.bytes);
    json.field("flows", use.flows);
    json.field("busy_fraction", use.busy_fraction);
    json.field("utilisation", use.utilisation);
    json.end_object();
  }
  json.end_array();
  if (report.busiest_kind)
    json.field("busiest_link_kind", sim::to_string(*report.busiest_kind));
  else
    json.field("busiest_link_kind", "none");
  json.key("link_report");
  json.begin_object();
  json.field("window_s", report.window_s);
  json.field("flows", report.flows);
  json.field("flow_bytes", report.flow_bytes);
  json.field("inter_node_bytes", report.inter_domain_bytes); // between NVLink domains (link_report.hpp)
  json.key("kinds");
  json.begin_array();
  for (const sim::LinkClassTotal& total : report.kinds) {
    json.begin_object();
    json.field("kind", sim::to_string(total.kind));
    json.field("links", total.links);
    json.field("used", total.used);
    json.field("bytes", total.bytes);
    json.field("mean_busy_fraction", total.mean_busy_fraction);
    json.field("max_busy_fraction", total.max_busy_fraction);
    json.end_object();
  }
  json.end_array();
  json.key("top_links");
  json.begin_array();
  for (const sim::LinkUse* use : sim::busiest_links(report, link_report_top)) {
    json.begin_object();
    json.field("name", link_name(graph, use->link));
    json.field("kind", sim::to_string(sim::link_class(graph, use->link)));
    json.field("bytes", use->bytes);
    json.field("busy_fraction", use->busy_fraction);
    json.field("utilisation", use->utilisation);
    json.end_object();
  }
  json.end_array();
  if (report.exposed)
    write_exposed_json(json, graph, *report.exposed);
  json.end_object();
}

void print_link_report(std::ostream& out, const topo::ClusterGraph& graph, const sim::LinkReport& report)
{
  char line[256];
  std::snprintf(line, sizeof line, "\nlink report over %.4f s: %lld flows, %.4g bytes (%.4g between NVLink domains)\n",
                report.window_s, static_cast<long long>(report.flows), report.flow_bytes, report.inter_domain_bytes);
  out << line;
  out << "  kind            links   used       bytes  mean busy   max busy\n";
  for (const sim::LinkClassTotal& total : report.kinds) {
    std::snprintf(line, sizeof line, "  %-14s %6lld %6lld %11.4g %10.3f %10.3f\n", sim::to_string(total.kind),
                  static_cast<long long>(total.links), static_cast<long long>(total.used), total.bytes,
                  total.mean_busy_fraction, total.max_busy_fraction);
    out << line;
  }
  out << "  busiest link kind: " << (report.busiest_kind ? sim::to_string(*report.busiest_kind) : "none")
      << " (highest mean busy fraction)\n";
  out << "  busiest links (busy fraction, mean utilisation of the bandwidth, bytes):\n";
  for (const sim::LinkUse* use : sim::busiest_links(report, link_report_top)) {
    std::snprintf(line, sizeof line, "    %-34s %-13s %6.3f %6.3f %11.4g\n", link_name(graph, use->link).c_str(),
                  sim::to_string(sim::link_class(graph, use->link)), use->busy_fraction, use->utilisation, use->bytes);
    out << line;
  }
  if (!report.exposed)
    return;
  const sim::ExposedAttribution& e = *report.exposed;
  std::snprintf(line, sizeof line, "  exposed communication of stage 0: %.4f s, by the links that limited it:\n",
                e.exposed_s);
  out << line;
  for (const auto& [kind, seconds] : e.kinds) {
    std::snprintf(line, sizeof line, "    %-34s %.4f s\n", sim::to_string(kind), seconds);
    out << line;
  }
  std::snprintf(line, sizeof line, "    %-34s %.4f s\n", "latency, waiting for peers", e.unattributed_s);
  out << line;
  for (size_t i = 0; i < e.links.size() && i < 5; ++i) {
    std::snprintf(line, sizeof line, "    %-34s %.4f s\n", link_name(graph, e.links[i].first).c_str(), e.links[i].second);
    out << line;
  }
}

void write_link_report_file(const std::string& path, const topo::ClusterGraph& graph, const sim::LinkReport& report)
{
  write_file_atomically(
      path,
      [&](std::ostream& out) {
        JsonWriter json(out);
        json.begin_object();
        write_link_report_json(json, graph, report);
        json.end_object();
        out << '\n';
      },
      "--link-report");
}

} // namespace gputwin::sim
