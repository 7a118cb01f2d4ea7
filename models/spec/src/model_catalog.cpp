#include "gputwin/models/model_catalog.hpp"

namespace gputwin {

namespace {
CatalogEntry entry(const char* name, int64_t heads, int64_t hidden, int64_t layers, int64_t tp, int64_t pp,
                   int64_t global_batch, int64_t micro_batch, Schedule schedule, int64_t chunks)
{
  CatalogEntry e;
  e.model.name = name;
  e.model.hidden = hidden;
  e.model.heads = heads;
  e.model.layers = layers;
  e.model.seq_len = 2048;
  e.model.vocab = 51200;
  e.paper_plan.tp = tp;
  e.paper_plan.pp = pp;
  e.paper_plan.dp = 1;
  e.paper_plan.global_batch = global_batch;
  e.paper_plan.micro_batch = micro_batch;
  e.paper_plan.schedule = schedule;
  e.paper_plan.chunks = chunks;
  e.source = "Korthikanti et al. 2022 (arXiv 2205.05198), Table 3";
  return e;
}
// Today's decoder layer (Llama 3, Nemotron-4): grouped-query attention with 8 K/V heads, RoPE, untied embeddings,
// no biases, no dropout; the activation and norm are the model's own.
GptConfig gqa_rope_model(const char* name, int64_t hidden, int64_t heads, int64_t layers, int64_t ffn, int64_t seq,
                         int64_t vocab, Activation activation, Norm norm)
{
  GptConfig m;
  m.name = name;
  m.hidden = hidden;
  m.heads = heads;
  m.layers = layers;
  m.seq_len = seq;
  m.vocab = vocab;
  m.query_groups = 8;
  m.ffn_hidden = ffn;
  m.activation = activation;
  m.norm = norm;
  m.position = PositionEmbedding::Rope;
  m.tie_embeddings = false;
  m.bias = false;
  m.dropout = false;
  return m;
}

// Llama 3 (Grattafiori et al. 2024, "The Llama 3 Herd of Models", Table 3): grouped-query attention with 8 K/V
// heads, SwiGLU, RMSNorm, RoPE, untied embeddings, no biases, no dropout, vocabulary 128256, sequence 8192.
// Their plan: the 405B run's TP 8, PP 16 with the first and last stage one layer lighter (Section 3.3.2), on
// H100s; the smaller ones with TP 8 (70B: PP 4), global batch 2048 sequences.
CatalogEntry llama3(const char* name, int64_t hidden, int64_t heads, int64_t layers, int64_t ffn, int64_t tp,
                    int64_t pp, int64_t first_last)
{
  CatalogEntry e;
  e.model = gqa_rope_model(name, hidden, heads, layers, ffn, /*seq=*/8192, /*vocab=*/128256, Activation::SwiGlu,
                           Norm::RmsNorm);
  e.paper_plan.tp = tp;
  e.paper_plan.pp = pp;
  e.paper_plan.dp = 1;
  e.paper_plan.micro_batch = 1;
  e.paper_plan.global_batch = 16 * pp;
  e.paper_plan.attention = AttentionKernel::Flash;
  e.paper_plan.pp_first_stage_layers = first_last;
  e.paper_plan.pp_last_stage_layers = first_last;
  e.source = "Grattafiori et al. 2024 (arXiv 2407.21783), Table 3 and Section 3.3";
  return e;
}
// Nemotron-4 (Parmar et al. 2024, arXiv 2402.16819, Table 1; NVIDIA 2024, arXiv 2406.11704, Table 1): grouped-query
// attention with 8 K/V heads, squared-ReLU MLP, RoPE, no biases, no dropout, untied embeddings, vocabulary 256000,
// sequence 4096. Its norm is NeMo's `layernorm1p`: LayerNorm with zero-centered gamma (gamma stored as gamma - 1),
// the same parameters and kernels as LayerNorm. The plan is NeMo's recipe on H100 (15B: TP 4, micro-batch 4;
// 340B: TP 8, PP 8, 12 virtual stages), one data-parallel replica.
CatalogEntry nemotron4(const char* name, int64_t hidden, int64_t heads, int64_t layers, int64_t ffn, int64_t tp,
                       int64_t pp, int64_t chunks, int64_t micro_batch, int64_t global_batch)
{
  CatalogEntry e;
  e.model = gqa_rope_model(name, hidden, heads, layers, ffn, /*seq=*/4096, /*vocab=*/256000, Activation::SquaredRelu,
                           Norm::LayerNorm);
  e.paper_plan.tp = tp;
  e.paper_plan.pp = pp;
  e.paper_plan.dp = 1;
  e.paper_plan.micro_batch = micro_batch;
  e.paper_plan.global_batch = global_batch;
  e.paper_plan.schedule = chunks > 1 ? Schedule::Interleaved : Schedule::OneFOneB;
  e.paper_plan.chunks = chunks;
  e.paper_plan.attention = AttentionKernel::Flash;
  e.source = "Parmar et al. 2024 (arXiv 2402.16819) and NVIDIA 2024 (arXiv 2406.11704), Table 1";
  return e;
}
// A mixture-of-experts decoder of today (gated SiLU MLPs, RMSNorm, RoPE, untied embeddings, no biases, no dropout):
// `kv_heads` K/V heads, E experts top-k of width F_e; the dense MLP width F is that of the dense layers (or of the
// model's dense twin: used only where a layer is dense). seq_len 4096, the pre-training sequence of DeepSeek-V3
// (arXiv:2412.19437, Section 4.2) used for all (the configs' max_position_embeddings is a context limit, not a
// training length). The plan is a single-node starting point (tp 1, ep 8, dp 8, flash attention, 1F1B).
CatalogEntry moe_model(const char* name, int64_t hidden, int64_t heads, int64_t kv_heads, int64_t layers, int64_t ffn,
                       int64_t vocab, int64_t experts, int64_t topk, int64_t expert_ffn, const char* source)
{
  CatalogEntry e;
  e.model = gqa_rope_model(name, hidden, heads, layers, ffn, /*seq=*/4096, vocab, Activation::SwiGlu, Norm::RmsNorm);
  e.model.query_groups = kv_heads;
  e.model.moe.experts = experts;
  e.model.moe.topk = topk;
  e.model.moe.expert_ffn_hidden = expert_ffn;
  e.paper_plan.dp = 8;
  e.paper_plan.ep = 8;
  e.paper_plan.micro_batch = 1;
  e.paper_plan.global_batch = 64;
  e.paper_plan.attention = AttentionKernel::Flash;
  e.source = source;
  return e;
}
// DeepSeek-V2/V3: multi-head latent attention (q_lora 1536, kv_lora 512, nope 128, rope 64, v 128), group-limited
// routing, shared experts, the first layers dense.
CatalogEntry deepseek(const char* name, int64_t hidden, int64_t layers, int64_t ffn, int64_t vocab, int64_t experts,
                      int64_t topk, int64_t expert_ffn, int64_t shared, int64_t dense_first, int64_t group_topk,
                      RouterScore router, int64_t mtp, const char* source)
{
  CatalogEntry e = moe_model(name, hidden, /*heads=*/128, /*kv_heads=*/128, layers, ffn, vocab, experts, topk,
                             expert_ffn, source);
  e.model.query_groups = 0;
  e.model.moe.shared_experts = shared;
  e.model.moe.dense_first_layers = dense_first;
  e.model.moe.router = router;
  e.model.moe.router_groups = 8;
  e.model.moe.router_group_topk = group_topk;
  e.model.moe.aux_loss = router == RouterScore::Softmax; // V3: auxiliary-loss-free balancing (bias per expert)
  e.model.moe.mtp_layers = mtp;
  e.model.mla = MlaConfig{/*q_lora_rank=*/1536, /*kv_lora_rank=*/512, /*qk_nope_head_dim=*/128,
                          /*qk_rope_head_dim=*/64, /*v_head_dim=*/128};
  return e;
}
} // namespace

// The mixture-of-experts models, each from its published config.json (HuggingFace model card) or release code.
static std::vector<CatalogEntry> moe_catalog()
{
  std::vector<CatalogEntry> moe;
  // mistralai/Mixtral-8x7B-v0.1 config.json: hidden_size 4096, intermediate_size 14336, num_attention_heads 32,
  // num_key_value_heads 8, num_hidden_layers 32, num_local_experts 8, num_experts_per_tok 2, vocab_size 32000.
  // Published: 46.7B total, 12.9B active (mistral.ai/news/mixtral-of-experts).
  moe.push_back(moe_model("mixtral-8x7b", 4096, 32, 8, 32, 14336, 32000, 8, 2, 14336,
                          "mistralai/Mixtral-8x7B-v0.1 config.json"));
  // mistralai/Mixtral-8x22B-v0.1 config.json: hidden_size 6144, intermediate_size 16384, heads 48, KV heads 8,
  // layers 56, 8 experts top-2, vocab_size 32000. Published: 141B total, 39B active.
  moe.push_back(moe_model("mixtral-8x22b", 6144, 48, 8, 56, 16384, 32000, 8, 2, 16384,
                          "mistralai/Mixtral-8x22B-v0.1 config.json"));
  // Qwen/Qwen3-30B-A3B config.json: hidden_size 2048, intermediate_size 6144, moe_intermediate_size 768, heads 32,
  // KV heads 4, head_dim 128 (queries 4096 wide over hidden 2048), layers 48, num_experts 128, num_experts_per_tok 8,
  // vocab_size 151936, untied. Not counted: the per-head query/key RMSNorms (2 x 128 parameters a layer, 12,288 in
  // all; GptConfig has no such norm). Published: 30.5B total, 3.3B activated.
  CatalogEntry qwen3_30b = moe_model("qwen3-30b-a3b", 2048, 32, 4, 48, 6144, 151936, 128, 8, 768,
                                     "Qwen/Qwen3-30B-A3B config.json");
  qwen3_30b.model.head_size = 128;
  moe.push_back(qwen3_30b);
  // Qwen/Qwen3-235B-A22B config.json: hidden_size 4096, intermediate_size 12288, moe_intermediate_size 1536, heads
  // 64, KV heads 4, head_dim 128 (queries 8192 wide), layers 94, 128 experts top-8, vocab_size 151936, untied. The
  // query/key norms (2 x 128 a layer, 24,064 in all) are not counted, as above. Published: 235B total, 22B activated.
  CatalogEntry qwen3_235b = moe_model("qwen3-235b-a22b", 4096, 64, 4, 94, 12288, 151936, 128, 8, 1536,
                                      "Qwen/Qwen3-235B-A22B config.json");
  qwen3_235b.model.head_size = 128;
  moe.push_back(qwen3_235b);
  // deepseek-ai/DeepSeek-V2 config.json: hidden_size 5120, intermediate_size 12288, moe_intermediate_size 1536,
  // layers 60, heads 128, n_routed_experts 160, n_shared_experts 2, num_experts_per_tok 6, first_k_dense_replace 1,
  // n_group 8, topk_group 3, scoring_func softmax, q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128,
  // qk_rope_head_dim 64, v_head_dim 128, vocab_size 102400. Published: 236B total, 21B activated (arXiv:2405.04434).
  moe.push_back(deepseek("deepseek-v2", 5120, 60, 12288, 102400, 160, 6, 1536, 2, 1, 3, RouterScore::Softmax, 0,
                         "deepseek-ai/DeepSeek-V2 config.json"));
  // deepseek-ai/DeepSeek-V3 config.json: hidden_size 7168, intermediate_size 18432, moe_intermediate_size 2048,
  // layers 61, heads 128, n_routed_experts 256, n_shared_experts 1, num_experts_per_tok 8, first_k_dense_replace 3,
  // n_group 8, topk_group 4, scoring_func sigmoid, num_nextn_predict_layers 1, the MLA ranks of V2, vocab_size 129280.
  // Published: 671B total (+ 14B MTP), 37B activated (arXiv:2412.19437).
  moe.push_back(deepseek("deepseek-v3", 7168, 61, 18432, 129280, 256, 8, 2048, 1, 3, 4, RouterScore::Sigmoid, 1,
                         "deepseek-ai/DeepSeek-V3 config.json"));
  // meta-llama/Llama-4-Maverick-17B-128E config.json text_config: hidden_size 5120, intermediate_size 8192 (expert
  // and shared expert), intermediate_size_mlp 16384 (dense layers), heads 40, KV heads 8, head_dim 128, layers 48,
  // num_local_experts 128, num_experts_per_tok 1, interleave_moe_layer_step 2 (layers 1, 3, ... MoE), vocab_size
  // 202048. APPROXIMATED: chunked attention (8192) and the no-RoPE layers are modelled as full causal RoPE
  // attention. Published: 400B total, 17B active.
  CatalogEntry maverick = moe_model("llama4-maverick", 5120, 40, 8, 48, 16384, 202048, 128, 1, 8192,
                                    "meta-llama/Llama-4-Maverick-17B-128E config.json (text_config)");
  maverick.model.moe.shared_experts = 1;
  maverick.model.moe.layer_period = 2;
  maverick.model.moe.router = RouterScore::Sigmoid;
  moe.push_back(maverick);
  // openai/gpt-oss-120b config.json: hidden_size 2880, intermediate_size 2880, heads 64, KV heads 8, head_dim 64
  // (queries 4096 wide over hidden 2880), layers 36, num_local_experts 128, num_experts_per_tok 4, vocab_size 201088,
  // attention_bias true (q/k/v and o: counted), biases on the experts (counted) and the router (128 a layer, not
  // counted: gputwin's router has none). APPROXIMATED: the attention sinks (64 a layer, not counted) and the
  // 128-token sliding window on every other layer (modelled as full causal attention) are not modelled.
  // Published: 116.8B total, 5.1B active (openai.com gpt-oss model card).
  CatalogEntry oss = moe_model("gpt-oss-120b", 2880, 64, 8, 36, 2880, 201088, 128, 4, 2880,
                               "openai/gpt-oss-120b config.json");
  oss.model.head_size = 64;
  oss.model.bias = true;
  moe.push_back(oss);
  // xai-org/grok-1 (model.py / run.py): emb_size 6144, num_q_heads 48, num_kv_heads 8, key_size 128, num_layers 64,
  // widening_factor 8 (a gated GeLU MLP of width 32768, counted as the gated SwiGLU: the same shapes), 8 experts
  // top-2, vocab_size 131072, the output tied to the embedding. Published: 314B total.
  CatalogEntry grok = moe_model("grok-1", 6144, 48, 8, 64, 32768, 131072, 8, 2, 32768, "xai-org/grok-1 model.py");
  grok.model.tie_embeddings = true;
  grok.model.seq_len = 8192; // the sequence of the Grok-1 step-time measurements (../shared/data/moe-calibration)
  moe.push_back(grok);
  return moe;
}

const std::vector<CatalogEntry>& model_catalog()
{
  // Table 3. 175B and 530B ran the interleaved schedule with 3 model chunks per stage (paper, Section 6).
  static const std::vector<CatalogEntry> catalog = {
      entry("gpt-22b", 64, 6144, 48, 8, 1, 4, 4, Schedule::OneFOneB, 1),
      entry("gpt3-175b", 96, 12288, 96, 8, 8, 64, 1, Schedule::Interleaved, 3),
      entry("mt-nlg-530b", 128, 20480, 105, 8, 35, 280, 1, Schedule::Interleaved, 3),
      entry("gpt-1t", 160, 25600, 128, 8, 64, 512, 1, Schedule::OneFOneB, 1),
      llama3("llama3-8b", 4096, 32, 32, 14336, 8, 1, 0),
      llama3("llama3-70b", 8192, 64, 80, 28672, 8, 4, 0),
      llama3("llama3-405b", 16384, 128, 126, 53248, 8, 16, 7),
      nemotron4("nemotron4-15b", 6144, 48, 32, 24576, 4, 1, 1, 4, 16),
      nemotron4("nemotron4-340b", 18432, 96, 96, 73728, 8, 8, 12, 1, 16),
  };
  static const std::vector<CatalogEntry> with_moe = [] {
    std::vector<CatalogEntry> all = catalog;
    for (CatalogEntry& e : moe_catalog())
      all.push_back(std::move(e));
    return all;
  }();
  return with_moe;
}

const CatalogEntry* find_catalog_model(const std::string& name)
{
  for (const CatalogEntry& e : model_catalog())
    if (e.model.name == name)
      return &e;
  return nullptr;
}

std::string catalog_names()
{
  std::string names;
  for (const CatalogEntry& e : model_catalog())
    names += (names.empty() ? "" : ", ") + e.model.name;
  return names;
}

} // namespace gputwin
