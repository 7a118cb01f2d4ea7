#include "gputwin/models/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>

namespace gputwin {

namespace {

bool is_gemm(const traces::Op& op)
{
  return op.gemm.m > 0 && op.gemm.n > 0 && op.gemm.k > 0;
}

// Points (x, t) of a line t = intercept + slope * x.
struct Points {
  std::vector<double> x, t;
  size_t distinct_x() const { return std::set<double>(x.begin(), x.end()).size(); }
};

struct Line {
  double intercept = 0, slope = 0;
};

// The line through `p` whose sum over the points equals the measured sum (so totals are reproduced), with
// intercept in [0, T/n] minimising sum(((intercept + slope x) - t) / t)^2. With a single distinct x the split
// cannot be fitted: the intercept is `single_size_intercept` (clamped); with every x zero the slope is 0.
// REQUIRES: p non-empty, every t > 0, every x >= 0.
Line fit_conserving(const Points& p, double single_size_intercept)
{
  const auto n = static_cast<double>(p.t.size());
  double total_t = 0, total_x = 0;
  for (size_t i = 0; i < p.t.size(); ++i)
    total_t += p.t[i], total_x += p.x[i];
  if (total_x <= 0)
    return Line{total_t / n, 0};
  double intercept = std::clamp(single_size_intercept, 0.0, total_t / n);
  if (p.distinct_x() >= 2) {
    // pred_i = intercept c_i + d_i with c_i = 1 - n x_i / X, d_i = T x_i / X: a quadratic in the intercept.
    double num = 0, den = 0;
    for (size_t i = 0; i < p.t.size(); ++i) {
      const double c = (1 - n * p.x[i] / total_x) / p.t[i], d = total_t * p.x[i] / total_x / p.t[i];
      num += c * (1 - d);
      den += c * c;
    }
    intercept = den > 0 ? std::clamp(num / den, 0.0, total_t / n) : intercept;
  }
  return Line{intercept, (total_t - n * intercept) / total_x};
}

// A GEMM as the fit sees it: math time = unit_s(k_half) / gemm_efficiency, where unit_s is the time at
// gemm_efficiency 1 (analytic curve or table, whichever the model uses).
struct GemmSample {
  const traces::Op* op = nullptr;
  double memory_s = 0; // the memory term with the fitted streaming bandwidth
  double measured_s = 0;
};

std::vector<double> unit_times_s(const GpuComputeModel& gpu, const std::vector<GemmSample>& samples, double k_half)
{
  GpuComputeModel unit = gpu;
  unit.gemm_efficiency = 1;
  unit.gemm_k_half = k_half;
  std::vector<double> times;
  times.reserve(samples.size());
  for (const GemmSample& s : samples)
    times.push_back(s.op->flops / (gpu.peak_flops * modelled_gemm_efficiency(unit, s.op->gemm)));
  return times;
}

// For `k_half`, the inverse efficiency x with which the GEMMs' modelled total equals the measured one (written
// to `inverse`; sum of max(math_i x, memory_i) is increasing in x: bisection), and the squared relative error
// with it. Infinity when even x -> 0 (every GEMM at its memory term) exceeds the measured total.
double gemm_objective(const GpuComputeModel& gpu, const std::vector<GemmSample>& samples, double k_half,
                      double& inverse)
{
  const std::vector<double> math_unit = unit_times_s(gpu, samples, k_half);
  const double overhead_s = gpu.kernel_overhead_s;
  double target = 0, memory_floor = 0, math_total = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    target += samples[i].measured_s - overhead_s;
    memory_floor += samples[i].memory_s;
    math_total += math_unit[i];
  }
  inverse = 0;
  if (!(target > memory_floor) || !(math_total > 0))
    return std::numeric_limits<double>::infinity();
  const auto modelled = [&](double x) {
    double sum = 0;
    for (size_t i = 0; i < samples.size(); ++i)
      sum += std::max(math_unit[i] * x, samples[i].memory_s);
    return sum;
  };
  double lo = 0, hi = target / math_total; // modelled(hi) >= hi * math_total = target
  for (int iteration = 0; iteration < 200 && hi - lo > 1e-15 * hi; ++iteration) {
    const double mid = (lo + hi) / 2;
    (modelled(mid) < target ? lo : hi) = mid;
  }
  inverse = (lo + hi) / 2;
  double sse = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const double r = (std::max(math_unit[i] * inverse, samples[i].memory_s) + overhead_s - samples[i].measured_s) /
                     samples[i].measured_s;
    sse += r * r;
  }
  return sse;
}

