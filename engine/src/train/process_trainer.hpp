#pragma once
// The multi-process run (CommKind::Nccl): this process is one rank, on GPU `local rank`, talking to the others
// over NCCL. Rank 0 publishes the ncclUniqueId in the rendezvous directory (comm/file_rendezvous.hpp); every
// rank makes the world communicator and splits the tp, dp and embedding groups of the grid from it, in the
// grid's order. The pipeline's send/recv use the world communicator on device memory.
//
// Results: at the end every rank writes a RankReport (its loss shares, iteration times, memory peaks and trace
// program) into the rendezvous directory, and rank 0 waits for all of them and merges them into the same
// TrainResult the threaded run gives: the loss of a step is the sum of the reporting ranks' shares (in rank
// order), the iteration times are rank 0's (each iteration ends with a world barrier), and each rank's trace is
// shifted so that 0 is when its first iteration started (after the first world barrier, which all ranks leave
// together up to the barrier's skew). The other ranks return an empty result.

#include "gputwin/engine/train/trainer.hpp"

namespace gputwin::engine {

TrainResult train_process(const TrainConfig& config, const StepCallback& on_step);

} // namespace gputwin::engine
