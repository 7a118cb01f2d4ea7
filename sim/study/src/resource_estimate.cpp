#include "gputwin/sim/resource_estimate.hpp"

#include "gputwin/common/byte_text.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/comm_expansion.hpp"
#include "gputwin/sim/work_estimate.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace gputwin::sim {

namespace {

// Bytes per unit, fitted to the peak RSS (/usr/bin/time -f %M) of real runs on this machine (2 cores, SimGrid
// 3.32; README.md, `gputwin simulate`, "Resource guards"): simulate of GPT-3 175B tp 8 pp 8 on 2048-16384 H100s
// (dp 32-256), the paper plans of 22B and 175B (also --global-batch 1024), gpt-1t tp 8 pp 64 dp 6 on 3072 A100s,
// and 102400 GPUs (dp 1600). The platform is a star zone (sim/platform: one transfer host per GPU pair that
// talks), so it grows with the GPUs and the pairs; the full zone it replaced held a dense GPUs x GPUs route
// table (8 bytes per entry: 2 GiB at 16384 GPUs, 78 GiB at 102400) -- add that term back if it ever returns.
constexpr double base_bytes = 40e6;                // the binary, SimGrid's engine, the built-in tables
constexpr double bytes_per_gpu = 14e3;             // SimGrid host + netpoint + CPU model, name, bookkeeping
constexpr double bytes_per_op = 260;               // traces::Op in the programs, accounting, done flags, host
constexpr double bytes_per_timeline_op = 120;      // one recorded interval
constexpr double bytes_per_route = 800;            // transfer host + route links + our pair, latency entries
constexpr double bytes_per_flow_in_flight = 1.5e3; // SimGrid comm activity + network action
constexpr double estimator_bytes_per_op = 330;     // the DAG executor's graph node per op (--estimate)
// A compiled case of a measured-iteration table (sim/iteration_fit.cpp, CompiledCase: the DAG executor's node, the
// op's signature index, communication time and host class; the programs are dropped once compiled). Fitted to
// `compare --iterations` on vTrain's 1440 rows repeated to 5000 and 20000 rows: 307 KB per row of ~5050 ops.
constexpr double compiled_case_bytes_per_op = 61;

struct Counts {
  double ops = 0, routes = 0, largest_op_flows = 0;
  double step_flows = 0;      // of the ops of micro-batches (TP collectives, pipeline messages)
  double iteration_flows = 0; // of the once-per-iteration ops (DP reductions, embedding all-reduce)
};

// The ops, flows and routes of the workload of (model, plan): stage 0, stage 1 (standing for every middle stage,
// which all hold the same ops) and the last stage are generated; the middle one counts pp - 2 times. Without
// `cluster` the ops only: no communication is expanded.
Counts count_workload(const topo::ClusterSpec* cluster, const GptConfig& model, const ParallelPlan& plan,
                      const WorkloadOptions& options)
{
  const Workload workload = make_workload(model, plan, options);
  std::optional<CommExpander> comm;
  if (cluster != nullptr)
    comm.emplace(*cluster, workload);
  std::vector<std::pair<int64_t, double>> stages = {{0, 1.0}};
  if (plan.pp > 2)
    stages.emplace_back(1, static_cast<double>(plan.pp - 2));
  if (plan.pp > 1)
    stages.emplace_back(plan.pp - 1, 1.0);
  Counts c;
  for (const auto& [stage, weight] : stages) {
    const traces::RankProgram program = stage_program(workload, stage);
    c.ops += weight * static_cast<double>(program.ops.size());
    if (!comm)
      continue;
    std::set<std::pair<int, int>> pairs;
    std::set<const CommWork*> seen; // the expansions are cached: their pairs counted once
    double step_flows = 0, iteration_flows = 0;
    for (const traces::Op& op : program.ops) {
      const CommWork* work = nullptr;
      if (op.kind == traces::OpKind::Collective)
        work = &comm->collective(op);
      else if (op.kind == traces::OpKind::Send)
        work = &comm->message(program.rank, op);
      if (work == nullptr)
        continue;
      (op.micro_batch >= 0 ? step_flows : iteration_flows) += static_cast<double>(work->flows.size());
      c.largest_op_flows = std::max(c.largest_op_flows, static_cast<double>(work->flows.size()));
      if (seen.insert(work).second)
        for (const Flow& f : work->flows)
          pairs.emplace(f.src_gpu, f.dst_gpu);
    }
    c.step_flows += weight * step_flows;
    c.iteration_flows += weight * iteration_flows;
    c.routes += weight * static_cast<double>(pairs.size());
  }
  return c;
}

// Counts of the plan, from four probes: (m1, 1) (m2, 1) (m1, 2) (m2, 2) micro-batches per pipeline x layers per
// model chunk, extrapolated bilinearly to the plan's (m, layers per chunk). Ops and the flows of micro-batch ops
// are exactly bilinear (per micro-batch and layer, per layer once -- the DP reduction with
// --overlap-grad-reduce --, per micro-batch once, and per iteration); routes depend on neither (the same groups),
// the largest op neither. The once-per-iteration reductions carry bytes in proportion to the layers, and NCCL's
// choice of algorithm (so their flow count) follows the bytes: they are taken from the larger probe, scaled by
// the layers where there is one per layer. Uneven first/last stages move layers between stages without changing
// their number: the probes split their few layers evenly, and the plan's layers per chunk is the mean. Without
// `cluster` the ops only.
Counts count_plan(const topo::ClusterSpec* cluster, const GptConfig& model, const ParallelPlan& plan,
                  const WorkloadOptions& options)
{
  const int64_t chunks = stage_chunks(plan);
  const int64_t unit = plan.schedule == Schedule::Interleaved ? plan.pp : 1; // interleaved: m a multiple of pp
  const double m = static_cast<double>(plan.micro_batches());
  const double l = static_cast<double>(model.layers) / static_cast<double>(plan.pp * chunks);
  Counts probe[2][2];
  for (int mi = 0; mi < 2; ++mi)
    for (int li = 0; li < 2; ++li) {
      GptConfig small = model;
      small.layers = plan.pp * chunks * (li + 1);
      ParallelPlan p = plan;
      p.pp_first_stage_layers = 0;
      p.pp_last_stage_layers = 0;
      p.global_batch = unit * (mi + 1) * plan.micro_batch * plan.dp;
      probe[mi][li] = count_workload(cluster, small, p, options);
    }
  const double m1 = static_cast<double>(unit), m2 = 2.0 * static_cast<double>(unit);
  auto bilinear = [&](double Counts::*field) {
    const double f11 = probe[0][0].*field, f12 = probe[0][1].*field, f21 = probe[1][0].*field, f22 = probe[1][1].*field;
    const double per_m = (f21 - f11) / (m2 - m1), per_l = f12 - f11;
    const double per_ml = (f22 - f21 - f12 + f11) / (m2 - m1);
    return std::max(0.0, f11 + per_m * (m - m1) + per_l * (l - 1) + per_ml * (m - m1) * (l - 1));
  };
  Counts c;
  c.ops = bilinear(&Counts::ops);
  c.step_flows = bilinear(&Counts::step_flows);
  c.iteration_flows = probe[0][1].iteration_flows * (options.overlap_grad_reduce ? std::max(1.0, l / 2) : 1.0);
  c.routes = std::max(probe[1][1].routes, probe[0][0].routes);
  c.largest_op_flows = std::max(probe[1][1].largest_op_flows, probe[0][0].largest_op_flows);
  return c;
}

} // namespace

