#include "search_core.hpp"

#include "commands.hpp"
#include "gputwin/sim/resource_estimate.hpp"
#include "gputwin/sim/resource_flags.hpp"
#include "gputwin/sim/work_estimate.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/topologies/cluster_flags.hpp"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <vector>

namespace gputwin::cli {

namespace {

// A comma-separated list of positive integers.
std::vector<int64_t> integer_list(const std::string& flag, const std::string& list)
{
  std::vector<int64_t> values;
  size_t begin = 0;
  while (begin <= list.size()) {
    const size_t end = std::min(list.find(',', begin), list.size());
    const std::string item = list.substr(begin, end - begin);
    char* rest = nullptr;
    const long long value = std::strtoll(item.c_str(), &rest, 10);
    if (item.empty() || *rest != '\0' || value < 1 || value > 1 << 20)
      throw InputError(flag + ": expected a comma-separated list of positive integers, got '" + list + "'");
    values.push_back(value);
    begin = end + 1;
  }
  return values;
}

// --attention, --cp, --fp8 / --precision, --no-overlaps and --micro-batches.
sim::SearchSpace read_search_space(const ParsedArgs& parsed, const GptConfig& model)
{
  sim::SearchSpace space;
  if (const auto kernel = parsed.value("--attention")) {
    const auto parsed_kernel = parse_attention(*kernel);
    if (!parsed_kernel)
      throw InputError("--attention: expected unfused|flash, got '" + *kernel + "'");
    space.attention = *parsed_kernel;
  }
  if (const auto list = parsed.value("--cp")) {
    space.context_parallel = integer_list("--cp", *list);
    if (space.attention != AttentionKernel::Flash && space.context_parallel != std::vector<int64_t>{1})
      throw InputError("--cp: context parallelism needs --attention flash");
  } else {
    space.context_parallel = sim::default_context_parallel(model, space.attention);
  }
  space.precision = read_precision(parsed);
  space.fp8_recipe = read_fp8_recipe(parsed, space.precision);
  space.overlaps = !parsed.has("--no-overlaps");
  if (const auto list = parsed.value("--micro-batches"))
    space.micro_batches = integer_list("--micro-batches", *list);
  return space;
}

} // namespace

SearchRequest read_search_request(const ParsedArgs& parsed, const GptConfig& model, int64_t default_top,
                                  const std::string& gpus_required)
{
  SearchRequest r;
  if (!parsed.has("--gpus"))
    throw InputError("--gpus: required " + gpus_required);
  r.gpus = parsed.integer("--gpus").value_or(0);
  if (r.gpus < 1 || r.gpus > 1000000)
    throw InputError("--gpus: expected an integer in [1, 1000000], got " + *parsed.value("--gpus"));
  r.global_batch = parsed.integer("--global-batch").value_or(r.gpus);
  if (r.global_batch < 1)
    throw InputError("--global-batch: expected a positive integer, got " + *parsed.value("--global-batch"));
  const int64_t top = parsed.integer("--top").value_or(default_top);
  if (top < 1)
    throw InputError("--top: expected a positive integer, got " + *parsed.value("--top"));
  r.top = static_cast<size_t>(top);
  const int64_t jobs = parsed.integer("--jobs").value_or(std::max<unsigned>(1, std::thread::hardware_concurrency()));
  if (jobs < 1 || jobs > 1024)
    throw InputError("--jobs: expected an integer in [1, 1024], got " + *parsed.value("--jobs"));
  r.jobs = static_cast<int>(jobs);
  const sim::SearchSpace space = read_search_space(parsed, model);

  r.cluster = topo::read_cluster(parsed);
  sim::check_whole_nodes(r.gpus, r.cluster);
  if (!parsed.has("--nodes"))
    r.cluster = topo::read_cluster(parsed, static_cast<int>(std::max<int64_t>(1, r.gpus / r.cluster.gpus_per_node)));
  else if (r.gpus > r.cluster.gpus())
    throw InputError("--nodes: " + std::to_string(r.cluster.nodes) + " nodes of " + r.cluster.name + " have " +
                     std::to_string(r.cluster.gpus()) + " GPUs, fewer than --gpus " + std::to_string(r.gpus));
  ParallelPlan precision_plan;
  precision_plan.precision = space.precision;
  precision_plan.fp8_recipe = space.fp8_recipe;
  check_precision_supported(precision_plan, r.cluster);
  r.gpu = compute_model_for_gpu(parsed, r.cluster.gpu);
  r.plans = sim::enumerate_search_plans(model, r.gpus, r.global_batch, r.cluster, space, static_cast<int64_t>(r.top),
                                        sim::max_work(parsed));
  return r;
}

} // namespace gputwin::cli
