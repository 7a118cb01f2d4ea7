#include "gputwin/sim/steady_state.hpp"

#include "gputwin/models/pipeline_schedule.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gputwin::sim {

bool shortcuts_enabled()
{
  const char* exact = std::getenv("GPUTWIN_EXACT");
  return exact == nullptr || std::string_view(exact).empty() || std::string_view(exact) == "0";
}

namespace {

// Whether `samples` are past the warm-up of `plan` and cost at most half of executing its m micro-batches.
bool worthwhile(const SteadyStateSamples& samples, int64_t micro_batches)
{
  return samples.last() < micro_batches && (micro_batches - samples.first) % samples.step == 0 &&
         2 * samples.executed() <= micro_batches;
}

// The figures of a result that grow with the micro-batches, in one list: the iteration time, the op, flow and
// link counts, then each stage's seven times. Exposed spans are not figures (a run that records them is whole).
constexpr size_t stage_figures = 7;

std::vector<double> figures(const IterationResult& r)
{
  std::vector<double> f{r.iteration_time_s, static_cast<double>(r.executed_ops),
                        static_cast<double>(r.simulated_flows), static_cast<double>(r.platform_links)};
  for (const StageTimes& s : r.stages)
    f.insert(f.end(), {s.compute_s, s.exposed_comm_s, s.pipeline_start_s, s.pipeline_end_s, s.pipeline_compute_s,
                       s.pipeline_comm_s, s.moe_exchange_s});
  return f;
}

constexpr size_t counts_end = 4; // figures [1, counts_end) are integers

void set_figures(IterationResult& r, const std::vector<double>& f)
{
  r.iteration_time_s = f[0];
  r.executed_ops = static_cast<int64_t>(std::llround(f[1]));
  r.simulated_flows = static_cast<int64_t>(std::llround(f[2]));
  r.platform_links = static_cast<size_t>(std::llround(f[3]));
  for (size_t s = 0; s < r.stages.size(); ++s) {
    const double* g = &f[counts_end + s * stage_figures];
    StageTimes& t = r.stages[s];
    t.compute_s = g[0];
    t.exposed_comm_s = g[1];
    t.pipeline_start_s = g[2];
    t.pipeline_end_s = g[3];
    t.pipeline_compute_s = g[4];
    t.pipeline_comm_s = g[5];
    t.moe_exchange_s = g[6];
  }
}

// Rounding in a period's figures. A period's growth is accepted when every sample adds it to within this share of
// (figure + iteration time). The estimator's figures repeat to a few units in the last place; the SimGrid
// executor's per-stage sums of exposed communication and compute to ~1e-9 of the iteration (its flows end on
// SimGrid's 1e-9 s precision: gpt3-175b tp 4 pp 16 x2 on 64 H100, stage 1's exposed communication grew by
// 0.0930727527 s and 0.0930727964 s in two periods), which at 1e-13 made every such plan execute whole (68 s
// instead of 5.6 s). The iteration time itself is held to the period found op by op (period_tolerance below), so
// this only bounds the secondary figures, to ~1e-8 relative after extrapolation.
constexpr double growth_tolerance = 1e-8;
// An op's shift from one period to the next may differ from the period by this share of the iteration time.
constexpr double period_tolerance = 1e-12;

// The per-period growth of every figure, or nullopt when the samples do not grow evenly (integers: exactly).
std::optional<std::vector<double>> even_growth(const std::array<std::vector<double>, SteadyStateSamples::samples>& f)
{
  const size_t n = f[0].size();
  for (const std::vector<double>& sample : f)
    if (sample.size() != n)
      return std::nullopt;
  const int last = SteadyStateSamples::samples - 1;
  const double scale_s = std::abs(f[last][0]);
  std::vector<double> growth(n);
  for (size_t i = 0; i < n; ++i) {
    const double first = f[1][i] - f[0][i];
    const double tolerance = i > 0 && i < counts_end ? 0 : growth_tolerance * (std::abs(f[last][i]) + scale_s);
    for (int k = 2; k <= last; ++k)
      if (std::abs((f[k][i] - f[k - 1][i]) - first) > tolerance)
        return std::nullopt;
    growth[i] = i > 0 && i < counts_end ? first : (f[last][i] - f[0][i]) / last;
  }
  return growth;
}

} // namespace

