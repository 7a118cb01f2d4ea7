// The subcommands of `gputwin`, in the order its help lists them: one table for the executable and the Python
// module.
#include "commands.hpp"

namespace gputwin::cli {

const std::vector<Subcommand>& gputwin_subcommands()
{
  static const std::vector<Subcommand> subcommands = {
      {"simulate", "one training iteration of a GPT under a parallel plan on a simulated cluster", run_simulate},
      {"search", "every parallel plan that fits memory, ranked by the fast estimator, the best K simulated in full",
       run_search},
      {"sweep", "the best plan at every (model, cluster, GPU count) point, with time to train, cost and plots",
       run_sweep},
      {"goodput", "time to train under failures: checkpoint interval (Young/Daly), lost work, restarts, goodput",
       run_goodput},
      {"memory", "per-GPU memory of the busiest pipeline stage (activations, weights, gradients, optimizer)",
       run_memory},
      {"collective", "time, algbw and busbw of one NCCL collective on a simulated cluster, per size", run_collective},
      {"topo", "a cluster's graph: GPUs, switches, links, injection and bisection bandwidth (--dot: Graphviz)",
       run_topo},
      {"replay", "a captured trace re-simulated on a cluster (as measured, re-targeted, scaled out) vs measured",
       run_replay},
      {"calibrate", "fit the GPU compute model to captured traces' op durations; writes the fitted model (YAML)",
       run_calibrate},
      {"compare", "the engine's measured iteration times beside the simulator's, per trace, with the mean error",
       run_compare},
  };
  return subcommands;
}

} // namespace gputwin::cli
