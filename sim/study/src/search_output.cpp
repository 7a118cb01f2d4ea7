#include "gputwin/sim/search_output.hpp"

#include "gputwin/common/byte_text.hpp"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/sim/plan_cell.hpp"
#include "gputwin/sim/report_json.hpp"
#include "gputwin/sim/sweep_csv.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace gputwin::sim {

void write_search_csv(std::ostream& out, const std::vector<SimulatedCandidate>& ranked)
{
  out << "rank,tp,pp,dp,micro_batch,global_batch,schedule,chunks,recompute,sp,zero,attention,iteration_time_s,"
         "estimated_iteration_time_s,tokens_per_s,mfu,bubble_fraction,exposed_communication_s,peak_memory_bytes,cp,"
         "fp8,tp_comm_overlap,overlap_grad_reduce,overlap_param_gather,ep,etp\n";
  char line[512];
  for (size_t i = 0; i < ranked.size(); ++i) {
    const SimulatedCandidate& r = ranked[i];
    const ParallelPlan& p = r.estimate.candidate.plan;
    const WorkloadOptions& o = r.estimate.candidate.options;
    std::snprintf(
        line, sizeof line,
        "%zu,%lld,%lld,%lld,%lld,%lld,%s,%lld,%s,%d,%d,%s,%.9g,%.9g,%.9g,%.6g,%.6g,%.9g,%lld,%lld,%s,%d,%d,%d,%lld,%lld\n", i + 1,
        static_cast<long long>(p.tp), static_cast<long long>(p.pp), static_cast<long long>(p.dp),
        static_cast<long long>(p.micro_batch), static_cast<long long>(p.effective_global_batch()),
        to_string(p.schedule).c_str(), static_cast<long long>(p.chunks), recompute_label(p).c_str(),
        p.sequence_parallel() ? 1 : 0, p.zero_stage, to_string(p.attention).c_str(), r.report.iteration_time_s,
        r.estimate.iteration_time_s, r.report.tokens_per_s, r.report.mfu, r.report.bubble_fraction,
        r.report.exposed_comm_s, static_cast<long long>(r.estimate.candidate.peak_memory_bytes),
        static_cast<long long>(p.cp), precision_csv_cell(p).c_str(), o.tp_comm_overlap ? 1 : 0,
        o.overlap_grad_reduce ? 1 : 0, o.overlap_param_gather ? 1 : 0, static_cast<long long>(p.ep),
        static_cast<long long>(p.expert_tp()));
    out << line;
  }
}

void write_search_json(std::ostream& out, const std::vector<SimulatedCandidate>& ranked)
{
  JsonWriter w(out);
  w.begin_array();
  for (const SimulatedCandidate& r : ranked) {
    w.begin_object();
    write_plan_json(w, r.estimate.candidate.plan);
    write_overlaps_json(w, r.estimate.candidate.options);
    w.field("iteration_time_s", r.report.iteration_time_s);
    w.field("estimated_iteration_time_s", r.estimate.iteration_time_s);
    w.field("tokens_per_s", r.report.tokens_per_s);
    w.field("mfu", r.report.mfu); // of the GEMMs' precision peak, as simulate's
    w.field("mfu_bf16", r.report.mfu_bf16);
    w.field("bubble_fraction", r.report.bubble_fraction);
    w.field("exposed_communication_s", r.report.exposed_comm_s);
    w.field("peak_memory_bytes", r.estimate.candidate.peak_memory_bytes);
    w.end_object();
  }
  w.end_array();
  out << "\n";
}

void print_search_table(std::ostream& out, const GptConfig& model, const SearchRequest& request,
                        const std::vector<SimulatedCandidate>& ranked, size_t ruled_out)
{
  const PlanEnumeration& plans = request.plans;
  out << "model    " << model.name << " on " << request.gpus << " GPUs of " << request.cluster.name << ", global batch "
      << request.global_batch << "\n";
  out << "plans    " << plans.shapes << " valid splits; " << plans.too_big << " do not fit "
      << format_gib_number(static_cast<double>(request.cluster.gpu.hbm_bytes)) << " GiB even with full recompute; "
      << plans.fitting.size() << " fit: " << plans.fitting.size() - ruled_out << " estimated ("
      << std::count_if(plans.fitting.begin(), plans.fitting.end(),
                       [](const PlanCandidate& c) { return any_overlap(c.options); })
      << " of all with overlaps that apply, tried where they could rank), " << ruled_out
      << " ruled out by a lower bound (compute alone or contention-free); best " << ranked.size() << " simulated\n\n";
  // The plan column as wide as its longest cell (recompute modules lengthen it), 58 at least.
  int plan_width = 58;
  for (const SimulatedCandidate& r : ranked)
    plan_width = std::max(plan_width, static_cast<int>(plan_cell(r.estimate.candidate.plan).size()));
  char line[768];
  std::snprintf(line, sizeof line, "%4s  %-*s %-9s %-13s %10s %10s %12s %6s %7s %9s %8s\n", "rank", plan_width, "plan",
                "attention", "overlaps", "sim s", "est s", "tokens/s", "MFU", "bubble", "exp.comm", "mem GiB");
  out << line;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const SimulatedCandidate& r = ranked[i];
    const ParallelPlan& p = r.estimate.candidate.plan;
    std::snprintf(line, sizeof line, "%4zu  %-*s %-9s %-13s %10.4f %10.4f %12.0f %5.1f%% %7.3f %9.4f %8s\n", i + 1,
                  plan_width, plan_cell(p).c_str(), to_string(p.attention).c_str(),
                  overlaps_text(r.estimate.candidate.options).c_str(), r.report.iteration_time_s,
                  r.estimate.iteration_time_s, r.report.tokens_per_s, 100 * r.report.mfu, r.report.bubble_fraction,
                  r.report.exposed_comm_s,
                  format_gib_number(static_cast<double>(r.estimate.candidate.peak_memory_bytes)).c_str());
    out << line;
  }
}

} // namespace gputwin::sim
