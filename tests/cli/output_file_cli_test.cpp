// Output integrity through the real binaries: a file that cannot be written (/dev/full, a missing directory)
// is a one-line error and exit 2 for every tool that writes one, and a successful run leaves only the final
// file (no temporary) behind.
#include "run_cli.hpp"
#include "test_directory.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace gputwin::testing {
namespace {

namespace fs = std::filesystem;

const std::string trace_dir = GPUTWIN_TEST_DATA_DIR "/traces/";

// A one-line error on stderr containing `expected`, and exit status 2 (input/output errors).
void expect_output_error(const std::string& program, const std::string& arguments, const std::string& expected)
{
  SCOPED_TRACE(arguments);
  const CliResult r = run_program(program, arguments, true);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
  ASSERT_FALSE(r.output.empty());
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "expected one line: " << r.output;
}

TEST(OutputFileCli, SimulateTimelineToAFullDeviceFails)
{
  if (!fs::exists("/dev/full"))
    GTEST_SKIP() << "no /dev/full on this system";
  expect_output_error(GPUTWIN_CLI, "simulate --model gpt-22b --plan paper --layers 2 --timeline /dev/full",
                      "gputwin simulate: error: --timeline: cannot write '/dev/full': No space left on device");
}

TEST(OutputFileCli, ReplayTimelineToAFullDeviceFails)
{
  if (!fs::exists("/dev/full"))
    GTEST_SKIP() << "no /dev/full on this system";
  expect_output_error(GPUTWIN_CLI, "replay '" + trace_dir + "cpu-tp1.json' --timeline /dev/full",
                      "gputwin replay: error: --timeline: cannot write '/dev/full': No space left on device");
}

TEST(OutputFileCli, CalibrateOutputToAFullDeviceFails)
{
  if (!fs::exists("/dev/full"))
    GTEST_SKIP() << "no /dev/full on this system";
  expect_output_error(GPUTWIN_CLI, "calibrate '" + trace_dir + "cpu-tp1.json' -o /dev/full",
                      "gputwin calibrate: error: --output: cannot write '/dev/full': No space left on device");
}

TEST(OutputFileCli, EngineTraceAndTimelineToAFullDeviceFail)
{
  if (!fs::exists("/dev/full"))
    GTEST_SKIP() << "no /dev/full on this system";
  const std::string train = "train --hidden 64 --heads 4 --layers 2 --seq-len 32 --vocab 64 --steps 1 "
                            "--micro-batch 1 --global-batch 1 ";
  expect_output_error(GPUTWIN_ENGINE, train + "--trace /dev/full",
                      "gputwin-engine train: error: cannot write '/dev/full': No space left on device");
  expect_output_error(GPUTWIN_ENGINE, train + "--timeline /dev/full",
                      "gputwin-engine train: error: cannot write '/dev/full': No space left on device");
  expect_output_error(GPUTWIN_ENGINE, "trace-to-perfetto '" + trace_dir + "cpu-tp1.json' /dev/full",
                      "gputwin-engine trace-to-perfetto: error: cannot write '/dev/full': No space left on device");
}

TEST(OutputFileCli, AMissingDirectoryFailsAndNothingIsLeftBehind)
{
  const fs::path dir = fresh_test_directory("missing");
  const std::string missing = (dir / "no-such-dir" / "timeline.json").string();
  expect_output_error(GPUTWIN_CLI, "simulate --model gpt-22b --plan paper --layers 2 --timeline '" + missing + "'",
                      "--timeline: cannot write '" + missing + "': No such file or directory");
  EXPECT_TRUE(directory_entries(dir).empty());
}

TEST(OutputFileCli, SuccessfulRunsLeaveOnlyTheFinalFiles)
{
  const fs::path dir = fresh_test_directory("success");
  const std::string timeline = (dir / "timeline.json").string();
  std::ofstream(timeline) << "an older timeline";
  ASSERT_EQ(
      run_gputwin("simulate --model gpt-22b --plan paper --layers 2 --timeline '" + timeline + "'", false).exit_code,
      0);
  ASSERT_EQ(run_gputwin("calibrate '" + trace_dir + "cpu-tp1.json' -o '" + (dir / "model.yaml").string() + "'", false)
                .exit_code,
            0);
  EXPECT_EQ(directory_entries(dir), (std::vector<std::string>{"model.yaml", "timeline.json"}));
  std::ifstream in(timeline);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.rfind("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", 0), 0u);
  EXPECT_EQ(text.back(), '\n');
}

