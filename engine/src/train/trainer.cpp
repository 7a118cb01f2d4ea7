#include "gputwin/engine/train/trainer.hpp"

#include "gputwin/engine/backend/backend_factory.hpp"
#include "gputwin/engine/backend/host_access.hpp"
#include "gputwin/engine/comm/in_process_world.hpp"
#include "gputwin/engine/train/device_memory_check.hpp"
#include "gputwin/engine/train/engine_plan_support.hpp"
#include "gputwin/engine/train/trace_metadata.hpp"
#include "gputwin/common/input_error.hpp"
#include "process_trainer.hpp"
#include "rank_loop.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

namespace gputwin::engine {

namespace {

ExpertGrid expert_grid(const TrainConfig& c)
{
  return ExpertGrid{c.model.moe.enabled(), c.plan.ep, c.plan.expert_tp()};
}

struct Shared {
  Shared(const TrainConfig& c, const StepCallback& cb)
      : config(c), grid(c.plan.dp, c.plan.pp, c.plan.tp, expert_grid(c)), world(grid.world_size()),
        corpus(c.model.vocab, c.options.seed), epoch(Tracer::Clock::now()), on_step(cb),
        loss(static_cast<size_t>(c.steps), 0.0), seconds(static_cast<size_t>(c.steps), 0.0),
        outcomes(static_cast<size_t>(grid.world_size()))
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
  std::vector<RankOutcome> outcomes; // by world rank
  std::vector<std::string> errors;
};

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

// One rank of the threaded run: its own backend, in-process communicators, results into `shared`.
void run_rank_thread(Shared& shared, int rank)
{
  std::unique_ptr<Backend> backend = make_backend(shared.config.backend);
  const RankGrid& grid = shared.grid;
  auto comm = [&](int index) { // device collectives where the backend has them
    return shared.world.communicator(grid.members(index), rank, backend->buffer_ops());
  };
  RankCommunicators comms;
  comms.tp = comm(grid.tp_group(rank));
  comms.dp = comm(grid.dp_group(rank));
  if (grid.embedding_group(rank) >= 0)
    comms.embedding = comm(grid.embedding_group(rank));
  if (grid.ep_group(rank) >= 0) {
    comms.ep = comm(grid.ep_group(rank));
    comms.edp = comm(grid.edp_group(rank));
  }
  comms.world = shared.world.communicator(grid.all_ranks(), rank); // send/recv take host memory

  RankHooks hooks;
  hooks.add_loss = [&shared](int64_t it, double weighted_loss) {
    std::lock_guard<std::mutex> lock(shared.mutex);
    shared.loss[static_cast<size_t>(it)] += weighted_loss;
  };
  hooks.iteration_done = [&shared](int64_t it, double seconds) {
    shared.seconds[static_cast<size_t>(it)] = seconds;
    if (shared.on_step)
      shared.on_step(it, shared.loss[static_cast<size_t>(it)], seconds);
  };
  shared.outcomes[static_cast<size_t>(rank)] =
      run_rank(shared.config, grid, rank, *backend, std::move(comms), shared.corpus, shared.epoch, hooks);
}

TrainResult train_threads(const TrainConfig& config, const StepCallback& on_step)
{
  check_backend_available(config.backend);
  Shared shared(config, on_step);
  check_memory_before_allocating(config, shared.grid, shared.grid.all_ranks(), 0); // every rank on one device
  std::vector<std::thread> threads;
  for (int rank = 0; rank < shared.grid.world_size(); ++rank)
    threads.emplace_back([&shared, rank] {
      try {
        run_rank_thread(shared, rank);
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
  std::vector<traces::RankProgram> programs;
  std::vector<LocalParameters> grads, weights;
  for (RankOutcome& o : shared.outcomes) {
    result.memory.push_back(o.memory);
    programs.push_back(std::move(o.program));
    grads.push_back(std::move(o.gradients));
    weights.push_back(std::move(o.weights));
  }
  if (config.capture_gradients)
    result.gradients = assemble(grads);
  if (config.capture_weights)
    result.weights = assemble(weights);
  if (config.record_trace)
    result.trace = build_trace(config, shared.grid, std::move(programs), shared.seconds);
  return result;
}

} // namespace

TrainResult train(const TrainConfig& config, const StepCallback& on_step)
{
  check_engine_supports_plan(config.model, config.plan);
  check_backend_supports_plan(config.backend, config.plan);
  check_backend_supports_model(config.backend, config.model);
  if (config.model.moe.enabled() && config.comm != CommKind::InProcess)
    throw InputError("--comm: the engine runs mixture-of-experts models with --comm inprocess only (got --comm " +
                     to_string(config.comm) + ")");
  if (config.comm == CommKind::Nccl || config.comm == CommKind::Tcp)
    return train_process(config, on_step);
  return train_threads(config, on_step);
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
