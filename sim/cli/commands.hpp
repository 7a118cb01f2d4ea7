#pragma once
// The subcommands of `gputwin`. Each takes its arguments (after the subcommand name), writes its report to
// `out`, and returns the process exit status; bad input is thrown as InputError.

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/common/subcommands.hpp"
#include "gputwin/sim/scenario.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/common/output_file.hpp"

#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace gputwin::cli {

// The output files of `flags` that `parsed` names (a flag without a file, as `--link-report` alone, is none),
// checked before any work: each writable, no two on one file (check_output_paths, common/output_file.hpp).
inline void check_output_flags(const ParsedArgs& parsed, std::initializer_list<const char*> flags)
{
  std::vector<std::pair<std::string, std::string>> outputs;
  for (const char* flag : flags)
    if (const auto file = parsed.value(flag); file && !file->empty())
      outputs.emplace_back(flag, *file);
  check_output_paths(outputs);
}

// Every subcommand of `gputwin` with its one-line description, in help order.
const std::vector<Subcommand>& gputwin_subcommands();

// `gputwin memory`: per-GPU memory of the busiest pipeline stage.
int run_memory(const std::vector<std::string>& args, std::ostream& out);

// `gputwin topo`: the cluster graph's summary, or Graphviz with --dot.
int run_topo(const std::vector<std::string>& args, std::ostream& out);

// `gputwin collective`: one collective on a simulated cluster, nccl-tests style.
int run_collective(const std::vector<std::string>& args, std::ostream& out);

// `gputwin simulate`: one training iteration on a simulated cluster.
int run_simulate(const std::vector<std::string>& args, std::ostream& out);

// `gputwin search`: the plans of a model on N GPUs, ranked (fast estimator), the best K simulated in full.
int run_search(const std::vector<std::string>& args, std::ostream& out);

// `gputwin sweep`: the best plan (search) of every (model, cluster, GPU count) point, with time to train and cost.
int run_sweep(const std::vector<std::string>& args, std::ostream& out);

// `gputwin goodput`: time to train under failures and checkpoint/restart (Young/Daly), goodput and GPU-hours.
int run_goodput(const std::vector<std::string>& args, std::ostream& out);

// `gputwin replay`: a captured trace re-simulated on a cluster, beside its measured iteration time.
int run_replay(const std::vector<std::string>& args, std::ostream& out);

// `gputwin calibrate`: the GPU compute model fitted to captured traces, written as a model file.
int run_calibrate(const std::vector<std::string>& args, std::ostream& out);

// `gputwin calibrate --nccl-tests LOG...`: the cluster's nccl section fitted to nccl-tests logs.
int run_calibrate_nccl(const std::vector<std::string>& args, std::ostream& out);

// `gputwin compare`: measured vs simulated iteration times of a set of traces.
int run_compare(const std::vector<std::string>& args, std::ostream& out);

// `gputwin calibrate --iterations FILE.csv` and `gputwin compare --iterations FILE.csv`: the GPU model and
// framework profile fitted to, and checked against, a table of measured iteration times.
int run_calibrate_iterations(const std::vector<std::string>& args, std::ostream& out);
int run_compare_iterations(const std::vector<std::string>& args, std::ostream& out);

// The compute model of --gpu-model FILE if given (gputwin calibrate's output), else `fallback`.
GpuComputeModel compute_model_from_flags(const ParsedArgs& args, const GpuComputeModel& fallback);
// The compute model of --gpu-model FILE if given, else the built-in model of the cluster's GPU (by its
// generation, with its peaks and bandwidth). Throws InputError naming --gpu-model when the generation has no
// built-in model, or when the file models another GPU family than the cluster's kind (topo::gpu_family) and --force is
// not given. The cluster GPU's FP8 peak is also given to a --gpu-model file without one of its own.
GpuComputeModel compute_model_for_gpu(const ParsedArgs& args, const topo::GpuSpec& gpu);

// FP8 needs FP8 tensor cores: the Scenario's rule (sim/scenario.hpp), checked by every command that takes plan
// flags and a cluster right after reading the cluster.
using sim::check_precision_supported;

// `--gpu-model FILE` and `--force` (use a model of another GPU kind than the cluster's), declared on `parser`.
void add_gpu_model_flags(ArgParser& parser);

// `args` with the short `-o` spelled `--output`.
std::vector<std::string> with_long_output_flag(std::vector<std::string> args);

// `--framework NAME|FILE` (the host that issues each rank's ops), declared on `parser`.
void add_framework_flag(ArgParser& parser);
// The profile of --framework if given; else the `framework:` section of --gpu-model FILE if it has one; else
// the built-in profile `fallback`.
FrameworkProfile framework_from_flags(const ParsedArgs& args, const std::string& fallback);
// The attention kernel of today's stack where the user gave none: `--attention flash` on Hopper and later
// (Transformer Engine's fused attention, what Megatron-Core and NeMo run there); unfused (Megatron 2022) on
// Ampere. Returns the note to state on stderr when it set the flag.
std::optional<std::string> default_attention_for_gpu(ParsedArgs& args, GpuGeneration generation);
// That kernel: flash on Hopper, unfused on Ampere.
AttentionKernel default_attention_kernel(GpuGeneration generation);

// The model given by the shared model flags, model files loaded with the YAML loader.
GptConfig model_from_flags(const ParsedArgs& args);

} // namespace gputwin::cli
