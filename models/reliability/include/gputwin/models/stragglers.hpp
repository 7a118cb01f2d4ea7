#pragma once
// Stragglers: GPUs or whole nodes that compute at a fraction of their normal speed (`simulate --slow-gpu
// RANK=FACTOR --slow-node NODE=FACTOR`). A factor scales every kernel of the GPU (compute and
// device copies take time / factor); NCCL transfers, link bandwidths and the host are unchanged. A GPU on a
// slow node runs at gpu factor x node factor. How the simulator keeps the slow ranks apart from the folded
// ones: sim/collectives/straggler_unfolding.hpp. Plain C++.

#include "gputwin/common/arg_parser.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gputwin {

struct SlowGpu {
  int64_t rank = 0;    // global rank = GPU index of the job (rank r runs on GPU r)
  double factor = 1.0; // fraction of normal speed, in [min_straggler_factor, 1]
};

struct SlowNode {
  int64_t node = 0;    // node index: GPUs [node x gpus per node, (node + 1) x gpus per node)
  double factor = 1.0; // fraction of normal speed, in [min_straggler_factor, 1]
};

struct Stragglers {
  std::vector<SlowGpu> gpus;   // as given, in order
  std::vector<SlowNode> nodes; // as given, in order
  bool empty() const { return gpus.empty() && nodes.empty(); }
};

// The slowest speed a straggler may have, GPU factor x node factor: below it the kernels' times (time / factor)
// leave the range the executors time reliably (a product of two tiny factors underflows to 0).
inline constexpr double min_straggler_factor = 1e-6;

// Speed of each rank that is not at full speed (factor < 1), keyed by global rank.
using RankSpeeds = std::map<int32_t, double>;

// Parses "RANK=FACTOR" (`flag` "--slow-gpu") or "NODE=FACTOR" (`flag` "--slow-node"): a non-negative integer
// and a factor in [min_straggler_factor, 1], written in decimal. Throws a one-line InputError naming `flag` and
// the text otherwise.
SlowGpu parse_slow_gpu(const std::string& flag, const std::string& text);
SlowNode parse_slow_node(const std::string& flag, const std::string& text);

// The speed of every slowed rank of a job of `job_gpus` ranks on nodes of `gpus_per_node` GPUs: product of its
// GPU's and its node's factors; ranks at factor 1 are left out. Throws InputError naming the flag for a rank
// or node outside the job, one given twice, or a product below min_straggler_factor. REQUIRES: job_gpus > 0,
// gpus_per_node > 0.
RankSpeeds rank_speeds(const Stragglers& stragglers, int64_t job_gpus, int64_t gpus_per_node);

} // namespace gputwin

namespace gputwin::cli {

// --slow-gpu RANK=FACTOR and --slow-node NODE=FACTOR, both repeatable.
void add_straggler_flags(ArgParser& parser);
// The flags' values, parsed (not yet checked against a job: rank_speeds does that).
Stragglers read_stragglers(const ParsedArgs& args);

} // namespace gputwin::cli
