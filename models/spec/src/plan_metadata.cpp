#include "gputwin/models/plan_metadata.hpp"

#include "gputwin/common/input_error.hpp"

#include <charconv>
#include <cstdlib>
#include <optional>

namespace gputwin {

namespace {

std::string shortest(double v)
{
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  return ec == std::errc() ? std::string(text, end) : std::to_string(v);
}

// The mixture-of-experts and MLA fields of the model and the expert plan (only for a model that has them).
void write_moe_metadata(const GptConfig& model, const ParallelPlan& p, Metadata& md)
{
  if (model.mla.enabled()) {
    md["q_lora_rank"] = std::to_string(model.mla.q_lora_rank);
    md["kv_lora_rank"] = std::to_string(model.mla.kv_lora_rank);
    md["qk_nope_head_dim"] = std::to_string(model.mla.qk_nope_head_dim);
    md["qk_rope_head_dim"] = std::to_string(model.mla.qk_rope_head_dim);
    md["v_head_dim"] = std::to_string(model.mla.v_head_dim);
  }
  if (!model.moe.enabled())
    return;
  const MoeConfig& m = model.moe;
  md["num_experts"] = std::to_string(m.experts);
  md["moe_router_topk"] = std::to_string(m.topk);
  md["moe_ffn_hidden"] = std::to_string(m.expert_ffn_hidden);
  md["moe_shared_experts"] = std::to_string(m.shared_experts);
  md["moe_shared_ffn_hidden"] = std::to_string(m.shared_ffn_hidden);
  md["moe_dense_first_layers"] = std::to_string(m.dense_first_layers);
  md["moe_layer_period"] = std::to_string(m.layer_period);
  md["moe_router"] = to_string(m.router);
  md["moe_router_groups"] = std::to_string(m.router_groups);
  md["moe_router_group_topk"] = std::to_string(m.router_group_topk);
  md["moe_aux_loss"] = m.aux_loss ? "true" : "false";
  md["mtp_layers"] = std::to_string(m.mtp_layers);
  md["ep"] = std::to_string(p.ep);
  md["etp"] = std::to_string(p.expert_tp());
  md["moe_dispatcher"] = to_string(p.dispatcher);
  md["moe_capacity_factor"] = shortest(p.capacity_factor);
  md["moe_imbalance"] = shortest(p.moe_imbalance_cv);
  md["moe_seed"] = std::to_string(p.moe_seed);
}

} // namespace

void write_plan_metadata(const GptConfig& model, const ParallelPlan& p, Metadata& md)
{
  md["model"] = model.name;
  md["hidden"] = std::to_string(model.hidden);
  md["heads"] = std::to_string(model.heads);
  md["layers"] = std::to_string(model.layers);
  md["seq_len"] = std::to_string(model.seq_len);
  md["vocab"] = std::to_string(model.vocab);
  if (!model.gpt_architecture()) { // (a GPT's metadata stays as it was)
    md["num_query_groups"] = std::to_string(model.kv_heads());
    md["ffn_hidden"] = std::to_string(model.ffn());
    if (model.head_size > 0)
      md["head_size"] = std::to_string(model.head_size);
    md["activation"] = to_string(model.activation);
    md["norm"] = to_string(model.norm);
    md["position"] = to_string(model.position);
    md["tie_embeddings"] = model.tie_embeddings ? "true" : "false";
    md["bias"] = model.bias ? "true" : "false";
    md["dropout"] = model.dropout ? "true" : "false";
  }
  write_moe_metadata(model, p, md);
  md["tp"] = std::to_string(p.tp);
  md["pp"] = std::to_string(p.pp);
  md["dp"] = std::to_string(p.dp);
  md["micro_batch"] = std::to_string(p.micro_batch);
  md["global_batch"] = std::to_string(p.effective_global_batch());
  if (p.micro_batch > 0 && p.dp > 0)
    md["micro_batches"] = std::to_string(p.micro_batches());
  md["sequence_parallel"] = p.sequence_parallel() ? "true" : "false";
  md["recompute"] = to_string(p.recompute);
  if (!p.recompute_modules.empty())
    md["recompute_modules"] = to_string(p.recompute_modules);
  md["attention"] = to_string(p.attention);
  md["schedule"] = to_string(p.schedule);
  md["chunks"] = std::to_string(p.schedule == Schedule::Interleaved ? p.chunks : 1);
  md["zero"] = std::to_string(p.zero_stage);
  if (p.cp > 1)
    md["cp"] = std::to_string(p.cp);
  if (p.pp_first_stage_layers > 0)
    md["pp_first_stage_layers"] = std::to_string(p.pp_first_stage_layers);
  if (p.pp_last_stage_layers > 0)
    md["pp_last_stage_layers"] = std::to_string(p.pp_last_stage_layers);
  if (p.current_scaling()) // delayed scaling, the default, is not written
    md["fp8_recipe"] = to_string(p.fp8_recipe);
  if (p.precision == GemmPrecision::Fp8) // FP8 as it was written before the block-scaled formats; those by name
    md["fp8"] = "true";
  else if (p.quantized())
    md["precision"] = to_string(p.precision);
  if (p.fsdp)
    md["fsdp"] = "true";
  if (p.fp8_param_gather)
    md["fp8_param_gather"] = "true";
  if (p.grad_reduce_bf16)
    md["grad_reduce_bf16"] = "true";
  if (p.cross_entropy_fusion)
    md["cross_entropy_fusion"] = "true";
}

namespace {

class Reader {
public:
  Reader(const Metadata& md, const std::string& what) : md_(md), what_(what) {}

