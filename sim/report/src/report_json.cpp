#include "gputwin/sim/report_json.hpp"

#include "gputwin/models/parameter_count.hpp"

namespace gputwin::sim {

void write_model_json(JsonWriter& json, const GptConfig& model)
{
  json.key("model");
  json.begin_object();
  json.field("name", model.name);
  json.field("hidden", model.hidden);
  json.field("heads", model.heads);
  json.field("layers", model.layers);
  json.field("seq_len", model.seq_len);
  json.field("vocab", model.vocab);
  json.field("num_query_groups", model.kv_heads());
  json.field("ffn_hidden", model.ffn());
  json.field("activation", to_string(model.activation));
  json.field("norm", to_string(model.norm));
  json.field("position", to_string(model.position));
  json.field("tie_embeddings", model.tie_embeddings);
  json.field("bias", model.bias);
  json.field("dropout", model.dropout);
  json.field("parameters", model_parameters(model, 1)); // the vocabulary unpadded (padding depends on tp)
  if (model.moe.enabled()) {
    json.field("activated_parameters", activated_parameters(model, 1));
    json.field("num_experts", model.moe.experts);
    json.field("moe_router_topk", model.moe.topk);
    json.field("moe_ffn_hidden", model.moe.expert_ffn_hidden);
    json.field("moe_shared_ffn_hidden", model.moe.shared_width());
    json.field("moe_layers", model.moe_layer_count());
  }
  if (model.mla.enabled()) {
    json.field("q_lora_rank", model.mla.q_lora_rank);
    json.field("kv_lora_rank", model.mla.kv_lora_rank);
    json.field("qk_head_dim", model.mla.qk_head_dim());
    json.field("v_head_dim", model.mla.v_head_dim);
  }
  json.end_object();
}

void write_cluster_json(JsonWriter& json, const topo::ClusterSpec& cluster)
{
  json.key("cluster");
  json.begin_object();
  json.field("name", cluster.name);
  json.field("nodes", static_cast<int64_t>(cluster.nodes));
  json.field("gpus_per_node", static_cast<int64_t>(cluster.gpus_per_node));
  json.field("gpus", static_cast<int64_t>(cluster.gpus()));
  json.field("gpu", cluster.gpu.kind);
  json.field("gpu_memory_bytes", cluster.gpu.hbm_bytes);
  json.end_object();
}

void write_plan_json(JsonWriter& json, const ParallelPlan& p)
{
  json.key("plan");
  json.begin_object();
  json.field("tp", p.tp);
  json.field("cp", p.cp);
  json.field("pp", p.pp);
  json.field("dp", p.dp);
  json.field("micro_batch", p.micro_batch);
  json.field("global_batch", p.effective_global_batch());
  json.field("schedule", to_string(p.schedule));
  json.field("chunks", p.chunks);
  json.field("recompute", to_string(p.recompute));
  if (!p.recompute_modules.empty()) // Megatron-Core's --recompute-modules, comma-separated
    json.field("recompute_modules", to_string(p.recompute_modules));
  json.field("sp", p.sequence_parallel());
  json.field("zero", static_cast<int64_t>(p.zero_stage));
  if (p.fsdp) // FSDP2's ZeRO-3 (--fsdp)
    json.field("fsdp", true);
  json.field("attention", to_string(p.attention));
  json.field("pp_first_stage_layers", p.pp_first_stage_layers);
  json.field("pp_last_stage_layers", p.pp_last_stage_layers);
  json.field("fp8", p.fp8());
  if (p.fp8())
    json.field("fp8_recipe", to_string(p.fp8_recipe));
  if (p.quantized() && !p.fp8()) // the block-scaled formats by name; "fp8" keeps its meaning
    json.field("precision", to_string(p.precision));
  if (p.ep > 1 || p.etp > 0) { // a mixture-of-experts plan
    json.field("ep", p.ep);
    json.field("etp", p.expert_tp());
    json.field("moe_dispatcher", to_string(p.dispatcher));
    json.field("moe_capacity_factor", p.capacity_factor);
    json.field("moe_imbalance", p.moe_imbalance_cv);
  }
  json.end_object();
}

void write_overlaps_json(JsonWriter& json, const WorkloadOptions& options)
{
  json.field("tp_comm_overlap", options.tp_comm_overlap);
  json.field("overlap_grad_reduce", options.overlap_grad_reduce);
  json.field("overlap_param_gather", options.overlap_param_gather);
  if (options.moe_a2a_overlap)
    json.field("overlap_moe_expert_parallel_comm", true);
  if (options.moe_shared_expert_overlap)
    json.field("moe_shared_expert_overlap", true);
}

std::string overlaps_text(const WorkloadOptions& options)
{
  std::string text;
  for (const auto& [on, name] : {std::pair{options.tp_comm_overlap, "tp"}, std::pair{options.overlap_grad_reduce, "grad"},
                                 std::pair{options.overlap_param_gather, "param"},
                                 std::pair{options.moe_a2a_overlap, "moe-a2a"},
                                 std::pair{options.moe_shared_expert_overlap, "moe-shared"}})
    if (on)
      text += (text.empty() ? "" : ",") + std::string(name);
  return text.empty() ? "none" : text;
}

} // namespace gputwin::sim
