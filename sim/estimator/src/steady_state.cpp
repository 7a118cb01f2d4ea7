#include "gputwin/sim/steady_state.hpp"

#include "gputwin/models/pipeline_schedule.hpp"
#include "gputwin/sim/exact_text.hpp"
#include "gputwin/sim/stage_accounting.hpp"

#include <algorithm>
#include <cmath>
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

// Whether `sample` is shorter than m, a whole number of periods from it, and costs at most three quarters of
// executing m: a run that repeats saves the rest; runs that do not (lengthened up to this bound, then the iteration
// executed whole) cost at most 1.5 m more. (Interleaved runs repeat from their first check; 1F1B's are sized to.)
bool worthwhile(const SteadyStateSample& sample, int64_t micro_batches)
{
  return sample.micro_batches < micro_batches && (micro_batches - sample.micro_batches) % sample.step == 0 &&
         4 * sample.micro_batches <= 3 * micro_batches;
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

// Rounding in a period's figures. The repeating periods of a run must add the same to every figure to within this
// share of (the figure + the iteration time). The estimator's sums repeat to a few units in the last place; the
// SimGrid executor's per-stage sums of exposed communication and compute to ~1e-9 of the iteration (its flows end
// on SimGrid's 1e-9 s precision: gpt3-175b tp 4 pp 16 x2 on 64 H100, stage 1's exposed communication grew by
// 0.0930727527 s and 0.0930727964 s in two periods). The iteration time itself is held to the period found op by op
// (period_tolerance below), so this only bounds the secondary figures, to ~1e-8 relative after extrapolation.
constexpr double growth_tolerance = 1e-8;
// An op's shift from one period to the next may differ from the period by this share of the iteration time.
constexpr double period_tolerance = 1e-12;

// What the micro-batches [begin, begin + step) add to the figures of `r` (figures' order): their shares of each
// stage, the period's time where a stage's pipeline window ends after them and for the iteration time.
std::vector<double> period_share(const IterationResult& r, int64_t begin, int64_t step, double period_s)
{
  std::vector<double> f(counts_end + r.stages.size() * stage_figures, 0.0);
  f[0] = period_s;
  int64_t ops = 0, flows = 0;
  for (size_t s = 0; s < r.stages.size(); ++s) {
    double* g = &f[counts_end + s * stage_figures];
    int64_t pipeline_ops = 0;
    for (int64_t i = begin; i < begin + step; ++i) {
      if (static_cast<size_t>(i) >= r.stages[s].by_micro_batch.size())
        continue;
      const MicroBatchShare& share = r.stages[s].by_micro_batch[static_cast<size_t>(i)];
      g[0] += share.compute_s;
      g[1] += share.exposed_comm_s;
      g[4] += share.pipeline_compute_s;
      g[5] += share.pipeline_comm_s;
      g[6] += share.moe_exchange_s;
      ops += share.ops;
      flows += share.flows;
      pipeline_ops += share.pipeline_ops;
    }
    g[3] = pipeline_ops > 0 ? period_s : 0; // the window's last op, in the cool-down, moves a period later
  }
  f[1] = static_cast<double>(ops);
  f[2] = static_cast<double>(flows);
  return f;
}

// One period's growth of every figure of `r`: the mean of what each whole period of its repeating micro-batches
// [first, micro_batches - warmup) adds, when every one adds the same (integers exactly, times to growth_tolerance);
// empty otherwise or with fewer than two such periods.
std::vector<double> period_growth(const IterationResult& r, const SteadyStateSample& sample, const SteadyPeriod& period)
{
  const int64_t step = sample.step, end = sample.micro_batches - sample.warmup;
  const std::vector<double> totals = figures(r);
  std::vector<double> sum;
  int periods = 0;
  for (int64_t begin = period.first_micro_batch; begin + step <= end; begin += step, ++periods) {
    const std::vector<double> f = period_share(r, begin, step, period.period_s);
    if (sum.empty()) {
      sum = f;
      continue;
    }
    for (size_t i = 0; i < f.size(); ++i) {
      const double first = sum[i] / periods;
      const double tolerance = i > 0 && i < counts_end ? 0 : growth_tolerance * (std::abs(totals[i]) + r.iteration_time_s);
      if (std::abs(f[i] - first) > tolerance)
        return {};
      sum[i] += f[i];
    }
  }
  if (periods < 2)
    return {};
  for (size_t i = 0; i < sum.size(); ++i)
    sum[i] = i > 0 && i < counts_end ? std::round(sum[i] / periods) : sum[i] / periods;
  return sum;
}

} // namespace

