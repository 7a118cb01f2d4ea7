// No silent nonsense: validation holes closed, honest defaults and resource guards, through the real
// binaries. Every refusal is one line on stderr and exit status 2.
#include "run_cli.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace gputwin::testing {
namespace {

const std::string source_dir = GPUTWIN_SOURCE_DIR;
const std::string traces_dir = GPUTWIN_TEST_DATA_DIR "/traces/";

std::string read_text(const std::string& path)
{
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string write_temp(const std::string& name, const std::string& text)
{
  const std::string path = test_temp_path(name);
  std::ofstream(path) << text;
  return path;
}

std::string replace_once(std::string text, const std::string& from, const std::string& to)
{
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

// The refusal must be exit status 2 (bad input), not only a failure.
void expect_refusal(const std::string& arguments, const std::string& expected)
{
  expect_one_line_error(arguments, expected);
  EXPECT_EQ(run_gputwin(arguments, true).exit_code, 2) << arguments;
}

// A GPU compute model file fitted to a CPU (gputwin calibrate's format).
std::string cpu_gpu_model()
{
  return write_temp("cpu.gpu-model.yaml", "gpu_kind: \"cpu\"\nsource: \"test\"\npeak_flops_per_s: 1e11\n"
                                          "hbm_bytes_per_s: 1e10\nmultiprocessors: 1\ngemm_tile_m: 1\ngemm_tile_n: 1\n"
                                          "gemm_efficiency: 0.2\ngemm_k_half: 4\nmemory_efficiency: 0.2\n"
                                          "kernel_overhead_s: 0\n");
}

// --- 2. Validation holes ---------------------------------------------------------------------------------

TEST(Validation, DuplicateKeyInAClusterFileNamesFileAndLine)
{
  const std::string original = read_text(source_dir + "/topologies/clusters/dgx-a100.yaml");
  const std::string cluster = write_temp(
      "dup-cluster.yaml", replace_once(original, "  kind: a100-sxm4-80gb\n", "  kind: a100-sxm4-80gb\n  kind: h100\n"));
  for (const std::string command :
       {"topo", "simulate --model gpt-22b --plan paper --layers 2", "memory --model gpt-22b"})
    expect_refusal(command + " --cluster '" + cluster + "'",
                   cluster + ":12:3: kind: duplicate key (expected each key once in a mapping; first at line 11)");
  const std::string top = write_temp("dup-top.yaml", original + "nodes: 4\n");
  expect_refusal("topo --cluster '" + top + "'", top + ":");
  expect_refusal("topo --cluster '" + top + "'", "nodes: duplicate key");
  // A --set value is YAML too.
  expect_refusal("topo --set 'node.nics.gpus={a: 1, a: 2}'", "--set node.nics.gpus:1:8: a: duplicate key");
}

TEST(Validation, DuplicateKeyInModelGpuModelAndFrameworkFiles)
{
  const std::string model = write_temp("dup-model.yaml", "hidden: 5120\nheads: 40\nlayers: 40\nseq_len: 2048\n"
                                                         "vocab: 51200\nlayers: 80\n");
  expect_refusal("memory --model '" + model + "'", model + ":6:1: layers: duplicate key");
  const std::string gpu = write_temp("dup.gpu-model.yaml", read_text(cpu_gpu_model()) + "gemm_efficiency: 0.5\n");
  expect_refusal("simulate --model gpt-22b --layers 2 --cluster localhost --tp 2 --gpu-model '" + gpu + "'",
                 gpu + ":12:1: gemm_efficiency: duplicate key");
  const std::string framework = write_temp("dup.framework.yaml", "kernel_issue_s: 1e-6\nkernel_issue_s: 2e-6\n");
  expect_refusal("simulate --model gpt-22b --plan paper --layers 2 --framework '" + framework + "'",
                 framework + ":2:1: kernel_issue_s: duplicate key");
}

TEST(Validation, ShapeRulesHoldForFlagsFilesAndTraceMetadata)
{
  expect_refusal("simulate --model gpt-22b --heads 7",
                 "--heads: hidden size 6144 of model 'gpt-22b' is not divisible by 7");
  expect_refusal("memory --model '" GPUTWIN_TEST_DATA_DIR "/models/heads-not-dividing.yaml'",
                 "heads: 48 does not divide hidden 5120");
  // A trace's metadata are a model and plan too: read with the same rules when a replay scales it out.
  const std::string original = read_text(traces_dir + "cpu-tp1.json");
  const std::string heads = write_temp("heads.json", replace_once(original, "\"heads\":\"4\"", "\"heads\":\"3\""));
  expect_refusal("replay '" + heads + "' --dp 2",
                 "replay: the trace's metadata describe no valid run: heads: hidden size 128 of model 'custom' is not "
                 "divisible by 3 heads");
  const std::string dp = write_temp("dp0.json", replace_once(original, "\"dp\":\"1\"", "\"dp\":\"0\""));
  expect_refusal("replay '" + dp + "' --dp 2",
                 "replay: the trace's metadata describe no valid run: dp: expected a positive");
}

TEST(Validation, EmptyRankOrNoRanksInATraceIsRejected)
{
  const std::string original = read_text(traces_dir + "cpu-tp1.json");
  ASSERT_EQ(original.substr(original.size() - 4), "}]}\n");
  const std::string empty =
      write_temp("empty-rank.json", original.substr(0, original.size() - 3) + ",\n{\"rank\":1,\"ops\":[]}]}\n");
  expect_refusal("replay '" + empty + "'", "rank program at index 1: field 'ops': rank 1 has no ops");
  const std::string none = write_temp("no-ranks.json", "{\"format\":\"gputwin-op-graph\",\"format_version\":1,"
                                                       "\"metadata\":{},\"measured_iteration_s\":[],\"groups\":[],"
                                                       "\"ranks\":[]}\n");
  expect_refusal("replay '" + none + "'", "field 'ranks': no rank programs");
}

TEST(Validation, FlagsAModeWouldIgnoreAreErrors)
{
  const std::string trace = traces_dir + "cpu-tp1.json";
  for (const char* batch : {"0", "7", "8"})
    expect_refusal("replay '" + trace + "' --global-batch " + batch,
                   "--global-batch: applies to a scaled-out replay (with --dp, --pp or --layers)");
  expect_refusal("replay '" + trace + "' --gpu a100 --gpu-model '" + cpu_gpu_model() + "'",
                 "--gpu-model: and --gpu both re-target compute");
  expect_refusal("memory --model gpt3-175b --plan paper --nodes 2", "--nodes: the plan needs tp x pp x dp = 64 GPUs");
  expect_refusal("memory --model gpt-22b --sp --no-sp", "--no-sp: contradicts --sp");
}

TEST(Validation, GpuModelOfAnotherKindNeedsForce)
{
  const std::string model = cpu_gpu_model();
  const std::string run = "simulate --model gpt-22b --plan paper --layers 2 --gpu-model '" + model + "'";
  expect_refusal(run, "--gpu-model: " + model + " models GPU kind 'cpu' but the cluster's GPU is 'a100-sxm4-80gb'");
  EXPECT_EQ(run_gputwin(run + " --force", false).exit_code, 0);
  // The same file on a cluster of its kind needs no --force.
  EXPECT_EQ(run_gputwin("simulate --model gpt-22b --layers 2 --seq-len 256 --hidden 256 --heads 4 --vocab 1024 "
                        "--cluster localhost --gpu-model '" +
                            model + "'",
                        false)
                .exit_code,
            0);
}

TEST(Validation, DegenerateCollectivesAreRejected)
{
  expect_refusal("collective --op all-reduce --ranks 1 --bytes 1G",
                 "--ranks: a collective needs at least 2 ranks, got 1");
  expect_refusal("collective --op all-gather --nodes 1 --ranks-per-node 1 --bytes 1G",
                 "--ranks: a collective needs at least 2 ranks, got 1");
}

// Every data row of a table has its numeric columns (group 1 of `row_pattern`) ending at the same place.
void expect_aligned_rows(const std::string& table, const std::string& row_pattern)
{
  std::istringstream lines(table);
  std::string line;
  size_t width = 0, rows = 0;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (!std::regex_search(line, m, std::regex(row_pattern)))
      continue;
    ++rows;
    if (width == 0)
      width = static_cast<size_t>(m.length(1));
    EXPECT_EQ(static_cast<size_t>(m.length(1)), width) << line << "\n" << table;
  }
  EXPECT_GT(rows, 0u) << table;
}

TEST(Validation, TablesStayWellFormedForExtremeValues)
{
  const CliResult slow = run_gputwin("collective --nodes 1 --op all-reduce --ranks 8 --sweep 1K:1G:1024 "
                                     "--set node.nvlink.gbytes_per_s=1e-300",
                                     false);
  ASSERT_EQ(slow.exit_code, 0) << slow.output;
  const std::string collective_row = "^( +[0-9]+ +[^ ]+ +[^ ]+ +[^ ]+)   [a-z]";
  expect_aligned_rows(slow.output, collective_row);
  EXPECT_NE(slow.output.find("e+30"), std::string::npos) << slow.output; // 1e300 us in exponent form
  const CliResult fast = run_gputwin("collective --nodes 1 --op all-reduce --ranks 8 --sweep 1K:1G:1024", false);
  expect_aligned_rows(fast.output, collective_row);
  // A rate that overflows once converted to SI units is refused rather than printed as "inf" or "null".
  expect_refusal("topo --set node.nics.gbits_per_s=1e300", "--set node.nics.gbits_per_s: overflows a double");
  expect_refusal("topo --set gpu.hbm_gbytes=1e300", "--set gpu.hbm_gbytes: expected at most 1e9 GB per GPU");
  // Memory: bytes columns wide enough for any 64-bit count.
  const CliResult memory = run_gputwin("memory --model gpt-1t --micro-batch 4000", false);
  ASSERT_EQ(memory.exit_code, 0) << memory.output;
  expect_aligned_rows(memory.output, "^(  [a-zA-Z].* [0-9]+ +[0-9.]+)$");
  EXPECT_NE(memory.output.find("verdict: does not fit"), std::string::npos) << memory.output;
  // Simulate's rows: one short line each, exponents for values beyond fixed point.
  const CliResult sim = run_gputwin("simulate --model gpt-22b --layers 2 --tp 2 --pp 2 --global-batch 8 "
                                    "--cluster dgx-a100 --set node.nvlink.gbytes_per_s=1e-300 --allow-oom",
                                    false);
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  std::istringstream lines(sim.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  ", 0) == 0) { // the rows: label and value
      EXPECT_LT(line.size(), 80u) << line;
    }
  }
  EXPECT_NE(sim.output.find("e+"), std::string::npos) << sim.output;
}

// --- 3. Honest defaults ------------------------------------------------------------------------------------

TEST(HonestDefaults, NoGlobalBatchStatesItsDefaultAndJsonHasTheWholePlan)
{
  const std::string command = "simulate --model gpt3-175b --tp 8 --pp 8 --dp 1 --micro-batch 1 --json";
  const CliResult err = run_gputwin(command, true);
  EXPECT_EQ(err.exit_code, 0) << err.output;
  EXPECT_NE(err.output.find("note: --global-batch not given: global batch = micro-batch x dp = 1 x 1 = 1"),
            std::string::npos)
      << err.output;
  EXPECT_NE(err.output.find("warning: 1 micro-batch per pipeline for 8 pipeline stages: the pipeline never fills"),
            std::string::npos)
      << err.output;
  const CliResult json = run_gputwin(command, false);
  ASSERT_EQ(json.exit_code, 0);
  EXPECT_EQ(json.output.find('{'), 0u) << "stdout is the JSON alone";
  for (const char* field :
       {"\"plan\": {", "\"tp\": 8", "\"pp\": 8", "\"dp\": 1", "\"micro_batch\": 1", "\"global_batch\": 1",
        "\"schedule\": \"1f1b\"", "\"chunks\": 1", "\"recompute\": \"none\"", "\"sp\": false", "\"zero\": 0",
        "\"attention\": \"unfused\"", "\"model\": {", "\"hidden\": 12288", "\"cluster\": {", "\"name\": \"dgx-a100\"",
        "\"gpu\": \"a100-sxm4-80gb\"", "\"overlap_grad_reduce\": false", "\"framework\": \"megatron-lm\""})
    EXPECT_NE(json.output.find(field), std::string::npos) << field << "\n" << json.output;
  // A plan that fills its pipeline warns of nothing.
  const CliResult full =
      run_gputwin("simulate --model gpt-22b --layers 4 --tp 8 --pp 2 --global-batch 8 --nodes 2", true);
  EXPECT_EQ(full.output, "") << full.output;
}

TEST(HonestDefaults, PlanPaperIsThePapersWholeConfigurationAndSaysSo)
{
  const CliResult err = run_gputwin("simulate --model gpt3-175b --plan paper --layers 24 --json", true);
  ASSERT_EQ(err.exit_code, 0) << err.output;
  EXPECT_NE(err.output.find("note: --plan paper (Korthikanti et al. 2022: Table 3's plan, Table 5's SP + selective "
                            "recompute) set tp 8, pp 8, dp 1, micro-batch 1, global batch 64, schedule interleaved x3 "
                            "chunks, sequence parallelism, recompute selective"),
            std::string::npos)
      << err.output;
  // --plan paper alone is the paper's run: the same report as with --sp --recompute selective spelled out.
  auto without_wall = [](const std::string& json) {
    return std::regex_replace(json, std::regex("\"sim_wall_time_s\": [0-9.e+-]+"), "");
  };
  const CliResult alone = run_gputwin("simulate --model gpt3-175b --plan paper --layers 24 --json", false);
  const CliResult spelled =
      run_gputwin("simulate --model gpt3-175b --plan paper --sp --recompute selective --layers 24 --json", false);
  ASSERT_EQ(alone.exit_code, 0);
  EXPECT_EQ(without_wall(alone.output), without_wall(spelled.output));
  EXPECT_NE(alone.output.find("\"sp\": true"), std::string::npos);
  EXPECT_NE(alone.output.find("\"recompute\": \"selective\""), std::string::npos);
  EXPECT_NE(alone.output.find("\"global_batch\": 64"), std::string::npos);
  // Flags still override it, and the note says which.
  const CliResult off = run_gputwin("memory --model gpt3-175b --plan paper --no-sp --recompute full --json", true);
  EXPECT_NE(off.output.find("from the flags: --no-sp --recompute"), std::string::npos) << off.output;
  const CliResult off_json =
      run_gputwin("memory --model gpt3-175b --plan paper --no-sp --recompute full --json", false);
  EXPECT_NE(off_json.output.find("\"sp\": false"), std::string::npos);
  EXPECT_NE(off_json.output.find("\"recompute\": \"full\""), std::string::npos);
}

TEST(HonestDefaults, MemoryGivesAVerdictAgainstTheClusterGpu)
{
  const CliResult fits = run_gputwin("memory --model gpt3-175b --plan paper", false);
  ASSERT_EQ(fits.exit_code, 0);
  // The allocated peak plus the default reserve (CUDA context, NCCL buffers, 3 % allocator fragmentation).
  EXPECT_NE(fits.output.find("verdict: fits: 63.251 GiB (59.953 allocated + 3.299 reserve) of the 80.000 GiB of one "
                             "a100-sxm4-80gb (dgx-a100), headroom 16.749 GiB (20.9 %)"),
            std::string::npos)
      << fits.output;
  EXPECT_EQ(fits.output.find(" GB"), std::string::npos) << "one unit system: GiB";
  const CliResult short_of = run_gputwin("memory --model gpt3-175b --tp 8 --pp 2 --cluster dgx-h200", false);
  EXPECT_NE(short_of.output.find("verdict: does not fit: "), std::string::npos) << short_of.output;
  EXPECT_NE(short_of.output.find("of one h200-sxm-141gb (dgx-h200) short by"), std::string::npos) << short_of.output;
  const CliResult json = run_gputwin("memory --model gpt3-175b --tp 8 --pp 2 --cluster dgx-h200 --json", false);
  EXPECT_NE(json.output.find("\"fits\": false"), std::string::npos) << json.output;
  EXPECT_NE(json.output.find("\"gpu_memory_bytes\": 150754820096"), std::string::npos) << json.output;
  EXPECT_NE(json.output.find("\"headroom_bytes\": -"), std::string::npos) << json.output;
  EXPECT_EQ(json.output.find("gib"), std::string::npos) << "bytes only in JSON";
}

TEST(HonestDefaults, HelpTextsMatchBehaviour)
{
  const CliResult replay = run_gputwin("replay --help", false);
  EXPECT_NE(replay.output.find("default: localhost for a trace captured on the CPU, else dgx-a100"), std::string::npos)
      << replay.output;
  const CliResult simulate = run_gputwin("simulate --help", false);
  for (const char* text : {"--allow-oom", "--max-memory SIZE", "--force", "--no-sp", "one micro-batch per pipeline"})
    EXPECT_NE(simulate.output.find(text), std::string::npos) << text;
  EXPECT_NE(run_gputwin("memory --help", false).output.find("--cluster NAME|FILE"), std::string::npos);
}

TEST(HonestDefaults, EveryJsonReportRepeatsWhatItRan)
{
  const CliResult replay = run_gputwin("replay '" + traces_dir + "cpu-tp1.json' --json", false);
  ASSERT_EQ(replay.exit_code, 0) << replay.output;
  for (const char* field : {"\"model\": {", "\"hidden\": 128", "\"plan\": {", "\"micro_batch\": 1", "\"cluster\": {",
                            "\"name\": \"localhost\""})
    EXPECT_NE(replay.output.find(field), std::string::npos) << field << "\n" << replay.output;
  const CliResult scaled = run_gputwin("replay '" + traces_dir + "cpu-tp1.json' --dp 2 --json", false);
  EXPECT_NE(scaled.output.find("\"dp\": 2"), std::string::npos) << scaled.output;
  const CliResult collective = run_gputwin("collective --op all-reduce --ranks 16 --bytes 1M --json", false);
  ASSERT_EQ(collective.exit_code, 0);
  for (const char* field : {"\"cluster\": {", "\"nodes\": 2", "\"op\": \"all-reduce\"", "\"ranks\": 16",
                            "\"ranks_per_node\": 8", "\"results\": [", "\"busbw_gbps\""})
    EXPECT_NE(collective.output.find(field), std::string::npos) << field << "\n" << collective.output;
}

// --- 4. Resource guards -------------------------------------------------------------------------------------

// Runs a command and returns its result and wall seconds.
std::pair<CliResult, double> timed(const std::string& arguments)
{
  const auto start = std::chrono::steady_clock::now();
  CliResult r = run_gputwin(arguments, true);
  return {r, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

TEST(ResourceGuards, OversizedRunsAreRefusedAtOnceWithTheEstimateAndTheOverride)
{
  // 102400 GPUs. Its busiest GPU needs 99.3 GiB of an H100's 79.6 GiB (with unfused attention, asked for: Hopper
  // defaults to flash), which is known from the plan alone, before any cluster is built.
  const auto [oom, oom_s] = timed(
      "simulate --model gpt3-175b --tp 8 --pp 8 --dp 1600 --cluster dgx-h100 --global-batch 12800 --attention unfused");
  EXPECT_EQ(oom.exit_code, 2) << oom.output;
  EXPECT_LT(oom_s, 5.0);
  EXPECT_NE(oom.output.find("--allow-oom: not given, and the plan does not fit: pipeline stage 0 needs 99.3 GiB per "
                            "GPU but the h100-sxm5-80gb of dgx-h100 has 79.6 GiB"),
            std::string::npos)
      << oom.output;
  EXPECT_EQ(oom.output.find("bad_alloc"), std::string::npos);
  // 2.56 million GPUs: SimGrid's hosts alone exceed this machine (or a --max-memory set below them).
  const std::string huge = "simulate --model gpt3-175b --tp 8 --pp 8 --dp 40000 --global-batch 320000 --sp "
                           "--recompute selective --cluster dgx-h100";
  const auto [host, host_s] = timed(huge + " --max-memory 16G");
  EXPECT_EQ(host.exit_code, 2) << host.output;
  EXPECT_LT(host_s, 5.0);
  EXPECT_NE(host.output.find("--max-memory: the simulation is estimated to need "), std::string::npos) << host.output;
  EXPECT_NE(host.output.find("(2560000 GPUs) but --max-memory is 16.0 GiB (expected a smaller plan or cluster, or "
                             "--max-memory SIZE above the estimate to run it anyway)"),
            std::string::npos)
      << host.output;
  expect_one_line_error(huge + " --max-memory 16G", "--max-memory");
}

TEST(ResourceGuards, OpsAndFlowsAreCountedFromThePlan)
{
  // A million micro-batches: refused from the probes' count, before the workload exists.
  const CliResult batch = run_gputwin("simulate --model gpt3-175b --plan paper --global-batch 1000000", true);
  EXPECT_EQ(batch.exit_code, 2);
  EXPECT_NE(batch.output.find("~5.1e+09 ops"), std::string::npos) << batch.output;
  // --max-memory sets the limit both ways; the count is the executor's own (an --estimate run executes each op once).
  expect_refusal("simulate --model gpt-22b --plan paper --layers 2 --max-memory 1M",
                 "--max-memory: the simulation is estimated to need");
  expect_refusal("simulate --model gpt-22b --plan paper --layers 2 --max-memory 1M", "but --max-memory is 1 MiB");
  const CliResult run = run_gputwin("simulate --model gpt3-175b --plan paper --layers 48 --estimate --json", false);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::smatch events, ops;
  ASSERT_TRUE(std::regex_search(run.output, events, std::regex("\"simulated_events\": ([0-9]+)")));
  ASSERT_TRUE(std::regex_search(run.output, ops, std::regex("\"ops\": ([0-9]+)")));
  EXPECT_EQ(events[1], ops[1]);
  expect_refusal("collective --op all-to-all --ranks 16000 --bytes 1G", "--max-memory: the collective is estimated");
}

TEST(ResourceGuards, TheEngineCpuBackendPredictsHostMemoryBeforeAllocating)
{
  const auto start = std::chrono::steady_clock::now();
  const CliResult r = run_program(GPUTWIN_ENGINE, "train --model gpt3-175b", true);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("error: the plan does not fit on the host: the memory model predicts 3184.23 GiB"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("available on it (MemAvailable)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

// The engine recomputes as --recompute selective|full only: Megatron-Core's recompute modules are the simulator's.
TEST(HonestDefaults, TheEngineRefusesRecomputeModulesItDoesNotImplement)
{
  const CliResult r = run_program(GPUTWIN_ENGINE,
                                  "train --hidden 64 --heads 4 --layers 2 --seq-len 16 --vocab 128 --steps 1 "
                                  "--recompute-modules core_attn",
                                  true);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("gputwin-engine train: error: --recompute-modules: not implemented by the engine"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;
}

} // namespace
} // namespace gputwin::testing
