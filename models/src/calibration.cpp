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

// A GEMM as the fit sees it: math time = flops_per_wave_peak * (k + k_half) / k * (1 / efficiency).
struct GemmSample {
  double flops_per_wave_peak = 0; // FLOPs / (peak x wave quantization), seconds at efficiency 1 and k_half 0
  double k = 0;
  double memory_s = 0; // the memory term with the fitted memory efficiency
  double measured_s = 0;
};

// For `k_half`, the inverse efficiency x with which the GEMMs' modelled total equals the measured one (written
// to `inverse`; sum of max(math_i x, memory_i) is increasing in x: bisection), and the squared relative error
// with it. Infinity when even x -> 0 (every GEMM at its memory term) exceeds the measured total.
double gemm_objective(const std::vector<GemmSample>& samples, double k_half, double overhead_s, double& inverse)
{
  std::vector<double> math_unit(samples.size());
  double target = 0, memory_floor = 0, math_total = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    math_unit[i] = samples[i].flops_per_wave_peak * (samples[i].k + k_half) / samples[i].k;
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

// Fits gemm_efficiency and gemm_k_half of `gpu` (memory efficiency and overhead already fitted). False if no
// efficiency explains the data (kept nominal).
bool fit_gemms(GpuComputeModel& gpu, const std::vector<const traces::Op*>& ops, const std::vector<double>& measured_s)
{
  std::vector<GemmSample> samples;
  GpuComputeModel unit = gpu;
  unit.gemm_efficiency = 1;
  unit.gemm_k_half = 0;
  for (size_t i = 0; i < ops.size(); ++i)
    samples.push_back({ops[i]->flops / (gpu.peak_flops * gemm_efficiency(unit, ops[i]->gemm)),
                       static_cast<double>(ops[i]->gemm.k),
                       ops[i]->bytes / (gpu.hbm_bytes_per_s * gpu.memory_efficiency), measured_s[i]});
  std::vector<double> grid{0};
  for (int j = 0; j <= 64; ++j)
    grid.push_back(std::exp2(j / 4.0));
  size_t best = 0;
  double best_sse = std::numeric_limits<double>::infinity(), x = 0;
  for (size_t j = 0; j < grid.size(); ++j) {
    const double sse = gemm_objective(samples, grid[j], gpu.kernel_overhead_s, x);
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
    if (gemm_objective(samples, a, gpu.kernel_overhead_s, x) <= gemm_objective(samples, b, gpu.kernel_overhead_s, x))
      hi = b;
    else
      lo = a;
  }
  double k_half = (lo + hi) / 2;
  if (!(gemm_objective(samples, k_half, gpu.kernel_overhead_s, x) <= best_sse))
    k_half = grid[best];
  gemm_objective(samples, k_half, gpu.kernel_overhead_s, x);
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
  GpuComputeModel& gpu = result.gpu;
  std::vector<const traces::Op*> gemms, memory_ops;
  std::vector<double> gemm_s;
  Points memory;
  for (const traces::OpGraph& graph : traces)
    for (const traces::RankProgram& program : graph.ranks)
      for (const traces::Op& op : program.ops) {
        if (op.kind != traces::OpKind::Compute || op.duration_ns <= 0)
          continue;
        const double seconds = static_cast<double>(op.duration_ns) * 1e-9;
        if (is_gemm(op)) {
          gemms.push_back(&op);
          gemm_s.push_back(seconds);
        } else {
          memory_ops.push_back(&op);
          memory.x.push_back(op.bytes);
          memory.t.push_back(seconds);
        }
      }

  if (memory.t.empty()) {
    result.notes.push_back("no memory-bound compute op with a measured duration: memory_efficiency and "
                           "kernel_overhead_s kept at their nominal values");
  } else {
    if (memory.distinct_x() < 2)
      result.notes.push_back("memory-bound ops of a single size: kernel_overhead_s kept at its nominal value "
                             "(at most their mean duration)");
    const Line line = fit_conserving(memory, nominal.kernel_overhead_s);
    gpu.kernel_overhead_s = line.intercept;
    if (line.slope > 0)
      gpu.memory_efficiency = 1 / (line.slope * gpu.hbm_bytes_per_s);
    else
      result.notes.push_back("memory-bound ops move no bytes or take no longer with more: memory_efficiency kept "
                             "at its nominal value");
  }
  if (gemms.empty())
    result.notes.push_back("no GEMM with a measured duration: gemm_efficiency and gemm_k_half kept at their "
                           "nominal values");
  else if (!fit_gemms(gpu, gemms, gemm_s))
    result.notes.push_back("the GEMMs take less in total than their overhead and memory terms: gemm_efficiency "
                           "and gemm_k_half kept at their nominal values");

  OpClassFit gemm_fit{"gemm", 0, 0, 0, 0, 0}, memory_fit{"memory", 0, 0, 0, 0, 0};
  std::map<std::string, OpClassFit> by_name;
  const auto account = [&](OpClassFit& class_fit, const std::string& prefix, const traces::Op& op, double seconds) {
    const double modelled_s = compute_duration_s(gpu, op);
    add_error(class_fit, seconds, modelled_s);
    OpClassFit& named = by_name[prefix + op.name];
    named.op_class = prefix + op.name;
    add_error(named, seconds, modelled_s);
  };
  for (size_t i = 0; i < gemms.size(); ++i)
    account(gemm_fit, "gemm:", *gemms[i], gemm_s[i]);
  for (size_t i = 0; i < memory_ops.size(); ++i)
    account(memory_fit, "memory:", *memory_ops[i], memory.t[i]);
  for (OpClassFit* fit : {&gemm_fit, &memory_fit})
    if (fit->ops > 0)
      result.fits.push_back(*fit);
  for (const auto& [name, fit] : by_name)
    result.fits.push_back(fit);
  for (OpClassFit& fit : result.fits)
    fit.mean_abs_relative_error /= static_cast<double>(fit.ops);
  result.collectives = fit_collectives(traces);
  return result;
}

} // namespace gputwin
