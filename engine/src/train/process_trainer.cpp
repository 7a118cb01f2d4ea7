#include "process_trainer.hpp"

#include "gputwin/engine/comm/file_rendezvous.hpp"
#include "gputwin/engine/train/trace_metadata.hpp"
#include "gputwin/models/input_error.hpp"
#include "rank_loop.hpp"
#include "rank_report.hpp"

#ifdef GPUTWIN_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#include "cuda/device_query.hpp"
#include "gputwin/engine/train/device_memory_check.hpp"
#endif
#ifdef GPUTWIN_HAVE_NCCL
#include "cuda/nccl_communicator.hpp"
#endif

namespace gputwin::engine {

std::string to_string(CommKind comm)
{
  return comm == CommKind::Nccl ? "nccl" : "inprocess";
}

ProcessRank check_process_run(const TrainConfig& config)
{
#ifndef GPUTWIN_HAVE_CUDA
  (void)config;
  throw InputError("--comm nccl: this gputwin-engine was built without CUDA and NCCL (expected --comm inprocess; "
                   "build on a machine with nvcc and NCCL)");
#elif !defined(GPUTWIN_HAVE_NCCL)
  (void)config;
  throw InputError("--comm nccl: this gputwin-engine was built without NCCL (CMake found no nccl.h and libnccl; set "
                   "NCCL_HOME or pip install nvidia-nccl-cu12, then configure again; expected --comm inprocess)");
#else
  if (config.backend != "cuda")
    throw InputError("--comm nccl: expected --backend cuda (NCCL moves GPU memory), got --backend " + config.backend);
  const std::string why = cuda_backend_unavailable_reason();
  if (!why.empty())
    throw InputError("--comm nccl: no usable GPU (" + why + ")");
  if (config.capture_gradients || config.capture_weights)
    throw InputError("--comm nccl: gradient and weight capture are in-process only (expected --comm inprocess)");
  const ProcessRank p = process_rank_from_environment(
      config.rendezvous_dir.empty() ? std::nullopt : std::optional<std::string>(config.rendezvous_dir));
  const int needed = static_cast<int>(config.plan.dp * config.plan.pp * config.plan.tp);
  if (p.world_size != needed)
    throw InputError(std::string(p.launched_by == "mpirun" ? "OMPI_COMM_WORLD_SIZE" : "GPUTWIN_WORLD_SIZE") + ": " +
                     std::to_string(p.world_size) + " processes, but the plan needs dp x pp x tp = " +
                     std::to_string(needed) + " (expected " + std::to_string(needed) + " ranks, e.g. launch --nproc " +
                     std::to_string(needed) + ")");
  const size_t gpus = query_cuda_devices().size();
  if (gpus > 1 && static_cast<size_t>(p.local_rank) >= gpus)
    throw InputError(std::string(p.launched_by == "mpirun" ? "OMPI_COMM_WORLD_LOCAL_RANK" : "GPUTWIN_LOCAL_RANK") +
                     ": local rank " + std::to_string(p.local_rank) + ", but only " + std::to_string(gpus) +
                     " GPUs are visible (expected one GPU per rank of a node)");
  return p;
#endif
}

TrainResult train_process(const TrainConfig& config, const StepCallback& on_step)
{
  const ProcessRank p = check_process_run(config);
#ifndef GPUTWIN_HAVE_NCCL
  (void)p;
  (void)on_step;
  return {};
#else
  const RankGrid grid(config.plan.dp, config.plan.pp, config.plan.tp);
  const int rank = p.rank;
  // One visible GPU (CUDA_VISIBLE_DEVICES set per rank, or one rank per node): take it; else the local rank's.
  const int device = query_cuda_devices().size() == 1 ? 0 : p.local_rank;
  // Before anything is allocated (a failing rank exits; the launcher or mpirun stops the others).
  check_memory_before_allocating(config, grid, {rank}, device);
  const std::chrono::milliseconds timeout = rendezvous_timeout_from_environment();
  const FileRendezvous rendezvous(p.rendezvous_dir, p.run_id, timeout);

  NcclUniqueIdBytes id{};
  if (rank == 0) {
    id = nccl_unique_id();
    rendezvous.publish("nccl-id", std::vector<char>(id.begin(), id.end()));
  } else {
    const std::vector<char> bytes = rendezvous.read("nccl-id");
    if (bytes.size() != id.size())
      throw CommError("rendezvous: " + rendezvous.path("nccl-id") + " holds " + std::to_string(bytes.size()) +
                      " bytes; expected an ncclUniqueId of " + std::to_string(id.size()));
    std::copy(bytes.begin(), bytes.end(), id.begin());
  }

  CudaBackend backend(device);
  std::unique_ptr<NcclCommunicator> world =
      NcclCommunicator::create_world(id, rank, p.world_size, device, timeout, backend.buffer_ops());
  auto members = [&](int group) {
    std::vector<int> ranks;
    for (const int32_t r : grid.groups()[static_cast<size_t>(group)].ranks)
      ranks.push_back(r);
    return ranks;
  };
  // Every rank makes every split, in the same order (one split per kind: each rank is in one group of it).
  RankCommunicators comms;
  comms.tp = world->split(grid.tp_group(rank), members(grid.tp_group(rank)));
  comms.dp = world->split(grid.dp_group(rank), members(grid.dp_group(rank)));
  if (grid.pp() > 1) {
    const int embedding = grid.embedding_group(rank);
    comms.embedding = world->split(embedding, embedding >= 0 ? members(embedding) : std::vector<int>{});
  }
  comms.world = std::move(world);

  RankReport report;
  report.rank = rank;
  report.weighted_loss.assign(static_cast<size_t>(config.steps), 0.0);
  report.iteration_seconds.assign(static_cast<size_t>(config.steps), 0.0);
  RankHooks hooks;
  hooks.add_loss = [&](int64_t it, double weighted_loss) { report.weighted_loss[static_cast<size_t>(it)] += weighted_loss; };
  hooks.iteration_done = [&](int64_t it, double seconds) { report.iteration_seconds[static_cast<size_t>(it)] = seconds; };
  const SyntheticCorpus corpus(config.model.vocab, config.options.seed);
  // The trace clock is the steady clock itself; each rank's program is shifted to its own start below.
  RankOutcome outcome =
      run_rank(config, grid, rank, backend, std::move(comms), corpus, Tracer::Clock::time_point{}, hooks);
  report.memory = outcome.memory;
  report.started_ns = outcome.started_ns;
  report.program = std::move(outcome.program);
  rendezvous.publish("rank-" + std::to_string(rank) + ".report", encode_rank_report(report));

  TrainResult result;
  result.world_rank = rank;
  if (rank != 0)
    return result;
  result.loss_per_step.assign(static_cast<size_t>(config.steps), 0.0);
  result.iteration_seconds = report.iteration_seconds;
  std::vector<traces::RankProgram> programs;
  for (int r = 0; r < p.world_size; ++r) {
    const std::string name = "rank-" + std::to_string(r) + ".report";
    RankReport theirs = r == 0 ? std::move(report) : decode_rank_report(rendezvous.read(name), rendezvous.path(name));
    for (size_t it = 0; it < result.loss_per_step.size() && it < theirs.weighted_loss.size(); ++it)
      result.loss_per_step[it] += theirs.weighted_loss[it];
    result.memory.push_back(theirs.memory);
    for (traces::Op& op : theirs.program.ops)
      if (op.start_ns >= 0)
        op.start_ns -= theirs.started_ns;
    programs.push_back(std::move(theirs.program));
  }
  if (config.record_trace)
    result.trace = build_trace(config, grid, std::move(programs), result.iteration_seconds);
  if (on_step)
    for (size_t it = 0; it < result.loss_per_step.size(); ++it)
      on_step(static_cast<int64_t>(it), result.loss_per_step[it], result.iteration_seconds[it]);
  return result;
#endif
}

} // namespace gputwin::engine
