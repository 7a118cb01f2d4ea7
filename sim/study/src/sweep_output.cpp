#include "gputwin/sim/sweep_output.hpp"

#include "gputwin/common/json_writer.hpp"
#include "gputwin/sim/plan_cell.hpp"
#include "gputwin/sim/report_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace gputwin::sim {

void print_sweep_table(std::ostream& out, const std::vector<SweepRow>& rows)
{
  // The plan column as wide as its longest cell (recompute modules lengthen it), 52 at least.
  int plan_width = 52;
  for (const SweepRow& r : rows)
    plan_width = std::max(plan_width, static_cast<int>(plan_cell(r.plan).size()));
  char line[768];
  std::snprintf(line, sizeof line, "%-12s %-10s %6s  %-*s %-9s %-13s %9s %12s %6s %10s %12s %12s %7s\n", "model",
                "cluster", "GPUs", plan_width, "best plan", "attention", "overlaps", "iter s", "tokens/s", "MFU", "train days",
                "GPU-hours", "cost", "scaling");
  out << line;
  for (const SweepRow& r : rows) {
    const ParallelPlan& p = r.plan;
    const std::string scaling =
        std::isfinite(r.scaling_efficiency) ? csv_number("%.1f%%", 100 * r.scaling_efficiency) : "-";
    std::snprintf(line, sizeof line, "%-12s %-10s %6lld  %-*s %-9s %-13s %9.4f %12.0f %5.1f%% %10s %12s %12s %7s\n",
                  r.model.c_str(), r.cluster.c_str(), static_cast<long long>(r.gpus), plan_width, plan_cell(p).c_str(),
                  to_string(p.attention).c_str(), overlaps_text(r.options).c_str(), r.iteration_time_s, r.tokens_per_s,
                  100 * r.mfu, csv_number("%.2f", r.time_to_train_s / 86400).c_str(),
                  csv_number("%.0f", r.gpu_hours).c_str(), csv_number("%.0f", r.cost).c_str(), scaling.c_str());
    out << line;
  }
}

void write_sweep_json(std::ostream& out, const std::vector<SweepRow>& rows)
{
  JsonWriter w(out);
  w.begin_array();
  for (const SweepRow& r : rows) {
    w.begin_object();
    w.field("model", r.model);
    w.field("cluster", r.cluster);
    w.field("gpus", r.gpus);
    write_plan_json(w, r.plan);
    write_overlaps_json(w, r.options);
    w.field("iteration_time_s", r.iteration_time_s);
    w.field("tokens_per_s", r.tokens_per_s);
    w.field("mfu", r.mfu);
    w.field("peak_memory_bytes", r.peak_memory_bytes);
    w.field("time_to_train_s", r.time_to_train_s);
    w.field("gpu_hours", r.gpu_hours);
    w.field("cost", r.cost);
    w.field("scaling_efficiency", r.scaling_efficiency);
    w.field("point", static_cast<int64_t>(r.point));
    w.end_object();
  }
  w.end_array();
  out << "\n";
}

} // namespace gputwin::sim
