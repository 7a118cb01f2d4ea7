#include "gputwin/engine/train/trace_metadata.hpp"

#include "gputwin/engine/backend/device_info.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>

namespace gputwin::engine {

namespace {
// The shortest text that reads back to the same float ("0.1", not the double expansion of 0.1f).
std::string float_text(float value)
{
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
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
  md["device"] = config.backend;
  md["backend"] = config.backend;
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
  md["model"] = m.name;
  md["hidden"] = std::to_string(m.hidden);
  md["heads"] = std::to_string(m.heads);
  md["layers"] = std::to_string(m.layers);
  md["seq_len"] = std::to_string(m.seq_len);
  md["vocab"] = std::to_string(m.vocab);
  md["tp"] = std::to_string(p.tp);
  md["pp"] = std::to_string(p.pp);
  md["dp"] = std::to_string(p.dp);
  md["micro_batch"] = std::to_string(p.micro_batch);
  md["global_batch"] = std::to_string(p.effective_global_batch());
  md["micro_batches"] = std::to_string(p.micro_batches());
  md["sequence_parallel"] = p.sequence_parallel() ? "true" : "false";
  md["recompute"] = to_string(p.recompute);
  md["attention"] = to_string(p.attention);
  md["schedule"] = to_string(p.schedule);
  md["chunks"] = std::to_string(p.schedule == Schedule::Interleaved ? p.chunks : 1);
  md["zero"] = std::to_string(p.zero_stage);
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
