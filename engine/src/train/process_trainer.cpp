#include "process_trainer.hpp"

#include "gputwin/engine/backend/backend_factory.hpp"
#include "gputwin/engine/comm/file_rendezvous.hpp"
#include "gputwin/engine/comm/tcp_world.hpp"
#include "gputwin/engine/train/device_memory_check.hpp"
#include "gputwin/engine/train/trace_metadata.hpp"
#include "gputwin/common/input_error.hpp"
#include "rank_loop.hpp"
#include "rank_report.hpp"

#ifdef GPUTWIN_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#include "cuda/device_query.hpp"
#endif
#ifdef GPUTWIN_HAVE_NCCL
#include "cuda/nccl_communicator.hpp"
#endif

namespace gputwin::engine {

std::string to_string(CommKind comm)
{
  switch (comm) {
  case CommKind::Nccl: return "nccl";
  case CommKind::Tcp: return "tcp";
  case CommKind::InProcess: break;
  }
  return "inprocess";
}

namespace {

// This process's rank (from the launcher's or mpirun's environment), checked against the plan's world size.
ProcessRank rank_for_plan(const TrainConfig& config)
{
  const std::string flag = "--comm " + to_string(config.comm);
  if (config.capture_gradients || config.capture_weights)
    throw InputError(flag + ": gradient and weight capture are in-process only (expected --comm inprocess)");
  if (!process_environment("GPUTWIN_RANK") && !process_environment("OMPI_COMM_WORLD_RANK"))
    throw InputError(flag + ": no rank in the environment; expected GPUTWIN_RANK and GPUTWIN_WORLD_SIZE (run it "
                            "under `gputwin-engine launch --nproc N -- ...`) or OMPI_COMM_WORLD_RANK (under mpirun)");
  const ProcessRank p = process_rank_from_environment(
      config.rendezvous_dir.empty() ? std::nullopt : std::optional<std::string>(config.rendezvous_dir));
  const int needed = static_cast<int>(config.plan.dp * config.plan.pp * config.plan.tp);
  if (p.world_size != needed)
    throw InputError(std::string(p.launched_by == Launcher::Mpirun ? "OMPI_COMM_WORLD_SIZE" : "GPUTWIN_WORLD_SIZE") + ": " +
                     std::to_string(p.world_size) +
                     " processes, but the plan needs dp x pp x tp = " + std::to_string(needed) + " (expected " +
                     std::to_string(needed) + " ranks, e.g. launch --nproc " + std::to_string(needed) + ")");
  return p;
}

ProcessRank check_nccl_run(const TrainConfig& config)
{
#ifndef GPUTWIN_HAVE_CUDA
  (void)config;
  throw InputError("--comm nccl: this gputwin-engine was built without CUDA and NCCL (expected --comm inprocess or "
                   "--comm tcp; build on a machine with nvcc and NCCL)");
#elif !defined(GPUTWIN_HAVE_NCCL)
  (void)config;
  throw InputError("--comm nccl: this gputwin-engine was built without NCCL (CMake found no nccl.h and libnccl; set "
                   "NCCL_HOME or pip install nvidia-nccl-cu12, then configure again; expected --comm inprocess)");
#else
  if (config.backend != BackendKind::Cuda)
    throw InputError("--comm nccl: expected --backend cuda (NCCL moves GPU memory), got --backend " +
                     to_string(config.backend));
  const std::string why = cuda_backend_unavailable_reason();
  if (!why.empty())
    throw InputError("--comm nccl: no usable GPU (" + why + ")");
  const ProcessRank p = rank_for_plan(config);
  const size_t gpus = query_cuda_devices().size();
  if (gpus > 1 && static_cast<size_t>(p.local_rank) >= gpus)
    throw InputError(std::string(p.launched_by == Launcher::Mpirun ? "OMPI_COMM_WORLD_LOCAL_RANK" : "GPUTWIN_LOCAL_RANK") +
                     ": local rank " + std::to_string(p.local_rank) + ", but only " + std::to_string(gpus) +
                     " GPUs are visible (expected one GPU per rank of a node)");
  return p;
#endif
}

ProcessRank check_tcp_run(const TrainConfig& config)
{
  if (config.backend != BackendKind::Cpu)
    throw InputError("--comm tcp: expected --backend cpu (TCP moves host memory; --comm nccl is the GPU path), got "
                     "--backend " +
                     to_string(config.backend));
  return rank_for_plan(config);
}

// What every multi-process run does once its communicators exist: runs this rank, hands its report to rank 0
// through the rendezvous directory, and (rank 0) merges every rank's report. `finish` ends the communicators
// after the rank's last call (before the reports).
TrainResult run_and_merge(const TrainConfig& config, const RankGrid& grid, const ProcessRank& p, Backend& backend,
                          RankCommunicators comms, const FileRendezvous& rendezvous, const StepCallback& on_step,
                          const std::function<void()>& finish)
{
  const int rank = p.rank;
  RankReport report;
  report.rank = rank;
  report.weighted_loss.assign(static_cast<size_t>(config.steps), 0.0);
  report.iteration_seconds.assign(static_cast<size_t>(config.steps), 0.0);
  RankHooks hooks;
  hooks.add_loss = [&](int64_t it, double weighted_loss) {
    report.weighted_loss[static_cast<size_t>(it)] += weighted_loss;
  };
  hooks.iteration_done = [&](int64_t it, double seconds) {
    report.iteration_seconds[static_cast<size_t>(it)] = seconds;
  };
  const SyntheticCorpus corpus(config.model.vocab, config.options.seed);
  // The trace clock is the steady clock itself; each rank's program is shifted to its own start below.
  RankOutcome outcome =
      run_rank(config, grid, rank, backend, std::move(comms), corpus, Tracer::Clock::time_point{}, hooks);
  if (finish)
    finish();
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
}

TrainResult train_tcp(const TrainConfig& config, const ProcessRank& p, const StepCallback& on_step)
{
  const RankGrid grid(config.plan.dp, config.plan.pp, config.plan.tp);
  const int rank = p.rank;
  // Before anything is allocated (a failing rank exits; the launcher or mpirun stops the others).
  check_memory_before_allocating(config, grid, {rank}, 0);
  const std::chrono::milliseconds timeout = rendezvous_timeout_from_environment();
  const FileRendezvous rendezvous(p.rendezvous_dir, p.run_id, timeout);
  std::unique_ptr<Backend> backend = make_backend(config.backend);
  TcpWorld world(rank, p.world_size, rendezvous, timeout);
  RankCommunicators comms;
  comms.tp = world.communicator(grid.members(grid.tp_group(rank)));
  comms.dp = world.communicator(grid.members(grid.dp_group(rank)));
  if (grid.embedding_group(rank) >= 0)
    comms.embedding = world.communicator(grid.members(grid.embedding_group(rank)));
  comms.world = world.communicator(grid.all_ranks());
  return run_and_merge(config, grid, p, *backend, std::move(comms), rendezvous, on_step, [&world] { world.close(); });
}

#ifdef GPUTWIN_HAVE_NCCL
TrainResult train_nccl(const TrainConfig& config, const ProcessRank& p, const StepCallback& on_step)
{
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
  // Every rank makes every split, in the same order (one split per kind: each rank is in one group of it).
  RankCommunicators comms;
  comms.tp = world->split(grid.tp_group(rank), grid.members(grid.tp_group(rank)));
  comms.dp = world->split(grid.dp_group(rank), grid.members(grid.dp_group(rank)));
  if (grid.pp() > 1) {
    const int embedding = grid.embedding_group(rank);
    comms.embedding = world->split(embedding, embedding >= 0 ? grid.members(embedding) : std::vector<int>{});
  }
  comms.world = std::move(world);
  return run_and_merge(config, grid, p, backend, std::move(comms), rendezvous, on_step, {});
}
#endif

} // namespace

ProcessRank check_process_run(const TrainConfig& config)
{
  if (config.comm == CommKind::Tcp)
    return check_tcp_run(config);
  return check_nccl_run(config);
}

TrainResult train_process(const TrainConfig& config, const StepCallback& on_step)
{
  const ProcessRank p = check_process_run(config);
  try {
    if (config.comm == CommKind::Tcp)
      return train_tcp(config, p, on_step);
#ifdef GPUTWIN_HAVE_NCCL
    return train_nccl(config, p, on_step);
#else
    return {};
#endif
  } catch (const CommError& e) { // which rank saw it, as the threaded run says
    throw CommError("rank " + std::to_string(p.rank) + ": " + e.what());
  }
}

} // namespace gputwin::engine
