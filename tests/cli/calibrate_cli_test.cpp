// `gputwin calibrate` through the real binary: the report, the written model file, and its bad-input errors.
#include "run_cli.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gputwin::testing {
namespace {

const std::string trace_dir = GPUTWIN_TEST_DATA_DIR "/traces/";

// A copy of `trace` with `from` replaced by `to` (first occurrence).
std::string edited_trace(const std::string& trace, const std::string& name, const std::string& from,
                         const std::string& to)
{
  std::string text = read_file(trace_dir + trace);
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  const std::string path = test_temp_path(name);
  std::ofstream(path) << text;
  return path;
}

// `calibrate --nccl-tests` writes a complete cluster file: the fitted nccl section, and every other field as the
// starting cluster had it, including the ones no nccl-tests log can fit (userbuffers latency, shared host cores).
TEST(CalibrateCli, NcclFitKeepsTheFieldsItDoesNotFit)
{
  std::string cluster = read_file(GPUTWIN_TEST_DATA_DIR "/../../topologies/clusters/nd-a100-v4.yaml");
  const auto edit = [&](const std::string& from, const std::string& to) {
    const size_t at = cluster.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    cluster.replace(at, from.size(), to);
  };
  edit("  tree_correction: true", "  userbuffers_latency_us: 7\n  tree_correction: true");
  edit("  gpus: 8 ", "  host_cores: 3\n  gpus: 8 ");
  const std::string start = test_temp_path("start-cluster.yaml"), out = test_temp_path("fitted-cluster.yaml");
  std::ofstream(start) << cluster;
  const std::string logs = GPUTWIN_TEST_DATA_DIR "/nccl-tests-echo-a100/";
  const CliResult r = run_gputwin("calibrate --nccl-tests " + logs + "nccl_2.log " + logs + "nccl_8.log --cluster " +
                                      start + " -o " + out,
                                  false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string fitted = read_file(out);
  EXPECT_NE(fitted.find("\n  userbuffers_latency_us: 7 "), std::string::npos) << fitted;
  EXPECT_NE(fitted.find("\n  host_cores: 3\n"), std::string::npos) << fitted;
  // And it loads as a cluster.
  EXPECT_EQ(run_gputwin("collective --cluster " + out + " --op all-reduce --ranks 8 --bytes 1M", false).exit_code, 0);
}

TEST(CalibrateCli, FitsACpuTracePrintsTheErrorsAndWritesTheModel)
{
  const std::string out = test_temp_path("cpu.yaml");
  const CliResult r = run_gputwin("calibrate " + trace_dir + "cpu-tp1.json -o " + out, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* text : {"calibrated cpu on 1 trace (device cpu)", "gemm_efficiency", "  gemm  ", "  memory  ",
                           "gemm:fc1 ", "memory:attn.softmax ", "wrote "})
    EXPECT_NE(r.output.find(text), std::string::npos) << text << "\n" << r.output;
  const std::string yaml = read_file(out);
  for (const char* text : {"# gputwin GPU compute model, fitted by `gputwin calibrate`", "cpu-tp1.json\n",
                           "gpu_kind: \"cpu\"\n", "peak_flops_per_s: 1e+11 ", "gemm_efficiency: ", "gemm_k_half: ",
                           "memory_efficiency: ", "kernel_overhead_s: ", "fit:\n  - {op_class: \"gemm\", ops: 67,"})
    EXPECT_NE(yaml.find(text), std::string::npos) << text << "\n" << yaml;
}

TEST(CalibrateCli, SeveralTracesAndCollectivesWithTheOutputLongFlag)
{
  const std::string out = test_temp_path("two.yaml");
  const CliResult r =
      run_gputwin("calibrate " + trace_dir + "cpu-tp1.json " + trace_dir + "cpu-tp2-pp2.json --output " + out, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("on 2 traces"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  all-reduce            2 "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  send-recv             2 "), std::string::npos) << r.output;
  EXPECT_NE(read_file(out).find("collectives:\n  - {op: \"all-reduce\", ranks: 2,"), std::string::npos);
}

TEST(CalibrateCli, SameTracesGiveTheSameFile)
{
  const std::string a = test_temp_path("a.yaml"), b = test_temp_path("b.yaml");
  ASSERT_EQ(run_gputwin("calibrate " + trace_dir + "cpu-tp2-pp2.json -o " + a, false).exit_code, 0);
  ASSERT_EQ(run_gputwin("calibrate " + trace_dir + "cpu-tp2-pp2.json -o " + b, false).exit_code, 0);
  EXPECT_EQ(read_file(a), read_file(b));
}

TEST(CalibrateCli, GpuFlagChoosesTheNominalModel)
{
  const std::string out = test_temp_path("a100.yaml");
  const CliResult r = run_gputwin("calibrate --gpu a100 " + trace_dir + "cpu-tp1.json -o " + out, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string yaml = read_file(out);
  EXPECT_NE(yaml.find("gpu_kind: \"a100-sxm4-80gb\"\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("peak_flops_per_s: 3.12e+14 "), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("multiprocessors: 108 "), std::string::npos) << yaml;

  const std::string cuda = edited_trace("cpu-tp1.json", "cuda.json", "\"device\":\"cpu\"", "\"device\":\"cuda\"");
  EXPECT_EQ(run_gputwin("calibrate --gpu h100 " + cuda + " -o " + out, false).exit_code, 0);
  EXPECT_NE(read_file(out).find("gpu_kind: \"h100-sxm5-80gb\"\n"), std::string::npos);
}

TEST(CalibrateCli, HelpNamesTheFlags)
{
  const CliResult r = run_gputwin("calibrate --help", false);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("usage: gputwin calibrate [options] TRACE..."), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--output FILE"), std::string::npos);
  EXPECT_NE(r.output.find("--gpu KIND"), std::string::npos);
}

// A log of an nccl-tests binary the fit does not model (reduce_perf, gather_perf) was read as all-reduce and
// fitted as one (issue 30): a one-line error naming the log and the binary, exit 2.
TEST(CalibrateCli, NcclTestsLogsOfOtherCollectivesAreRefused)
{
  const std::string log = GPUTWIN_TEST_DATA_DIR "/nccl-tests-echo-a100/nccl_8.log";
  const std::string text = read_file(log);
  const std::string out = test_temp_path("other-collective.yaml");
  for (const std::string binary : {"reduce_perf", "gather_perf", "scatter_perf", "hypercube_perf_mpi"}) {
    const std::string path = test_temp_path(binary + ".log");
    std::ofstream(path) << "# ./build/" << binary << " -b 8 -e 1G -f 2 -g 8\n" << text;
    const std::string name = binary.substr(0, binary.find("_perf"));
    expect_one_line_error("calibrate --nccl-tests " + path + " -o " + out,
                          "--nccl-tests: " + path + ": a log of " + name + "_perf, which the fit does not model");
    EXPECT_EQ(run_gputwin("calibrate --nccl-tests " + path + " -o " + out, true).exit_code, 2) << binary;
  }
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(CalibrateCli, BadInputIsAOneLineErrorAndExitStatus2)
{
  const std::string out = test_temp_path("bad.yaml");
  const std::string bad_json = test_temp_path("bad.json");
  std::ofstream(bad_json) << "{\"format\":\"gputwin-op-graph\",\"format_version\":2}";
  const std::string cuda = edited_trace("cpu-tp1.json", "cuda2.json", "\"device\":\"cpu\"", "\"device\":\"cuda\"");
  const std::string tp1 = trace_dir + "cpu-tp1.json";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"calibrate -o " + out, "gputwin calibrate: error: expected at least one TRACE (see gputwin calibrate --help)"},
      {"calibrate " + tp1, "gputwin calibrate: error: --output: missing: where to write the fitted model (-o FILE)"},
      {"calibrate /nonexistent/t.json -o " + out,
       "gputwin calibrate: error: /nonexistent/t.json: cannot open the trace file (expected a readable file)"},
      {"calibrate " + bad_json + " -o " + out, "gputwin calibrate: error: " + bad_json + ":1:"},
      {"calibrate " + tp1 + " " + cuda + " -o " + out, "gputwin calibrate: error: " + cuda +
                                                           ": device 'cuda' differs from device 'cpu' of " + tp1 +
                                                           " (calibrate the traces of one device at a time)"},
      {"calibrate " + cuda + " -o " + out,
       "gputwin calibrate: error: " + cuda +
           ": device 'cuda' is not a GPU kind calibrate knows (pass --gpu a100|h100|h200|cpu)"},
      {"calibrate --gpu v100 " + tp1 + " -o " + out,
       "gputwin calibrate: error: --gpu: expected a100|h100|h200|cpu, got 'v100'"},
      {"calibrate " + tp1 + " -o /nonexistent/dir/m.yaml",
       "gputwin calibrate: error: --output: cannot write '/nonexistent/dir/m.yaml'"},
      {"calibrate --out " + out + " " + tp1, "gputwin calibrate: error: unknown option '--out'"},
  };
  for (const auto& [args, expected] : cases) {
    const CliResult r = run_gputwin(args, true);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.output.rfind(expected, 0), 0U) << args << "\n" << r.output;
    EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "one line: " << r.output;
  }
}

} // namespace
} // namespace gputwin::testing
