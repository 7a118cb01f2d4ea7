#include "gputwin/models/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace gputwin {

PipelineShape pipeline_shape(const ParallelPlan& plan)
{
  return PipelineShape{plan.schedule, plan.pp, plan.micro_batches(),
                       plan.schedule == Schedule::Interleaved ? plan.chunks : 1};
}

namespace {

void check_shape(const PipelineShape& shape, int64_t stage)
{
  if (shape.stages < 1 || shape.micro_batches < 1 || shape.chunks < 1)
    throw std::invalid_argument("pipeline schedule: stages, micro-batches and chunks must be >= 1");
  if (stage < 0 || stage >= shape.stages)
    throw std::invalid_argument("pipeline schedule: stage " + std::to_string(stage) + " out of range");
  if (shape.schedule == Schedule::Interleaved && shape.micro_batches % shape.stages != 0)
    throw std::invalid_argument("pipeline schedule: interleaved needs micro-batches to be a multiple of stages");
}

// The k-th forward (or backward) of an interleaved stage: micro-batches go in groups of p through chunk 0,
// then the same group through chunk 1, ...; backwards walk the chunks in reverse.
PipelineStep interleaved_step(const PipelineShape& shape, PipelinePhase phase, int64_t k)
{
  const int64_t p = shape.stages, v = shape.chunks;
  const int64_t in_group = k % (p * v);
  int64_t chunk = in_group / p;
  if (phase == PipelinePhase::Backward)
    chunk = v - 1 - chunk;
  const int64_t micro_batch = (k / (p * v)) * p + in_group % p;
  return PipelineStep{phase, micro_batch, chunk};
}

PipelineStep nth_step(const PipelineShape& shape, PipelinePhase phase, int64_t k)
{
  if (shape.schedule == Schedule::Interleaved)
    return interleaved_step(shape, phase, k);
  return PipelineStep{phase, k, 0};
}

} // namespace

int64_t warmup_steps(const PipelineShape& shape, int64_t stage)
{
  check_shape(shape, stage);
  const int64_t p = shape.stages, m = shape.micro_batches, v = shape.chunks;
  switch (shape.schedule) {
  case Schedule::GPipe: return m;
  case Schedule::OneFOneB: return std::min(p - stage - 1, m);
  case Schedule::Interleaved:
    // Megatron-LM's interleaved schedule: the later stages must first receive the first micro-batches of
    // every chunk, 2 steps per stage of distance, plus one round of p for each additional chunk.
    if (m == p)
      return m * v;
    return std::min(2 * (p - stage - 1) + (v - 1) * p + shape.extra_warmup, m * v);
  }
  return 0;
}

std::vector<PipelineStep> stage_schedule(const PipelineShape& shape, int64_t stage)
{
  check_shape(shape, stage);
  const int64_t total = shape.micro_batches * shape.chunks; // forwards (and backwards) on this stage
  const int64_t warmup = warmup_steps(shape, stage);
  const int64_t steady = total - warmup;

  std::vector<PipelineStep> steps;
  steps.reserve(static_cast<size_t>(2 * total));
  // Warm-up: forwards only, filling the pipeline below this stage.
  for (int64_t k = 0; k < warmup; ++k)
    steps.push_back(nth_step(shape, PipelinePhase::Forward, k));
  // Steady state: one forward, then the backward of the oldest micro-batch still in flight.
  for (int64_t i = 0; i < steady; ++i) {
    steps.push_back(nth_step(shape, PipelinePhase::Forward, warmup + i));
    steps.push_back(nth_step(shape, PipelinePhase::Backward, i));
  }
  // Cool-down: drain the backwards of the warm-up forwards.
  for (int64_t k = steady; k < total; ++k)
    steps.push_back(nth_step(shape, PipelinePhase::Backward, k));
  return steps;
}

PipelineShape peak_equivalent_shape(const PipelineShape& shape)
{
  PipelineShape out = shape;
  switch (shape.schedule) {
  case Schedule::GPipe: return out;
  case Schedule::OneFOneB: out.micro_batches = std::min(shape.micro_batches, shape.stages + 1); return out;
  case Schedule::Interleaved: out.micro_batches = std::min(shape.micro_batches, 5 * shape.stages); return out;
  }
  return out;
}

int64_t peak_in_flight(const PipelineShape& shape, int64_t stage)
{
  check_shape(shape, stage);
  const int64_t total = shape.micro_batches * shape.chunks;
  return std::min(warmup_steps(shape, stage) + 1, total);
}

int64_t peak_in_flight(const std::vector<PipelineStep>& steps)
{
  int64_t in_flight = 0, peak = 0;
  for (const PipelineStep& s : steps) {
    in_flight += s.phase == PipelinePhase::Forward ? 1 : -1;
    peak = std::max(peak, in_flight);
  }
  return peak;
}

int64_t peak_weighted_in_flight(const PipelineShape& shape, int64_t stage, const std::vector<int64_t>& chunk_weight)
{
  if (static_cast<int64_t>(chunk_weight.size()) != shape.chunks)
    throw std::invalid_argument("pipeline schedule: one weight per chunk expected");
  int64_t in_flight = 0, peak = 0;
  for (const PipelineStep& s : stage_schedule(peak_equivalent_shape(shape), stage)) {
    const int64_t w = chunk_weight[static_cast<size_t>(s.chunk)];
    in_flight += s.phase == PipelinePhase::Forward ? w : -w;
    peak = std::max(peak, in_flight);
  }
  return peak;
}

int64_t peak_layers_in_flight(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  std::vector<int64_t> layers; // per chunk
  for (int64_t c = 0; c < stage_chunks(plan); ++c)
    layers.push_back(chunk_layers(model, plan, stage, c));
  return peak_weighted_in_flight(pipeline_shape(plan), stage, layers);
}

std::string format_schedule(const std::vector<PipelineStep>& steps, bool show_chunks)
{
  std::string text;
  for (const PipelineStep& s : steps) {
    if (!text.empty())
      text += ' ';
    text += s.phase == PipelinePhase::Forward ? 'F' : 'B';
    text += std::to_string(s.micro_batch);
    if (show_chunks) {
      text += '.';
      text += std::to_string(s.chunk);
    }
  }
  return text;
}

} // namespace gputwin
