// gputwin: what a training iteration of a GPT needs on a GPU cluster, before it is rented.
#include "commands.hpp"

int main(int argc, char** argv)
{
  using namespace gputwin::cli;
  return run_subcommands("gputwin", "0.1.0", gputwin_subcommands(),
                         "gputwin simulate --model gpt3-175b --plan paper --sp --recompute selective", argc, argv);
}
