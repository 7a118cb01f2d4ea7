#include "gputwin/models/model_catalog.hpp"

namespace gputwin {

namespace {
CatalogEntry entry(const char* name, int64_t heads, int64_t hidden, int64_t layers, int64_t tp, int64_t pp,
                   int64_t global_batch, int64_t micro_batch, Schedule schedule, int64_t chunks)
{
  CatalogEntry e;
  e.model = GptConfig{name, hidden, heads, layers, /*seq_len=*/2048, /*vocab=*/51200};
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
  GptConfig m{name, hidden, heads, layers, seq, vocab};
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
} // namespace

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
  return catalog;
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
