// gputwin: what a training iteration of a GPT needs on a GPU cluster, before it is rented.
#include "commands.hpp"

#include "gputwin/common/interrupt.hpp"

#include <csignal>
#include <string>

int main(int argc, char** argv)
{
  // A file-size limit (ulimit -f) makes a write fail with EFBIG, a one-line error (common/output_file.hpp), instead
  // of ending the process with SIGXFSZ and leaving the temporary file behind.
  std::signal(SIGXFSZ, SIG_IGN);
  // Ctrl-C: one line, the point runs and gnuplot stopped, exit 130 (common/interrupt.hpp).
  gputwin::install_interrupt_handler(std::string("gputwin") + (argc > 1 ? std::string(" ") + argv[1] : "") +
                                     ": interrupted (Ctrl-C); stopped");
  using namespace gputwin::cli;
  return run_subcommands("gputwin", "0.1.0", gputwin_subcommands(),
                         "gputwin simulate --model gpt3-175b --plan paper --sp --recompute selective", argc, argv);
}
