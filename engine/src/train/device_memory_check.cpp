#include "gputwin/engine/train/device_memory_check.hpp"

#include "gputwin/engine/backend/device_info.hpp"
#include "gputwin/models/host_memory.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/memory_report.hpp"

#include <cstdio>
#include <map>

namespace gputwin::engine {

namespace {
// "80.00 GiB", or "4.12 MiB" under a GiB.
std::string gib(int64_t bytes)
{
  const bool large = bytes >= int64_t{1} << 30;
  char text[32];
  std::snprintf(text, sizeof text, large ? "%.2f GiB" : "%.2f MiB",
                static_cast<double>(bytes) / static_cast<double>(int64_t{1} << (large ? 30 : 20)));
  return text;
}
} // namespace

int64_t predicted_rank_bytes(const GptConfig& model, const ParallelPlan& plan, const RankGrid& grid, int rank)
{
  return stage_memory(model, plan, grid.coords(rank).pp).total_bytes;
}

void check_plan_fits(const GptConfig& model, const ParallelPlan& plan, const RankGrid& grid,
                     const std::vector<int>& ranks, int64_t available_bytes, const std::string& device,
                     const std::string& source)
{
  int64_t total = 0;
  std::map<int64_t, int64_t> ranks_per_stage;
  for (const int rank : ranks) {
    total += predicted_rank_bytes(model, plan, grid, rank);
    ++ranks_per_stage[grid.coords(rank).pp];
  }
  if (total <= available_bytes)
    return;
  std::string detail;
  for (const auto& [stage, count] : ranks_per_stage) {
    const StageMemory m = stage_memory(model, plan, stage);
    detail += (detail.empty() ? "" : "; ") + std::to_string(count) + " rank(s) of stage " + std::to_string(stage) +
              " x " + gib(m.total_bytes) + " (model state " + gib(m.state.total_bytes) + ", activations " +
              gib(m.activations.total_bytes + m.recompute_workspace_bytes) + ")";
  }
  throw InputError("the plan does not fit on " + device + ": the memory model predicts " + gib(total) + " for " +
                   std::to_string(ranks.size()) + " rank(s) on it (" + detail + "), " + gib(available_bytes) + " " +
                   source + " (expected at most that; use more tensor/pipeline parallelism, a smaller --micro-batch, " +
                   "--recompute selective or full, or --zero 1)");
}

void check_memory_before_allocating(const TrainConfig& config, const RankGrid& grid, const std::vector<int>& ranks,
                                    int device)
{
  const std::optional<DeviceDescription> gpu = describe_device(config.backend, device);
  const std::string where = gpu ? "GPU " + std::to_string(device) + " (" + gpu->name + ")" : "the host";
  if (config.memory_limit_bytes > 0)
    check_plan_fits(config.model, config.plan, grid, ranks, config.memory_limit_bytes, where, "by --memory-limit-gib");
  if (gpu)
    check_plan_fits(config.model, config.plan, grid, ranks, gpu->free_memory_bytes, where, "free on it");
  else if (const int64_t available = host_available_memory_bytes(); available > 0)
    // The CPU backend's tensors live in host memory: the same prediction against what the host has available
    // now (MemAvailable, within the cgroup's limit), so an oversized model stops here, not in std::bad_alloc.
    check_plan_fits(config.model, config.plan, grid, ranks, available, where, "available on it (MemAvailable)");
}

} // namespace gputwin::engine