// Fits gemm_efficiency and gemm_k_half of `gpu` (memory efficiencies and overhead already fitted). False if no
// efficiency explains the data (kept nominal).
bool fit_gemms(GpuComputeModel& gpu, const std::vector<const traces::Op*>& ops, const std::vector<double>& measured_s)
{
  std::vector<GemmSample> samples;
  const double stream_bytes_per_s = memory_class_bytes_per_s(gpu, KernelClass::Elementwise);
  for (size_t i = 0; i < ops.size(); ++i)
    samples.push_back({ops[i], ops[i]->bytes / stream_bytes_per_s, measured_s[i]});
  std::vector<double> grid{0};
  for (int j = 0; j <= 64; ++j)
    grid.push_back(std::exp2(j / 4.0));
  size_t best = 0;
  double best_sse = std::numeric_limits<double>::infinity(), x = 0;
  for (size_t j = 0; j < grid.size(); ++j) {
    const double sse = gemm_objective(gpu, samples, grid[j], x);
    if (sse < best_sse)
      best_sse = sse, best = j;
  }
  if (!std::isfinite(best_sse))
    return false;
  // Golden-section search between the best grid point's neighbours.
  double lo = grid[best == 0 ? 0 : best - 1], hi = grid[std::min(best + 1, grid.size() - 1)];
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  for (int iteration = 0; iteration < 80; ++iteration) {
    const double a = hi - ratio * (hi - lo), b = lo + ratio * (hi - lo);
    if (gemm_objective(gpu, samples, a, x) <= gemm_objective(gpu, samples, b, x))
      hi = b;
    else
      lo = a;
  }
  double k_half = (lo + hi) / 2;
  if (!(gemm_objective(gpu, samples, k_half, x) <= best_sse))
    k_half = grid[best];
  gemm_objective(gpu, samples, k_half, x);
  gpu.gemm_k_half = k_half;
  gpu.gemm_efficiency = 1 / x;
  return true;
}

void add_error(OpClassFit& fit, double measured_s, double modelled_s)
{
  const double error = std::abs(modelled_s - measured_s) / measured_s;
  fit.mean_abs_relative_error += error; // divided by the count at the end
  fit.max_abs_relative_error = std::max(fit.max_abs_relative_error, error);
  fit.measured_s += measured_s;
  fit.modelled_s += modelled_s;
  ++fit.ops;
}

std::vector<CollectiveFit> fit_collectives(const std::vector<traces::OpGraph>& traces)
{
  std::map<std::pair<CollectiveOp, int32_t>, Points> by_kind;
  for (const traces::OpGraph& graph : traces)
    for (const traces::RankProgram& program : graph.ranks)
      for (const traces::Op& op : program.ops) {
        if (!op.is_communication() || op.duration_ns <= 0)
          continue;
        const bool collective = op.kind == traces::OpKind::Collective;
        const auto ranks = collective ? static_cast<int32_t>(graph.groups.at(op.group).ranks.size()) : 2;
        Points& p = by_kind[{collective ? op.collective : CollectiveOp::SendRecv, ranks}];
        p.x.push_back(op.bytes);
        p.t.push_back(static_cast<double>(op.duration_ns) * 1e-9);
      }
  std::vector<CollectiveFit> fits;
  for (const auto& [key, p] : by_kind) {
    const Line line = fit_conserving(p, std::numeric_limits<double>::infinity()); // one size: latency only
    CollectiveFit fit{
        key.first, key.second, static_cast<int64_t>(p.t.size()), line.intercept, line.slope > 0 ? 1 / line.slope : 0,
        0};
    for (size_t i = 0; i < p.t.size(); ++i)
      fit.mean_abs_relative_error += std::abs(line.intercept + line.slope * p.x[i] - p.t[i]) / p.t[i];
    fit.mean_abs_relative_error /= static_cast<double>(p.t.size());
    fits.push_back(fit);
  }
  return fits;
}

// The measured compute ops of the traces: GEMMs, and memory-bound ops as points (bytes, seconds), also per named
// kernel class.
struct ComputeSamples {
  std::vector<const traces::Op*> gemms, memory_ops;
  std::vector<double> gemm_s;
  Points memory;
  std::map<KernelClass, Points> by_class; // memory-bound ops of a named class
};

