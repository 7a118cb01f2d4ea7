#pragma once
// Before a plan allocates anything: does it fit? The memory model (models/memory_report.hpp: model state plus
// the activations of the micro-batches the schedule keeps in flight, Korthikanti et al. 2022) predicts each
// rank's bytes from its pipeline stage; the ranks that share one device (every rank of an in-process run, one
// rank per process under NCCL) must fit in the bytes it has free. A plan that does not gets a clear error
// instead of an out-of-memory failure halfway through the first step.

#include "gputwin/engine/parallel/rank_grid.hpp"
#include "gputwin/engine/train/trainer.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gputwin::engine {

// The memory model's bytes for world rank `rank` (its stage's StageMemory::total_bytes).
// REQUIRES: validate_plan(model, plan) passed.
int64_t predicted_rank_bytes(const GptConfig& model, const ParallelPlan& plan, const RankGrid& grid, int rank);

// Throws InputError if the ranks `ranks` (world ranks sharing the device `device`) are predicted to need more
// than `available_bytes`; the message names the device, what is available and where the limit came from
// (`source`: "free on the GPU", "--memory-limit-gib"), the prediction per stage and in total, and suggests
// what shrinks it.
void check_plan_fits(const GptConfig& model, const ParallelPlan& plan, const RankGrid& grid,
                     const std::vector<int>& ranks, int64_t available_bytes, const std::string& device,
                     const std::string& source);

// The check of a training run before its ranks allocate: the ranks `ranks` that will share device `device` of
// `config.backend` must fit in config.memory_limit_bytes (when set) and, on a GPU, in its free memory; on the CPU
// backend, in the host memory available now (host_available_memory_bytes).
void check_memory_before_allocating(const TrainConfig& config, const RankGrid& grid, const std::vector<int>& ranks,
                                    int device);

} // namespace gputwin::engine