// The check: --timeline through a symbolic link under a file-size limit fails with one line and exit 2,
// and the link's target keeps its content (the link was written in place, so a failed write destroyed it); without
// the limit the target is replaced and the link stays.
TEST(OutputFileCli, ATimelineThroughASymlinkReplacesItsTargetAtomically)
{
  const fs::path dir = fresh_test_directory("symlink");
  const fs::path real = dir / "real.json";
  std::ofstream(real) << "the real file\n";
  fs::create_symlink("real.json", dir / "link.json");
  const std::string simulate = "simulate --model gpt-22b --plan paper --layers 2 --timeline link.json";
  const CliResult limited = run_program(
      "/bin/sh", "-c \"cd '" + dir.string() + "' && ulimit -f 20 && '" + GPUTWIN_CLI + "' " + simulate + "\"", true);
  EXPECT_EQ(limited.exit_code, 2) << limited.output;
  EXPECT_NE(limited.output.find("--timeline: cannot write 'link.json': File too large"), std::string::npos)
      << limited.output;
  std::ifstream kept(real);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>()), "the real file\n");
  EXPECT_EQ(directory_entries(dir), (std::vector<std::string>{"link.json", "real.json"}));
  const CliResult ok =
      run_program("/bin/sh", "-c \"cd '" + dir.string() + "' && '" + GPUTWIN_CLI + "' " + simulate + "\"", false);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  std::ifstream in(real);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.rfind("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", 0), 0u);
}

// Output paths are checked before the work: a sweep's CSV in a missing directory fails before any point runs
// (the issue: an 11-minute sweep's results lost to a typo), and --csv and --plot on one file are refused.
TEST(OutputFileCli, OutputPathsAreCheckedBeforeTheWork)
{
  const fs::path dir = fresh_test_directory("before");
  const std::string sweep = "sweep --model gpt3-175b --gpus 64,128,256,512,1024 --tokens 300e9";
  expect_output_error(GPUTWIN_CLI, sweep + " --csv /nonexistent/x.csv",
                      "--csv: cannot write '/nonexistent/x.csv': No such file or directory");
  const std::string both = (dir / "out.png").string();
  expect_output_error(GPUTWIN_CLI, sweep + " --csv '" + both + "' --plot '" + both + "'",
                      "--plot: '" + both + "' is also the file of --csv");
  expect_output_error(GPUTWIN_CLI, "search --model gpt3-175b --gpus 1024 --csv /nonexistent/x.csv",
                      "--csv: cannot write '/nonexistent/x.csv'");
  expect_output_error(GPUTWIN_CLI, "simulate --model gpt3-175b --plan paper --timeline /nonexistent/t.json",
                      "--timeline: cannot write '/nonexistent/t.json'");
  expect_output_error(GPUTWIN_CLI, "replay '" + trace_dir + "cpu-tp1.json' --timeline " + dir.string(),
                      "--timeline: cannot write '" + dir.string() + "': Is a directory");
  expect_output_error(GPUTWIN_CLI, "calibrate '" + trace_dir + "cpu-tp1.json' -o /nonexistent/m.yaml",
                      "--output: cannot write '/nonexistent/m.yaml'");
  EXPECT_TRUE(directory_entries(dir).empty());
}

} // namespace
} // namespace gputwin::testing