ComputeSamples measured_compute_ops(const std::vector<traces::OpGraph>& traces)
{
  ComputeSamples samples;
  for (const traces::OpGraph& graph : traces)
    for (const traces::RankProgram& program : graph.ranks)
      for (const traces::Op& op : program.ops) {
        if (op.kind != traces::OpKind::Compute || op.duration_ns <= 0)
          continue;
        const double seconds = static_cast<double>(op.duration_ns) * 1e-9;
        if (is_gemm(op)) {
          samples.gemms.push_back(&op);
          samples.gemm_s.push_back(seconds);
        } else {
          samples.memory_ops.push_back(&op);
          samples.memory.x.push_back(op.bytes);
          samples.memory.t.push_back(seconds);
          const KernelClass c = classify_kernel(op.name, false);
          if (c != KernelClass::Other) {
            samples.by_class[c].x.push_back(op.bytes);
            samples.by_class[c].t.push_back(seconds);
          }
        }
      }
  return samples;
}

// Fits kernel_overhead_s and memory_efficiency of `gpu` to the memory-bound ops (one line over all of them).
void fit_memory_line(GpuComputeModel& gpu, const Points& memory, double nominal_overhead_s,
                     std::vector<std::string>& notes)
{
  if (memory.t.empty()) {
    notes.push_back("no memory-bound compute op with a measured duration: memory_efficiency and "
                    "kernel_overhead_s kept at their nominal values");
    return;
  }
  if (memory.distinct_x() < 2)
    notes.push_back("memory-bound ops of a single size: kernel_overhead_s kept at its nominal value "
                    "(at most their mean duration)");
  const Line line = fit_conserving(memory, nominal_overhead_s);
  gpu.kernel_overhead_s = line.intercept;
  if (line.slope > 0)
    gpu.memory_efficiency = 1 / (line.slope * gpu.hbm_bytes_per_s);
  else
    notes.push_back("memory-bound ops move no bytes or take no longer with more: memory_efficiency kept "
                    "at its nominal value");
}

// Each named class on its own line (same rule, intercept >= 0), expressed relative to the global line. A class
// overhead below the global one lowers the global overhead to it (the global bandwidth refitted to the total with
// that overhead), so that every class's extra overhead is >= 0.
void fit_memory_classes(GpuComputeModel& gpu, const Points& memory, const std::map<KernelClass, Points>& by_class,
                        std::vector<std::string>& notes)
{
  std::map<KernelClass, Line> class_lines;
  for (const auto& [kernel_class, points] : by_class) {
    const Line line = fit_conserving(points, gpu.kernel_overhead_s);
    if (line.slope > 0)
      class_lines[kernel_class] = line;
    else
      notes.push_back("memory-bound class " + to_string(kernel_class) +
                      ": no bytes or no growth with size, kept at its nominal parameters");
  }
  double lowest_overhead_s = gpu.kernel_overhead_s;
  for (const auto& [kernel_class, line] : class_lines)
    lowest_overhead_s = std::min(lowest_overhead_s, line.intercept);
  if (lowest_overhead_s < gpu.kernel_overhead_s) {
    double total_t = 0, total_x = 0;
    for (size_t i = 0; i < memory.t.size(); ++i)
      total_t += memory.t[i], total_x += memory.x[i];
    gpu.kernel_overhead_s = lowest_overhead_s;
    gpu.memory_efficiency =
        total_x / ((total_t - static_cast<double>(memory.t.size()) * lowest_overhead_s) * gpu.hbm_bytes_per_s);
  }
  for (const auto& [kernel_class, line] : class_lines)
    gpu.memory_classes[kernel_class] = {1 / (line.slope * gpu.hbm_bytes_per_s * gpu.memory_efficiency),
                                        line.intercept - gpu.kernel_overhead_s};
  for (const auto& [kernel_class, params] : gpu.memory_classes)
    if (!by_class.count(kernel_class))
      notes.push_back("memory-bound class " + to_string(kernel_class) +
                      ": not in the traces, kept at its nominal parameters (relative to memory_efficiency)");
}

// Fits the GEMM parameters of `gpu`. Returns the analytic curve fitted alone, to compare with a GEMM table: a
// model with peak_flops 0 when `gpu` has no table or the analytic curve explains no data.
GpuComputeModel fit_gemm_models(GpuComputeModel& gpu, const ComputeSamples& samples, std::vector<std::string>& notes)
{
  GpuComputeModel analytic;
  if (samples.gemms.empty()) {
    notes.push_back("no GEMM with a measured duration: gemm_efficiency and gemm_k_half kept at their "
                    "nominal values");
    return analytic;
  }
  if (gpu.gemm_table) {
    analytic = gpu;
    analytic.gemm_table = nullptr;
    if (!fit_gemms(analytic, samples.gemms, samples.gemm_s))
      analytic = GpuComputeModel{};
  }
  if (!fit_gemms(gpu, samples.gemms, samples.gemm_s))
    notes.push_back("the GEMMs take less in total than their overhead and memory terms: gemm_efficiency "
                    "and gemm_k_half kept at their nominal values");
  return analytic;
}

