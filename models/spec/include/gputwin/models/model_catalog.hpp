#pragma once
// Built-in models: the four GPT configurations of Korthikanti et al. 2022, Table 3, with the parallel plan
// each was measured with (s = 2048, v = 51200, no data parallelism), then Llama 3 and Nemotron-4 with theirs.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <string>
#include <vector>

namespace gputwin {

struct CatalogEntry {
  GptConfig model;
  ParallelPlan paper_plan; // Table 3 plan; recompute and SP are left at their defaults (Table 5 ran both)
  std::string source;
};

// All built-in models, in the order of Table 3.
const std::vector<CatalogEntry>& model_catalog();

// The entry called `name`, or nullptr.
const CatalogEntry* find_catalog_model(const std::string& name);

// "gpt-22b, gpt3-175b, mt-nlg-530b, gpt-1t" for error messages and --help.
std::string catalog_names();

} // namespace gputwin