std::optional<SteadyStateSamples> steady_state_samples(const ParallelPlan& plan)
{
  if (plan.schedule == Schedule::GPipe) // all forwards, then all backwards: stages drift apart, no common period
    return std::nullopt;
  SteadyStateSamples s;
  const bool interleaved = plan.schedule == Schedule::Interleaved;
  s.step = interleaved ? plan.pp : 1;
  // The first stage's interleaved warm-up (the longest), in forward steps of one chunk each, micro-batches walking
  // the chunks in groups of pp: it touches whole groups; the cool-down as many backward steps at the end.
  const int64_t first_stage_warmup = warmup_steps(pipeline_shape(plan), 0);
  s.warmup = interleaved ? ((first_stage_warmup - 1) / (plan.pp * plan.chunks) + 1) * plan.pp : plan.pp;
  // A multiple of the step; the last sample then has room for a warm-up, a warm-up's reach and a period between
  // its warm-up and its cool-down (steady_period), and for 1F1B two micro-batches more: its period starts a
  // micro-batch or two after the warm-up (the first forward of the steady phase on stage 0 is micro-batch pp - 1,
  // and its backward pairs with a forward pp - 1 later; measured on gpt3-175b, pp 16 and 32: from micro-batch pp + 1
  // or pp + 2). The interleaved period starts with the first whole group after the warm-up (measured: 2 pp).
  const int64_t transient = interleaved ? 0 : 2;
  s.first = (3 * s.warmup + transient + s.step - 1) / s.step * s.step;
  if (!worthwhile(s, plan.micro_batches()))
    return std::nullopt;
  return s;
}

std::optional<SteadyPeriod> steady_period(const IterationResult& r, const SteadyStateSamples& samples,
                                          int64_t micro_batches)
{
  const int64_t step = samples.step;
  const int64_t begin = samples.warmup, end = micro_batches - samples.warmup - step; // pairs (i, i + step), i < end
  if (begin >= end || r.timeline.empty())
    return std::nullopt;
  // Each program's ops of the micro-batches [begin, end + step), by micro-batch, in issue order.
  std::vector<std::vector<std::vector<const OpSlice*>>> by_micro_batch(r.programs.size());
  for (auto& program : by_micro_batch)
    program.resize(static_cast<size_t>(end + step - begin));
  for (const OpSlice& slice : r.timeline) {
    const traces::Op& op = r.programs[static_cast<size_t>(slice.program)].ops[static_cast<size_t>(slice.op)];
    if (op.micro_batch >= begin && op.micro_batch < end + step)
      by_micro_batch[static_cast<size_t>(slice.program)][static_cast<size_t>(op.micro_batch - begin)].push_back(&slice);
  }
  for (auto& program : by_micro_batch)
    for (std::vector<const OpSlice*>& ops : program)
      std::sort(ops.begin(), ops.end(), [](const OpSlice* a, const OpSlice* b) { return a->op < b->op; });
  // Whether micro-batch i + step repeats micro-batch i on every program, `period_s` later (the first op sets it).
  std::optional<double> period_s;
  const double tolerance_s = period_tolerance * r.iteration_time_s;
  const auto repeats = [&](int64_t i) {
    for (size_t p = 0; p < by_micro_batch.size(); ++p) {
      const std::vector<const OpSlice*>& now = by_micro_batch[p][static_cast<size_t>(i - begin)];
      const std::vector<const OpSlice*>& next = by_micro_batch[p][static_cast<size_t>(i + step - begin)];
      if (now.size() != next.size())
        return false;
      const std::vector<traces::Op>& ops = r.programs[p].ops;
      for (size_t k = 0; k < now.size(); ++k) {
        if (ops[static_cast<size_t>(now[k]->op)].name != ops[static_cast<size_t>(next[k]->op)].name)
          return false;
        if (!period_s)
          period_s = next[k]->end_s - now[k]->end_s;
        if (std::abs(next[k]->end_s - now[k]->end_s - *period_s) > tolerance_s ||
            std::abs(next[k]->start_s - now[k]->start_s - *period_s) > tolerance_s)
          return false;
      }
    }
    return true;
  };
  int64_t first = end;
  while (first > begin && repeats(first - 1))
    --first;
  if (first == end || !period_s)
    return std::nullopt;
  return SteadyPeriod{*period_s, first};
}

SampleOutcome sample_outcome(IterationResult result, const SteadyStateSamples& samples, int64_t micro_batches)
{
  SampleOutcome out;
  if (!result.timeline.empty())
    out.period = steady_period(result, samples, micro_batches);
  for (const StageTimes& s : result.stages)
    out.spans = out.spans || !s.exposed_spans.empty();
  result.timeline.clear();
  result.timeline.shrink_to_fit();
  out.result = std::move(result);
  return out;
}

std::string to_text(const SampleOutcome& outcome)
{
  std::string text;
  char number[40];
  const auto put = [&](double x) {
    std::snprintf(number, sizeof number, "%a ", x); // exact
    text += number;
  };
  text += std::to_string(outcome.result.stages.size()) + " " + (outcome.spans ? "1 " : "0 ") +
          (outcome.period ? "1 " : "0 ");
  put(outcome.period ? outcome.period->period_s : 0);
  text += std::to_string(outcome.period ? outcome.period->first_micro_batch : 0) + " ";
  for (const double f : figures(outcome.result))
    put(f);
  text += std::to_string(outcome.result.programs.size());
  for (const traces::RankProgram& program : outcome.result.programs)
    text += " " + std::to_string(program.rank);
  return text;
}

