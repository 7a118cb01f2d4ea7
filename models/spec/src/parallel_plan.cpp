#include "gputwin/models/parallel_plan.hpp"

#include "gputwin/common/checked_math.hpp"
#include "gputwin/common/input_error.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace gputwin {

std::string to_string(Recompute r)
{
  switch (r) {
  case Recompute::None: return "none";
  case Recompute::Selective: return "selective";
  case Recompute::Full: return "full";
  }
  return "?";
}

std::string recompute_label(const ParallelPlan& plan)
{
  if (plan.recompute_modules.empty())
    return to_string(plan.recompute);
  std::string modules = to_string(plan.recompute_modules);
  std::replace(modules.begin(), modules.end(), ',', '+');
  return to_string(plan.recompute) + ":" + modules;
}

bool parse_recompute_label(const std::string& text, ParallelPlan& plan)
{
  const size_t colon = text.find(':');
  const std::optional<Recompute> recompute = parse_recompute(text.substr(0, colon));
  if (!recompute)
    return false;
  RecomputeModules modules;
  if (colon != std::string::npos) {
    if (*recompute != Recompute::Selective)
      return false;
    std::string list = text.substr(colon + 1);
    std::replace(list.begin(), list.end(), '+', ',');
    try {
      modules = parse_recompute_modules(list, "recompute");
    } catch (const InputError&) {
      return false;
    }
  }
  plan.recompute = *recompute;
  plan.recompute_modules = modules;
  return true;
}

bool recomputes(const ParallelPlan& plan, RecomputeModule m)
{
  return plan.recompute == Recompute::Selective && plan.recompute_modules.has(m);
}

bool recomputes_attention_core(const ParallelPlan& plan)
{
  if (plan.recompute != Recompute::Selective)
    return false;
  return plan.recompute_modules.empty() ? plan.attention == AttentionKernel::Unfused
                                        : plan.recompute_modules.has(RecomputeModule::CoreAttn);
}

std::string to_string(Schedule s)
{
  switch (s) {
  case Schedule::GPipe: return "gpipe";
  case Schedule::OneFOneB: return "1f1b";
  case Schedule::Interleaved: return "interleaved";
  }
  return "?";
}

std::string to_string(TpComm c)
{
  return c == TpComm::SequenceParallel ? "sequence-parallel" : "all-reduce";
}

std::string to_string(AttentionKernel k)
{
  return k == AttentionKernel::Flash ? "flash" : "unfused";
}

std::string to_string(Fp8Recipe r)
{
  return r == Fp8Recipe::Tensorwise ? "tensorwise" : "delayed";
}

std::optional<Fp8Recipe> parse_fp8_recipe(const std::string& text)
{
  if (text == "delayed")
    return Fp8Recipe::Delayed;
  if (text == "tensorwise")
    return Fp8Recipe::Tensorwise;
  return std::nullopt;
}

std::optional<Recompute> parse_recompute(const std::string& text)
{
  if (text == "none")
    return Recompute::None;
  if (text == "selective")
    return Recompute::Selective;
  if (text == "full")
    return Recompute::Full;
  return std::nullopt;
}

std::optional<Schedule> parse_schedule(const std::string& text)
{
  if (text == "gpipe")
    return Schedule::GPipe;
  if (text == "1f1b")
    return Schedule::OneFOneB;
  if (text == "interleaved")
    return Schedule::Interleaved;
  return std::nullopt;
}

std::optional<AttentionKernel> parse_attention(const std::string& text)
{
  if (text == "unfused")
    return AttentionKernel::Unfused;
  if (text == "flash")
    return AttentionKernel::Flash;
  return std::nullopt;
}

std::string to_string(MoeDispatcher d)
{
  switch (d) {
  case MoeDispatcher::AllToAll: return "alltoall";
  case MoeDispatcher::AllGather: return "allgather";
  case MoeDispatcher::DeepEp: return "deepep";
  }
  return "?";
}

