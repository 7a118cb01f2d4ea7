#include "gputwin/sim/iteration_fit.hpp"

#include "gputwin/sim/parallel_for.hpp"

#include "gputwin/models/workload.hpp"
#include "gputwin/sim/comm_expansion.hpp"
#include "gputwin/sim/dag_executor.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <thread>
#include <tuple>

namespace gputwin::sim {

namespace {

constexpr uint32_t no_signature = std::numeric_limits<uint32_t>::max();

// One case, compiled: the op graph's structure, each compute op's signature (ops with the same name, FLOPs,
// bytes and GEMM shape take the same time, so a layer's ops are timed once), communication times and the
// host's view of each op.
struct CompiledCase {
  DagExecutor dag;
  std::vector<traces::Op> signatures;              // one representative compute op per signature
  std::vector<std::vector<uint32_t>> signature_of; // per program and op
  std::vector<std::vector<double>> comm_s;         // per program and op (0 for compute)
  std::vector<std::vector<HostOpClass>> host;      // per program
};

CompiledCase compile_case(const topo::ClusterGraph& graph, const IterationCase& c)
{
  const Workload workload = make_workload(c.model, c.plan, c.options);
  std::vector<traces::RankProgram> programs;
  for (int64_t stage = 0; stage < c.plan.pp; ++stage)
    programs.push_back(stage_program(workload, stage));
  CompiledCase compiled{DagExecutor(programs, workload.groups), {}, {}, {}, {}};
  CommExpander comm(graph, workload);
  std::map<std::tuple<std::string, double, double, int64_t, int64_t, int64_t, int64_t>, uint32_t> index;
  std::map<const CommWork*, double> comm_cache;
  for (const traces::RankProgram& program : programs) {
    std::vector<uint32_t>& signature_of = compiled.signature_of.emplace_back();
    std::vector<double>& comm_s = compiled.comm_s.emplace_back();
    signature_of.reserve(program.ops.size());
    comm_s.reserve(program.ops.size());
    for (const traces::Op& op : program.ops) {
      if (op.kind == traces::OpKind::Compute || op.kind == traces::OpKind::Memcpy) {
        const auto [it, fresh] =
            index.try_emplace({op.name, op.flops, op.bytes, op.gemm.m, op.gemm.n, op.gemm.k, op.gemm.batch},
                              static_cast<uint32_t>(compiled.signatures.size()));
        if (fresh)
          compiled.signatures.push_back(op);
        signature_of.push_back(it->second);
        comm_s.push_back(0);
        continue;
      }
      signature_of.push_back(no_signature);
      if (op.kind == traces::OpKind::Recv) {
        comm_s.push_back(0);
        continue;
      }
      const CommWork& work = op.kind == traces::OpKind::Collective ? comm.collective(op) : comm.message(program.rank, op);
      const auto [it, fresh] = comm_cache.try_emplace(&work, 0.0);
      if (fresh)
        it->second = contention_free_duration_s(graph, work);
      comm_s.push_back(it->second);
    }
    compiled.host.push_back(host_op_classes(program));
  }
  return compiled;
}

} // namespace

struct IterationSet::Impl {
  std::vector<IterationCase> cases;
  std::vector<CompiledCase> compiled;
  int threads = 1;
  double host_issue_scale = 1; // the cluster's CPUs (ClusterSpec::host_issue_scale), as the executors apply it
};

IterationSet::IterationSet(const topo::ClusterSpec& cluster, std::vector<IterationCase> cases, int threads)
    : impl_(std::make_unique<Impl>())
{
  impl_->cases = std::move(cases);
  impl_->threads = std::max(1, threads);
  impl_->host_issue_scale = cluster.host_issue_scale;
  const topo::ClusterGraph graph(cluster);
  std::vector<std::unique_ptr<CompiledCase>> built(impl_->cases.size());
  parallel_for(impl_->cases.size(), impl_->threads, [&](size_t i) {
    built[i] = std::make_unique<CompiledCase>(compile_case(graph, impl_->cases[i]));
  });
  for (auto& c : built)
    impl_->compiled.push_back(std::move(*c));
}

IterationSet::~IterationSet() = default;

const std::vector<IterationCase>& IterationSet::cases() const
{
  return impl_->cases;
}

std::vector<double> IterationSet::predict(const GpuComputeModel& gpu, const FrameworkProfile& framework,
                                          const std::vector<size_t>& subset) const
{
  std::vector<size_t> which = subset;
  if (which.empty())
    for (size_t i = 0; i < impl_->cases.size(); ++i)
      which.push_back(i);
  std::vector<double> predicted(which.size());
  const FrameworkProfile host = on_host_cpu(framework, impl_->host_issue_scale);
  parallel_for(which.size(), impl_->threads, [&](size_t k) {
    const CompiledCase& c = impl_->compiled[which[k]];
    std::vector<double> signature_s(c.signatures.size());
    for (size_t s = 0; s < c.signatures.size(); ++s)
      signature_s[s] = compute_duration_s(gpu, c.signatures[s]);
    std::vector<std::vector<double>> duration_s(c.signature_of.size());
    std::vector<HostProgram> hosts;
    for (size_t p = 0; p < c.signature_of.size(); ++p) {
      duration_s[p].resize(c.signature_of[p].size());
      for (size_t i = 0; i < c.signature_of[p].size(); ++i) {
        const uint32_t s = c.signature_of[p][i];
        duration_s[p][i] = s == no_signature ? c.comm_s[p][i] : signature_s[s];
      }
      hosts.push_back(host_program(host, c.host[p]));
    }
    predicted[k] = c.dag.run(duration_s, hosts);
  });
  return predicted;
}

double mean_absolute_percentage_error(const std::vector<double>& predicted, const std::vector<double>& measured)
{
  double sum = 0;
  for (size_t i = 0; i < predicted.size(); ++i)
    sum += std::abs(predicted[i] - measured[i]) / measured[i];
  return predicted.empty() ? 0 : sum / static_cast<double>(predicted.size());
}

namespace {

// The fitted parameters, in log space with their bounds.
constexpr int dimensions = 9;
constexpr double bounds[dimensions][2] = {
    {0.05, 1.0},   // gemm_efficiency
    {1.0, 8192},   // gemm_k_half, elements
    {0.05, 1.0},   // memory_efficiency
    {1e-7, 1e-3},  // kernel_issue_s
    {1e-7, 1e-3},  // gemm_issue_s
    {1e-7, 1e-2},  // collective_issue_s
    {1e-7, 1e-2},  // p2p_issue_s
    {1e-7, 1e-1},  // microbatch_issue_s
    {1e-7, 1.0},   // iteration_issue_s
};

double* field(FitParameters& f, int d)
{
  switch (d) {
  case 0: return &f.gpu.gemm_efficiency;
  case 1: return &f.gpu.gemm_k_half;
  case 2: return &f.gpu.memory_efficiency;
  case 3: return &f.framework.kernel_issue_s;
  case 4: return &f.framework.gemm_issue_s;
  case 5: return &f.framework.collective_issue_s;
  case 6: return &f.framework.p2p_issue_s;
  case 7: return &f.framework.microbatch_issue_s;
  default: return &f.framework.iteration_issue_s;
  }
}

using Point = std::vector<double>;

Point to_point(FitParameters f)
{
  Point x(dimensions);
  for (int d = 0; d < dimensions; ++d)
    x[static_cast<size_t>(d)] = std::log(std::clamp(*field(f, d), bounds[d][0], bounds[d][1]));
  return x;
}

FitParameters from_point(const FitParameters& base, const Point& x)
{
  FitParameters f = base;
  for (int d = 0; d < dimensions; ++d)
    *field(f, d) = std::clamp(std::exp(x[static_cast<size_t>(d)]), bounds[d][0], bounds[d][1]);
  return f;
}

double log_error(const std::vector<double>& predicted, const std::vector<double>& measured)
{
  double sum = 0;
  for (size_t i = 0; i < predicted.size(); ++i)
    sum += std::abs(std::log(predicted[i] / measured[i]));
  return sum / static_cast<double>(predicted.size());
}

// One Nelder-Mead run (standard coefficients) from `origin` with steps of `step` (log units) along each
// axis, until the simplex's values agree to 1e-6 or `budget` evaluations are spent. Returns the best point
// and its value; adds the evaluations it spent to `used`.
template <class Objective>
std::pair<Point, double> nelder_mead(const Objective& objective, const Point& origin, double step, int budget, int& used)
{
  const size_t n = origin.size();
  std::vector<Point> simplex{origin};
  for (size_t d = 0; d < n; ++d) {
    Point x = origin;
    x[d] += step;
    simplex.push_back(x);
  }
  std::vector<double> value;
  for (const Point& x : simplex)
    value.push_back(objective(x));
  const int limit = used + budget;
  used += static_cast<int>(n) + 1;
  while (used < limit) {
    std::vector<size_t> order(n + 1);
    for (size_t i = 0; i <= n; ++i)
      order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return value[a] < value[b]; });
    const size_t best = order[0], worst = order[n], second = order[n - 1];
    if (value[worst] - value[best] < 1e-6)
      break;
    Point centroid(n, 0.0);
    for (size_t i = 0; i < n; ++i)
      for (size_t d = 0; d < n; ++d)
        centroid[d] += simplex[order[i]][d] / static_cast<double>(n);
    auto along = [&](double t) {
      Point x(n);
      for (size_t d = 0; d < n; ++d)
        x[d] = centroid[d] + t * (simplex[worst][d] - centroid[d]);
      return x;
    };
    const Point reflected = along(-1.0);
    const double fr = objective(reflected);
    ++used;
    if (fr < value[best]) {
      const Point expanded = along(-2.0);
      const double fe = objective(expanded);
      ++used;
      if (fe < fr) {
        simplex[worst] = expanded;
        value[worst] = fe;
      } else {
        simplex[worst] = reflected;
        value[worst] = fr;
      }
    } else if (fr < value[second]) {
      simplex[worst] = reflected;
      value[worst] = fr;
    } else {
      const Point contracted = fr < value[worst] ? along(-0.5) : along(0.5);
      const double fc = objective(contracted);
      ++used;
      if (fc < std::min(fr, value[worst])) {
        simplex[worst] = contracted;
        value[worst] = fc;
      } else {
        for (size_t i = 1; i <= n; ++i) {
          Point& x = simplex[order[i]];
          for (size_t d = 0; d < n; ++d)
            x[d] = simplex[best][d] + 0.5 * (x[d] - simplex[best][d]);
          value[order[i]] = objective(x);
          ++used;
        }
      }
    }
  }
  const size_t best = static_cast<size_t>(std::min_element(value.begin(), value.end()) - value.begin());
  return {simplex[best], value[best]};
}