std::optional<SteadyStateSample> steady_state_sample(const ParallelPlan& plan)
{
  if (plan.schedule == Schedule::GPipe) // all forwards, then all backwards: stages drift apart, no common period
    return std::nullopt;
  SteadyStateSample s;
  const bool interleaved = plan.schedule == Schedule::Interleaved;
  s.step = interleaved ? plan.pp : 1;
  // The first stage's interleaved warm-up (the longest), in forward steps of one chunk each, micro-batches walking
  // the chunks in groups of pp: it touches whole groups; the cool-down as many backward steps at the end.
  const int64_t first_stage_warmup = warmup_steps(pipeline_shape(plan), 0);
  s.warmup = interleaved ? ((first_stage_warmup - 1) / (plan.pp * plan.chunks) + 1) * plan.pp : plan.pp;
  // Room for a warm-up, the micro-batches before the period starts, a warm-up's reach and a period (steady_period)
  // and a cool-down, and two periods more. 1F1B's period starts some micro-batches after the warm-up (the first
  // forward of the steady phase on stage 0 is micro-batch pp - 1, and its backward pairs with a forward pp - 1 later;
  // the stages' offsets then settle) -- measured, from micro-batch pp + 1 or pp + 2 on gpt3-175b with pp 16 and 32,
  // pp + 5, 7, 8, 11 on gpt-1t with pp 8, 16, 32, 64 and pp + 18 with pp 64 and dp 6 (selective recompute, SP):
  // max(8, pp / 2) covers them, and a run that falls short is lengthened (run_with_steady_state), at the cost of
  // a second run. The interleaved one starts with the first whole group after the warm-up (measured: 2 pp).
  const int64_t transient = interleaved ? 0 : std::max<int64_t>(8, plan.pp / 2);
  s.micro_batches = (3 * s.warmup + transient + s.step - 1) / s.step * s.step + 2 * s.step;
  if (!worthwhile(s, plan.micro_batches()))
    return std::nullopt;
  return s;
}