  std::optional<std::string> text(const char* key) const
  {
    const auto it = md_.find(key);
    return it == md_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }

  int64_t integer(const char* key, std::optional<int64_t> fallback = std::nullopt) const
  {
    const std::optional<std::string> value = text(key);
    if (!value) {
      if (fallback)
        return *fallback;
      throw InputError(what_ + ": the metadata has no '" + key + "' (expected the model and plan of the run)");
    }
    int64_t out = 0;
    const char* end = value->data() + value->size();
    const auto [ptr, ec] = std::from_chars(value->data(), end, out);
    if (ec != std::errc() || ptr != end)
      throw InputError(what_ + ": the metadata's '" + key + "' is not an integer: '" + *value + "'");
    return out;
  }

  template <typename T>
  T choice(const char* key, const std::optional<T>& parsed, T fallback, const char* expected) const
  {
    const std::optional<std::string> value = text(key);
    if (!value)
      return fallback;
    if (!parsed)
      throw InputError(what_ + ": the metadata's '" + key + "' is '" + *value + "' (expected " + expected + ")");
    return *parsed;
  }

  double number(const char* key, double fallback) const
  {
    const std::optional<std::string> value = text(key);
    if (!value)
      return fallback;
    double out = 0;
    const char* end = value->data() + value->size();
    const auto [ptr, ec] = std::from_chars(value->data(), end, out);
    if (ec != std::errc() || ptr != end)
      throw InputError(what_ + ": the metadata's '" + key + "' is not a number: '" + *value + "'");
    return out;
  }

