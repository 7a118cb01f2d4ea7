#pragma once
// `--link-report [FILE]` of simulate and collective (sim/estimator/link_report.hpp): a text section after the
// report, JSON members of the --json report, or a JSON file.

#include "gputwin/sim/link_report.hpp"
#include "gputwin/common/json_writer.hpp"

#include <ostream>
#include <string>

namespace gputwin::sim {

// Links listed by busy time in the text and in "top_links".
inline constexpr size_t link_report_top = 10;

// The members "links" (every link some flow crossed: name, kind, bytes, flows, busy_fraction, utilisation),
// "busiest_link_kind" and "link_report" (window, totals, per kind, top links, the exposed communication's links).
void write_link_report_json(JsonWriter& json, const topo::ClusterGraph& graph, const sim::LinkReport& report);

// The text section: per kind, the busiest links, and the exposed communication by link kind and link.
void print_link_report(std::ostream& out, const topo::ClusterGraph& graph, const sim::LinkReport& report);

// The JSON object of write_link_report_json into `path`, atomically; OutputError "--link-report: ..." on failure.
void write_link_report_file(const std::string& path, const topo::ClusterGraph& graph, const sim::LinkReport& report);

} // namespace gputwin::sim