std::optional<MoeDispatcher> parse_moe_dispatcher(const std::string& text)
{
  if (text == "alltoall")
    return MoeDispatcher::AllToAll;
  if (text == "allgather")
    return MoeDispatcher::AllGather;
  if (text == "deepep")
    return MoeDispatcher::DeepEp;
  return std::nullopt;
}

namespace {
std::string str(int64_t v)
{
  return std::to_string(v);
}

void require_positive(int64_t value, const char* flag)
{
  if (value <= 0)
    throw InputError(std::string(flag) + ": expected a positive integer, got " + str(value));
}

// The ZeRO stage and what goes with it: --fsdp, the pipeline, FP8 parameters.
void validate_zero(const ParallelPlan& plan)
{
  if (plan.zero_stage < 0 || plan.zero_stage > 3)
    throw InputError("--zero: expected 0, 1, 2 or 3, got " + str(plan.zero_stage));
  if (plan.fsdp && plan.zero_stage != 3)
    throw InputError("--fsdp: shards the weights, gradients and optimizer states (ZeRO-3), got --zero " +
                     str(plan.zero_stage));
  // DeepSpeed refuses sharded gradients with a pipeline (runtime/pipe/engine.py: "ZeRO-2 and ZeRO-3 are incompatible
  // with pipeline parallelism"), Megatron-LM its torch FSDP2 path (arguments.py: "--use-torch-fsdp2 is not supported
  // with pipeline parallelism"); TorchTitan's FSDP with PP keeps the gathered weights between micro-batches
  // (reshard_after_forward=False), another memory profile, not modelled.
  if (plan.zero_stage >= 2 && plan.pp > 1)
    throw InputError(std::string(plan.fsdp ? "--fsdp: shards" : "--zero: " + str(plan.zero_stage) + " shards") +
                     " the gradients, which needs --pp 1 (got --pp " + str(plan.pp) +
                     "; DeepSpeed and Megatron's FSDP2 refuse pipeline parallelism with it)");
  // FP8 (or a block-scaled format) with sharded weights: the weights are quantized parameters gathered in their
  // format (Megatron-FSDP with --fp8-param-gather); gathering BF16 and casting at every gather is not modelled.
  // FSDP2 (--fsdp) trains FP8 through torchao, not Transformer Engine, whose caches the memory model counts.
  const std::string flag = plan.fp8() ? "--fp8" : "--precision " + to_string(plan.precision);
  if (plan.quantized() && plan.fsdp)
    throw InputError("--fsdp: FP8 is modelled as Transformer Engine runs it (expected --zero 3 for Megatron-FSDP with "
                     "--fp8, or --fsdp without --fp8)");
  if (plan.quantized() && plan.zero_stage == 3 && !plan.fp8_param_gather)
    throw InputError("--no-fp8-param-gather: with --zero 3 " + flag + " the weights are gathered as " +
                     (plan.fp8() ? std::string("FP8") : to_string(plan.precision)) +
                     " parameters (expected --fp8-param-gather; casting gathered BF16 weights at every gather is not "
                     "modelled)");
}

// --recompute-modules against the recompute mode and the model, as Megatron-Core's TransformerConfig checks them
// (transformer_config.py __post_init__: "mla_up_proj ... only supported with multi_latent_attention", "moe_act ...
// only supported with moe_grouped_gemm", which a dense model has none of). "mlp", "moe", "shared_experts" and
// "layernorm" on a model without the module recompute nothing there, as in Megatron-Core.
void validate_recompute_modules(const GptConfig& model, const ParallelPlan& plan)
{
  const RecomputeModules& m = plan.recompute_modules;
  if (m.empty())
    return;
  if (plan.recompute != Recompute::Selective)
    throw InputError("--recompute-modules: needs --recompute selective (Megatron-Core's selective granularity), got "
                     "--recompute " + to_string(plan.recompute));
  if (m.has(RecomputeModule::MlaUpProj) && !model.mla.enabled())
    throw InputError("--recompute-modules: mla_up_proj needs a model with multi-head latent attention (" + model.name +
                     " has none)");
  if (m.has(RecomputeModule::MoeAct) && !model.moe.enabled())
    throw InputError("--recompute-modules: moe_act needs a mixture-of-experts model (" + model.name +
                     " has no experts)");
}

// Expert parallelism against the model and the stage's ranks (Megatron-Core parallel_state.initialize_model_parallel:
// the expert grid etp x ep x edp must fold the tp x cp x dp ranks of a pipeline stage).
void validate_expert_plan(const GptConfig& model, const ParallelPlan& plan)
{
  if (plan.ep < 1)
    throw InputError("--ep: expected a positive integer, got " + str(plan.ep));
  if (plan.etp < 0)
    throw InputError("--etp: expected a positive integer, got " + str(plan.etp));
  if (!(plan.capacity_factor >= 0) || !std::isfinite(plan.capacity_factor))
    throw InputError("--moe-capacity-factor: expected a positive number (or none for dropless)");
  if (!(plan.moe_imbalance_cv >= 0) || !(plan.moe_imbalance_cv <= 10))
    throw InputError("--moe-imbalance: expected a coefficient of variation from 0 to 10");
  const MoeConfig& moe = model.moe;
  if (!moe.enabled()) {
    if (plan.ep > 1 || plan.etp > 0)
      throw InputError(std::string(plan.ep > 1 ? "--ep" : "--etp") + ": model '" + model.name +
                       "' has no experts (expected a mixture-of-experts model, e.g. --num-experts)");
    return;
  }
  if (moe.experts % plan.ep != 0)
    throw InputError("--ep: " + str(moe.experts) + " experts of model '" + model.name + "' are not divisible by " +
                     str(plan.ep) + " expert-parallel ranks (expected a divisor of the expert count)");
  const int64_t stage_ranks = plan.tp * plan.cp * plan.dp;
  if (stage_ranks % (plan.ep * plan.expert_tp()) != 0)
    throw InputError("--ep: ep x etp = " + str(plan.ep) + " x " + str(plan.expert_tp()) +
                     " does not divide the tp x cp x dp = " + str(stage_ranks) +
                     " ranks of a pipeline stage (expected ep x etp to divide them: Megatron-Core folds the expert "
                     "grid into them)");
  if (moe.expert_ffn_hidden % plan.expert_tp() != 0)
    throw InputError("--etp: expert MLP width " + str(moe.expert_ffn_hidden) + " of model '" + model.name +
                     "' is not divisible by " + str(plan.expert_tp()) + " (expected a divisor of --moe-ffn-hidden)");
  if (moe.shared_width() % plan.tp != 0)
    throw InputError("--tp: shared-expert width " + str(moe.shared_width()) + " of model '" + model.name +
                     "' is not divisible by tensor-parallel size " + str(plan.tp));
  if (plan.tp > 1 && !plan.sequence_parallel())
    throw InputError("--sp: Megatron-Core needs sequence parallelism for MoE layers with --tp " + str(plan.tp) +
                     " (expected --sp)");
  if (plan.zero_stage >= 2)
    throw InputError("--zero: " + str(plan.zero_stage) +
                     " with a mixture-of-experts model is not modelled (expected 0 or 1; ZeRO-1 shards the expert "
                     "optimizer states over the expert data-parallel ranks)");
}

} // namespace

