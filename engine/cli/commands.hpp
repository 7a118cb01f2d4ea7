#pragma once
// The subcommands of gputwin-engine.

#include <ostream>
#include <string>
#include <vector>

namespace gputwin::engine::cli {

// `gputwin-engine train`: trains a GPT with a parallel plan on the CPU backend; returns the exit status.
int run_train(const std::vector<std::string>& args, std::ostream& out);
// `gputwin-engine launch --nproc N -- COMMAND ARGS...`: one process per rank, their environment set
// (engine/launch/process_launcher.hpp); exits 0 only when every rank did.
int run_launch(const std::vector<std::string>& args, std::ostream& out);
// `gputwin-engine trace-to-perfetto IN OUT`: converts a trace to Chrome trace-event JSON for Perfetto.
int run_trace_to_perfetto(const std::vector<std::string>& args, std::ostream& out);

} // namespace gputwin::engine::cli
