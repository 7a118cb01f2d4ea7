// PyTorch profiler (Kineto) traces: the reader on small hand-written traces, and `gputwin replay` on real
// HolisticTraceAnalysis traces (tests/data/kineto-hta/README.md): as measured within 5% of the ProfilerStep,
// step selection, what-if scales, bad input.
#include "run_cli.hpp"

#include "gputwin/traces/kineto.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

namespace gputwin::testing {
namespace {

const std::string local_data = std::string(GPUTWIN_TEST_DATA_DIR) + "/kineto-hta/";
const std::string shared_data = std::string(GPUTWIN_SOURCE_DIR) + "/../shared/data/kineto-traces-hta/";

std::string json_field(const std::string& json, const std::string& key)
{
  std::smatch m;
  const std::regex re("\"" + key + "\": (\"[^\"]*\"|[-0-9.e+]+)");
  EXPECT_TRUE(std::regex_search(json, m, re)) << key << " in " << json;
  return m.size() > 1 ? m[1].str() : "";
}

double json_number(const std::string& json, const std::string& key)
{
  const std::string text = json_field(json, key);
  return text.empty() ? NAN : std::stod(text);
}

std::string write_file(const std::string& name, const std::string& content)
{
  const std::string path = test_temp_path(name);
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

// A two-step trace: host thread 10 launches a GEMM (stream 7), a copy to pageable memory (a host sync) and an
// NCCL all-reduce (stream 20) in step 1; thread 11 one kernel in step 2. Times in microseconds.
std::string small_trace(bool with_launches = true, bool with_steps = true, bool correlation_args = true)
{
  auto kernel = [&](const std::string& cat, const std::string& name, double ts, double dur, int stream, int corr,
                    const std::string& extra = "") {
    return "{\"ph\":\"X\",\"cat\":\"" + cat + "\",\"name\":\"" + name + "\",\"pid\":0,\"tid\":" +
           std::to_string(stream) + ",\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) +
           ",\"args\":{\"device\":0,\"stream\":" + std::to_string(stream) +
           (correlation_args ? ",\"correlation\":" + std::to_string(corr) : "") + extra + "}}";
  };
  auto runtime = [&](const std::string& name, double ts, double dur, int tid, int corr) {
    return "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"" + name + "\",\"pid\":100,\"tid\":" +
           std::to_string(tid) + ",\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) +
           ",\"args\":{\"correlation\":" + std::to_string(corr) + "}}";
  };
  auto flow = [&](const std::string& ph, int id, int pid, int tid, double ts) {
    return "{\"ph\":\"" + ph + "\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":" + std::to_string(id) +
           ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + std::to_string(ts) + "}";
  };
  std::vector<std::string> events;
  if (with_steps) {
    events.push_back(R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":100,"tid":10,"ts":1000,"dur":500})");
    events.push_back(R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":100,"tid":10,"ts":1500,"dur":300})");
  }
  events.push_back(R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":100,"tid":10,"ts":1005,"dur":30})");
  events.push_back(kernel("kernel", "ampere_sgemm_128x64_nn", 1030, 100, 7, 1));
  events.push_back(kernel("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 1130, 10, 7, 2, ",\"bytes\":4096"));
  events.push_back(kernel("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
                          1200, 50, 20, 3,
                          ",\"Collective name\":\"allreduce\",\"In msg nelems\":1000,\"Out msg nelems\":1000,"
                          "\"Group size\":2,\"dtype\":\"Float\""));
  events.push_back(kernel("kernel", "elementwise_kernel", 1600, 40, 7, 4));
  if (with_launches) {
    events.push_back(runtime("cudaLaunchKernel", 1020, 5, 10, 1));
    events.push_back(runtime("cudaMemcpyAsync", 1040, 115, 10, 2));
    events.push_back(runtime("cudaLaunchKernel", 1180, 5, 10, 3));
    events.push_back(runtime("cudaLaunchKernel", 1590, 5, 11, 4));
    if (!correlation_args)
      for (int c = 1; c <= 4; ++c) {
        const double launch_ts[] = {1020, 1040, 1180, 1590};
        const double kernel_ts[] = {1030, 1130, 1200, 1600};
        const int streams[] = {7, 7, 20, 7};
        events.push_back(flow("s", c, 100, c == 4 ? 11 : 10, launch_ts[c - 1]));
        events.push_back(flow("f", c, 0, streams[c - 1], kernel_ts[c - 1]));
      }
  }
  std::string text = "{\"schemaVersion\":1,\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":1,\"world_size\":2},"
                     "\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA A100-SXM4-80GB\"}],\"traceEvents\":[";
  for (size_t i = 0; i < events.size(); ++i)
    text += (i ? ",\n" : "\n") + events[i];
  return text + "\n]}\n";
}

TEST(KinetoReader, StepOpsStreamsCollectivesAndHostGaps)
{
  const traces::KinetoTrace t = traces::parse_kineto(small_trace(), "small.json", 1);
  EXPECT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[t.selected].name, "ProfilerStep#1");
  EXPECT_EQ(t.trace_rank, 1);
  EXPECT_EQ(t.world_size, 2);
  EXPECT_EQ(t.graph.measured_iteration_s, std::vector<double>{500 / 1e6});
  ASSERT_EQ(t.graph.ranks.size(), 1u);
  const auto& ops = t.graph.ranks[0].ops;
  // gemm, copy (a sync: pageable), all-reduce, host.step_end; the kernel launched in step 2 is not in step 1.
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].kind, traces::OpKind::Compute);
  EXPECT_EQ(ops[0].stream, 7);
  EXPECT_EQ(ops[0].start_ns, 30000);
  EXPECT_EQ(ops[0].duration_ns, 100000);
  EXPECT_EQ(ops[1].kind, traces::OpKind::Memcpy);
  EXPECT_EQ(ops[1].bytes, 4096);
  EXPECT_EQ(ops[2].kind, traces::OpKind::Collective);
  EXPECT_EQ(ops[2].collective, CollectiveOp::AllReduce);
  EXPECT_EQ(ops[2].bytes, 4000); // 1000 floats
  EXPECT_EQ(ops[2].stream, 20);
  EXPECT_EQ(ops[3].name, "host.step_end");
  EXPECT_EQ(ops[3].stream, t.host_stream);
  // Host: launches at +20 and +40 us; the copy waits for the GPU and returns at +155; the all-reduce is
  // launched 25 us later (plus the 15 us the copy call took after the copy ended); the step ends at +500
  // (issued a launch latency earlier).
  EXPECT_EQ(t.host.issue_gap_ns, (std::vector<int64_t>{20000, 20000, 25000 + 15000, 500000 - 180000 - 10000}));
  EXPECT_EQ(t.host.syncs, (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(t.host.launch_latency_ns, 10000); // median of 10 (gemm), 20 (all-reduce)
  EXPECT_EQ(t.collectives, 1);
  EXPECT_EQ(t.host_syncs, 1);
}

TEST(KinetoReader, FlowEventsLinkLaunchesWithoutCorrelationArgs)
{
  const traces::KinetoTrace t = traces::parse_kineto(small_trace(true, true, false), "flows.json", 1);
  EXPECT_EQ(t.graph.ranks[0].ops.size(), 4u);
  EXPECT_EQ(t.kernels, 1);
  EXPECT_EQ(t.collectives, 1);
}

TEST(KinetoReader, DefaultStepIsTheMedianDuration)
{
  // Two steps of 500 and 300 us: the lower of the two middle durations.
  EXPECT_EQ(traces::parse_kineto(small_trace(), "small.json").steps.size(), 2u);
  const traces::KinetoTrace t = traces::parse_kineto(small_trace(), "small.json");
  EXPECT_EQ(t.steps[t.selected].name, "ProfilerStep#2");
  EXPECT_DOUBLE_EQ(t.measured_step_s(), 300e-6);
}

TEST(KinetoReader, MissingPiecesAreNamed)
{
  auto message = [](const std::string& text, std::optional<int64_t> step = {}) {
    try {
      traces::parse_kineto(text, "x.json", step);
    } catch (const traces::TraceError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(small_trace(true, false)).find("x.json: no ProfilerStep#N annotation"), std::string::npos);
  EXPECT_NE(message(small_trace(false)).find("x.json: 4 GPU kernels but no CUDA runtime launch"), std::string::npos);
  EXPECT_NE(message(small_trace(), 7).find("x.json: no ProfilerStep#7 (--step; the trace has ProfilerStep#1 to "
                                           "ProfilerStep#2)"),
            std::string::npos);
  EXPECT_NE(message(R"({"traceEvents": 3})").find("x.json: not a Chrome trace"), std::string::npos);
  EXPECT_NE(message(R"({"traceEvents": [)").find("x.json:1:"), std::string::npos);
}

// A `dur` that is not a number of microseconds in [0, 1 day] names the file and the event (issue 30: 1e18 was cast
// to int64 nanoseconds, undefined; negative, string and null durations were read as 0).
TEST(KinetoReader, DurationsOutsideADayOrNotNumbersAreErrorsNamingTheEvent)
{
  const std::string good = small_trace();
  const std::string field = "\"ts\":1600.000000,\"dur\":40.000000";
  ASSERT_NE(good.find(field), std::string::npos);
  for (const std::string bad : {"1e18", "1e300", "86400000001", "-1", "\"40\"", "null", "true"}) {
    std::string text = good;
    text.replace(text.find(field), field.size(), "\"ts\":1600.000000,\"dur\":" + bad);
    std::string message = "no error";
    try {
      traces::parse_kineto(text, "x.json", std::nullopt);
    } catch (const traces::TraceError& e) {
      message = e.what();
    }
    SCOPED_TRACE(bad);
    EXPECT_EQ(message.rfind("x.json:8:1: ", 0), 0u) << message; // the event's line and column
    EXPECT_NE(message.find("event 'elementwise_kernel': dur: expected a number of microseconds in [0, 86400e6]"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  std::string day = good; // exactly one day is a duration (whatever the step then makes of it)
  day.replace(day.find(field), field.size(), "\"ts\":1600.000000,\"dur\":86400e6");
  try {
    traces::parse_kineto(day, "x.json", std::nullopt);
  } catch (const traces::TraceError& e) {
    EXPECT_EQ(std::string(e.what()).find("dur:"), std::string::npos) << e.what();
  }
}

// --- the CLI on the HolisticTraceAnalysis traces --------------------------------------------------------

struct CheckFile {
  std::string file;
  std::string step;     // the median-duration ProfilerStep
  double step_dur_us;   // its duration as the trace writes it
};

// gtest prints the parameter in test listings: the file, not the struct's bytes.
void PrintTo(const CheckFile& c, std::ostream* os) { *os << c.file; }

class KinetoAsMeasured : public ::testing::TestWithParam<CheckFile> {};

TEST_P(KinetoAsMeasured, WithinFivePercentOfTheProfilerStep)
{
  const CheckFile& c = GetParam();
  std::string path = local_data + c.file;
  if (!std::filesystem::exists(path))
    path = shared_data + c.file;
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << c.file << " is in neither " << local_data << " nor " << shared_data;
  const CliResult r = run_gputwin("replay '" + path + "' --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json_field(r.output, "step"), "\"" + c.step + "\"");
  EXPECT_EQ(json_field(r.output, "mode"), "\"as-measured\"");
  EXPECT_EQ(json_number(r.output, "measured_iteration_time_s"), c.step_dur_us / 1e6);
  EXPECT_LE(std::abs(json_number(r.output, "relative_error")), 0.05) << r.output;
  EXPECT_GT(json_number(r.output, "kernels"), 500);
  EXPECT_GT(json_number(r.output, "collectives"), 0);
}

INSTANTIATE_TEST_SUITE_P(
    HtaTraces, KinetoAsMeasured,
    ::testing::Values(CheckFile{"nccl_parser_config__nccl_data.json.gz", "ProfilerStep#4", 222442.191},
                      CheckFile{"negative_queue_length_values_check__rank0.json.gz", "ProfilerStep#552", 216119},
                      CheckFile{"trace_diff__control__control.json.gz", "ProfilerStep#1012", 76727},
                      CheckFile{"trace_filter__sampled_rank-0.json.gz", "ProfilerStep#551", 607312}),
    [](const ::testing::TestParamInfo<CheckFile>& param_info) {
      return param_info.param.file.substr(0, param_info.param.file.find("__"));
    });

TEST(KinetoReplayCli, StepFlagSelectsTheProfilerStep)
{
  const CliResult r = run_gputwin("replay '" + local_data + "nccl_parser_config__nccl_data.json.gz' --step 5 --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json_field(r.output, "step"), "\"ProfilerStep#5\"");
  EXPECT_EQ(json_number(r.output, "measured_iteration_time_s"), 219726.905 / 1e6);
  EXPECT_LE(std::abs(json_number(r.output, "relative_error")), 0.05) << r.output;
}

TEST(KinetoReplayCli, FasterGpusShortenAGpuBoundStep)
{
  const std::string trace = "'" + local_data + "negative_queue_length_values_check__rank0.json.gz'";
  const CliResult base = run_gputwin("replay " + trace + " --json", false);
  const CliResult fast = run_gputwin("replay " + trace + " --compute-scale 2 --json", false);
  ASSERT_EQ(base.exit_code, 0) << base.output;
  ASSERT_EQ(fast.exit_code, 0) << fast.output;
  EXPECT_EQ(json_field(fast.output, "mode"), "\"what-if\"");
  EXPECT_EQ(fast.output.find("relative_error"), std::string::npos);
  EXPECT_LT(json_number(fast.output, "iteration_time_s"), 0.8 * json_number(base.output, "iteration_time_s"));
  // Infinitely fast collectives cannot make the step longer than no collectives at all would.
  const CliResult no_comm = run_gputwin("replay " + trace + " --comm-scale 1e9 --json", false);
  ASSERT_EQ(no_comm.exit_code, 0) << no_comm.output;
  EXPECT_GT(json_number(no_comm.output, "iteration_time_s"), 0);
}

void expect_exit_2(const std::string& arguments, const std::string& expected)
{
  expect_one_line_error(arguments, expected);
  EXPECT_EQ(run_gputwin(arguments, true).exit_code, 2) << arguments;
}

TEST(KinetoReplayCli, BadInputIsOneLineAndExitTwo)
{
  // A truncated .json.gz.
  std::ifstream in(local_data + "trace_filter__sampled_rank-0.json.gz", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string truncated = write_file("truncated.json.gz", bytes.substr(0, bytes.size() / 2));
  expect_exit_2("replay '" + truncated + "'", truncated + ": truncated or corrupt gzip stream");
  const std::string no_step = write_file("no_step.json", small_trace(true, false));
  expect_exit_2("replay '" + no_step + "'", no_step + ": no ProfilerStep#N annotation");
  const std::string no_launch = write_file("no_launch.json", small_trace(false));
  expect_exit_2("replay '" + no_launch + "'", no_launch + ": 4 GPU kernels but no CUDA runtime launch");
  const std::string good = write_file("good.json", small_trace());
  expect_exit_2("replay '" + good + "' --step 9", good + ": no ProfilerStep#9");
  expect_exit_2("replay '" + good + "' --comm-scale -1", "--comm-scale: expected a positive number");
  // Decimal numbers only (cli::parse_number): std::stod took hex and inf.
  expect_exit_2("replay '" + good + "' --compute-scale 0x10", "--compute-scale: expected a positive number");
  expect_exit_2("replay '" + good + "' --comm-scale inf", "--comm-scale: expected a positive number");
  // A damaged duration names the file and the event (issue 30).
  std::string damaged_text = small_trace();
  damaged_text.replace(damaged_text.find("\"dur\":40.000000"), 15, "\"dur\":1e18");
  const std::string damaged = write_file("damaged_dur.json", damaged_text);
  expect_exit_2("replay '" + damaged + "'", damaged + ":8:1: event 'elementwise_kernel': dur:");
  expect_exit_2("replay '" + good + "' --gpu h100", "--gpu: not available for a PyTorch profiler trace");
}

TEST(KinetoReplayCli, SmallTraceReplaysToItsStep)
{
  const std::string good = write_file("small.json", small_trace());
  const CliResult r = run_gputwin("replay '" + good + "' --step 1 --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The host ends the step at 500 us; the GPU is done before (copy wait and all-reduce included).
  EXPECT_NEAR(json_number(r.output, "iteration_time_s"), 500e-6, 1e-9) << r.output;
}

} // namespace
} // namespace gputwin::testing