std::optional<SteadyPeriod> steady_period(const IterationResult& r, const SteadyStateSample& sample)
{
  const int64_t step = sample.step;
  const int64_t begin = sample.warmup, end = sample.micro_batches - sample.warmup - step; // pairs (i, i + step), i < end
  if (begin >= end || r.timeline.empty())
    return std::nullopt;
  // Each program's ops of the micro-batches [begin, end + step) (period_micro_batches), by micro-batch, in issue order.
  std::vector<std::vector<std::vector<const OpSlice*>>> by_micro_batch(r.programs.size());
  for (auto& program : by_micro_batch)
    program.resize(static_cast<size_t>(end + step - begin));
  std::vector<std::vector<int32_t>> micro_batch_of;
  for (const traces::RankProgram& program : r.programs)
    micro_batch_of.push_back(period_micro_batches(program));
  for (const OpSlice& slice : r.timeline) {
    const int64_t mb = micro_batch_of[static_cast<size_t>(slice.program)][static_cast<size_t>(slice.op)];
    if (mb >= begin && mb < end + step)
      by_micro_batch[static_cast<size_t>(slice.program)][static_cast<size_t>(mb - begin)].push_back(&slice);
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

SampleOutcome sample_outcome(IterationResult result, const SteadyStateSample& sample)
{
  SampleOutcome out;
  if (!result.timeline.empty())
    out.period = steady_period(result, sample);
  if (out.period)
    out.growth = period_growth(result, sample, *out.period);
  for (StageTimes& s : result.stages) {
    out.spans = out.spans || !s.exposed_spans.empty();
    s.by_micro_batch.clear();
    s.by_micro_batch.shrink_to_fit();
  }
  result.timeline.clear();
  result.timeline.shrink_to_fit();
  out.result = std::move(result);
  return out;
}

std::string to_text(const SampleOutcome& outcome)
{
  std::string text;
  const auto put = [&](double x) { append_exact(text, x); };
  text += std::to_string(outcome.result.stages.size()) + " " + (outcome.spans ? "1 " : "0 ") +
          (outcome.period ? "1 " : "0 ") + (outcome.growth.empty() ? "0 " : "1 ");
  put(outcome.period ? outcome.period->period_s : 0);
  text += std::to_string(outcome.period ? outcome.period->first_micro_batch : 0) + " ";
  for (const double f : figures(outcome.result))
    put(f);
  for (const double g : outcome.growth)
    put(g);
  text += std::to_string(outcome.result.programs.size());
  for (const traces::RankProgram& program : outcome.result.programs)
    text += " " + std::to_string(program.rank);
  for (const std::optional<LinkUsage>* usage : {&outcome.result.link_usage, &outcome.link_growth}) {
    text += *usage ? " 1 " : " 0 ";
    if (*usage)
      text += to_text(**usage);
  }
  return text;
}

SampleOutcome sample_outcome_from_text(const std::string& text)
{
  std::istringstream in(text);
  SampleOutcome out;
  size_t stages = 0, programs = 0;
  int spans = 0, has_period = 0, has_growth = 0;
  std::string period_s;
  int64_t first = 0;
  in >> stages >> spans >> has_period >> has_growth >> period_s >> first;
  out.spans = spans != 0;
  if (has_period)
    out.period = SteadyPeriod{std::strtod(period_s.c_str(), nullptr), first};
  const auto read = [&](std::vector<double>& values) {
    values.resize(counts_end + stages * stage_figures);
    for (double& x : values) {
      std::string word;
      in >> word;
      x = std::strtod(word.c_str(), nullptr);
    }
  };
  std::vector<double> f;
  read(f);
  if (has_growth)
    read(out.growth);
  in >> programs;
  out.result.stages.resize(stages);
  set_figures(out.result, f);
  out.result.programs.resize(programs);
  for (traces::RankProgram& program : out.result.programs)
    in >> program.rank;
  int usage = 0, growth = 0;
  if (in >> usage && usage)
    out.result.link_usage = link_usage_from_text(in);
  if (in >> growth && growth)
    out.link_growth = link_usage_from_text(in);
  if (!in)
    throw std::logic_error("steady state: a sample's outcome could not be read back: " + text.substr(0, 80));
  return out;
}

IterationResult run_with_steady_state(const Workload& workload, const IterationOptions& options,
                                      const SampleRun& run_sample, const WholeRun& run_whole)
{
  std::optional<SteadyStateSample> sample = steady_state_sample(workload.plan);
  if (!options.steady_state || options.record_timeline || options.flow_log != nullptr || !shortcuts_enabled())
    sample.reset();
  const int64_t m = workload.plan.micro_batches();
  bool lengthened = false;
  while (sample && worthwhile(*sample, m)) {
    SampleOutcome outcome = run_sample(with_micro_batches(workload, sample->micro_batches), *sample);
    if (outcome.spans)
      break;
    const std::optional<SteadyPeriod>& period = outcome.period;
    // Repeating over a warm-up's reach and a period more: every dependency of the next period repeats.
    const int64_t wanted = sample->warmup + sample->step;
    const int64_t end = sample->micro_batches - sample->warmup - sample->step;
    // (link usage, where the run reports it, must repeat too)
    const bool links_repeat = !outcome.result.link_usage || outcome.link_growth;
    if (period && !outcome.growth.empty() && links_repeat && end - period->first_micro_batch >= wanted) {
      const double periods = static_cast<double>((m - sample->micro_batches) / sample->step);
      std::vector<double> at_m = figures(outcome.result);
      for (size_t i = 0; i < at_m.size(); ++i)
        at_m[i] += periods * outcome.growth[i];
      set_figures(outcome.result, at_m);
      if (outcome.result.link_usage && outcome.link_growth)
        outcome.result.link_usage = add_usage(*outcome.result.link_usage, *outcome.link_growth, periods);
      outcome.result.extrapolated_micro_batches = m - sample->micro_batches;
      return std::move(outcome.result);
    }
    // Longer: the first time by what the repeat fell short of (it repeated from period->first_micro_batch on), at
    // least a period; with no repeat, or when that was not enough either (a transient that grows with the run),
    // twice as long, so failed attempts cost at most twice the last, 1.5 times the iteration.
    const int64_t shortfall = period && !lengthened ? wanted - (end - period->first_micro_batch) : sample->micro_batches;
    sample->micro_batches += std::max(sample->step, (shortfall + sample->step - 1) / sample->step * sample->step);
    lengthened = true;
  }
  return run_whole(workload);
}

IterationResult run_with_steady_state(const Workload& workload, const IterationOptions& options,
                                      const std::function<IterationResult(const Workload&, const IterationOptions&)>& run)
{
  const SampleRun in_process = [&](const Workload& w, const SteadyStateSample& sample) {
    return sample_outcome(run(w, sample_options(options)), sample);
  };
  return run_with_steady_state(workload, options, in_process, [&](const Workload& w) { return run(w, options); });
}

IterationOptions sample_options(const IterationOptions& options)
{
  IterationOptions sampled = options;
  sampled.record_timeline = true;           // the sample's ops show whether its middle repeats
  sampled.record_micro_batch_shares = true; // and what each period adds
  sampled.progress = nullptr;               // a sample is not the run a progress bar counts
  return sampled;
}

} // namespace gputwin::sim
