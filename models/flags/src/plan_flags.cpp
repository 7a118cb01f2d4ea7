#include "gputwin/models/plan_flags.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/megatron_args.hpp"
#include "gputwin/models/model_catalog.hpp"

#include <cstdio>
#include <fstream>

namespace gputwin::cli {

namespace {

// The model flags beside --model: options with a value, and switches (add_model_flags declares them).
constexpr const char* model_value_flags[] = {"--hidden",     "--heads",          "--layers",     "--seq-len",
                                             "--vocab",      "--num-query-groups", "--ffn-hidden", "--activation",
                                             "--norm",       "--position", "--num-experts", "--moe-topk",
                                             "--moe-ffn-hidden", "--moe-shared-experts", "--moe-shared-ffn-hidden",
                                             "--moe-dense-first-layers", "--moe-layer-period", "--head-size",
                                             "--moe-router", "--moe-router-groups", "--moe-router-group-topk",
                                             "--mtp-layers", "--q-lora-rank", "--kv-lora-rank",
                                             "--qk-nope-head-dim", "--qk-rope-head-dim", "--v-head-dim"};
constexpr const char* model_switch_flags[] = {"--untie-embeddings", "--no-bias", "--no-dropout", "--moe-no-aux-loss"};

} // namespace

std::vector<std::string> model_flag_arguments(const ParsedArgs& args)
{
  std::vector<std::string> out;
  for (const char* flag : model_value_flags)
    if (const std::optional<std::string> v = args.value(flag)) {
      out.emplace_back(flag);
      out.push_back(*v);
    }
  for (const char* flag : model_switch_flags)
    if (args.has(flag))
      out.emplace_back(flag);
  return out;
}

void add_model_flags(ArgParser& parser, bool model_list)
{
  parser.add_section("model");
  parser.add_option("--model", model_list ? "NAME|FILE[,...]" : "NAME|FILE",
                    std::string(model_list ? "comma-separated: " : "") + "built-in model (" + catalog_names() +
                        "), a model .yaml file, or hf:PATH, a HuggingFace config.json (Llama, Mistral, Qwen2, Qwen3; "
                        "its max_position_embeddings is the sequence length unless --seq-len)" +
                        (model_list ? "; the flags below apply to every model" : ""));
  parser.add_option("--hidden", "H", "hidden size h (overrides the model's)");
  parser.add_option("--heads", "A", "attention heads a");
  parser.add_option("--layers", "L", "transformer layers L");
  parser.add_option("--seq-len", "S", "sequence length s, tokens");
  parser.add_option("--vocab", "V", "vocabulary size v");
  parser.add_option("--num-query-groups", "G",
                    "K/V heads of grouped-query attention (default: one per head, multi-head attention)");
  parser.add_option("--ffn-hidden", "F", "MLP width (default 4 x hidden)");
  parser.add_option("--head-size", "D", "width of one attention head (default hidden / heads; Qwen3: 128)");
  parser.add_option("--activation", "NAME", "MLP activation: gelu|swiglu|squared-relu (swiglu: fc1 makes gate and up, 2F wide)");
  parser.add_option("--norm", "NAME", "layernorm|rmsnorm");
  parser.add_option("--position", "NAME", "position embedding: learned|rope");
  parser.add_switch("--untie-embeddings", "the output layer has its own matrix (not the word embedding's)");
  parser.add_switch("--no-bias", "linear layers without biases");
  parser.add_switch("--no-dropout", "no hidden or attention dropout (Llama trains without)");
  parser.add_option("--num-experts", "E", "routed experts of each MoE layer (mixture of experts; default: dense)");
  parser.add_option("--moe-topk", "K", "experts each token is routed to");
  parser.add_option("--moe-ffn-hidden", "F", "MLP width of one routed expert (default --ffn-hidden)");
  parser.add_option("--moe-shared-experts", "N", "shared experts every token passes through (default 0)");
  parser.add_option("--moe-shared-ffn-hidden", "F", "total width of the shared experts (default N x expert width)");
  parser.add_option("--moe-dense-first-layers", "N", "the first N layers keep a dense MLP (default 0)");
  parser.add_option("--moe-layer-period", "P", "every P-th layer is MoE, the others dense (default 1)");
  parser.add_option("--moe-router", "NAME", "router score: softmax (default) | sigmoid (DeepSeek-V3)");
  parser.add_option("--moe-router-groups", "G", "group-limited routing: experts in G groups (DeepSeek-V3: 8)");
  parser.add_option("--moe-router-group-topk", "K", "groups a token may use (DeepSeek-V3: 4)");
  parser.add_switch("--moe-no-aux-loss", "no load-balancing loss (aux-loss-free bias, DeepSeek-V3)");
  parser.add_option("--mtp-layers", "N", "multi-token prediction modules on the last stage (DeepSeek-V3: 1)");
  parser.add_option("--q-lora-rank", "R", "multi-head latent attention: query LoRA rank (0: no compression)");
  parser.add_option("--kv-lora-rank", "R", "multi-head latent attention: key/value latent rank (turns MLA on)");
  parser.add_option("--qk-nope-head-dim", "D", "MLA: per-head query/key width without rotary (DeepSeek: 128)");
  parser.add_option("--qk-rope-head-dim", "D", "MLA: rotary width (DeepSeek: 64)");
  parser.add_option("--v-head-dim", "D", "MLA: per-head value width (DeepSeek: 128)");
}

void add_precision_flag(ArgParser& parser)
{
  parser.add_option("--precision", "P",
                    "linear-layer GEMMs: bf16 (default), fp8 (= --fp8: TE per-tensor FP8, H100 and later; "
                    "--fp8-recipe), mxfp8 (TE MXFP8BlockScaling: 1-byte values, a 1-byte scale per 32; Blackwell) or nvfp4 (TE "
                    "NVFP4BlockScaling: 4-bit values, a 1-byte scale per 16; Blackwell, at the FP4 peak)");
}

void add_fp8_recipe_flag(ArgParser& parser)
{
  parser.add_option("--fp8-recipe", "R",
                    "with --fp8, Transformer Engine's scaling (Megatron-Core --fp8-recipe): delayed (default: scales "
                    "from an amax history reduced per micro-batch) or tensorwise (current scaling: each tensor's amax "
                    "read before its cast, no history)");
}

void add_search_space_flags(ArgParser& parser, bool micro_batch_list)
{
  parser.add_option("--attention", "KERNEL",
                    "attention kernel of every plan: unfused|flash (default: flash on Hopper, unfused on Ampere)");
  if (micro_batch_list)
    parser.add_option("--micro-batches", "LIST", "micro-batch sizes to try (default 1,2,4,8)");
  parser.add_switch("--fp8", "every plan with FP8 linear-layer GEMMs (Transformer Engine; H100 and later)");
  add_precision_flag(parser);
  add_fp8_recipe_flag(parser);
  parser.add_option("--cp", "LIST",
                    "context-parallel sizes to try, e.g. 1,2,4,8 (needs flash attention; default 1,2,4,8 with flash "
                    "attention and --seq-len >= 8192, else 1)");
  parser.add_switch("--no-overlaps", "plans without Megatron-Core's overlaps (default: each plan estimated with every "
                                     "overlap that applies and with none, the faster kept)");
}

GemmPrecision read_precision(const ParsedArgs& args)
{
  const std::optional<std::string> text = args.value("--precision");
  if (!text)
    return args.has("--fp8") ? GemmPrecision::Fp8 : GemmPrecision::Bf16;
  const std::optional<GemmPrecision> parsed = parse_gemm_precision(*text);
  if (!parsed)
    throw InputError("--precision: expected bf16|fp8|mxfp8|nvfp4, got '" + *text + "'");
  if (args.has("--fp8") && *parsed != GemmPrecision::Fp8)
    throw InputError("--precision: " + *text + " contradicts --fp8 (= --precision fp8; expected one of them)");
  return *parsed;
}

Fp8Recipe read_fp8_recipe(const ParsedArgs& args, GemmPrecision precision)
{
  const std::optional<std::string> text = args.value("--fp8-recipe");
  if (!text)
    return Fp8Recipe::Delayed;
  if (precision != GemmPrecision::Fp8)
    throw InputError("--fp8-recipe: scales per-tensor FP8 GEMMs (expected --fp8 or --precision fp8, got " +
                     to_string(precision) + ")");
  const std::optional<Fp8Recipe> parsed = parse_fp8_recipe(*text);
  if (!parsed)
    throw InputError("--fp8-recipe: expected delayed or tensorwise (MXFP8: --precision mxfp8; blockwise FP8 is not "
                     "modelled), got '" + *text + "'");
  return *parsed;
}

void add_plan_flags(ArgParser& parser)
{
  parser.add_section("parallel plan");
  parser.add_option("--plan", "paper",
                    "the paper's whole configuration of a built-in model (Korthikanti et al. 2022): Table 3's tp, pp, "
                    "micro-batch, global batch and schedule, with sequence parallelism and selective recompute as "
                    "its Table 5 runs; the flags below override it (--no-sp, --recompute none)");
  parser.add_expanding_option(
      "--megatron-args", "FILE",
      "a Megatron-LM / NeMo launch line (torchrun ... pretrain_gpt.py --num-layers ...; backslash continuations, "
      "# comments, VAR=x): its model, plan and overlaps as the equivalent flags, dp = world size / (tp x pp x cp); "
      "flags given here win; the arguments not modelled are listed in a note",
      expand_megatron_args);
  parser.add_option("--tp", "T", "tensor-parallel size (default 1)");
  parser.add_option("--pp", "P", "pipeline stages (default 1)");
  parser.add_option("--dp", "D", "data-parallel replicas (default 1)");
  parser.add_option("--micro-batch", "B", "samples per micro-batch (default 1)");
  parser.add_option("--global-batch", "B",
                    "samples per iteration over all replicas (default micro-batch x dp: one micro-batch per "
                    "pipeline, Megatron-LM's default; --plan paper: the paper's)");
  parser.add_switch("--sp", "sequence parallelism in the tensor-parallel regions");
  parser.add_switch("--no-sp", "no sequence parallelism (the default, except with --tp-comm-overlap or MoE layers at tp > "
                             "1; turns off the SP of --plan paper)");
  parser.add_option("--recompute", "MODE", "activation recompute: none|selective|full (default none)");
  parser.add_option("--recompute-modules", "LIST",
                    "Megatron-Core's selective recompute by submodule, comma-separated: core_attn (even a fused "
                    "attention kernel), layernorm (MLA's input norm, MoE layers' pre-MLP norm), moe_act, mla_up_proj, "
                    "mlp (dense layers), moe, shared_experts; implies --recompute selective (without it, selective "
                    "recomputes the unfused attention core only)");
  parser.add_option("--attention", "KERNEL",
                    "attention core: unfused (separate kernels, s x s activations stored) or flash (one fused "
                    "tiled kernel forward and backward); default: flash on Hopper clusters (the simulator's "
                    "commands), unfused otherwise");
  parser.add_option("--schedule", "NAME", "pipeline schedule: 1f1b|interleaved|gpipe (default 1f1b)");
  parser.add_option("--chunks", "V", "model chunks per stage, interleaved schedule only");
  parser.add_option("--zero", "0|1|2|3",
                    "ZeRO stage over the dp (x cp) replicas: 1 shards the optimizer states (Megatron-Core's "
                    "distributed optimizer), 2 also the gradients (reduce-scattered layer by layer in every "
                    "micro-batch's backward), 3 also the weights (each layer all-gathered before its forward and "
                    "its backward, the next layer's gather prefetched; Megatron-FSDP, DeepSpeed ZeRO-3); 2 and 3 "
                    "need --pp 1");
  parser.add_switch("--fsdp",
                    "PyTorch FSDP2 as TorchTitan runs it: --zero 3 with the FP32 sharded parameter as the master "
                    "weight (no BF16 copy kept: 16 sharded bytes per parameter), gathered in BF16, gradients "
                    "reduce-scattered in FP32 (use with --framework torchtitan)");
  parser.add_option("--cp", "C",
                    "context-parallel size: each micro-batch's sequence split over C ranks, attention as a ring "
                    "exchange of K/V blocks (needs --attention flash; default 1)");
  parser.add_option("--pp-first-stage-layers", "N", "layers of the first pipeline stage (uneven stages)");
  parser.add_option("--pp-last-stage-layers", "N", "layers of the last pipeline stage (uneven stages)");
  parser.add_switch("--fp8", "FP8 linear-layer GEMMs (Transformer Engine; H100/H200)");
  add_precision_flag(parser);
  add_fp8_recipe_flag(parser);
  parser.add_switch("--fp8-param-gather",
                    "layer weights kept only in FP8 (or the --precision's format, scales included), no BF16 copy "
                    "(Megatron-Core; needs --fp8 or --precision and --zero 1, 2 or 3; the default with them, as "
                    "NeMo's FP8 recipe sets it; required with --zero 3)");
  parser.add_switch("--no-fp8-param-gather", "keep the BF16 weights next to TE's FP8 weight caches with --fp8");
  parser.add_switch("--grad-reduce-in-bf16",
                    "BF16 gradient buffer (Megatron-Core); default FP32 main grads "
                    "(--accumulate-allreduce-grads-in-fp32)");
  parser.add_switch("--cross-entropy-fusion",
                    "Transformer Engine's fused cross entropy (Megatron-Core --cross-entropy-loss-fusion "
                    "--cross-entropy-fusion-impl te): BF16 logits kept, gradient written in place");
  parser.add_section("mixture of experts");
  parser.add_option("--ep", "N", "expert-parallel size: the experts split over N ranks (default 1)");
  parser.add_option("--etp", "N", "expert tensor-parallel size: each expert's MLP over N ranks (default --tp)");
  parser.add_option("--moe-dispatcher", "NAME",
                    "token dispatcher: alltoall (default) | allgather | deepep (DeepEP: one RDMA copy per "
                    "destination node, NVLink fan-out there)");
  parser.add_option("--moe-capacity-factor", "C",
                    "an expert takes at most C x its balanced share of tokens, the rest are dropped (default: "
                    "dropless)");
  parser.add_option("--moe-imbalance", "CV",
                    "coefficient of variation of the experts' token counts (default 0: perfectly balanced); each "
                    "MoE layer draws expert popularity from a log-normal with this CV (--moe-seed)");
  parser.add_option("--moe-seed", "N", "seed of the expert-popularity draw (default 1)");
}

namespace {

bool looks_like_file(const std::string& name)
{
  auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return name.rfind("hf:", 0) == 0 || ends_with(".yaml") || ends_with(".yml") || name.find('/') != std::string::npos ||
         std::ifstream(name).good();
}

void override_size(const ParsedArgs& args, const std::string& flag, int64_t& field)
{
  if (const std::optional<int64_t> v = args.integer(flag))
    field = *v;
}

// The router and MTP flags of a MoE model and the MLA flags (validate_model checks the values).
void read_moe_router_and_mla(const ParsedArgs& args, GptConfig& model)
{
  if (const std::optional<std::string> r = args.value("--moe-router")) {
    if (*r != "softmax" && *r != "sigmoid")
      throw InputError("--moe-router: expected softmax|sigmoid, got '" + *r + "'");
    model.moe.router = *r == "sigmoid" ? RouterScore::Sigmoid : RouterScore::Softmax;
  }
  override_size(args, "--moe-router-groups", model.moe.router_groups);
  override_size(args, "--moe-router-group-topk", model.moe.router_group_topk);
  if (args.has("--moe-no-aux-loss"))
    model.moe.aux_loss = false;
  override_size(args, "--mtp-layers", model.moe.mtp_layers);
  override_size(args, "--q-lora-rank", model.mla.q_lora_rank);
  override_size(args, "--kv-lora-rank", model.mla.kv_lora_rank);
  override_size(args, "--qk-nope-head-dim", model.mla.qk_nope_head_dim);
  override_size(args, "--qk-rope-head-dim", model.mla.qk_rope_head_dim);
  override_size(args, "--v-head-dim", model.mla.v_head_dim);
  if (args.has("--kv-lora-rank") && model.mla.kv_lora_rank <= 0)
    throw InputError("--kv-lora-rank: expected a positive integer, got " + std::to_string(model.mla.kv_lora_rank));
}

// A mixture-of-experts model whose layers do not divide over --pp, without --pp-first/last-stage-layers
// (DeepSeek-V3's 61, Qwen3-235B's 94: MoE recipes split them unevenly with Megatron-Core's
// --decoder-first/last-pipeline-num-layers): the middle stages take ceil(L / p) each and the first and last stage
// the rest, the first the lighter half (it also holds the embedding); plan_notes states it. Dense models keep the
// error naming the flags.
void split_layers_unevenly_if_needed(const ParsedArgs& args, const GptConfig& model, ParallelPlan& plan)
{
  if (!model.moe.enabled() || plan.pp < 3 || model.layers % plan.pp == 0 || args.has("--pp-first-stage-layers") ||
      args.has("--pp-last-stage-layers"))
    return;
  const int64_t middle = (model.layers + plan.pp - 1) / plan.pp;
  const int64_t rest = model.layers - (plan.pp - 2) * middle;
  if (rest < 2 || rest > 2 * middle)
    return; // validate_plan names the flags
  plan.pp_first_stage_layers = rest / 2;
  plan.pp_last_stage_layers = rest - rest / 2;
}

double read_number(const ParsedArgs& args, const char* flag)
{
  return parse_number(flag, *args.value(flag));
}

void read_expert_plan(const ParsedArgs& args, ParallelPlan& plan)
{
  override_size(args, "--ep", plan.ep);
  if (args.has("--ep") && plan.ep <= 0)
    throw InputError("--ep: expected a positive integer, got " + std::to_string(plan.ep));
  override_size(args, "--etp", plan.etp);
  if (args.has("--etp") && plan.etp <= 0)
    throw InputError("--etp: expected a positive integer, got " + std::to_string(plan.etp));
  if (const std::optional<std::string> d = args.value("--moe-dispatcher")) {
    const std::optional<MoeDispatcher> parsed = parse_moe_dispatcher(*d);
    if (!parsed)
      throw InputError("--moe-dispatcher: expected alltoall|allgather|deepep, got '" + *d + "'");
    plan.dispatcher = *parsed;
  }
  if (args.has("--moe-capacity-factor")) {
    plan.capacity_factor = read_number(args, "--moe-capacity-factor");
    if (!(plan.capacity_factor > 0))
      throw InputError("--moe-capacity-factor: expected a positive number, got " + *args.value("--moe-capacity-factor"));
  }
  if (args.has("--moe-imbalance")) {
    plan.moe_imbalance_cv = read_number(args, "--moe-imbalance");
    if (!(plan.moe_imbalance_cv >= 0) || plan.moe_imbalance_cv > 10)
      throw InputError("--moe-imbalance: expected a coefficient of variation from 0 to 10, got " +
                       *args.value("--moe-imbalance"));
  }
  if (const std::optional<int64_t> seed = args.integer("--moe-seed")) {
    if (*seed < 0)
      throw InputError("--moe-seed: expected a non-negative integer, got " + std::to_string(*seed));
    plan.moe_seed = static_cast<uint64_t>(*seed);
  }
}

} // namespace

GptConfig read_model(const ParsedArgs& args, const ModelFileLoader& load_file)
{
  GptConfig model;
  if (const std::optional<std::string> name = args.value("--model")) {
    if (const CatalogEntry* entry = find_catalog_model(*name)) {
      model = entry->model;
    } else if (looks_like_file(*name)) {
      if (!load_file)
        throw InputError("--model: model files are not supported here; expected one of " + catalog_names());
      model = load_file(*name);
    } else {
      throw InputError("--model: unknown model '" + *name + "' (expected one of " + catalog_names() +
                       ", a .yaml model file, or hf:PATH to a HuggingFace config.json)");
    }
  } else {
    // A Megatron launch line names its model after the file (gpt3-175b.args: gpt3-175b).
    model.name = "custom";
    if (const std::optional<std::string> file = args.value("--megatron-args")) {
      const std::string base = file->substr(file->find_last_of('/') + 1);
      model.name = base.substr(0, base.find_last_of('.') == 0 ? std::string::npos : base.find_last_of('.'));
    }
    for (const char* flag : {"--hidden", "--heads", "--layers", "--seq-len", "--vocab"})
      if (!args.has(flag))
        throw InputError(std::string("--model: not given, so ") + flag +
                         " is required (expected --model NAME|FILE or all of --hidden --heads --layers --seq-len "
                         "--vocab)");
  }
  override_size(args, "--hidden", model.hidden);
  override_size(args, "--heads", model.heads);
  override_size(args, "--layers", model.layers);
  override_size(args, "--seq-len", model.seq_len);
  override_size(args, "--vocab", model.vocab);
  override_size(args, "--num-query-groups", model.query_groups);
  if (args.has("--num-query-groups") && model.query_groups <= 0)
    throw InputError("--num-query-groups: expected a positive integer, got " + std::to_string(model.query_groups));
  override_size(args, "--ffn-hidden", model.ffn_hidden);
  override_size(args, "--head-size", model.head_size);
  if (args.has("--head-size") && model.head_size <= 0)
    throw InputError("--head-size: expected a positive integer, got " + std::to_string(model.head_size));
  if (args.has("--ffn-hidden") && model.ffn_hidden <= 0)
    throw InputError("--ffn-hidden: expected a positive integer, got " + std::to_string(model.ffn_hidden));
  if (const std::optional<std::string> a = args.value("--activation")) {
    const std::optional<Activation> parsed = parse_activation(*a);
    if (!parsed)
      throw InputError("--activation: expected gelu|swiglu|squared-relu, got '" + *a + "'");
    model.activation = *parsed;
  }
  if (const std::optional<std::string> n = args.value("--norm")) {
    const std::optional<Norm> parsed = parse_norm(*n);
    if (!parsed)
      throw InputError("--norm: expected layernorm|rmsnorm, got '" + *n + "'");
    model.norm = *parsed;
  }
  if (const std::optional<std::string> p = args.value("--position")) {
    const std::optional<PositionEmbedding> parsed = parse_position(*p);
    if (!parsed)
      throw InputError("--position: expected learned|rope, got '" + *p + "'");
    model.position = *parsed;
  }
  if (args.has("--untie-embeddings"))
    model.tie_embeddings = false;
  if (args.has("--no-bias"))
    model.bias = false;
  if (args.has("--no-dropout"))
    model.dropout = false;
  if (args.has("--num-experts")) {
    override_size(args, "--num-experts", model.moe.experts);
    if (model.moe.experts <= 0)
      throw InputError("--num-experts: expected a positive integer, got " + std::to_string(model.moe.experts));
    if (model.moe.expert_ffn_hidden == 0)
      model.moe.expert_ffn_hidden = model.ffn();
  }
  override_size(args, "--moe-topk", model.moe.topk);
  override_size(args, "--moe-ffn-hidden", model.moe.expert_ffn_hidden);
  override_size(args, "--moe-shared-experts", model.moe.shared_experts);
  override_size(args, "--moe-shared-ffn-hidden", model.moe.shared_ffn_hidden);
  override_size(args, "--moe-dense-first-layers", model.moe.dense_first_layers);
  override_size(args, "--moe-layer-period", model.moe.layer_period);
  read_moe_router_and_mla(args, model);
  if (!model.moe.enabled())
    for (const char* flag : {"--moe-topk", "--moe-ffn-hidden", "--moe-shared-experts", "--moe-shared-ffn-hidden",
                             "--moe-dense-first-layers", "--moe-layer-period", "--moe-router", "--moe-router-groups",
                             "--moe-router-group-topk", "--moe-no-aux-loss", "--mtp-layers"})
      if (args.has(flag))
        throw InputError(std::string(flag) + ": model '" + model.name +
                         "' has no experts (expected --num-experts or a mixture-of-experts model)");
  validate_model(model);
  return model;
}

ParallelPlan read_plan(const ParsedArgs& args, const GptConfig& model)
{
  ParallelPlan plan;
  if (const std::optional<std::string> base = args.value("--plan")) {
    if (*base != "paper")
      throw InputError("--plan: expected 'paper', got '" + *base + "'");
    const CatalogEntry* entry = find_catalog_model(model.name);
    if (entry == nullptr)
      throw InputError("--plan: 'paper' needs a built-in model (" + catalog_names() + "), got '" + model.name + "'");
    plan = entry->paper_plan;
    // The paper's end-to-end runs (Table 5, "SP + selective recompute") and Table 3's plan are one configuration.
    plan.tp_comm = TpComm::SequenceParallel;
    plan.recompute = Recompute::Selective;
  }
  override_size(args, "--tp", plan.tp);
  override_size(args, "--pp", plan.pp);
  override_size(args, "--dp", plan.dp);
  override_size(args, "--micro-batch", plan.micro_batch);
  if (args.has("--global-batch")) {
    plan.global_batch = *args.integer("--global-batch");
    if (plan.global_batch <= 0)
      throw InputError("--global-batch: expected a positive integer, got " + std::to_string(plan.global_batch));
  } else if (!args.has("--plan")) {
    plan.global_batch = 0; // micro-batch x dp
  }
  override_size(args, "--chunks", plan.chunks);
  override_size(args, "--cp", plan.cp);
  override_size(args, "--pp-first-stage-layers", plan.pp_first_stage_layers);
  if (args.has("--pp-first-stage-layers") && plan.pp_first_stage_layers <= 0)
    throw InputError("--pp-first-stage-layers: expected a positive integer, got " +
                     std::to_string(plan.pp_first_stage_layers));
  override_size(args, "--pp-last-stage-layers", plan.pp_last_stage_layers);
  if (args.has("--pp-last-stage-layers") && plan.pp_last_stage_layers <= 0)
    throw InputError("--pp-last-stage-layers: expected a positive integer, got " +
                     std::to_string(plan.pp_last_stage_layers));
  if (args.has("--precision") || args.has("--fp8"))
    plan.precision = read_precision(args);
  plan.fp8_recipe = read_fp8_recipe(args, plan.precision);
  if (args.has("--fp8-param-gather") && args.has("--no-fp8-param-gather"))
    throw InputError("--no-fp8-param-gather: contradicts --fp8-param-gather (expected one of them)");
  if (args.has("--grad-reduce-in-bf16"))
    plan.grad_reduce_bf16 = true;
  if (args.has("--cross-entropy-fusion"))
    plan.cross_entropy_fusion = true;
  if (args.has("--sp") && args.has("--no-sp"))
    throw InputError("--no-sp: contradicts --sp (expected one of them)");
  if (args.has("--sp"))
    plan.tp_comm = TpComm::SequenceParallel;
  if (args.has("--no-sp"))
    plan.tp_comm = TpComm::AllReduce;
  // Transformer Engine's TP-communication overlap exists only with SP (Megatron-LM megatron/training/arguments.py
  // asserts "Tensor parallel communication/GEMM overlap can happen only when sequence parallelism is enabled"; NeMo
  // 2's recipes that set tp_comm_overlap all set sequence_parallel): asking for it turns SP on unless --no-sp
  // (plan_notes says so; with --no-sp overlap_options_from_flags refuses the pair). With tp 1 there is nothing to
  // overlap (Megatron-LM turns both off there).
  if (args.has("--tp-comm-overlap") && !args.has("--no-sp") && plan.tp > 1)
    plan.tp_comm = TpComm::SequenceParallel;
  if (const std::optional<std::string> r = args.value("--recompute")) {
    const std::optional<Recompute> parsed = parse_recompute(*r);
    if (!parsed)
      throw InputError("--recompute: expected none|selective|full, got '" + *r + "'");
    plan.recompute = *parsed;
  }
  if (const std::optional<std::string> m = args.value("--recompute-modules")) {
    plan.recompute_modules = parse_recompute_modules(*m, "--recompute-modules");
    if (!args.has("--recompute")) // Megatron-Core's recompute_modules act at the selective granularity only
      plan.recompute = Recompute::Selective;
  }
  if (const std::optional<std::string> k = args.value("--attention")) {
    const std::optional<AttentionKernel> parsed = parse_attention(*k);
    if (!parsed)
      throw InputError("--attention: expected unfused|flash, got '" + *k + "'");
    plan.attention = *parsed;
  }
  if (const std::optional<std::string> s = args.value("--schedule")) {
    const std::optional<Schedule> parsed = parse_schedule(*s);
    if (!parsed)
      throw InputError("--schedule: expected 1f1b|interleaved|gpipe, got '" + *s + "'");
    plan.schedule = *parsed;
    if (plan.schedule != Schedule::Interleaved && !args.has("--chunks"))
      plan.chunks = 1; // leaving a --plan paper interleaved plan
  }
  if (const std::optional<int64_t> z = args.integer("--zero")) {
    if (*z < 0 || *z > 3)
      throw InputError("--zero: expected 0, 1, 2 or 3, got " + std::to_string(*z));
    plan.zero_stage = static_cast<int>(*z);
  }
  if (args.has("--fsdp")) {
    if (args.has("--zero") && plan.zero_stage != 3)
      throw InputError("--fsdp: shards the weights, gradients and optimizer states (ZeRO-3), got --zero " +
                       std::to_string(plan.zero_stage) + " (expected --zero 3 or no --zero)");
    plan.fsdp = true;
    plan.zero_stage = 3;
  }
  // FP8 parameters need FP8 GEMMs and the distributed optimizer (Megatron-LM megatron/training/arguments.py:
  // "--fp8-param-gather only supported with distributed optimizer"); with both, on unless turned off, as NeMo's
  // and Megatron-Bridge's FP8 recipe (bf16_with_fp8_mixed: fp8_param_gather = True) runs.
  if (args.has("--fp8-param-gather") && !plan.quantized())
    throw InputError("--fp8-param-gather: needs --fp8 (FP8 weights are TE's FP8 GEMM operands)");
  if (args.has("--fp8-param-gather") && plan.zero_stage < 1)
    throw InputError("--fp8-param-gather: needs --zero 1, 2 or 3 (the distributed optimizer or FSDP keeps the FP32 "
                     "main weights)");
  // NVFP4 gathers quantized weights only when asked: Megatron-LM's --fp4-param-gather is opt-in and
  // Megatron-Bridge's bf16_with_nvfp4_mixed recipe leaves fp8_param_gather False (its bf16_with_mxfp8_mixed sets it
  // True, with reuse_grad_buf_for_mxfp8_param_ag; training/mixed_precision.py).
  plan.fp8_param_gather = plan.quantized() && plan.zero_stage >= 1 && !args.has("--no-fp8-param-gather") &&
                          (plan.precision != GemmPrecision::Nvfp4 || args.has("--fp8-param-gather"));
  read_expert_plan(args, plan);
  split_layers_unevenly_if_needed(args, model, plan);
  // Megatron-Core raises in training with MoE and tp > 1 without SP (moe_layer.py: "performance may degrade if MoE
  // and tensor parallelism are enabled without also enabling sequence parallelism"): on unless --no-sp (plan_notes).
  if (model.moe.enabled() && plan.tp > 1 && !args.has("--no-sp"))
    plan.tp_comm = TpComm::SequenceParallel;
  if (model.moe.enabled() && !args.has("--etp") && (plan.tp * plan.cp * plan.dp) % (plan.ep * plan.tp) != 0)
    plan.etp = 1; // Megatron-Core's default etp = tp leaves no expert grid: experts whole on each rank (plan_notes)
  validate_plan(model, plan);
  return plan;
}

std::vector<std::string> plan_notes(const ParsedArgs& args, const ParallelPlan& plan)
{
  std::vector<std::string> notes;
  if (args.has("--plan")) {
    // What --plan paper set, the fields a flag overrode left out.
    std::string set;
    std::vector<std::string> overridden;
    auto item = [&](const char* flag, const std::string& text) {
      if (args.has(flag))
        overridden.emplace_back(flag);
      else
        set += (set.empty() ? "" : ", ") + text;
    };
    item("--tp", "tp " + std::to_string(plan.tp));
    item("--pp", "pp " + std::to_string(plan.pp));
    item("--dp", "dp " + std::to_string(plan.dp));
    item("--micro-batch", "micro-batch " + std::to_string(plan.micro_batch));
    item("--global-batch", "global batch " + std::to_string(plan.effective_global_batch()));
    item("--schedule", "schedule " + to_string(plan.schedule) +
                           (plan.schedule == Schedule::Interleaved && !args.has("--chunks")
                                ? " x" + std::to_string(plan.chunks) + " chunks"
                                : ""));
    if (args.has("--sp") || args.has("--no-sp"))
      overridden.emplace_back(args.has("--sp") ? "--sp" : "--no-sp");
    else
      set += std::string(set.empty() ? "" : ", ") + "sequence parallelism";
    item("--recompute", "recompute " + to_string(plan.recompute));
    std::string note = "--plan paper (Korthikanti et al. 2022: Table 3's plan, Table 5's SP + selective recompute) "
                       "set " +
                       set;
    if (!overridden.empty()) {
      std::string flags;
      for (const std::string& f : overridden)
        flags += (flags.empty() ? "" : " ") + f;
      note += "; from the flags: " + flags;
    }
    notes.push_back(note);
  } else if (!args.has("--global-batch")) {
    notes.push_back("--global-batch not given: global batch = micro-batch x dp = " + std::to_string(plan.micro_batch) +
                    " x " + std::to_string(plan.dp) + " = " + std::to_string(plan.effective_global_batch()) +
                    " (one micro-batch per pipeline, Megatron-LM's default)");
  }
  if (plan.fp8_param_gather && !args.has("--fp8-param-gather"))
    notes.push_back((plan.fp8() ? std::string("--fp8") : "--precision " + to_string(plan.precision)) +
                    " with --zero " + std::to_string(plan.zero_stage) + ": " +
                    (plan.fp8() ? std::string("FP8") : to_string(plan.precision)) +
                    " parameters (--fp8-param-gather, as NeMo's FP8 recipe runs; "
                    "--no-fp8-param-gather keeps the BF16 weights)");
  if (args.has("--tp-comm-overlap") && plan.tp > 1 && plan.sequence_parallel() && !args.has("--sp") &&
      !args.has("--plan"))
    notes.push_back("--sp not given: on (--tp-comm-overlap overlaps the sequence-parallel all-gather and "
                    "reduce-scatter; Megatron-LM asserts SP with it)");
  else if (plan.ep * plan.expert_tp() > 1 && plan.tp > 1 && plan.sequence_parallel() && !args.has("--sp") &&
           !args.has("--plan"))
    notes.push_back("--sp not given: on (Megatron-Core requires sequence parallelism for MoE layers with tp > 1)");
  if ((plan.pp_first_stage_layers > 0 || plan.pp_last_stage_layers > 0) && !args.has("--pp-first-stage-layers") &&
      !args.has("--pp-last-stage-layers") && !args.has("--plan"))
    notes.push_back("--pp " + std::to_string(plan.pp) + " does not divide the layers: uneven stages, first " +
                    std::to_string(plan.pp_first_stage_layers) + " and last " +
                    std::to_string(plan.pp_last_stage_layers) +
                    " layers, the others an equal share (--pp-first-stage-layers/--pp-last-stage-layers to choose)");
  if (plan.etp == 1 && plan.tp > 1 && !args.has("--etp"))
    notes.push_back("--etp not given: 1 (Megatron-Core's default, etp = tp = " + std::to_string(plan.tp) +
                    ", would need ep x tp = " + std::to_string(plan.ep * plan.tp) + " to divide the tp x cp x dp = " +
                    std::to_string(plan.tp * plan.cp * plan.dp) + " ranks of a stage)");
  notes.insert(notes.end(), args.notes().begin(), args.notes().end()); // what --megatron-args noted
  return notes;
}

std::optional<std::string> pipeline_fill_warning(const ParallelPlan& plan)
{
  const int64_t m = plan.micro_batches();
  if (plan.pp <= 1 || m >= plan.pp)
    return std::nullopt;
  char bubble[32];
  std::snprintf(bubble, sizeof bubble, "%.3g", static_cast<double>(plan.pp - 1) / static_cast<double>(m));
  return std::to_string(m) + " micro-batch" + (m == 1 ? "" : "es") + " per pipeline for " + std::to_string(plan.pp) +
         " pipeline stages: the pipeline never fills (bubble (p - 1)/m = " + bubble +
         " of compute); expected --global-batch of at least micro-batch x dp x pp = " +
         std::to_string(plan.micro_batch * plan.dp * plan.pp);
}

} // namespace gputwin::cli
