#include "gputwin/models/plan_metadata.hpp"

#include "gputwin/common/input_error.hpp"

#include <charconv>
#include <cstdlib>
#include <optional>

namespace gputwin {

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
    md["activation"] = to_string(model.activation);
    md["norm"] = to_string(model.norm);
    md["position"] = to_string(model.position);
    md["tie_embeddings"] = model.tie_embeddings ? "true" : "false";
    md["bias"] = model.bias ? "true" : "false";
    md["dropout"] = model.dropout ? "true" : "false";
  }
  md["tp"] = std::to_string(p.tp);
  md["pp"] = std::to_string(p.pp);
  md["dp"] = std::to_string(p.dp);
  md["micro_batch"] = std::to_string(p.micro_batch);
  md["global_batch"] = std::to_string(p.effective_global_batch());
  if (p.micro_batch > 0 && p.dp > 0)
    md["micro_batches"] = std::to_string(p.micro_batches());
  md["sequence_parallel"] = p.sequence_parallel() ? "true" : "false";
  md["recompute"] = to_string(p.recompute);
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
  if (p.fp8)
    md["fp8"] = "true";
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
  p.attention = r.choice("attention", parse_attention(r.text("attention").value_or("")), AttentionKernel::Unfused,
                         "unfused|flash");
  p.schedule = r.choice("schedule", parse_schedule(r.text("schedule").value_or("")), Schedule::OneFOneB,
                        "1f1b|interleaved|gpipe");
  p.chunks = r.integer("chunks", 1);
  p.zero_stage = static_cast<int>(r.integer("zero", 0));
  p.cp = r.integer("cp", 1);
  p.pp_first_stage_layers = r.integer("pp_first_stage_layers", 0);
  p.pp_last_stage_layers = r.integer("pp_last_stage_layers", 0);
  p.fp8 = r.boolean("fp8", false);
  p.fsdp = r.boolean("fsdp", false);
  p.fp8_param_gather = r.boolean("fp8_param_gather", false);
  p.grad_reduce_bf16 = r.boolean("grad_reduce_bf16", false);
  p.cross_entropy_fusion = r.boolean("cross_entropy_fusion", false);
  return out;
}

} // namespace gputwin