std::string count_text(double n)
{
  char text[32];
  if (n < 1e5)
    std::snprintf(text, sizeof text, "%.0f", n);
  else
    std::snprintf(text, sizeof text, "%.2g", n);
  return text;
}

double probed_op_count(const GptConfig& model, const ParallelPlan& plan, const WorkloadOptions& options)
{
  return count_plan(nullptr, model, plan, options).ops;
}

ResourceEstimate estimate_platform(int64_t gpus)
{
  ResourceEstimate e;
  e.gpus = gpus;
  e.bytes = base_bytes + bytes_per_gpu * static_cast<double>(gpus);
  e.counted = false;
  return e;
}

ResourceEstimate estimate_simulation(const topo::ClusterSpec& cluster, const GptConfig& model, const ParallelPlan& plan,
                                     const WorkloadOptions& options, bool flow_level, bool timeline,
                                     int64_t limit_bytes)
{
  ResourceEstimate e;
  e.gpus = cluster.gpus();
  if (flow_level) {
    e = estimate_platform(e.gpus);
    if (limit_bytes > 0 && e.bytes > static_cast<double>(limit_bytes))
      return e; // refused on the platform alone, in microseconds
    e.counted = true;
  }
  const Counts c = count_plan(&cluster, model, plan, options);
  e.ops = c.ops;
  e.flows = c.step_flows + c.iteration_flows;
  e.routes = c.routes;
  e.largest_op_flows = c.largest_op_flows;
  if (flow_level)
    e.bytes += bytes_per_op * c.ops + bytes_per_route * c.routes + bytes_per_flow_in_flight * c.largest_op_flows;
  else
    e.bytes = base_bytes + estimator_bytes_per_op * c.ops;
  if (timeline)
    e.bytes += bytes_per_timeline_op * c.ops;
  return e;
}

