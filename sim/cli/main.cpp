// gputwin: what a training iteration of a GPT needs on a GPU cluster, before it is rented.
#include "commands.hpp"

#include "gputwin/models/input_error.hpp"

#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>&, std::ostream&);
};

const Subcommand subcommands[] = {
    {"memory", "per-GPU memory of the busiest pipeline stage (activations, weights, gradients, optimizer)",
     gputwin::cli::run_memory},
    {"simulate", "one training iteration of a GPT under a parallel plan on a simulated cluster",
     gputwin::cli::run_simulate},
    {"replay", "a captured trace re-simulated on a cluster (as measured, re-targeted, scaled out) vs measured",
     gputwin::cli::run_replay},
    {"calibrate", "fit the GPU compute model to captured traces' op durations; writes the fitted model (YAML)",
     gputwin::cli::run_calibrate},
    {"compare", "the engine's measured iteration times beside the simulator's, per trace, with the mean error",
     gputwin::cli::run_compare},
    {"topo", "a cluster's graph: GPUs, switches, links, injection and bisection bandwidth (--dot: Graphviz)",
     gputwin::cli::run_topo},
    {"collective", "time, algbw and busbw of one NCCL collective on a simulated cluster, per size",
     gputwin::cli::run_collective},
};

void print_usage(std::ostream& out)
{
  out << "usage: gputwin <subcommand> [options]   (gputwin <subcommand> --help for its options)\n\nsubcommands:\n";
  for (const Subcommand& s : subcommands)
    out << "  " << s.name << std::string(12 - std::string(s.name).size(), ' ') << s.summary << "\n";
  out << "\nexample: gputwin simulate --model gpt3-175b --plan paper --sp --recompute selective\n";
}

} // namespace

int main(int argc, char** argv)
{
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_usage(std::cerr);
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_usage(std::cout);
    return 0;
  }
  if (args[0] == "--version") {
    std::cout << "gputwin 0.1.0\n";
    return 0;
  }
  for (const Subcommand& s : subcommands) {
    if (args[0] != s.name)
      continue;
    try {
      return s.run(std::vector<std::string>(args.begin() + 1, args.end()), std::cout);
    } catch (const gputwin::InputError& e) {
      std::cerr << "gputwin " << s.name << ": error: " << e.what() << "\n";
      return 2;
    } catch (const std::exception& e) {
      std::cerr << "gputwin " << s.name << ": internal error: " << e.what() << "\n";
      return 1;
    }
  }
  std::cerr << "gputwin: error: unknown subcommand '" << args[0] << "' (see gputwin --help)\n";
  return 2;
}
