#include "rank_loop.hpp"

#include "gputwin/engine/backend/host_access.hpp"
#include "gputwin/engine/train/mixed_precision_adam.hpp"
#include "gputwin/engine/train/pipeline_driver.hpp"

namespace gputwin::engine {

namespace {

LocalParameters snapshot(RankContext& ctx, const ParameterStore& store, bool gradients)
{
  LocalParameters local;
  local.tp_rank = ctx.coords.tp;
  local.tp = ctx.tp_size();
  for (const Parameter& p : store.parameters()) {
    Parameter copy;
    copy.spec = p.spec;
    copy.local_rows = p.local_rows;
    copy.local_cols = p.local_cols;
    local.parameters.push_back(std::move(copy));
    local.values.push_back(download_floats(ctx.backend, gradients ? p.grad : p.weight));
  }
  return local;
}

} // namespace

RankOutcome run_rank(const TrainConfig& config, const RankGrid& grid, int rank, Backend& backend,
                     RankCommunicators comms, const SyntheticCorpus& corpus, Tracer::Clock::time_point epoch,
                     const RankHooks& hooks)
{
  RankOutcome outcome;
  MemoryAccountant memory;
  Tracer tracer(rank, epoch);
  RankContext ctx(config.model, config.plan, config.options, grid, rank, backend, memory, tracer);
  ctx.tp = TracedComm(std::move(comms.tp), tracer, grid.tp_group(rank), TraceStream::TensorParallel, backend);
  ctx.dp = TracedComm(std::move(comms.dp), tracer, grid.dp_group(rank), TraceStream::DataParallel, backend);
  if (grid.embedding_group(rank) >= 0)
    ctx.embedding = TracedComm(std::move(comms.embedding), tracer, grid.embedding_group(rank),
                               TraceStream::DataParallel, backend);
  if (grid.ep_group(rank) >= 0) {
    ctx.ep = TracedComm(std::move(comms.ep), tracer, grid.ep_group(rank), TraceStream::Compute, backend);
    ctx.edp = TracedComm(std::move(comms.edp), tracer, grid.edp_group(rank), TraceStream::DataParallel, backend);
  }
  ctx.world = std::move(comms.world);

  ParameterStore store;
  GptStage stage(ctx, store);
  MixedPrecisionAdam adam(
      ctx, store, store.finalize(ctx, MixedPrecisionAdam::padded_elements(store.total_elements(), config.plan.dp)));
  PipelineDriver driver(ctx, stage, corpus);
  const bool reports_loss = ctx.coords.pp == config.plan.pp - 1 && ctx.coords.tp == 0;
  const double loss_weight = 1.0 / static_cast<double>(config.plan.micro_batches() * config.plan.dp);

  ctx.world->barrier();
  Tracer::Clock::time_point start = Tracer::Clock::now();
  outcome.started_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(start - epoch).count();
  for (int64_t it = 0; it < config.steps; ++it) {
    const bool last = it == config.steps - 1;
    ctx.iteration = it;
    tracer.start_iteration(config.record_trace && last);
    adam.zero_gradients();
    const double loss = driver.run_iteration();
    adam.reduce_gradients();
    // Experts are split over the dp ranks too (ep folds tp x dp): every rank gives its parameters then.
    const bool captures = ctx.coords.dp == 0 || config.model.moe.enabled();
    if (config.capture_gradients && last && captures)
      outcome.gradients = snapshot(ctx, store, true);
    adam.step();
    if (reports_loss && hooks.add_loss)
      hooks.add_loss(it, loss * loss_weight);
    backend.synchronize(); // an asynchronous backend's (CUDA's) work of the iteration is done too
    ctx.world->barrier();  // the iteration ends when every rank is done
    const Tracer::Clock::time_point end = Tracer::Clock::now();
    if (rank == 0 && hooks.iteration_done)
      hooks.iteration_done(it, std::chrono::duration<double>(end - start).count());
    start = end;
  }
  if (config.capture_weights && (ctx.coords.dp == 0 || config.model.moe.enabled()))
    outcome.weights = snapshot(ctx, store, false);
  RankMemory& m = outcome.memory;
  m.rank = rank;
  m.coords = ctx.coords;
  for (int p = 0; p < memory_purpose_count; ++p)
    m.peak_bytes[static_cast<size_t>(p)] = memory.peak_bytes(static_cast<MemoryPurpose>(p));
  m.peak_total_bytes = memory.peak_total_bytes();
  m.saved_bytes_per_layer_min = driver.saved_bytes_per_layer().min;
  m.saved_bytes_per_layer_max = driver.saved_bytes_per_layer().max;
  if (config.record_trace)
    outcome.program = tracer.take_program();
  return outcome;
}

} // namespace gputwin::engine
