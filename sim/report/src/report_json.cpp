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

} // namespace gputwin::sim
