#pragma once
// Trains a GPT on the synthetic corpus with a parallel plan and reports what it measured: loss per step,
// iteration times, memory by purpose, the bytes each layer saved for backward and, optionally, the gradients
// and the trace of the last iteration. Every rank of the dp x pp x tp grid runs as a thread of this process
// (CommKind::InProcess), or each process is one rank talking over NCCL (CommKind::Nccl, one GPU per process)
// or over TCP sockets (CommKind::Tcp, the CPU backend), started by `gputwin-engine launch` or mpirun
// (engine/src/train/process_trainer.hpp says how results reach rank 0).

#include "gputwin/engine/backend/backend_factory.hpp"
#include "gputwin/engine/comm/process_rank.hpp"
#include "gputwin/engine/core/memory_accountant.hpp"
#include "gputwin/engine/parallel/rank_context.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gputwin::engine {

// How the ranks of a run communicate: threads of this process (InProcessWorld), or one process per rank
// over NCCL (cuda/nccl_communicator.hpp, GPU memory) or over TCP (comm/tcp_world.hpp, host memory; the same
// arithmetic as InProcessWorld, so bit-identical results).
enum class CommKind { InProcess, Nccl, Tcp };
std::string to_string(CommKind comm); // "inprocess", "nccl", "tcp"

struct TrainConfig {
  GptConfig model;
  ParallelPlan plan;
  EngineOptions options;
  BackendKind backend = BackendKind::Cpu;
  int64_t steps = 1;
  bool record_trace = false;      // op graph of the last iteration
  bool capture_gradients = false; // logical gradients of the last iteration (ZeRO-0 only: before the step)
  bool capture_weights = false;   // logical bf16 weights after the last step (InProcess only, as gradients)
  CommKind comm = CommKind::InProcess;
  std::string rendezvous_dir;     // Nccl, Tcp: --rendezvous, overrides GPUTWIN_RENDEZVOUS_DIR (empty: not given)
  // The bytes one device may give the plan (--memory-limit-gib; 0: none). On a GPU its free memory is a limit
  // too. Checked against the memory model before any rank allocates (device_memory_check.hpp).
  int64_t memory_limit_bytes = 0;
};

// A logical (unsharded) parameter assembled from the ranks that hold it.
struct LogicalTensor {
  std::string name;
  int64_t rows = 0, cols = 0;
  std::vector<float> values; // rows x cols
};

struct RankMemory {
  int rank = 0;
  RankCoords coords;
  std::array<int64_t, memory_purpose_count> peak_bytes{}; // by MemoryPurpose
  int64_t peak_total_bytes = 0;
  int64_t saved_bytes_per_layer_min = -1; // LayerActivations one layer forward left (-1: no layer)
  int64_t saved_bytes_per_layer_max = -1;
};

struct TrainResult {
  std::vector<double> loss_per_step;     // mean loss over the global batch
  std::vector<double> iteration_seconds; // wall time from one iteration's start barrier to the next
  std::vector<RankMemory> memory;        // by world rank
  std::vector<LogicalTensor> gradients;  // capture_gradients: by parameter name
  std::vector<LogicalTensor> weights;    // capture_weights
  traces::OpGraph trace;                 // record_trace
  int world_rank = 0; // Nccl, Tcp: this process's rank; only rank 0's result is filled in (the others' is empty)
};

// Called after every step with its index, mean loss and wall time.
using StepCallback = std::function<void(int64_t step, double loss, double seconds)>;

// REQUIRES: validate_plan(config.model, config.plan) passed. Throws InputError for a bad backend name (and
// what check_process_run throws) and std::runtime_error naming the rank if a rank fails (Nccl, Tcp: CommError
// when a peer fails or a wait times out). Nccl, Tcp: on_step is called by rank 0 only, for every step after
// the last one, when the ranks' losses have been gathered.
TrainResult train(const TrainConfig& config, const StepCallback& on_step = {});

// For CommKind::Nccl and Tcp, before anything runs: Nccl: this build has NCCL and CUDA, --backend is cuda and a
// GPU can be used; Tcp: --backend is cpu; both: the process's rank is in the environment
// (comm/process_rank.hpp), the world size is the plan's dp x pp x tp, and no gradients or weights are
// captured. Returns the rank; throws InputError otherwise.
ProcessRank check_process_run(const TrainConfig& config);

// The median of `seconds` after dropping the first `warmup` entries (all of them if fewer remain).
double median_seconds(const std::vector<double>& seconds, size_t warmup);

} // namespace gputwin::engine
