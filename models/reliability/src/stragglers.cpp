#include "gputwin/models/stragglers.hpp"

#include "gputwin/common/input_error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace gputwin {

namespace {

// A factor as "%g" (1e-300, 0.25).
std::string format_factor(double factor)
{
  char text[32];
  std::snprintf(text, sizeof text, "%g", factor);
  return text;
}

// "INDEX=FACTOR" -> (index, factor); `what` names the index ("RANK", "NODE") in messages.
std::pair<int64_t, double> parse_index_factor(const std::string& flag, const std::string& text, const char* what)
{
  const std::string expected = flag + ": expected " + what + "=FACTOR (FACTOR in (0, 1], the fraction of normal speed)";
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError(expected + ", got '" + text + "'");
  const std::string index_text = text.substr(0, eq), factor_text = text.substr(eq + 1);
  if (index_text.find_first_not_of("0123456789") != std::string::npos)
    throw InputError(expected + ", got '" + text + "'");
  const int64_t index = cli::parse_integer(flag, index_text);
  double factor = 0;
  try {
    factor = cli::parse_number(flag, factor_text); // decimal only: no "0x1", "inf", "nan", leading space
  } catch (const InputError&) {
    throw InputError(expected + ", got '" + text + "'");
  }
  if (factor <= 0 || factor > 1)
    throw InputError(flag + " " + text +
                     ": FACTOR must be in (0, 1], the fraction of normal speed (0.5 = half speed), got " + factor_text);
  if (factor < min_straggler_factor)
    throw InputError(flag + " " + text + ": FACTOR below the floor of 1e-06 of normal speed (kernels 10^6 times as "
                                         "long)");
  return {index, factor};
}

} // namespace

SlowGpu parse_slow_gpu(const std::string& flag, const std::string& text)
{
  const auto [rank, factor] = parse_index_factor(flag, text, "RANK");
  return {rank, factor};
}

SlowNode parse_slow_node(const std::string& flag, const std::string& text)
{
  const auto [node, factor] = parse_index_factor(flag, text, "NODE");
  return {node, factor};
}

RankSpeeds rank_speeds(const Stragglers& stragglers, int64_t job_gpus, int64_t gpus_per_node)
{
  const int64_t job_nodes = (job_gpus + gpus_per_node - 1) / gpus_per_node;
  std::map<int64_t, double> node_factor, gpu_factor;
  for (const SlowNode& n : stragglers.nodes) {
    if (n.node < 0 || n.node >= job_nodes)
      throw InputError("--slow-node: node " + std::to_string(n.node) + " is not in the job (nodes 0-" +
                       std::to_string(job_nodes - 1) + " hold its " + std::to_string(job_gpus) + " GPUs)");
    if (!node_factor.emplace(n.node, n.factor).second)
      throw InputError("--slow-node: node " + std::to_string(n.node) + " given twice");
  }
  for (const SlowGpu& g : stragglers.gpus) {
    if (g.rank < 0 || g.rank >= job_gpus)
      throw InputError("--slow-gpu: rank " + std::to_string(g.rank) + " is not in the job (ranks 0-" +
                       std::to_string(job_gpus - 1) + ")");
    if (!gpu_factor.emplace(g.rank, g.factor).second)
      throw InputError("--slow-gpu: rank " + std::to_string(g.rank) + " given twice");
  }
  RankSpeeds speeds;
  for (const auto& [node, factor] : node_factor)
    for (int64_t r = node * gpus_per_node; r < std::min(job_gpus, (node + 1) * gpus_per_node); ++r)
      speeds[static_cast<int32_t>(r)] = factor;
  for (const auto& [rank, factor] : gpu_factor) {
    const auto it = speeds.find(static_cast<int32_t>(rank));
    const double speed = it == speeds.end() ? factor : it->second * factor;
    if (speed < min_straggler_factor) // kernels would take over 10^6 times as long (or the product underflows)
      throw InputError("--slow-gpu: rank " + std::to_string(rank) + " runs at GPU factor x node factor = " +
                       format_factor(speed) + ", below the floor of 1e-06 of normal speed");
    speeds[static_cast<int32_t>(rank)] = speed;
  }
  for (auto it = speeds.begin(); it != speeds.end();)
    it = it->second == 1.0 ? speeds.erase(it) : std::next(it);
  return speeds;
}

} // namespace gputwin

namespace gputwin::cli {

void add_straggler_flags(ArgParser& parser)
{
  parser.add_option("--slow-gpu", "RANK=FACTOR",
                    "GPU RANK computes at FACTOR (0 < FACTOR <= 1) of its normal speed: every kernel takes "
                    "time / FACTOR (repeatable; sim/README.md \"Stragglers\")",
                    true);
  parser.add_option("--slow-node", "NODE=FACTOR",
                    "every GPU of node NODE computes at FACTOR of its normal speed (repeatable; combined with "
                    "--slow-gpu by product)",
                    true);
}

Stragglers read_stragglers(const ParsedArgs& args)
{
  Stragglers s;
  for (const std::string& v : args.values("--slow-gpu"))
    s.gpus.push_back(parse_slow_gpu("--slow-gpu", v));
  for (const std::string& v : args.values("--slow-node"))
    s.nodes.push_back(parse_slow_node("--slow-node", v));
  return s;
}

} // namespace gputwin::cli
