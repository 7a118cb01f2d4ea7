// gputwin-engine: the training engine the simulator is calibrated against.
#include "commands.hpp"

#include "gputwin/common/subcommands.hpp"

int main(int argc, char** argv)
{
  using gputwin::cli::Subcommand;
  const std::vector<Subcommand> subcommands = {
      {"train",
       "train a GPT with a parallel plan (TP, SP, PP, DP, recompute) and measure it; --trace writes the op graph",
       gputwin::engine::cli::run_train},
      {"launch",
       "run one process per rank (launch --nproc N -- COMMAND ARGS...), e.g. for train --comm nccl (GPUs) or --comm tcp (CPU)",
       gputwin::engine::cli::run_launch},
      {"trace-to-perfetto", "convert a trace to Chrome trace-event JSON (open in ui.perfetto.dev)",
       gputwin::engine::cli::run_trace_to_perfetto},
  };
  return gputwin::cli::run_subcommands(
      "gputwin-engine", "0.1.0", subcommands,
      "gputwin-engine train --hidden 128 --heads 4 --layers 4 --seq-len 64 --vocab 128 "
      "--tp 2 --pp 2 --sp --recompute selective --global-batch 8 --steps 50",
      argc, argv);
}