int64_t quantized_tensor_bytes(GemmPrecision precision, int64_t elements)
{
  const auto blocks = [&](int64_t size) { return elements / size + (elements % size != 0 ? 1 : 0); };
  switch (precision) {
  case GemmPrecision::Bf16: return checked_product({elements, 2}, "tensor bytes");
  case GemmPrecision::Fp8: return elements;
  case GemmPrecision::Mxfp8: return checked_sum(elements, blocks(32), "tensor bytes");
  case GemmPrecision::Nvfp4: return checked_sum(blocks(2), blocks(16), "tensor bytes");
  }
  return checked_product({elements, 2}, "tensor bytes");
}

void validate_plan(const GptConfig& model, const ParallelPlan& plan)
{
  validate_model(model);
  require_positive(plan.tp, "--tp");
  require_positive(plan.pp, "--pp");
  require_positive(plan.dp, "--dp");
  require_positive(plan.micro_batch, "--micro-batch");
  require_positive(plan.chunks, "--chunks");
  if (plan.global_batch < 0)
    throw InputError("--global-batch: expected a positive integer, got " + str(plan.global_batch));
  if (plan.fp8_recipe != Fp8Recipe::Delayed && !plan.fp8())
    throw InputError("--fp8-recipe: " + to_string(plan.fp8_recipe) + " scales per-tensor FP8 GEMMs (expected --fp8; "
                     "--precision " + to_string(plan.precision) + " has its own block scales)");
  validate_zero(plan);
  validate_expert_plan(model, plan);
  validate_recompute_modules(model, plan);

  require_positive(plan.cp, "--cp");
  if (plan.pp_first_stage_layers < 0)
    throw InputError("--pp-first-stage-layers: expected a positive integer, got " + str(plan.pp_first_stage_layers));
  if (plan.pp_last_stage_layers < 0)
    throw InputError("--pp-last-stage-layers: expected a positive integer, got " + str(plan.pp_last_stage_layers));
  if (plan.cp > 1) {
    if (model.seq_len % (2 * plan.cp) != 0)
      throw InputError("--cp: sequence length " + str(model.seq_len) + " is not divisible by 2 x cp = " +
                       str(2 * plan.cp) +
                       " (context parallelism gives each rank two balanced chunks of the causal sequence)");
    if (plan.attention != AttentionKernel::Flash)
      throw InputError("--cp: context parallelism needs --attention flash (its ring exchanges K/V blocks between "
                       "blockwise fused attention kernels; got --attention " +
                       to_string(plan.attention) + ")");
  }
  if (model.heads % plan.tp != 0)
    throw InputError("--tp: " + str(model.heads) + " attention heads of model '" + model.name +
                     "' are not divisible by tensor-parallel size " + str(plan.tp) +
                     " (expected a divisor of the head count)");
  if (model.ffn() % plan.tp != 0)
    throw InputError("--tp: MLP width " + str(model.ffn()) + " of model '" + model.name +
                     "' is not divisible by tensor-parallel size " + str(plan.tp) +
                     " (expected tp to divide --ffn-hidden: each rank holds F/t columns)");
  if (model.kv_heads() % plan.tp != 0)
    throw InputError("--tp: " + str(model.kv_heads()) + " query groups of model '" + model.name +
                     "' are not divisible by tensor-parallel size " + str(plan.tp) +
                     " (expected tp to divide --num-query-groups: each rank holds whole K/V heads)");
  if (plan.sequence_parallel() && (model.seq_len / plan.cp) % plan.tp != 0)
    throw InputError("--sp: sequence length " + str(model.seq_len / plan.cp) +
                     (plan.cp > 1 ? " per context-parallel rank" : "") + " is not divisible by tensor-parallel size " +
                     str(plan.tp) + " (sequence parallelism splits the sequence over the tp ranks)");
  const bool uneven = plan.pp_first_stage_layers > 0 || plan.pp_last_stage_layers > 0;
  if (!uneven && model.layers % plan.pp != 0)
    throw InputError("--pp: " + str(model.layers) + " layers of model '" + model.name + "' are not divisible by " +
                     str(plan.pp) + " pipeline stages (expected a divisor of the layers, or uneven stages with "
                     "--pp-first-stage-layers/--pp-last-stage-layers)");
  if (uneven) {
    const char* flag = plan.pp_first_stage_layers > 0 ? "--pp-first-stage-layers" : "--pp-last-stage-layers";
    if (plan.pp < 2)
      throw InputError(std::string(flag) + ": uneven stages need at least 2 pipeline stages (got --pp " + str(plan.pp) +
                       ")");
    const int64_t fixed = plan.pp_first_stage_layers + plan.pp_last_stage_layers;
    const int64_t middle_stages = plan.pp - (plan.pp_first_stage_layers > 0) - (plan.pp_last_stage_layers > 0);
    const int64_t rest = model.layers - fixed;
    if (middle_stages == 0 ? rest != 0 : rest <= 0 || rest % middle_stages != 0)
      throw InputError(std::string(flag) + ": " + str(model.layers) + " layers minus " + str(fixed) +
                       " on the first/last stage leave " + str(rest) + " for " + str(middle_stages) +
                       " other stage(s) (expected a positive multiple of " + str(std::max<int64_t>(middle_stages, 1)) +
                       ")");
  }

  if (plan.schedule == Schedule::Interleaved) {
    if (plan.pp < 2)
      throw InputError("--schedule: interleaved needs at least 2 pipeline stages (got --pp " + str(plan.pp) + ")");
    if (plan.chunks < 2)
      throw InputError("--chunks: interleaved needs at least 2 model chunks per stage, got " + str(plan.chunks));
    if (!uneven && model.layers % (plan.pp * plan.chunks) != 0)
      throw InputError("--chunks: " + str(model.layers) + " layers are not divisible by pp x chunks = " + str(plan.pp) +
                       " x " + str(plan.chunks) + " (expected each model chunk to get whole layers)");
    if (uneven) {
      // Megatron-Core: every middle stage's layers split evenly over its virtual stages; a first/last stage
      // lighter than that may split unevenly (chunk_layers), every chunk keeping at least one layer but the
      // pipeline's first (the embedding's) and last (the output layer's and loss's): those may hold none, as
      // Megatron-Core's pipeline layouts put them ("E|t|...|t|L": pipeline_model_parallel_layout,
      // --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split).
      for (int64_t stage = 0; stage < plan.pp; ++stage) {
        const int64_t layers = stage_layers(model, plan, stage);
        const bool first = stage == 0 && plan.pp_first_stage_layers > 0;
        const bool last = stage == plan.pp - 1 && plan.pp_last_stage_layers > 0;
        if (!first && !last && layers % plan.chunks != 0)
          throw InputError("--chunks: the " + str(layers) + " layers of each middle pipeline stage are not divisible "
                           "by " + str(plan.chunks) + " model chunks (expected a divisor of " + str(layers) + ")");
        if ((first || last) && layers < plan.chunks - 1)
          throw InputError(std::string(first ? "--pp-first-stage-layers" : "--pp-last-stage-layers") + ": " +
                           str(layers) + " layers cannot fill " + str(plan.chunks) +
                           " model chunks (expected at least one layer per chunk, the " +
                           (first ? "embedding's" : "loss's") + " own chunk aside: at least " +
                           str(plan.chunks - 1) + ")");
      }
    }
  } else if (plan.chunks != 1) {
    throw InputError("--chunks: " + str(plan.chunks) + " model chunks per stage need --schedule interleaved (got " +
                     to_string(plan.schedule) + ")");
  }

  const int64_t per_step = plan.micro_batch * plan.dp;
  const int64_t global = plan.effective_global_batch();
  if (global % per_step != 0)
    throw InputError("--global-batch: " + str(global) + " is not divisible by micro-batch x dp = " +
                     str(plan.micro_batch) + " x " + str(plan.dp) + " (expected a multiple of " + str(per_step) + ")");
  if (plan.schedule == Schedule::Interleaved) {
    const int64_t m = plan.micro_batches();
    if (m < plan.pp || m % plan.pp != 0)
      throw InputError("--global-batch: the interleaved schedule needs the micro-batches per pipeline (" + str(m) +
                       ") to be a multiple of the " + str(plan.pp) + " pipeline stages");
  }
}

