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
} // namespace

const std::vector<CatalogEntry>& model_catalog()
{
  // Table 3. 175B and 530B ran the interleaved schedule with 3 model chunks per stage (paper, Section 6).
  static const std::vector<CatalogEntry> catalog = {
      entry("gpt-22b", 64, 6144, 48, 8, 1, 4, 4, Schedule::OneFOneB, 1),
      entry("gpt3-175b", 96, 12288, 96, 8, 8, 64, 1, Schedule::Interleaved, 3),
      entry("mt-nlg-530b", 128, 20480, 105, 8, 35, 280, 1, Schedule::Interleaved, 3),
      entry("gpt-1t", 160, 25600, 128, 8, 64, 512, 1, Schedule::OneFOneB, 1),
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