// Restarted Nelder-Mead on the mean absolute log error of the cases in `rows`: a simplex that has collapsed
// is rebuilt around its best point and the search goes on (the objective, a sum of |log| kinks over rows, has
// many shallow local minima a single simplex stops in), until a restart gains less than 1e-5 or
// `max_evaluations` are spent.
FitParameters minimise(const IterationSet& set, const FitParameters& start, const std::vector<size_t>& rows,
                       int max_evaluations, int& evaluations)
{
  std::vector<double> measured;
  for (const size_t r : rows)
    measured.push_back(set.cases()[r].measured_s);
  auto objective = [&](const Point& x) {
    ++evaluations;
    const FitParameters f = from_point(start, x);
    return log_error(set.predict(f.gpu, f.framework, rows), measured);
  };
  int used = 0;
  auto [best, best_value] = nelder_mead(objective, to_point(start), 0.5, max_evaluations, used);
  for (double step = 0.25; used + dimensions + 1 < max_evaluations; step = std::max(0.05, step * 0.7)) {
    const auto [point, value] = nelder_mead(objective, best, step, max_evaluations - used, used);
    const double gain = best_value - value;
    if (value < best_value) {
      best = point;
      best_value = value;
    }
    if (gain < 1e-5)
      break;
  }
  return from_point(start, best);
}

} // namespace