int64_t stage_layers(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  if (plan.pp_first_stage_layers == 0 && plan.pp_last_stage_layers == 0)
    return model.layers / plan.pp;
  if (stage == 0 && plan.pp_first_stage_layers > 0)
    return plan.pp_first_stage_layers;
  if (stage == plan.pp - 1 && plan.pp_last_stage_layers > 0)
    return plan.pp_last_stage_layers;
  const int64_t middle_stages = plan.pp - (plan.pp_first_stage_layers > 0) - (plan.pp_last_stage_layers > 0);
  return (model.layers - plan.pp_first_stage_layers - plan.pp_last_stage_layers) / middle_stages;
}

int64_t stage_first_layer(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  return chunk_first_layer(model, plan, stage, 0);
}

int64_t stage_chunks(const ParallelPlan& plan)
{
  return plan.schedule == Schedule::Interleaved ? plan.chunks : 1;
}

int64_t chunk_layers(const GptConfig& model, const ParallelPlan& plan, int64_t stage, int64_t chunk)
{
  const int64_t chunks = stage_chunks(plan);
  const int64_t layers = stage_layers(model, plan, stage);
  const int64_t base = layers / chunks, rest = layers % chunks;
  if (rest == 0)
    return base;
  // Only an uneven first or last stage (validate_plan): its lighter chunks are the ones at the pipeline's ends.
  if (stage == 0)
    return chunk < chunks - rest ? base : base + 1;
  return chunk < rest ? base + 1 : base;
}

