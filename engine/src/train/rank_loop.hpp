#pragma once
// One rank's training loop, the same for every rank of a threaded run (trainer.cpp) and for the one rank of a
// process (process_trainer.cpp): builds its stage and optimizer over the communicators it is given, runs the
// iterations between world barriers, and returns what it measured.

#include "gputwin/engine/model/parameter_store.hpp"
#include "gputwin/engine/train/synthetic_corpus.hpp"
#include "gputwin/engine/train/trainer.hpp"

#include <functional>
#include <memory>

namespace gputwin::engine {

// One rank's parameters as it holds them, to be assembled into logical tensors.
struct LocalParameters {
  int64_t tp_rank = 0, tp = 1;
  std::vector<Parameter> parameters; // spec and local shape (weight/grad views left empty)
  std::vector<std::vector<float>> values;
};

// The communicators of one rank: its tp, dp and (first and last stage with pp > 1) embedding groups, in the
// grid's group order, and the world (pipeline send/recv, the iteration barriers).
struct RankCommunicators {
  std::unique_ptr<Communicator> tp, dp, embedding, world;
  std::unique_ptr<Communicator> ep, edp; // mixture-of-experts models only
};

struct RankHooks {
  // A rank that reports the loss (last stage, tp rank 0): its share of iteration `it`'s mean loss, before the
  // iteration's end barrier.
  std::function<void(int64_t it, double weighted_loss)> add_loss;
  // World rank 0, after the iteration's end barrier: its wall time.
  std::function<void(int64_t it, double seconds)> iteration_done;
};

struct RankOutcome {
  RankMemory memory;
  int64_t started_ns = 0;      // when the first iteration started (after the first world barrier), from epoch
  traces::RankProgram program; // config.record_trace
  LocalParameters gradients;   // config.capture_gradients, dp rank 0
  LocalParameters weights;     // config.capture_weights, dp rank 0
};

RankOutcome run_rank(const TrainConfig& config, const RankGrid& grid, int rank, Backend& backend,
                     RankCommunicators comms, const SyntheticCorpus& corpus, Tracer::Clock::time_point epoch,
                     const RankHooks& hooks);

} // namespace gputwin::engine
