#include "gputwin/engine/train/trace_metadata.hpp"

#include "gputwin/engine/backend/device_info.hpp"
#include "gputwin/models/plan_metadata.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>
#include <thread>

#ifdef __linux__
#include <sched.h>
#endif

namespace gputwin::engine {

namespace {
// The shortest text that reads back to the same float ("0.1", not the double expansion of 0.1f).
std::string float_text(float value)
{
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

// The cores this process may run on: its affinity mask's count where the system gives one, else
// std::thread::hardware_concurrency() (at least 1).
unsigned host_cores()
{
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<unsigned>(CPU_COUNT(&set));
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}
} // namespace

traces::OpGraph build_trace(const TrainConfig& config, const RankGrid& grid, std::vector<traces::RankProgram> programs,
                            const std::vector<double>& iteration_seconds)
{
  traces::OpGraph graph;
  const GptConfig& m = config.model;
  const ParallelPlan& p = config.plan;
  auto& md = graph.metadata;
  md["producer"] = "gputwin-engine 0.1.0";
  md["device"] = to_string(config.backend);
  md["backend"] = to_string(config.backend);
  // A GPU trace names its GPU (`gputwin calibrate` and `replay` read `device`) and its clocks and memory.
  if (const std::optional<DeviceDescription> gpu = describe_device(config.backend, 0)) {
    md["device"] = gpu->name;
    md["gpu_compute_capability"] = std::to_string(gpu->compute_major) + "." + std::to_string(gpu->compute_minor);
    md["gpu_multiprocessors"] = std::to_string(gpu->multiprocessors);
    md["gpu_sm_clock_mhz"] = std::to_string(gpu->sm_clock_khz / 1000);
    md["gpu_memory_clock_mhz"] = std::to_string(gpu->memory_clock_khz / 1000);
    md["gpu_memory_bus_bits"] = std::to_string(gpu->memory_bus_bits);
    md["gpu_memory_bytes"] = std::to_string(gpu->memory_bytes);
    md["op_timing"] = "cuda events on the op's stream";
  } else {
    md["op_timing"] = "host steady clock";
  }
  // The cores the host had for this process (its CPU affinity, e.g. under taskset or a cpuset; else all of them):
  // every in-process rank is a thread sharing them (`gputwin replay` on localhost shares them the same way). The
  // CPU backend runs each op on its rank's own thread: one thread per op.
  md["host_cores"] = std::to_string(host_cores());
  if (config.backend == BackendKind::Cpu)
    md["cpu_threads_per_op"] = "1";
  write_plan_metadata(m, p, md);
  md["seed"] = std::to_string(config.options.seed);
  md["dropout"] = float_text(config.options.dropout);
  md["learning_rate"] = float_text(config.options.adam.learning_rate);
  md["steps"] = std::to_string(config.steps);
  md["traced_iteration"] = std::to_string(config.steps - 1);
  md["activation_dtype"] = "bf16";
  md["streams"] = "0 compute, 1 tensor-parallel, 2 pipeline, 3 data-parallel";

  int64_t earliest = std::numeric_limits<int64_t>::max();
  for (const traces::RankProgram& r : programs)
    for (const traces::Op& op : r.ops)
      earliest = std::min(earliest, op.start_ns);
  for (traces::RankProgram& r : programs)
    for (traces::Op& op : r.ops)
      op.start_ns -= earliest;
  graph.groups = grid.groups();
  graph.ranks = std::move(programs);
  graph.measured_iteration_s = iteration_seconds;
  return graph;
}

} // namespace gputwin::engine