// Errors: the fitted model per class, the simpler model beside it (analytic curve instead of the table; one memory
// efficiency instead of the classes), per kernel class, then per op name.
std::vector<OpClassFit> error_rows(const GpuComputeModel& gpu, const GpuComputeModel& analytic,
                                   const ComputeSamples& samples)
{
  GpuComputeModel one_efficiency = gpu;
  one_efficiency.memory_classes.clear();
  const auto fit_row = [](const std::string& name) { return OpClassFit{name, 0, 0, 0, 0, 0}; };
  OpClassFit gemm_fit = fit_row("gemm"), analytic_fit = fit_row("gemm (analytic)"), memory_fit = fit_row("memory"),
             global_fit = fit_row("memory (one efficiency)");
  std::map<KernelClass, std::pair<OpClassFit, OpClassFit>> class_fits;
  std::map<std::string, OpClassFit> by_name;
  const auto account_name = [&](const std::string& prefix, const traces::Op& op, double seconds, double modelled_s) {
    OpClassFit& named = by_name[prefix + op.name];
    named.op_class = prefix + op.name;
    add_error(named, seconds, modelled_s);
  };
  const std::vector<double>& gemm_s = samples.gemm_s;
  for (size_t i = 0; i < samples.gemms.size(); ++i) {
    const double modelled_s = compute_duration_s(gpu, *samples.gemms[i]);
    add_error(gemm_fit, gemm_s[i], modelled_s);
    if (analytic.peak_flops > 0)
      add_error(analytic_fit, gemm_s[i], compute_duration_s(analytic, *samples.gemms[i]));
    account_name("gemm:", *samples.gemms[i], gemm_s[i], modelled_s);
  }
  const std::vector<double>& memory_s = samples.memory.t;
  for (size_t i = 0; i < samples.memory_ops.size(); ++i) {
    const double modelled_s = compute_duration_s(gpu, *samples.memory_ops[i]);
    const double global_s = compute_duration_s(one_efficiency, *samples.memory_ops[i]);
    add_error(memory_fit, memory_s[i], modelled_s);
    add_error(global_fit, memory_s[i], global_s);
    const KernelClass c = classify_kernel(samples.memory_ops[i]->name, false);
    if (samples.by_class.count(c)) {
      auto& [with_class, without] = class_fits[c];
      with_class.op_class = to_string(c);
      without.op_class = to_string(c) + " (one efficiency)";
      add_error(with_class, memory_s[i], modelled_s);
      add_error(without, memory_s[i], global_s);
    }
    account_name("memory:", *samples.memory_ops[i], memory_s[i], modelled_s);
  }
  std::vector<OpClassFit> rows;
  for (const OpClassFit* fit : {&gemm_fit, &analytic_fit, &memory_fit})
    if (fit->ops > 0)
      rows.push_back(*fit);
  if (!class_fits.empty()) {
    rows.push_back(global_fit);
    for (const auto& [c, pair] : class_fits) {
      rows.push_back(pair.first);
      rows.push_back(pair.second);
    }
  }
  for (const auto& [name, fit] : by_name)
    rows.push_back(fit);
  for (OpClassFit& fit : rows)
    fit.mean_abs_relative_error /= static_cast<double>(fit.ops);
  return rows;
}

} // namespace

GpuComputeModel nominal_cpu_compute_model()
{
  return nominal_roofline_model("cpu", 1e11, 1e10,
                                "nominal CPU reference (1e11 FLOP/s, 1e10 B/s); efficiencies are relative to it");
}

Calibration calibrate(const std::vector<traces::OpGraph>& traces, const GpuComputeModel& nominal)
{
  Calibration result;
  result.gpu = nominal;
  result.traces = static_cast<int64_t>(traces.size());
  const ComputeSamples samples = measured_compute_ops(traces);
  fit_memory_line(result.gpu, samples.memory, nominal.kernel_overhead_s, result.notes);
  fit_memory_classes(result.gpu, samples.memory, samples.by_class, result.notes);
  const GpuComputeModel analytic = fit_gemm_models(result.gpu, samples, result.notes);
  result.fits = error_rows(result.gpu, analytic, samples);
  result.collectives = fit_collectives(traces);
  return result;
}

} // namespace gputwin
