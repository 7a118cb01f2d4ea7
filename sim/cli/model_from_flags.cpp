#include "commands.hpp"

#include "gputwin/config/framework_yaml.hpp"
#include "gputwin/config/gpu_model_yaml.hpp"
#include "gputwin/config/hf_config.hpp"
#include "gputwin/config/model_yaml.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/sim/scenario.hpp"

#include <cctype>
#include <iostream>
#include <optional>
#include <stdexcept>

namespace gputwin::cli {

GptConfig model_from_flags(const ParsedArgs& args)
{
  return read_model(args, [](const std::string& path) {
    if (path.rfind("hf:", 0) != 0)
      return config::load_model_yaml(path);
    config::HfModel hf = config::load_hf_config(path.substr(3)); // --model hf:CONFIG.json
    for (const std::string& note : hf.notes)
      std::cerr << "gputwin: note: " << note << "\n";
    return hf.model;
  });
}

void add_framework_flag(ArgParser& parser)
{
  std::string names;
  for (const std::string& n : builtin_framework_names())
    names += (names.empty() ? "" : "|") + n;
  parser.add_option("--framework", "NAME|FILE",
                    "host that issues each rank's ops: " + names + " or a profile .yaml (default: " +
                        default_framework_for(GpuGeneration::Hopper) + " on Hopper, " +
                        default_framework_for(GpuGeneration::Ampere) +
                        " on Ampere; or the framework: section of --gpu-model, which also stands for its own name)");
  parser.add_switch("--cuda-graphs", "per-layer CUDA graphs (Megatron-Core --enable-cuda-graph): the host launches "
                                     "one graph per layer step instead of its kernels");
  parser.add_switch("--no-overlap-p2p-comm",
                    "interleaved schedule without p2p overlap (Megatron-Core --no-overlap-p2p-communication, NeMo "
                    "overlap_p2p_comm: False, batch_p2p_comm: True): batched sends and receives, the host waiting for "
                    "each batch as in the 1F1B schedule");
}

namespace {

// --framework, else the --gpu-model file's section, else `fallback` (before --cuda-graphs).
FrameworkProfile chosen_framework(const ParsedArgs& args, const std::string& fallback)
{
  std::optional<FrameworkProfile> fitted; // the framework: section of --gpu-model (calibrate --iterations)
  if (const auto path = args.value("--gpu-model")) {
    const config::YamlFile file = config::load_yaml_file(*path);
    if (const YAML::Node section = file.root["framework"])
      fitted = config::read_framework_profile(file, section);
  }
  if (const auto value = args.value("--framework")) {
    FrameworkProfile chosen = config::load_framework_profile(*value);
    // `--framework megatron-deepspeed --gpu-model fitted.yaml`, the calibration's own flags repeated: the file's
    // section is that framework calibrated, not another one to be replaced by the uncalibrated built-in.
    if (fitted && !config::names_framework_file(*value) && fitted->name == chosen.name)
      return *fitted;
    return chosen;
  }
  if (fitted)
    return *fitted;
  return builtin_framework_profile(fallback);
}

} // namespace

FrameworkProfile framework_from_flags(const ParsedArgs& args, const std::string& fallback)
{
  FrameworkProfile profile = chosen_framework(args, fallback);
  if (args.has("--cuda-graphs")) {
    if (profile.name == "none")
      throw InputError("--cuda-graphs: the framework 'none' has no host to launch graphs (expected a framework "
                       "with host costs, e.g. --framework megatron-core)");
    // One graph launch: a call into TE's graphed callable from the module's Python (a GEMM's issue cost) --
    // set, not measured.
    profile.cuda_graphs = true;
    if (!(profile.graph_launch_s > 0))
      profile.graph_launch_s = profile.gemm_issue_s;
  }
  if (args.has("--no-overlap-p2p-comm")) {
    // Megatron-Core's interleaved schedule with overlap_p2p_comm off posts each step's transfers as one
    // batch_isend_irecv and, batch_p2p_sync being on by default, calls torch.cuda.synchronize() after it
    // (megatron/core/pipeline_parallel/p2p_communication.py `_communicate`), as its 1F1B schedule always does.
    if (!profile.sync_after_p2p)
      throw InputError("--no-overlap-p2p-comm: the framework '" + profile.name + "' does not wait for pipeline "
                       "transfers on the host (expected a Megatron host: megatron-core, nemo or megatron-lm)");
    profile.overlap_p2p_interleaved = false;
  }
  return profile;
}

AttentionKernel default_attention_kernel(GpuGeneration generation)
{
  return is_hopper_or_later(generation) ? AttentionKernel::Flash : AttentionKernel::Unfused;
}

std::optional<std::string> default_attention_for_gpu(ParsedArgs& args, GpuGeneration generation)
{
  if (default_attention_kernel(generation) != AttentionKernel::Flash || !args.set_default("--attention", "flash"))
    return std::nullopt;
  return "--attention flash: the default on " + to_string(generation) +
         " GPUs (Transformer Engine's fused attention; --attention unfused for Megatron 2022's kernels)";
}

GpuComputeModel compute_model_from_flags(const ParsedArgs& args, const GpuComputeModel& fallback)
{
  if (const auto path = args.value("--gpu-model"))
    return config::load_gpu_model_yaml(*path);
  return fallback;
}

void add_gpu_model_flags(ArgParser& parser)
{
  parser.add_option("--gpu-model", "FILE", "GPU compute model fitted by gputwin calibrate (default: built-in)");
  parser.add_switch("--force", "use a --gpu-model fitted to another kind of GPU than the cluster's");
  parser.add_option("--comm-interference", "on|off",
                    "overlapped NCCL communication slows the kernels it overlaps (SMs, HBM; default: on for the "
                    "built-in A100/H100/H200 models, as a --gpu-model file says)");
}

namespace {

// --comm-interference on|off applied to `model`; `off` leaves the parameters, `on` needs some.
GpuComputeModel with_interference_flag(const ParsedArgs& args, GpuComputeModel model)
{
  const auto value = args.value("--comm-interference");
  if (!value)
    return model;
  if (*value == "off") {
    model.comm_interference.enabled = false;
  } else if (*value == "on") {
    if (model.comm_interference.source.empty() && !model.comm_interference.enabled)
      throw InputError("--comm-interference: the GPU model '" + model.gpu_kind +
                       "' has no interference parameters (expected a comm_interference: section in --gpu-model)");
    model.comm_interference.enabled = true;
  } else {
    throw InputError("--comm-interference: expected on or off, got '" + *value + "'");
  }
  return model;
}

} // namespace

GpuComputeModel compute_model_for_gpu(const ParsedArgs& args, const topo::GpuSpec& gpu)
{
  if (args.has("--gpu-model")) {
    GpuComputeModel model = compute_model_from_flags(args, {});
    // A model fitted to another device (a CPU's on an A100 cluster) times every kernel of the wrong device while
    // MFU divides by the cluster GPU's peak: nonsense unless asked for.
    if (topo::gpu_family(model.gpu_kind) != topo::gpu_family(gpu.kind) && !args.has("--force"))
      throw InputError("--gpu-model: " + *args.value("--gpu-model") + " models GPU kind '" + model.gpu_kind +
                       "' but the cluster's GPU is '" + gpu.kind +
                       "' (expected a model of the cluster's GPU, or --force to use it anyway)");
    // Files from `gputwin calibrate` carry the bf16 peak their efficiencies are relative to; FP8 GEMMs use the
    // bf16 efficiencies at half the depth (gpu_compute_model.hpp), so the cluster GPU's FP8 peak serves a file
    // that has none.
    if (!(model.peak_fp8_flops > 0))
      model.peak_fp8_flops = gpu.peak_fp8_flops;
    if (!(model.peak_fp4_flops > 0)) // likewise for NVFP4 GEMMs
      model.peak_fp4_flops = gpu.peak_fp4_flops;
    return with_interference_flag(args, model);
  }
  return with_interference_flag(args, sim::builtin_gpu_model(gpu));
}

std::vector<std::string> with_long_output_flag(std::vector<std::string> args)
{
  for (std::string& arg : args)
    if (arg == "-o")
      arg = "--output";
  return args;
}

} // namespace gputwin::cli
