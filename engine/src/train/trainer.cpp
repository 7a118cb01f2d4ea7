#include "gputwin/engine/train/trainer.hpp"

#include "gputwin/engine/backend/backend_factory.hpp"
#include "gputwin/engine/backend/host_access.hpp"
#include "gputwin/engine/comm/in_process_world.hpp"
#include "gputwin/engine/train/mixed_precision_adam.hpp"
#include "gputwin/engine/train/pipeline_driver.hpp"
#include "gputwin/engine/train/trace_metadata.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

namespace gputwin::engine {

namespace {

// One rank's parameters as it holds them, to be assembled into logical tensors.
struct LocalParameters {
  int64_t tp_rank = 0, tp = 1;
  std::vector<Parameter> parameters; // spec and local shape (weight/grad views left empty)
  std::vector<std::vector<float>> values;
};

struct Shared {
  Shared(const TrainConfig& c, const StepCallback& cb)
      : config(c), grid(c.plan.dp, c.plan.pp, c.plan.tp), world(grid.world_size()),
        corpus(c.model.vocab, c.options.seed), epoch(Tracer::Clock::now()), on_step(cb),
        loss(static_cast<size_t>(c.steps), 0.0), seconds(static_cast<size_t>(c.steps), 0.0),
        programs(static_cast<size_t>(grid.world_size())), memory(static_cast<size_t>(grid.world_size())),
        grads(static_cast<size_t>(grid.world_size())), weights(static_cast<size_t>(grid.world_size()))
  {
  }
  const TrainConfig& config;
  RankGrid grid;
  InProcessWorld world;
  SyntheticCorpus corpus;
  Tracer::Clock::time_point epoch;
  const StepCallback& on_step;
  std::mutex mutex;
  std::vector<double> loss, seconds;
  std::vector<traces::RankProgram> programs;
  std::vector<RankMemory> memory;
  std::vector<LocalParameters> grads, weights;
  std::vector<std::string> errors;
};

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

std::vector<LogicalTensor> assemble(const std::vector<LocalParameters>& ranks)
{
  std::map<std::string, LogicalTensor> logical;
  for (const LocalParameters& r : ranks)
    for (size_t i = 0; i < r.parameters.size(); ++i) {
      const Parameter& p = r.parameters[i];
      LogicalTensor& t = logical[p.spec.name];
      if (t.values.empty()) {
        t.name = p.spec.name;
        t.rows = p.spec.rows;
        t.cols = p.spec.cols;
        t.values.assign(static_cast<size_t>(t.rows * t.cols), 0.0f);
      }
      for (int64_t e = 0; e < p.numel(); ++e) {
        const int64_t index = logical_index(p, e, r.tp_rank, r.tp);
        if (index >= 0)
          t.values[static_cast<size_t>(index)] = r.values[i][static_cast<size_t>(e)];
      }
    }
  std::vector<LogicalTensor> result;
  for (auto& [name, t] : logical)
    result.push_back(std::move(t));
  return result;
}

void run_rank(Shared& shared, int rank)
{
  const TrainConfig& config = shared.config;
  MemoryAccountant memory;
  std::unique_ptr<Backend> backend = make_backend(config.backend);
  Tracer tracer(rank, shared.epoch);
  RankContext ctx(config.model, config.plan, config.options, shared.grid, rank, *backend, memory, tracer);
  const RankGrid& grid = shared.grid;
  auto group = [&](int index) { return grid.groups()[static_cast<size_t>(index)].ranks; };
  auto comm = [&](int index) {
    std::vector<int> ranks;
    for (const int32_t r : group(index))
      ranks.push_back(r);
    return shared.world.communicator(ranks, rank, backend->buffer_ops()); // device collectives where it has them
  };
  ctx.tp = TracedComm(comm(grid.tp_group(rank)), tracer, grid.tp_group(rank), TraceStream::TensorParallel, *backend);
  ctx.dp = TracedComm(comm(grid.dp_group(rank)), tracer, grid.dp_group(rank), TraceStream::DataParallel, *backend);
  if (grid.embedding_group(rank) >= 0)
    ctx.embedding = TracedComm(comm(grid.embedding_group(rank)), tracer, grid.embedding_group(rank),
                               TraceStream::DataParallel, *backend);
  std::vector<int> everyone(static_cast<size_t>(grid.world_size()));
  for (int r = 0; r < grid.world_size(); ++r)
    everyone[static_cast<size_t>(r)] = r;
  ctx.world = shared.world.communicator(everyone, rank);

  ParameterStore store;
  GptStage stage(ctx, store);
  MixedPrecisionAdam adam(
      ctx, store, store.finalize(ctx, MixedPrecisionAdam::padded_elements(store.total_elements(), config.plan.dp)));
  PipelineDriver driver(ctx, stage, shared.corpus);
  const bool reports_loss = ctx.coords.pp == config.plan.pp - 1 && ctx.coords.tp == 0;
  const double loss_weight = 1.0 / static_cast<double>(config.plan.micro_batches() * config.plan.dp);

  ctx.world->barrier();
  Tracer::Clock::time_point start = Tracer::Clock::now();
  for (int64_t it = 0; it < config.steps; ++it) {
    const bool last = it == config.steps - 1;
    ctx.iteration = it;
    tracer.start_iteration(config.record_trace && last);
    adam.zero_gradients();
    const double loss = driver.run_iteration();
    adam.reduce_gradients();
    if (config.capture_gradients && last && ctx.coords.dp == 0)
      shared.grads[static_cast<size_t>(rank)] = snapshot(ctx, store, true);
    adam.step();
    if (reports_loss) {
      std::lock_guard<std::mutex> lock(shared.mutex);
      shared.loss[static_cast<size_t>(it)] += loss * loss_weight;
    }
    backend->synchronize(); // an asynchronous backend's (CUDA's) work of the iteration is done too
    ctx.world->barrier();   // the iteration ends when every rank is done
    const Tracer::Clock::time_point end = Tracer::Clock::now();
    if (rank == 0) {
      shared.seconds[static_cast<size_t>(it)] = std::chrono::duration<double>(end - start).count();
      if (shared.on_step)
        shared.on_step(it, shared.loss[static_cast<size_t>(it)], shared.seconds[static_cast<size_t>(it)]);
    }
    start = end;
  }
  if (config.capture_weights && ctx.coords.dp == 0)
    shared.weights[static_cast<size_t>(rank)] = snapshot(ctx, store, false);
  RankMemory& m = shared.memory[static_cast<size_t>(rank)];
  m.rank = rank;
  m.coords = ctx.coords;
  for (int p = 0; p < memory_purpose_count; ++p)
    m.peak_bytes[static_cast<size_t>(p)] = memory.peak_bytes(static_cast<MemoryPurpose>(p));
  m.peak_total_bytes = memory.peak_total_bytes();
  m.saved_bytes_per_layer_min = driver.saved_bytes_per_layer().min;
  m.saved_bytes_per_layer_max = driver.saved_bytes_per_layer().max;
  if (config.record_trace)
    shared.programs[static_cast<size_t>(rank)] = tracer.take_program();
}

} // namespace

TrainResult train(const TrainConfig& config, const StepCallback& on_step)
{
  check_backend_name(config.backend);
  Shared shared(config, on_step);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < shared.grid.world_size(); ++rank)
    threads.emplace_back([&shared, rank] {
      try {
        run_rank(shared, rank);
      } catch (const std::exception& e) {
        {
          std::lock_guard<std::mutex> lock(shared.mutex);
          // A rank that failed because another one did reports second.
          const bool secondary = dynamic_cast<const CommError*>(&e) != nullptr && shared.world.aborted();
          shared.errors.insert(secondary ? shared.errors.end() : shared.errors.begin(),
                               "rank " + std::to_string(rank) + ": " + e.what());
        }
        shared.world.abort(e.what());
      }
    });
  for (std::thread& t : threads)
    t.join();
  if (!shared.errors.empty())
    throw std::runtime_error(shared.errors.front());

  TrainResult result;
  result.loss_per_step = shared.loss;
  result.iteration_seconds = shared.seconds;
  result.memory = shared.memory;
  if (config.capture_gradients)
    result.gradients = assemble(shared.grads);
  if (config.capture_weights)
    result.weights = assemble(shared.weights);
  if (config.record_trace)
    result.trace = build_trace(config, shared.grid, std::move(shared.programs), shared.seconds);
  return result;
}

double median_seconds(const std::vector<double>& seconds, size_t warmup)
{
  std::vector<double> kept(seconds.begin() + static_cast<std::ptrdiff_t>(std::min(warmup, seconds.size())),
                           seconds.end());
  if (kept.empty())
    kept = seconds;
  if (kept.empty())
    return 0.0;
  std::sort(kept.begin(), kept.end());
  const size_t n = kept.size();
  return n % 2 ? kept[n / 2] : 0.5 * (kept[n / 2 - 1] + kept[n / 2]);
}

} // namespace gputwin::engine