int64_t chunk_first_layer(const GptConfig& model, const ParallelPlan& plan, int64_t stage, int64_t chunk)
{
  int64_t first = 0;
  for (int64_t c = 0; c <= chunk; ++c)
    for (int64_t s = 0; s < (c < chunk ? plan.pp : stage); ++s)
      first += chunk_layers(model, plan, s, c);
  return first;
}

int64_t max_chunk_layers(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  int64_t most = 0;
  for (int64_t c = 0; c < stage_chunks(plan); ++c)
    most = std::max(most, chunk_layers(model, plan, stage, c));
  return most;
}

std::string describe_plan(const ParallelPlan& plan)
{
  std::string s = "tp " + str(plan.tp) + (plan.cp > 1 ? " · cp " + str(plan.cp) : "") + " · pp " + str(plan.pp) +
                  " · dp " + str(plan.dp) + " · micro-batch " +
                  str(plan.micro_batch) + " · global batch " + str(plan.effective_global_batch()) + " (" +
                  str(plan.micro_batches()) + " micro-batches per pipeline)";
  s += plan.sequence_parallel() ? " · SP" : "";
  s += " · recompute " + to_string(plan.recompute);
  if (!plan.recompute_modules.empty())
    s += " (" + to_string(plan.recompute_modules) + ")";
  s += " · " + to_string(plan.attention) + " attention";
  s += " · " + to_string(plan.schedule);
  if (plan.schedule == Schedule::Interleaved)
    s += " x" + str(plan.chunks) + " chunks";
  if (plan.pp_first_stage_layers > 0 || plan.pp_last_stage_layers > 0)
    s += " · uneven stages (first " + str(plan.pp_first_stage_layers) + ", last " + str(plan.pp_last_stage_layers) +
         " layers)";
  s += " · ZeRO-" + str(plan.zero_stage) + (plan.fsdp ? " (FSDP2)" : "");
  if (plan.quantized()) {
    std::string name = to_string(plan.precision);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
    s += " · " + name + (plan.current_scaling() ? " (tensorwise scaling)" : "") +
         (plan.fp8_param_gather ? " (" + name + " param gather)" : "");
  }
  s += plan.grad_reduce_bf16 ? " · BF16 grads" : "";
  s += plan.cross_entropy_fusion ? " · fused cross entropy" : "";
  if (plan.ep > 1 || plan.etp > 0)
    s += " · ep " + str(plan.ep) + " · etp " + str(plan.expert_tp()) + " · " + to_string(plan.dispatcher) + " dispatch";
  return s;
}

} // namespace gputwin
