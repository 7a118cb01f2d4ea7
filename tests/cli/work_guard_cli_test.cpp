// Work guards through the real binary: a run whose pipeline schedules, ops or flows are far beyond what it can
// build is refused from closed forms and small probes, in well under a second, with one line that names the
// counts, the limit and --max-work; what is within the limit still runs. A gzip'd Kineto trace that inflates past
// the reader's cap is refused while it is counted.
#include "run_cli.hpp"
#include "test_temp_path.hpp"

#include "gputwin/traces/kineto.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace gputwin::testing {
namespace {

// Runs `arguments`, checks the refusal: exit 2, one line on stderr naming --max-work, `counted` and the limit;
// finished within 10 s (a guard against a hang, not a performance target: the refusal takes ~0.2 s).
void expect_work_refusal(const std::string& arguments, const std::string& counted, const std::string& limit = "1e+09")
{
  SCOPED_TRACE(arguments);
  const auto start = std::chrono::steady_clock::now();
  const CliResult r = run_gputwin(arguments, true);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  ASSERT_FALSE(r.output.empty());
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "one line: " << r.output;
  EXPECT_NE(r.output.find("error: --max-work: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(counted), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("more than the limit of " + limit), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("or --max-work N above the estimate to run it anyway"), std::string::npos) << r.output;
}

const std::string huge_batch = "--model gpt3-175b --plan paper --global-batch 100000000";

TEST(WorkGuards, MemoryRefusesAScheduleOfAHundredMillionMicroBatches)
{
  // 8 stages x 2 x 1e8 micro-batches x 3 chunks: the memory model would walk 4.8e9 schedule steps.
  expect_work_refusal("memory " + huge_batch, "the memory model would build ~4.8e+09 pipeline-schedule steps");
}

TEST(WorkGuards, SimulateAndGoodputRefuseBeforeTheRulesAndTheWorkload)
{
  expect_work_refusal("simulate " + huge_batch, "~4.8e+09 pipeline-schedule steps");
  expect_work_refusal("simulate " + huge_batch + " --estimate", "the simulation would build ~5.1e+11 ops");
  // goodput: the plan's work before its failure inputs are asked for.
  expect_work_refusal("goodput " + huge_batch, "the simulation would build ~5.1e+11 ops");
  // A million GPUs (dp 15625): 6400 micro-batches, but every pipeline message has 125000 copies on the network.
  const std::string million = "simulate " + huge_batch + " --dp 15625 --set fabric.switch_radix=4096";
  expect_work_refusal(million, "~3.7e+10 pipeline-message flows (6400 micro-batches per pipeline)");
  expect_work_refusal(million + " --estimate", "~3.7e+10 pipeline-message flows");
}

TEST(WorkGuards, SearchAndSweepCountEveryShapeBeforeRanking)
{
  expect_work_refusal("search --model gpt3-175b --gpus 64 --global-batch 100000000", "the search would build ");
  expect_work_refusal("search --model gpt3-175b --gpus 64 --global-batch 100000000", " plans, up to 1e+08 micro-batches");
  expect_work_refusal("goodput --search --model gpt3-175b --gpus 64 --global-batch 100000000 --tokens 1e9 "
                      "--mtbf-gpu-hours 20000 --checkpoint-write-gbps 2 --restart-s 300",
                      "the search would build ");
  expect_work_refusal("sweep --model gpt3-175b --gpus 64,128 --global-batch 100000000", "the sweep would build ");
}

// What a search runs: estimates execute the steady state's samples and time each distinct pipeline message once;
// only the best --top plans are simulated with every message's flows. Issue 28's llama3-70b sweep over three clusters
// (6420 plans, up to 1024 micro-batches) counted every plan as a full simulation, 1.9e9 flows, and was refused; its
// count (read from a refusal under --max-work 1) is now within the default limit.
TEST(WorkGuards, ASearchCountsFullSimulationsOnlyForItsTopPlans)
{
  const CliResult r = run_gputwin("sweep --model llama3-70b --cluster dgx-h100,dgx-b200,gb200-nvl72 --gpus 256,512,1024 "
                                  "--global-batch 1024 --seq-len 8192 --tokens 15e12 --max-work 1",
                                  true);
  ASSERT_EQ(r.exit_code, 2) << r.output;
  double total = 0;
  for (const char* what : {" ops (at least)", " pipeline-schedule steps", " pipeline-message flows"}) {
    const size_t end = r.output.find(what);
    ASSERT_NE(end, std::string::npos) << what << ": " << r.output;
    const size_t begin = r.output.rfind('~', end);
    ASSERT_NE(begin, std::string::npos) << r.output;
    total += std::stod(r.output.substr(begin + 1, end - begin - 1));
  }
  EXPECT_LT(total, 1e9) << r.output;
  EXPECT_GT(total, 1e7) << r.output; // still counted: 6420 plans of up to 1024 micro-batches
}

TEST(WorkGuards, TheLimitIsAFlagAndRunsWithinItAreUnchanged)
{
  // 640 micro-batches: 8 x 2 x 640 x 3 = 30720 schedule steps; within the default, refused under --max-work 1000.
  const std::string plan = "memory --model gpt3-175b --plan paper --global-batch 640";
  expect_work_refusal(plan + " --max-work 1000", "~30720 pipeline-schedule steps", "1e+03");
  const CliResult ok = run_gputwin(plan, false);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("verdict: "), std::string::npos) << ok.output;
  expect_one_line_error(plan + " --max-work 0x10", "--max-work: expected a number of items >= 1");
  expect_one_line_error(plan + " --max-work 0", "--max-work: expected a number of items >= 1");
  // scripts/bench.sh's 1536 micro-batches per pipeline (7.7e6 ops): counted, not refused.
  const CliResult estimate = run_gputwin("simulate --model gpt3-175b --cluster dgx-a100 --tp 8 --pp 8 --dp 1 "
                                         "--global-batch 1536 --micro-batch 1 --sp --recompute selective --estimate "
                                         "--json --max-work 1e8",
                                         false);
  EXPECT_EQ(estimate.exit_code, 0) << estimate.output;
}

// A measured-iteration table of `rows` rows (vTrain's columns), each a small plan.
std::string iteration_table(const std::string& name, int rows)
{
  const std::string path = test_temp_path(name);
  std::ofstream out(path);
  out << "# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,tensor parallelism,"
         "data parallelism,pipeline parallelism,iteration time (ms)\n";
  for (int i = 0; i < rows; ++i)
    out << "2,16,8,1024,16,24,1024,1,1,2," << 300 + i % 100 << "\n";
  return path;
}

TEST(WorkGuards, IterationTablesCountRowsTimesPlanSize)
{
  const std::string table = iteration_table("work-rows.csv", 2000);
  const std::string flags = " --cluster dgx-a100 --recompute full --schedule 1f1b --vocab 50257 --max-work 1e5";
  expect_work_refusal("compare --iterations '" + table + "'" + flags,
                      "the comparison of " + table + " would build ", "1e+05");
  expect_work_refusal("compare --iterations '" + table + "'" + flags, "(2000 plans, up to 2 micro-batches per pipeline)",
                      "1e+05");
  const std::string out = test_temp_path("work-fit.yaml");
  expect_work_refusal("calibrate --iterations '" + table + "'" + flags + " -o '" + out + "'",
                      "the fit of " + table + " would build ", "1e+05");
  std::remove(table.c_str());
}

// calibrate/compare --iterations hold every row's compiled op graph for the whole fit: 100k rows of vTrain's table
// needed ~30 GB (the machine has 24) and ended killed. The memory guard counts rows x ops per row (exact on a sample
// of rows, 61 bytes per compiled op) before any row is compiled: this plan is ~2500 ops, ~150 KB a row.
TEST(WorkGuards, IterationTablesCountTheirCompiledMemory)
{
  const std::string flags = " --cluster dgx-a100 --recompute full --schedule 1f1b --vocab 50257 --max-memory 100M";
  const std::string big = iteration_table("memory-rows.csv", 2000), small = iteration_table("memory-rows-ok.csv", 150);
  for (const std::string& command : {"compare --iterations '" + big + "'" + flags,
                                     "calibrate --iterations '" + big + "'" + flags + " -o '" +
                                         test_temp_path("memory-fit.yaml") + "'"}) {
    SCOPED_TRACE(command);
    const CliResult r = run_gputwin(command, true);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "one line: " << r.output;
    // 2000 rows x ~150 KB: more than twice the limit, so refused from rows sampled over the file at the row count
    // its size implies (the rows are of one length here: exactly 2000), before the file is read whole.
    EXPECT_NE(r.output.find(" of " + big + " (from 64 rows sampled over the file, about 2000 rows by its size) is "
                            "estimated to need "),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("but --max-memory is 100 MiB"), std::string::npos) << r.output;
  }
  // 150 rows of the same plan fit in 100 MiB (~60 MB): the comparison runs.
  const CliResult fits = run_gputwin("compare --iterations '" + small + "'" + flags, true);
  EXPECT_EQ(fits.exit_code, 0) << fits.output;
  // 700 rows (~147 MB) are past the limit but not twice it: refused once every row is read, by the whole table.
  const std::string near = iteration_table("memory-rows-near.csv", 700);
  const CliResult refused = run_gputwin("compare --iterations '" + near + "'" + flags, true);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find(" of " + near + " is estimated to need "), std::string::npos) << refused.output;
  std::remove(near.c_str());
  std::remove(big.c_str());
  std::remove(small.c_str());
}

// A gzip file of `bytes` zero bytes.
void write_zeros_gzip(const std::string& path, int64_t bytes)
{
  gzFile file = gzopen(path.c_str(), "wb1");
  ASSERT_NE(file, nullptr);
  const std::vector<char> zeros(1 << 20, 0);
  for (int64_t left = bytes; left > 0;) {
    const int n = static_cast<int>(std::min<int64_t>(left, static_cast<int64_t>(zeros.size())));
    ASSERT_EQ(gzwrite(file, zeros.data(), static_cast<unsigned>(n)), n);
    left -= n;
  }
  gzclose(file);
}

TEST(InflateCap, AGzipStreamPastTheCapIsRefusedWithTheCap)
{
  const std::string path = test_temp_path("bomb.json.gz");
  write_zeros_gzip(path, 3 << 20);
  try {
    traces::read_trace_text(path, 1 << 20);
    FAIL() << "3 MiB inflated past a 1 MiB cap";
  } catch (const traces::TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": the gzip stream inflates to more than 0.000977 GiB"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(traces::read_trace_text(path, 4 << 20).size(), size_t{3} << 20) << "under the cap: read whole";
  // Through the CLI, at the default cap (1 GiB): a ~1 MiB file that inflates past it.
  write_zeros_gzip(path, (int64_t{1} << 30) + (1 << 20));
  const CliResult r = run_gputwin("replay '" + path + "'", true);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("the gzip stream inflates to more than 1 GiB"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "one line: " << r.output;
  std::remove(path.c_str());
}

} // namespace
} // namespace gputwin::testing