IterationFit fit_iterations(const IterationSet& set, const FitParameters& start, const FitOptions& options)
{
  const std::vector<IterationCase>& cases = set.cases();
  IterationFit fit;
  // Folds grouped by model: every row of one group (model name, else shape: hidden, layers) in the same fold, groups
  // dealt to folds in sorted order.
  using Group = std::tuple<std::string, int64_t, int64_t>;
  auto group_of = [](const IterationCase& c) { return Group{c.group, c.model.hidden, c.model.layers}; };
  std::map<Group, int> group_index;
  for (const IterationCase& c : cases)
    group_index.try_emplace(group_of(c), 0);
  int next = 0;
  for (auto& [group, index] : group_index)
    index = next++;
  fit.folds = std::max(1, std::min(options.folds, static_cast<int>(group_index.size())));
  std::vector<double> measured;
  for (const IterationCase& c : cases) {
    fit.fold.push_back(group_index.at(group_of(c)) % fit.folds);
    char shape[64];
    std::snprintf(shape, sizeof shape, "h%lld L%lld", static_cast<long long>(c.model.hidden),
                  static_cast<long long>(c.model.layers));
    fit.shape.emplace_back(c.group.empty() ? shape : c.group);
    measured.push_back(c.measured_s);
  }
  fit.cross_validated_s.assign(cases.size(), 0);
  if (fit.folds > 1)
    for (int k = 0; k < fit.folds; ++k) {
      std::vector<size_t> train, test;
      for (size_t i = 0; i < cases.size(); ++i)
        (fit.fold[i] == k ? test : train).push_back(i);
      const FitParameters p = minimise(set, start, train, options.max_evaluations, fit.evaluations);
      const std::vector<double> predicted = set.predict(p.gpu, p.framework, test);
      for (size_t j = 0; j < test.size(); ++j)
        fit.cross_validated_s[test[j]] = predicted[j];
    }
  std::vector<size_t> all;
  for (size_t i = 0; i < cases.size(); ++i)
    all.push_back(i);
  fit.fitted = minimise(set, start, all, options.max_evaluations, fit.evaluations);
  fit.fitted.gpu.source = "fit by gputwin calibrate --iterations";
  fit.fitted.framework.source = "fit by gputwin calibrate --iterations";
  fit.predicted_s = set.predict(fit.fitted.gpu, fit.fitted.framework);
  fit.fitted_mape = mean_absolute_percentage_error(fit.predicted_s, measured);
  fit.cross_validated_mape =
      fit.folds > 1 ? mean_absolute_percentage_error(fit.cross_validated_s, measured) : fit.fitted_mape;
  return fit;
}

} // namespace gputwin::sim
