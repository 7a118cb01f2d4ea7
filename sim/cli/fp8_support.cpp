// --fp8 needs FP8 tensor cores: the one check every command that takes plan flags and a cluster makes right after
// reading the cluster, so an FP8 plan on an A100 is a one-line InputError naming --fp8 instead of an error from
// deep inside the compute model.
#include "commands.hpp"

#include "gputwin/common/input_error.hpp"

namespace gputwin::cli {

void check_fp8_supported(const ParallelPlan& plan, const topo::ClusterSpec& cluster)
{
  if (!plan.fp8 || cluster.gpu.peak_fp8_flops > 0)
    return;
  throw InputError("--fp8: the " + cluster.gpu.kind + " of " + cluster.name +
                   " has no FP8 tensor cores (expected an H100 or H200 cluster, or a cluster file with "
                   "gpu.peak_fp8_tflops)");
}

} // namespace gputwin::cli