  bool boolean(const char* key, bool fallback) const
  {
    const std::optional<std::string> value = text(key);
    if (!value)
      return fallback;
    if (*value != "true" && *value != "false")
      throw InputError(what_ + ": the metadata's '" + key + "' is '" + *value + "' (expected true|false)");
    return *value == "true";
  }

private:
  const Metadata& md_;
  const std::string& what_;
};

// The fields write_moe_metadata writes (absent: a dense model, MHA/GQA).
void read_moe_metadata(const Reader& r, PlanMetadata& out)
{
  MlaConfig& a = out.model.mla;
  a.q_lora_rank = r.integer("q_lora_rank", 0);
  a.kv_lora_rank = r.integer("kv_lora_rank", 0);
  a.qk_nope_head_dim = r.integer("qk_nope_head_dim", 0);
  a.qk_rope_head_dim = r.integer("qk_rope_head_dim", 0);
  a.v_head_dim = r.integer("v_head_dim", 0);
  MoeConfig& m = out.model.moe;
  m.experts = r.integer("num_experts", 0);
  if (m.experts == 0)
    return;
  m.topk = r.integer("moe_router_topk");
  m.expert_ffn_hidden = r.integer("moe_ffn_hidden");
  m.shared_experts = r.integer("moe_shared_experts", 0);
  m.shared_ffn_hidden = r.integer("moe_shared_ffn_hidden", 0);
  m.dense_first_layers = r.integer("moe_dense_first_layers", 0);
  m.layer_period = r.integer("moe_layer_period", 1);
  const std::optional<std::string> router = r.text("moe_router");
  if (router && *router != "softmax" && *router != "sigmoid")
    throw InputError("metadata: 'moe_router' is '" + *router + "' (expected softmax|sigmoid)");
  m.router = router == "sigmoid" ? RouterScore::Sigmoid : RouterScore::Softmax;
  m.router_groups = r.integer("moe_router_groups", 0);
  m.router_group_topk = r.integer("moe_router_group_topk", 0);
  m.aux_loss = r.boolean("moe_aux_loss", true);
  m.mtp_layers = r.integer("mtp_layers", 0);
  ParallelPlan& p = out.plan;
  p.ep = r.integer("ep", 1);
  p.etp = r.integer("etp", 0);
  p.dispatcher = r.choice("moe_dispatcher", parse_moe_dispatcher(r.text("moe_dispatcher").value_or("")),
                          MoeDispatcher::AllToAll, "alltoall|allgather|deepep");
  p.capacity_factor = r.number("moe_capacity_factor", 0);
  p.moe_imbalance_cv = r.number("moe_imbalance", 0);
  p.moe_seed = static_cast<uint64_t>(r.integer("moe_seed", 1));
}

} // namespace

PlanMetadata read_plan_metadata(const Metadata& md, const std::string& what)
{
  const Reader r(md, what);
  PlanMetadata out;
  GptConfig& m = out.model;
  m.name = r.text("model").value_or("traced");
  m.hidden = r.integer("hidden");
  m.heads = r.integer("heads");
  m.layers = r.integer("layers");
  m.seq_len = r.integer("seq_len");
  m.vocab = r.integer("vocab");
  m.query_groups = r.integer("num_query_groups", 0);
  m.ffn_hidden = r.integer("ffn_hidden", 0);
  m.head_size = r.integer("head_size", 0);
  m.activation = r.choice("activation", parse_activation(r.text("activation").value_or("")), Activation::Gelu,
                          "gelu|swiglu|squared-relu");
  m.norm = r.choice("norm", parse_norm(r.text("norm").value_or("")), Norm::LayerNorm, "layernorm|rmsnorm");
  m.position = r.choice("position", parse_position(r.text("position").value_or("")), PositionEmbedding::Learned,
                        "learned|rope");
  m.tie_embeddings = r.boolean("tie_embeddings", true);
  m.bias = r.boolean("bias", true);
  // The engine writes its dropout probability under the same key ("0.1", "0"): a number > 0 is dropout on.
  if (const std::optional<std::string> text = r.text("dropout"); text && *text != "true" && *text != "false") {
    char* end = nullptr;
    const double p_drop = std::strtod(text->c_str(), &end);
    if (end == text->c_str() || *end != '\0' || !(p_drop >= 0 && p_drop < 1))
      throw InputError(what + ": the metadata's 'dropout' is '" + *text +
                       "' (expected true|false or a probability in [0, 1))");
    m.dropout = p_drop > 0;
  } else {
    m.dropout = r.boolean("dropout", true);
  }
  ParallelPlan& p = out.plan;
  p.tp = r.integer("tp");
  p.pp = r.integer("pp");
  p.dp = r.integer("dp");
  p.micro_batch = r.integer("micro_batch");
  p.global_batch = r.integer("global_batch");
  const std::optional<std::string> sp = r.text("sequence_parallel");
  if (sp && *sp != "true" && *sp != "false")
    throw InputError(what + ": the metadata's 'sequence_parallel' is '" + *sp + "' (expected true|false)");
  p.tp_comm = sp == "true" ? TpComm::SequenceParallel : TpComm::AllReduce;
  p.recompute = r.choice("recompute", parse_recompute(r.text("recompute").value_or("")), Recompute::None,
                         "none|selective|full");
  if (const std::optional<std::string> modules = r.text("recompute_modules"))
    p.recompute_modules = parse_recompute_modules(*modules, what + ": the metadata's 'recompute_modules'");
  p.attention = r.choice("attention", parse_attention(r.text("attention").value_or("")), AttentionKernel::Unfused,
                         "unfused|flash");
  p.schedule = r.choice("schedule", parse_schedule(r.text("schedule").value_or("")), Schedule::OneFOneB,
                        "1f1b|interleaved|gpipe");
  p.chunks = r.integer("chunks", 1);
  p.zero_stage = static_cast<int>(r.integer("zero", 0));
  p.cp = r.integer("cp", 1);
  p.pp_first_stage_layers = r.integer("pp_first_stage_layers", 0);
  p.pp_last_stage_layers = r.integer("pp_last_stage_layers", 0);
  if (r.boolean("fp8", false))
    p.precision = GemmPrecision::Fp8;
  if (r.text("precision"))
    p.precision = r.choice("precision", parse_gemm_precision(*r.text("precision")), GemmPrecision::Bf16,
                           "bf16|fp8|mxfp8|nvfp4");
  if (r.text("fp8_recipe"))
    p.fp8_recipe = r.choice("fp8_recipe", parse_fp8_recipe(*r.text("fp8_recipe")), Fp8Recipe::Delayed,
                            "delayed|tensorwise");
  p.fsdp = r.boolean("fsdp", false);
  p.fp8_param_gather = r.boolean("fp8_param_gather", false);
  p.grad_reduce_bf16 = r.boolean("grad_reduce_bf16", false);
  p.cross_entropy_fusion = r.boolean("cross_entropy_fusion", false);
  read_moe_metadata(r, out);
  return out;
}

} // namespace gputwin
