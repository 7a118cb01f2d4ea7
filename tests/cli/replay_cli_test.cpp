// `gputwin replay` on traces `gputwin-engine` captures here: as measured against the measured iteration time,
// scaled out in THE schedule's order, and bad input.
#include "run_cli.hpp"

#include "gputwin/models/pipeline_schedule.hpp"
#include "gputwin/sim/progress_check.hpp"
#include "gputwin/sim/trace_workload.hpp"
#include "gputwin/traces/trace_io.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <regex>

namespace gputwin::testing {
namespace {

// Captures a trace with gputwin-engine (CPU backend) into the test's temporary directory.
std::string capture(const std::string& name, const std::string& plan)
{
  const std::string path = test_temp_path(name + ".trace.json");
  const std::string command = std::string("'") + GPUTWIN_ENGINE +
                              "' train --hidden 128 --heads 4 --layers 4 --seq-len 64 --vocab 128 --steps 6 " + plan +
                              " --trace '" + path + "' > /dev/null 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return path;
}

double json_number(const std::string& json, const std::string& key)
{
  std::smatch m;
  const std::regex re("\"" + key + "\": ([-0-9.e+]+)");
  EXPECT_TRUE(std::regex_search(json, m, re)) << key << " in " << json;
  return m.size() > 1 ? std::stod(m[1]) : NAN;
}

TEST(ReplayCli, SingleRankAsMeasuredWithinFivePercent)
{
  const std::string trace = capture("single", "--micro-batch 2 --global-batch 8");
  const CliResult r = run_gputwin("replay '" + trace + "' --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // A CPU trace replays on `localhost`; the report repeats the cluster, and the model and plan it captured.
  EXPECT_NE(r.output.find("\"cluster\": {\n    \"name\": \"localhost\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"model\": {\n    \"name\": \"custom\",\n    \"hidden\": 128"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"global_batch\": 8"), std::string::npos) << r.output;
  // Measured durations and issue gaps: what is left is before the first op and after the last.
  EXPECT_LT(std::abs(json_number(r.output, "relative_error")), 0.05) << r.output;
}

TEST(ReplayCli, MultiRankAsMeasuredReportsItsError)
{
  // tp 2, pp 2 as four threads of one process: the error is reported, not bounded (sim/README.md explains it).
  const std::string trace =
      capture("tp2pp2", "--tp 2 --pp 2 --sp --recompute selective --micro-batch 2 --global-batch 8");
  const CliResult r = run_gputwin("replay '" + trace + "' --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double error = json_number(r.output, "relative_error");
  EXPECT_TRUE(std::isfinite(error));
  EXPECT_GT(json_number(r.output, "iteration_time_s"), 0);
  std::cout << "tp 2 pp 2 replay as measured: relative error " << error << "\n";
}

TEST(ReplayCli, CommittedMultiRankCaptureReplaysWithinTenPercent)
{
  // tests/data/traces/cpu-tp2-pp2.json: tp 2, pp 2, four engine threads on this machine kind's 2 cores (the 10%
  // target for multi-rank CPU captures). A committed capture, so the bound does not depend on what else the machine
  // runs while the tests do. It replays at +3.8%, the wait for a core after each collective counted (sim/README.md,
  // "CPU traces and shared hosts").
  const std::string trace = std::string(GPUTWIN_SOURCE_DIR) + "/tests/data/traces/cpu-tp2-pp2.json";
  const CliResult r = run_gputwin("replay '" + trace + "' --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LE(std::abs(json_number(r.output, "relative_error")), 0.10) << r.output;
}

TEST(ReplayCli, ScaledOutFollowsTheScheduleAndKeepsTheCapturedComputePerMicroBatch)
{
  const std::string path = capture("scale", "--micro-batch 1 --global-batch 8");
  const traces::OpGraph trace = traces::read_op_graph_file(path);
  sim::ScaleOut scale;
  scale.pp = 4;
  scale.dp = 2;
  const sim::TraceWorkload tw = sim::make_trace_workload(trace, scale);
  const Workload w = tw.with_measured_durations();
  ASSERT_EQ(w.plan.micro_batches(), 8); // global batch doubled with dp: the same micro-batches per pipeline

  // Captured compute per micro-batch (the optimizer aside) ...
  std::map<int32_t, int64_t> captured_ns, replayed_ns;
  for (const auto& op : trace.ranks.front().ops)
    if (op.kind == traces::OpKind::Compute && op.micro_batch >= 0)
      captured_ns[op.micro_batch] += op.duration_ns;
  // ... equals what the four stages replay for it, and each stage runs THE 1F1B order.
  for (int64_t stage = 0; stage < 4; ++stage) {
    std::vector<PipelineStep> order;
    for (const auto& op : stage_program(w, stage).ops) {
      if (op.kind != traces::OpKind::Compute || op.micro_batch < 0)
        continue;
      replayed_ns[op.micro_batch] += op.duration_ns;
      const PipelineStep step{op.phase == traces::Phase::Forward ? PipelinePhase::Forward : PipelinePhase::Backward,
                              op.micro_batch, op.chunk};
      if (order.empty() || !(order.back() == step))
        order.push_back(step);
    }
    EXPECT_EQ(order, stage_schedule(pipeline_shape(w.plan), stage)) << "stage " << stage;
  }
  EXPECT_EQ(replayed_ns, captured_ns);

  // And the simulator runs it, writing the timeline.
  const std::string timeline = test_temp_path("scaled.timeline.json");
  const CliResult r = run_gputwin("replay '" + path + "' --pp 4 --dp 2 --timeline '" + timeline + "' --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"mode\": \"scaled\""), std::string::npos);
}

TEST(ReplayCli, CapturedH100TracesReplayWithinFivePercent)
{
  // Single-rank traces gputwin-engine (CUDA backend) captured on a lent H100 with scripts/gpu-check.sh,
  // replayed as measured on dgx-h100 (the engine's calibration evidence; traces/captured/.../summary.md).
  const std::string dir = std::string(GPUTWIN_SOURCE_DIR) + "/traces/captured/NVIDIA-H100-80GB-HBM3/";
  for (const char* name : {"h1024-tp1", "h2048-tp1", "h2048-tp1-full", "h4096-tp1"}) {
    SCOPED_TRACE(name);
    const CliResult r = run_gputwin("replay '" + dir + name + ".json' --cluster dgx-h100 --json", false);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_LT(std::abs(json_number(r.output, "relative_error")), 0.05) << r.output;
  }
}

TEST(ReplayCli, BadInput)
{
  const std::string good = capture("good", "--tp 2 --pp 2 --micro-batch 2 --global-batch 8");
  std::string text;
  {
    std::ifstream in(good);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto variant = [&](const std::string& name, const std::string& from, const std::string& to) {
    std::string t = text;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    const std::string path = test_temp_path(name + ".trace.json");
    std::ofstream(path) << t;
    return path;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"replay '" + variant("version", "\"format_version\":1", "\"format_version\":7") + "'", "format_version"},
      {"replay '" + variant("kind", "\"kind\":\"compute\"", "\"kind\":\"teleport\"") + "'", "teleport"},
      {"replay '" + variant("disagree", "\"collective\":\"all-reduce\"", "\"collective\":\"broadcast\"") + "'",
       "collective"},
      {"replay '" + good + "' --set node.gpus=2", "--cluster: the trace has ranks up to 3"},
      {"replay '" + good + "' --pp 4", "--pp: scaling out needs a trace captured with pp 1"},
      {"replay /nonexistent/trace.json", "/nonexistent/trace.json"},
      {"replay", "expected a trace file"},
  };
  for (const auto& [args, expected] : cases)
    expect_one_line_error(args, expected);
}

TEST(ProgressCheck, CollectivesEnteredInDifferentOrdersCannotComplete)
{
  traces::OpGraph g;
  g.groups = {{"tp", {0, 1}}, {"tp2", {0, 1}}};
  for (int32_t rank = 0; rank < 2; ++rank) {
    traces::RankProgram p;
    p.rank = rank;
    for (int k = 0; k < 2; ++k) {
      traces::Op op;
      op.id = k;
      op.kind = traces::OpKind::Collective;
      op.name = "ar";
      op.bytes = 1024;
      op.group = rank == 0 ? k : 1 - k; // rank 1 enters group 1 first
      op.sequence = 0;
      p.ops.push_back(op);
    }
    g.ranks.push_back(p);
  }
  traces::validate_op_graph(g); // every rule of the format holds ...
  try {
    sim::check_progress(g); // ... but no order lets both ranks finish
    FAIL() << "expected a deadlock";
  } catch (const traces::TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("trace cannot complete: rank 0 op 0 'ar'"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace gputwin::testing