SampleOutcome sample_outcome_from_text(const std::string& text)
{
  std::istringstream in(text);
  SampleOutcome out;
  size_t stages = 0, programs = 0;
  int spans = 0, has_period = 0;
  std::string period_s;
  int64_t first = 0;
  in >> stages >> spans >> has_period >> period_s >> first;
  out.spans = spans != 0;
  if (has_period)
    out.period = SteadyPeriod{std::strtod(period_s.c_str(), nullptr), first};
  std::vector<double> f(counts_end + stages * stage_figures);
  for (double& x : f) {
    std::string word;
    in >> word;
    x = std::strtod(word.c_str(), nullptr);
  }
  in >> programs;
  out.result.stages.resize(stages);
  set_figures(out.result, f);
  out.result.programs.resize(programs);
  for (traces::RankProgram& program : out.result.programs)
    in >> program.rank;
  if (!in)
    throw std::logic_error("steady state: a sample's outcome could not be read back: " + text.substr(0, 80));
  return out;
}

IterationResult run_with_steady_state(const Workload& workload, const IterationOptions& options,
                                      const SampleRuns& run_samples, const WholeRun& run_whole)
{
  std::optional<SteadyStateSamples> samples = steady_state_samples(workload.plan);
  if (!options.steady_state || options.record_timeline || options.flow_log != nullptr || !shortcuts_enabled())
    samples.reset();
  const int64_t m = workload.plan.micro_batches();
  bool lengthened = false;
  while (samples && worthwhile(*samples, m)) {
    std::vector<Workload> workloads;
    for (int k = 0; k < SteadyStateSamples::samples; ++k)
      workloads.push_back(with_micro_batches(workload, samples->first + k * samples->step));
    std::vector<SampleOutcome> outcomes = run_samples(workloads, *samples);
    std::array<std::vector<double>, SteadyStateSamples::samples> f;
    bool spans = false;
    for (size_t k = 0; k < f.size(); ++k) {
      f[k] = figures(outcomes.at(k).result);
      spans = spans || outcomes[k].spans;
    }
    if (spans)
      break;
    const std::optional<std::vector<double>> growth = even_growth(f);
    const std::optional<SteadyPeriod>& period = outcomes.back().period;
    IterationResult& last = outcomes.back().result;
    // Repeating over a warm-up's reach and a period more: every dependency of the next period repeats.
    const int64_t wanted = samples->warmup + samples->step;
    const int64_t end = samples->last() - samples->warmup - samples->step;
    if (growth && period && end - period->first_micro_batch >= wanted &&
        std::abs(period->period_s - (*growth)[0]) <= period_tolerance * last.iteration_time_s) {
      const double periods = static_cast<double>((m - samples->last()) / samples->step);
      std::vector<double> at_m = f.back();
      for (size_t i = 0; i < at_m.size(); ++i)
        at_m[i] += periods * (*growth)[i];
      set_figures(last, at_m);
      last.extrapolated_micro_batches = m - samples->last();
      return std::move(last);
    }
    // Longer samples: the first time by what the repeat fell short of (it repeated from period->first_micro_batch
    // on), at least a period; with no repeat, or when that was not enough either (a transient that grows with the
    // samples), twice as long, so failed attempts cost at most about the iteration once more.
    const int64_t shortfall = period && !lengthened ? wanted - (end - period->first_micro_batch) : samples->first;
    samples->first += std::max(samples->step, (shortfall + samples->step - 1) / samples->step * samples->step);
    lengthened = true;
  }
  return run_whole(workload);
}

IterationResult run_with_steady_state(const Workload& workload, const IterationOptions& options,
                                      const std::function<IterationResult(const Workload&, const IterationOptions&)>& run)
{
  const SampleRuns in_process = [&](const std::vector<Workload>& workloads, const SteadyStateSamples& samples) {
    std::vector<SampleOutcome> outcomes;
    for (size_t k = 0; k < workloads.size(); ++k)
      outcomes.push_back(sample_outcome(run(workloads[k], sample_options(options, k + 1 == workloads.size())),
                                        samples, workloads[k].plan.micro_batches()));
    return outcomes;
  };
  return run_with_steady_state(workload, options, in_process, [&](const Workload& w) { return run(w, options); });
}

IterationOptions sample_options(const IterationOptions& options, bool last)
{
  IterationOptions sampled = options;
  sampled.record_timeline = last; // the last sample's ops show whether its middle repeats
  sampled.progress = nullptr;     // a sample is not the run a progress bar counts
  return sampled;
}

} // namespace gputwin::sim
