#include "gputwin/models/recompute_modules.hpp"

#include "gputwin/common/input_error.hpp"

#include <array>
#include <sstream>

namespace gputwin {

namespace {

constexpr std::array<RecomputeModule, 7> all_modules = {
    RecomputeModule::CoreAttn, RecomputeModule::Layernorm, RecomputeModule::MoeAct, RecomputeModule::MlaUpProj,
    RecomputeModule::Mlp,      RecomputeModule::Moe,       RecomputeModule::SharedExperts};

std::string allowed_names()
{
  std::string names;
  for (const RecomputeModule m : all_modules)
    names += (names.empty() ? "" : "|") + to_string(m);
  return names;
}

} // namespace

std::string to_string(RecomputeModule m)
{
  switch (m) {
  case RecomputeModule::CoreAttn: return "core_attn";
  case RecomputeModule::Layernorm: return "layernorm";
  case RecomputeModule::MoeAct: return "moe_act";
  case RecomputeModule::MlaUpProj: return "mla_up_proj";
  case RecomputeModule::Mlp: return "mlp";
  case RecomputeModule::Moe: return "moe";
  case RecomputeModule::SharedExperts: return "shared_experts";
  }
  return "?";
}

std::string to_string(RecomputeModules modules)
{
  std::string s;
  for (const RecomputeModule m : all_modules)
    if (modules.has(m))
      s += (s.empty() ? "" : ",") + to_string(m);
  return s;
}

RecomputeModules parse_recompute_modules(const std::string& text, const std::string& field)
{
  RecomputeModules modules;
  std::stringstream in(text);
  std::string name;
  bool any = false;
  while (std::getline(in, name, ',')) {
    any = true;
    bool known = false;
    for (const RecomputeModule m : all_modules)
      if (name == to_string(m)) {
        modules.add(m);
        known = true;
      }
    if (!known)
      throw InputError(field + ": expected a comma-separated list of " + allowed_names() + ", got '" + name + "'");
  }
  if (!any || text.back() == ',')
    throw InputError(field + ": expected a comma-separated list of " + allowed_names() + ", got '" + text + "'");
  return modules;
}

} // namespace gputwin