ResourceEstimate estimate_programs(int64_t gpus, double ops)
{
  ResourceEstimate e = estimate_platform(gpus);
  e.ops = ops;
  e.bytes += bytes_per_op * ops;
  e.counted = true;
  return e;
}

ResourceEstimate estimate_collective(int64_t gpus, double flows)
{
  ResourceEstimate e = estimate_platform(gpus);
  e.flows = flows;
  e.largest_op_flows = flows;
  e.routes = flows;
  e.bytes += (bytes_per_route + bytes_per_flow_in_flight) * flows;
  e.counted = true;
  return e;
}

ResourceEstimate estimate_iteration_cases(int64_t gpus, const std::vector<IterationCase>& cases, size_t sampled_rows)
{
  double bound = 0;
  for (const IterationCase& c : cases)
    bound += estimate_plan_work(c.model, c.plan, true, false, c.options).ops;
  double sampled_exact = 0, sampled_bound = 0;
  const size_t samples = std::min(cases.size(), std::max<size_t>(1, sampled_rows));
  for (size_t k = 0; k < samples; ++k) {
    const IterationCase& c = cases[k * cases.size() / samples];
    sampled_exact += probed_op_count(c.model, c.plan, c.options);
    sampled_bound += estimate_plan_work(c.model, c.plan, true, false, c.options).ops;
  }
  ResourceEstimate e;
  e.gpus = gpus;
  e.ops = sampled_bound > 0 ? bound * sampled_exact / sampled_bound : bound;
  e.bytes = base_bytes + compiled_case_bytes_per_op * e.ops;
  return e;
}

ResourceEstimate estimate_iteration_table(int64_t gpus, const std::vector<IterationCase>& sampled, size_t rows)
{
  double ops = 0;
  for (const IterationCase& c : sampled)
    ops += probed_op_count(c.model, c.plan, c.options);
  ResourceEstimate e;
  e.gpus = gpus;
  e.ops = sampled.empty() ? 0 : ops / static_cast<double>(sampled.size()) * static_cast<double>(rows);
  e.bytes = base_bytes + compiled_case_bytes_per_op * e.ops;
  return e;
}

void check_resources(const ResourceEstimate& e, int64_t limit_bytes, bool limit_from_flag, const std::string& what)
{
  if (limit_bytes <= 0 || e.bytes <= static_cast<double>(limit_bytes))
    return;
  std::string detail = std::to_string(e.gpus) + " GPUs";
  if (e.ops > 0)
    detail += ", ~" + count_text(e.ops) + " ops";
  if (e.flows > 0)
    detail += ", ~" + count_text(e.flows) + " flows over ~" + count_text(e.routes) + " GPU pairs";
  const std::string limit = format_gib(static_cast<double>(limit_bytes));
  throw InputError(std::string("--max-memory: ") + what + " is estimated to need " + format_gib(e.bytes) +
                   (e.counted ? "" : " or more") + " of memory (" + detail + ") but " +
                   (limit_from_flag ? "--max-memory is " + limit : "this machine has " + limit) +
                   " (expected a smaller plan or cluster, or --max-memory SIZE above the estimate to run it anyway)");
}

} // namespace gputwin::sim
