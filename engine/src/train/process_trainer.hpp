#pragma once
// The multi-process run: this process is one rank, talking to the others over NCCL (CommKind::Nccl, on GPU
// `local rank`) or TCP (CommKind::Tcp, the CPU backend); only making the communicators differs. NCCL: rank 0
// publishes the ncclUniqueId in the rendezvous directory (comm/file_rendezvous.hpp); every rank makes the world
// communicator and splits the tp, dp and embedding groups of the grid from it, in the grid's order, and the
// pipeline's send/recv use the world communicator on device memory. TCP: every rank publishes its address
// there and connects to every other (comm/tcp_world.hpp); its groups' communicators share those sockets, and
// the connections are closed in order after the last iteration, before the reports.
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
