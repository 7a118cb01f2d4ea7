// The JSON reports of a fixed set of commands (tests/data/golden/commands.txt: simulate full and estimated,
// stragglers, link report, memory, collective, search, goodput, replay, sweep) must stay byte for byte what
// tests/data/golden/NN.json holds, wall times aside. A refactor moves no figure; a model change that means to
// regenerates them with scripts/update-golden.sh and says in its commit which figures moved.
#include "run_cli.hpp"

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

using gputwin::testing::CliResult;
using gputwin::testing::read_file;

// The report with its wall time (the only field that may differ between runs) written as 0.
std::string without_wall_time(const std::string& report)
{
  static const std::regex wall(R"re(("sim_wall_time_s": )[-0-9.e+]+)re");
  return std::regex_replace(report, wall, "$010"); // group 01, then the digit 0
}

std::vector<std::string> golden_commands()
{
  std::vector<std::string> commands;
  std::ifstream in(GPUTWIN_SOURCE_DIR "/tests/data/golden/commands.txt");
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#')
      commands.push_back(line);
  return commands;
}

class GoldenOutputs : public ::testing::TestWithParam<int> {};

TEST_P(GoldenOutputs, JsonReportIsUnchanged)
{
  const std::vector<std::string> commands = golden_commands();
  ASSERT_GE(commands.size(), 17U) << "tests/data/golden/commands.txt lost its commands";
  const size_t index = static_cast<size_t>(GetParam());
  ASSERT_LT(index, commands.size());
  char name[16];
  std::snprintf(name, sizeof name, "%02zu.json", index + 1);
  const std::string expected = read_file(std::string(GPUTWIN_SOURCE_DIR "/tests/data/golden/") + name);
  ASSERT_FALSE(expected.empty()) << name << " missing (scripts/update-golden.sh)";
  SCOPED_TRACE("gputwin " + commands[index]);
  // From the repository root, as the commands' relative paths assume.
  const CliResult r = gputwin::testing::run_program("/bin/sh", std::string("-c \"cd '") + GPUTWIN_SOURCE_DIR + "' && '" +
                                                                   GPUTWIN_CLI + "' " + commands[index] + "\"",
                                                    false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(without_wall_time(r.output), expected) << "the report of this command moved";
}

INSTANTIATE_TEST_SUITE_P(Commands, GoldenOutputs, ::testing::Range(0, 17),
                         [](const ::testing::TestParamInfo<int>& info) { return "Command" + std::to_string(info.param + 1); });

} // namespace
