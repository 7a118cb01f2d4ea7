// gputwin-engine: the training engine the simulator is calibrated against.
#include "commands.hpp"

#include "gputwin/models/input_error.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <exception>
#include <iostream>

namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>&, std::ostream&);
};

const Subcommand subcommands[] = {
    {"train",
     "train a GPT with a parallel plan (TP, SP, PP, DP, recompute) and measure it; --trace writes the op graph",
     gputwin::engine::cli::run_train},
    {"trace-to-perfetto", "convert a trace to Chrome trace-event JSON (open in ui.perfetto.dev)",
     gputwin::engine::cli::run_trace_to_perfetto},
};

void print_usage(std::ostream& out)
{
  out << "usage: gputwin-engine <subcommand> [options]   (gputwin-engine <subcommand> --help)\n\nsubcommands:\n";
  for (const Subcommand& s : subcommands)
    out << "  " << s.name << std::string(20 - std::string(s.name).size(), ' ') << s.summary << "\n";
  out << "\nexample: gputwin-engine train --hidden 128 --heads 4 --layers 4 --seq-len 64 --vocab 128 --tp 2 --pp 2 "
         "--sp --recompute selective --global-batch 8 --steps 50\n";
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
  for (const Subcommand& s : subcommands) {
    if (args[0] != s.name)
      continue;
    try {
      return s.run(std::vector<std::string>(args.begin() + 1, args.end()), std::cout);
    } catch (const gputwin::InputError& e) {
      std::cerr << "gputwin-engine " << s.name << ": error: " << e.what() << "\n";
      return 2;
    } catch (const gputwin::traces::TraceError& e) {
      std::cerr << "gputwin-engine " << s.name << ": error: " << e.what() << "\n";
      return 2;
    } catch (const std::exception& e) {
      std::cerr << "gputwin-engine " << s.name << ": internal error: " << e.what() << "\n";
      return 1;
    }
  }
  std::cerr << "gputwin-engine: error: unknown subcommand '" << args[0] << "' (expected train or trace-to-perfetto)\n";
  return 2;
}
