#include "commands.hpp"

#include "gputwin/engine/backend/backend_factory.hpp"
#include "gputwin/engine/train/trainer.hpp"
#include "gputwin/models/activation_memory.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/pipeline_schedule.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/traces/perfetto.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

namespace gputwin::engine::cli {

namespace {

using gputwin::cli::ParsedArgs;

double parse_fraction(const ParsedArgs& args, const std::string& flag, double fallback, double low, double high)
{
  const std::optional<std::string> text = args.value(flag);
  if (!text)
    return fallback;
  char* end = nullptr;
  const double value = std::strtod(text->c_str(), &end);
  if (text->empty() || end != text->c_str() + text->size() || !std::isfinite(value) || value < low || value >= high)
    throw InputError(flag + ": expected a number in [" + std::to_string(low) + ", " + std::to_string(high) +
                     "), got '" + *text + "'");
  return value;
}

std::string milliseconds(double seconds)
{
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f ms", seconds * 1e3);
  return buffer;
}

void print_memory(std::ostream& out, const GptConfig& model, const ParallelPlan& plan, const TrainResult& result)
{
  const int64_t paper = activation_bytes_per_layer(model, plan);
  int64_t measured_min = -1, measured_max = -1;
  for (const RankMemory& m : result.memory) {
    if (m.saved_bytes_per_layer_min < 0)
      continue;
    measured_min = measured_min < 0 ? m.saved_bytes_per_layer_min : std::min(measured_min, m.saved_bytes_per_layer_min);
    measured_max = std::max(measured_max, m.saved_bytes_per_layer_max);
  }
  out << "activation bytes saved per layer (one GPU, one micro-batch): measured " << measured_max;
  if (measured_min != measured_max)
    out << " (min " << measured_min << ")";
  out << (plan.attention == AttentionKernel::Flash ? ", memory model (flash attention) " : ", paper Table 2 ") << paper
      << (measured_min == paper && measured_max == paper ? " (equal)" : " (DIFFERENT)")
      << "\n";
  const RankMemory& first = result.memory.front();
  const int64_t in_flight = peak_in_flight(pipeline_shape(plan), 0);
  out << "stage 0 peak layer activations: " << first.peak_bytes[static_cast<size_t>(MemoryPurpose::LayerActivations)]
      << " bytes (" << in_flight << " micro-batch chunks in flight by the " << to_string(plan.schedule)
      << " schedule)\n";
  out << "rank 0 peak bytes by purpose:";
  for (int p = 0; p < memory_purpose_count; ++p)
    out << (p ? ", " : " ") << to_string(static_cast<MemoryPurpose>(p)) << " "
        << first.peak_bytes[static_cast<size_t>(p)];
  out << "; total " << first.peak_total_bytes << "\n";
}

int report_training(const TrainConfig& config, const std::string& ranks_as,
                    const std::optional<std::string>& trace_path, const std::optional<std::string>& timeline_path,
                    std::ostream& out);

} // namespace

int run_train(const std::vector<std::string>& args, std::ostream& out)
{
  gputwin::cli::ArgParser parser("gputwin-engine train",
                                 "train a GPT on the synthetic corpus with a parallel plan, every rank a thread (or, with --comm "
                                 "nccl or tcp, a process)");
  gputwin::cli::add_model_flags(parser);
  gputwin::cli::add_plan_flags(parser);
  parser.add_section("engine");
  parser.add_option("--steps", "N", "training iterations (default 20)");
  parser.add_option("--seed", "N", "seed of initialisation, data and dropout (default 1234)");
  parser.add_option("--backend", "NAME", "kernels: cpu (default) or cuda (where built with CUDA and a GPU is present)");
  parser.add_option("--comm", "NAME",
                    "inprocess (default: every rank a thread of this process), nccl (this process is one rank on "
                    "its own GPU, with --backend cuda) or tcp (this process is one rank, talking over TCP sockets, "
                    "with --backend cpu; GPUTWIN_TCP_HOST: its address for a run over several machines); run nccl and "
                    "tcp under `gputwin-engine launch --nproc N --` or mpirun");
  parser.add_option("--rendezvous", "DIR", "--comm nccl or tcp under mpirun: a directory every rank sees, where the "
                                           "ranks meet (the launcher sets GPUTWIN_RENDEZVOUS_DIR)");
  parser.add_option("--memory-limit-gib", "X",
                    "refuse a plan whose ranks on one device the memory model predicts to need more than X GiB "
                    "(on a GPU its free memory is always a limit)");
  parser.add_option("--dropout", "P", "dropout probability (default 0.1)");
  parser.add_option("--lr", "X", "Adam learning rate (default 0.003)");
  parser.add_option("--trace", "FILE", "write the last iteration's op graph (traces/FORMAT.md)");
  parser.add_option("--timeline", "FILE", "write the last iteration as Chrome trace-event JSON for Perfetto");
  const ParsedArgs parsed = parser.parse(args);
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  if (parsed.value("--comm") == std::optional<std::string>("tcp") && parsed.value("--backend").value_or("cpu") != "cpu")
    throw InputError("--comm tcp: expected --backend cpu (TCP moves host memory; --comm nccl is the GPU path), got "
                     "--backend " + *parsed.value("--backend")); // before the backend's own check (a GPU?)
  for (const std::string& note : parsed.notes()) // what --megatron-args noted
    std::cerr << "gputwin-engine train: note: " << note << "\n";
  TrainConfig config;
  config.backend = parse_backend(parsed.value("--backend").value_or("cpu"));
  check_backend_available(config.backend);
  config.model = gputwin::cli::read_model(parsed, {});
  config.plan = gputwin::cli::read_plan(parsed, config.model);
  if (!config.plan.recompute_modules.empty())
    throw InputError("--recompute-modules: not implemented by the engine (it recomputes as --recompute selective, the "
                     "unfused attention core, or --recompute full); the simulator models Megatron-Core's modules");
  config.steps = parsed.integer("--steps").value_or(20);
  if (config.steps < 1)
    throw InputError("--steps: expected a positive integer, got " + std::to_string(config.steps));
  const int64_t seed = parsed.integer("--seed").value_or(1234);
  if (seed < 0)
    throw InputError("--seed: expected an integer >= 0, got " + std::to_string(seed));
  config.options.seed = static_cast<uint64_t>(seed);
  config.options.dropout = static_cast<float>(parse_fraction(parsed, "--dropout", 0.1, 0.0, 1.0));
  config.options.adam.learning_rate = static_cast<float>(parse_fraction(parsed, "--lr", 3e-3, 0.0, 1.0));
  if (parsed.has("--memory-limit-gib")) {
    const double gib = parse_fraction(parsed, "--memory-limit-gib", 0.0, 1.0 / 1024.0, 1e6);
    config.memory_limit_bytes = static_cast<int64_t>(gib * static_cast<double>(int64_t{1} << 30));
  }
  const std::optional<std::string> trace_path = parsed.value("--trace");
  const std::optional<std::string> timeline_path = parsed.value("--timeline");
  config.record_trace = trace_path.has_value() || timeline_path.has_value();
  const std::string comm = parsed.value("--comm").value_or("inprocess");
  if (comm == "nccl")
    config.comm = CommKind::Nccl;
  else if (comm == "tcp")
    config.comm = CommKind::Tcp;
  else if (comm != "inprocess")
    throw InputError("--comm: unknown communicator '" + comm + "' (expected inprocess, nccl or tcp)");
  config.rendezvous_dir = parsed.value("--rendezvous").value_or("");
  if (!config.rendezvous_dir.empty() && config.comm == CommKind::InProcess)
    throw InputError("--rendezvous: expected only with --comm nccl or tcp");
  std::string ranks_as = " ranks as threads";
  std::ostringstream elsewhere; // the report of a rank other than 0 of a multi-process run: not printed
  std::ostream* report = &out;
  if (config.comm != CommKind::InProcess) {
    const ProcessRank process = check_process_run(config);
    ranks_as = std::string(" ranks as processes over ") + (config.comm == CommKind::Nccl ? "NCCL" : "TCP") + " (" +
               to_string(process.launched_by) + ")";
    if (process.rank != 0)
      report = &elsewhere;
  }
  return report_training(config, ranks_as, trace_path, timeline_path, *report);
}

namespace {

int report_training(const TrainConfig& config, const std::string& ranks_as,
                    const std::optional<std::string>& trace_path, const std::optional<std::string>& timeline_path,
                    std::ostream& out)
{
  out << "gputwin-engine train: " << config.model.name << " (h " << config.model.hidden << ", a " << config.model.heads
      << ", L " << config.model.layers << ", s " << config.model.seq_len << ", v " << config.model.vocab << ") · "
      << describe_plan(config.plan) << " · backend " << to_string(config.backend) << ", " << config.plan.gpus() << ranks_as
      << "\n";
  out.flush();
  const TrainResult result = train(config, [&](int64_t step, double loss, double seconds) {
    char line[96];
    std::snprintf(line, sizeof line, "step %4lld  loss %.4f  time %s\n", static_cast<long long>(step + 1), loss,
                  milliseconds(seconds).c_str());
    out << line;
    out.flush();
  });
  if (result.world_rank != 0) // --comm nccl or tcp: rank 0 reports for every rank
    return 0;

  const size_t warmup = result.iteration_seconds.size() > 2 ? 2 : 0;
  out << "iteration time: median " << milliseconds(median_seconds(result.iteration_seconds, warmup)) << " over "
      << result.iteration_seconds.size() - warmup << " steps after " << warmup << " warm-up\n";
  print_memory(out, config.model, config.plan, result);
  if (trace_path) {
    traces::write_op_graph_file(*trace_path, result.trace);
    size_t ops = 0;
    for (const traces::RankProgram& r : result.trace.ranks)
      ops += r.ops.size();
    out << "trace: " << *trace_path << " (" << ops << " ops over " << result.trace.ranks.size() << " ranks)\n";
  }
  if (timeline_path) {
    traces::write_perfetto_trace_file(*timeline_path, result.trace);
    out << "timeline: " << *timeline_path << " (open it in ui.perfetto.dev)\n";
  }
  return 0;
}

} // namespace

} // namespace gputwin::engine::cli
