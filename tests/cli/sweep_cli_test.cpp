// `gputwin sweep` through the real binary: one CSV row per point, consistent scaling columns, a PNG drawn by
// gnuplot, points where nothing fits skipped with a warning, and bad input.
#include "json_report.hpp"
#include "run_cli.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gputwin::testing {
namespace {

std::vector<std::string> split(const std::string& line, char separator)
{
  std::vector<std::string> items;
  std::stringstream stream(line);
  for (std::string item; std::getline(stream, item, separator);)
    items.push_back(item);
  if (!line.empty() && line.back() == separator)
    items.emplace_back();
  return items;
}

// A 12-layer gpt-22b (the same layer shapes, fast to simulate) on one and two DGX A100 nodes.
const std::string small_sweep = "sweep --model gpt-22b --layers 12 --cluster dgx-a100 --gpus 8,16 --global-batch 16 "
                                "--tokens 1e9 --price-per-gpu-hour 2.5";

TEST(SweepCli, OneCsvRowPerPointWithConsistentScalingColumnsAndAPng)
{
  const std::string csv = test_temp_path("points.csv"), png = test_temp_path("points.png");
  std::remove(csv.c_str());
  std::remove(png.c_str());
  const CliResult r = run_gputwin(small_sweep + " --csv '" + csv + "' --plot '" + png + "'", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("gpt-22b"), std::string::npos) << r.output;

  std::vector<std::string> lines = split(read_file(csv), '\n');
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front().rfind("# gputwin sweep ", 0), 0u) << "the sweep's identity first: " << lines.front();
  lines.erase(lines.begin());
  if (lines.back().empty())
    lines.pop_back();
  const std::string required = "cluster,gpus,tp,pp,dp,micro_batch,iteration_time_s,tokens_per_s,mfu,time_to_train_s,"
                               "gpu_hours,cost";
  ASSERT_EQ(lines.front().rfind(required, 0), 0u) << lines.front();
  const std::vector<std::string> header = split(lines.front(), ',');
  ASSERT_EQ(lines.size(), 3u) << "a header and one row per GPU count";
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> row = split(lines[i], ',');
    ASSERT_EQ(row.size(), header.size()) << lines[i];
    for (const std::string& cell : row)
      EXPECT_FALSE(cell.empty()) << lines[i];
    EXPECT_EQ(row[0], "dgx-a100");
    const double gpus = std::stod(row[1]);
    EXPECT_EQ(gpus, i == 1 ? 8 : 16);
    EXPECT_EQ(std::stod(row[2]) * std::stod(row[3]) * std::stod(row[4]), gpus) << "tp x pp x dp";
    const double tokens_per_s = std::stod(row[7]), time_to_train_s = std::stod(row[9]);
    const double gpu_hours = std::stod(row[10]), cost = std::stod(row[11]);
    EXPECT_GT(tokens_per_s, 0);
    EXPECT_GT(std::stod(row[8]), 0.1) << "MFU";
    EXPECT_NEAR(time_to_train_s / (1e9 / tokens_per_s), 1.0, 1e-9);
    EXPECT_NEAR(gpu_hours / (gpus * time_to_train_s / 3600), 1.0, 1e-9);
    EXPECT_NEAR(cost / (gpu_hours * 2.5), 1.0, 1e-9);
  }

  const std::string image = read_file(png);
  EXPECT_GT(image.size(), 1024u);
  EXPECT_EQ(image.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::remove(csv.c_str());
  std::remove(png.c_str());
}

TEST(SweepCli, PointsWhereNothingFitsAreSkippedWithAWarning)
{
  // 12 layers of gpt-22b need 99 GiB on one A100: that point is skipped with its smallest plan's memory, the
  // 8-GPU point is kept.
  const CliResult err =
      run_gputwin("sweep --model gpt-22b --layers 12 --cluster dgx-a100 --gpus 1,8 --global-batch 16", true);
  EXPECT_EQ(err.exit_code, 0) << err.output;
  EXPECT_NE(err.output.find("skipping gpt-22b on 1 GPUs of dgx-a100, global batch 16: no plan fits: the smallest"),
            std::string::npos)
      << err.output;
  EXPECT_NE(err.output.find("GiB per GPU but the a100-sxm4-80gb has 80.0 GiB"), std::string::npos) << err.output;
  const CliResult out =
      run_gputwin("sweep --model gpt-22b --layers 12 --cluster dgx-a100 --gpus 1,8 --global-batch 16", false);
  EXPECT_EQ(split(out.output, '\n').size(), 3u) << "a header and the 8-GPU row: " << out.output;
}

TEST(SweepCli, NoPlanFitsAnywhereIsOneLineSayingWhy)
{
  // 175B fits neither 8 nor 16 A100s: one line, the smallest plan's memory against the GPU's.
  expect_one_line_error("sweep --model gpt3-175b --cluster dgx-a100 --gpus 8 --global-batch 8",
                        "gpt3-175b on 8 GPUs of dgx-a100, global batch 8: no plan fits: the smallest");
  expect_one_line_error("sweep --model gpt3-175b --cluster dgx-a100 --gpus 8 --global-batch 8",
                        "GiB per GPU but the a100-sxm4-80gb has 80.0 GiB");
  expect_one_line_error("sweep --model gpt3-175b --cluster dgx-a100 --gpus 8,16 --global-batch 8",
                        "no plan fits at any of the 2 points of the sweep; at the last, gpt3-175b on 16 GPUs");
  const CliResult r = run_gputwin("sweep --model gpt3-175b --cluster dgx-a100 --gpus 8,16 --global-batch 8", true);
  EXPECT_EQ(r.exit_code, 2);
}

TEST(SweepCli, BadInputIsOneLineAndNamesTheReason)
{
  expect_one_line_error("sweep --model gpt3-175b --gpus 64:x2", "--gpus: expected");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64 --tokens 0x10", "--tokens: expected a positive number");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64 --tokens 1e9 --price-per-gpu-hour nan",
                        "--price-per-gpu-hour: expected a non-negative number");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64 --cluster dgx-h100,dgx-a100 --fp8", "--fp8: the a100");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64:32:x2", "END 32 is below START 64");
  expect_one_line_error("sweep --model gpt3-175b --gpus 0:64:x2", "START '0' is not a whole number");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64:4096:x1", "a factor must be at least 2");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64:4096:y2", "--gpus: expected");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64:4096:", "--gpus: expected");
  expect_one_line_error("sweep --model gpt3-175b --gpus 0,64", "--gpus: expected");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64:1024:x1", "--gpus: expected");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64,,128", "--gpus");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64,12 --cluster dgx-a100", "not a multiple of");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64:1024:+12 --cluster dgx-a100", "76 is not a multiple of");
  expect_one_line_error("sweep --model gpt3-175b --cluster dgx-a100", "--gpus: required");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64 --tokens abc", "--tokens");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64 --plot /tmp/x.jpg", "--plot");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64 --shard 4/3", "--shard: K must be between 1 and N");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64 --shard 0/3", "--shard: K must be between 1 and N");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64 --shard a/b", "--shard: expected K/N");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64 --shard 3", "--shard: expected K/N");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64 --jobs 0", "--jobs");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64 stray.csv", "unexpected argument 'stray.csv'");
  const CliResult slurm =
      run_program("env",
                  "SLURM_ARRAY_TASK_ID=4 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=1 '" GPUTWIN_CLI
                  "' sweep --model gpt3-175b --gpus 64",
                  true);
  EXPECT_EQ(slurm.exit_code, 2);
  EXPECT_NE(slurm.output.find("error: SLURM_ARRAY_TASK_ID: 4 is not one of the 3 tasks"), std::string::npos)
      << slurm.output;
}

// The sweep of the scale-out tests: 6 points (2 clusters x 3 GPU counts), about a second in all.
const std::string six_points = "sweep --model gpt-22b --layers 12 --cluster dgx-a100,dgx-h100 --gpus 8,16,32 "
                               "--global-batch 16 --tokens 1e9 --price-per-gpu-hour 2.5";

// Runs `arguments --csv FILE` and returns the CSV.
std::string sweep_csv(const std::string& arguments, const std::string& name, const std::string& env = "")
{
  const std::string csv = test_temp_path(name);
  std::remove(csv.c_str());
  const CliResult r = env.empty()
                          ? run_gputwin(arguments + " --csv '" + csv + "'", false)
                          : run_program("env", env + " '" GPUTWIN_CLI "' " + arguments + " --csv '" + csv + "'", false);
  EXPECT_EQ(r.exit_code, 0) << arguments << "\n" << r.output;
  const std::string content = read_file(csv);
  std::remove(csv.c_str());
  return content;
}

TEST(SweepCli, ShardedThenMergedIsByteIdenticalToOneRun)
{
  const std::string whole = sweep_csv(six_points, "whole.csv");
  std::vector<std::string> lines = split(whole, '\n');
  ASSERT_EQ(lines.size(), 9u) << "the identity, a header, 6 rows and the final newline: " << whole;
  EXPECT_NE(lines.front().find(" shard 1/1 of 6 points: "), std::string::npos) << lines.front();
  lines.erase(lines.begin());
  // The columns after `point` came later and are appended, so older columns keep their places.
  const std::string tail = "scaling_efficiency,point,attention,cp,fp8,tp_comm_overlap,overlap_grad_reduce,"
                           "overlap_param_gather,ep,etp,sp,zero";
  ASSERT_GE(lines.front().size(), tail.size());
  EXPECT_EQ(lines.front().substr(lines.front().size() - tail.size()), tail);
  // Each cluster's default attention (flash on Hopper); gradients reduced (dp > 1) or not, never an overlap of a
  // reduction that does not happen.
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    const std::vector<std::string> row = split(lines[i], ',');
    ASSERT_EQ(row.size(), 29u) << lines[i];
    EXPECT_EQ(row[19], row[0] == "dgx-h100" ? "flash" : "unfused") << lines[i];
    EXPECT_EQ(row[20], "1") << "cp: gpt-22b's 2048-token sequence is not split by default: " << lines[i];
    EXPECT_EQ(row[21], "0") << "fp8";
    if (std::stoi(row[4]) == 1) {
      EXPECT_EQ(row[23] + row[24], "00") << "dp 1 overlaps no gradient reduction: " << lines[i];
    }
    EXPECT_EQ(row[25] + "," + row[26], "1," + row[2]) << "a dense model: ep 1, etp = tp: " << lines[i];
  }

  // Three slices: disjoint, none with a scaling efficiency (it depends on points of other slices).
  std::vector<std::string> parts;
  size_t rows = 0;
  for (int k = 1; k <= 3; ++k) {
    const std::string part = test_temp_path("shard" + std::to_string(k) + ".csv");
    std::ofstream(part, std::ios::binary)
        << sweep_csv(six_points + " --shard " + std::to_string(k) + "/3", "shard-run.csv");
    std::vector<std::string> part_lines = split(read_file(part), '\n');
    ASSERT_GE(part_lines.size(), 3u);
    EXPECT_NE(part_lines.front().find(" shard " + std::to_string(k) + "/3 of 6 points: "), std::string::npos)
        << part_lines.front();
    part_lines.erase(part_lines.begin());
    EXPECT_EQ(part_lines.front(), lines.front()) << "the same header";
    for (size_t i = 1; i + 1 < part_lines.size(); ++i) {
      EXPECT_NE(whole.find(part_lines[i].substr(0, part_lines[i].find(",gpt-22b,"))), std::string::npos);
      EXPECT_NE(part_lines[i].find(",,"), std::string::npos) << "scaling efficiency left empty: " << part_lines[i];
      ++rows;
    }
    parts.push_back(part);
  }
  EXPECT_EQ(rows, 6u);

  // Merged in any order, into a file (-o) or onto stdout: the bytes of the unsharded run.
  const std::string merged = test_temp_path("merged.csv");
  std::remove(merged.c_str());
  const CliResult m =
      run_gputwin("sweep --merge '" + parts[2] + "' '" + parts[0] + "' '" + parts[1] + "' -o '" + merged + "'", false);
  ASSERT_EQ(m.exit_code, 0) << m.output;
  // The table shows the scaling the merge recomputed: 16 GPUs of dgx-a100 against 8, as the unsharded run wrote it.
  const std::vector<std::string> a100_16 = split(lines[2], ',');
  ASSERT_EQ(a100_16[0] + "," + a100_16[1], "dgx-a100,16") << lines[2];
  char scaling[32];
  std::snprintf(scaling, sizeof scaling, " %.1f%%\n", 100 * std::stod(a100_16[17]));
  EXPECT_NE(m.output.find(scaling), std::string::npos) << "the table, with the recomputed scaling " << scaling << ": "
                                                       << m.output;
  EXPECT_EQ(m.output.find(" -\n"), std::string::npos) << "no scaling left unknown: " << m.output;
  EXPECT_EQ(read_file(merged), whole);
  const CliResult to_stdout =
      run_gputwin("sweep --merge '" + parts[0] + "' '" + parts[1] + "' '" + parts[2] + "'", false);
  EXPECT_EQ(to_stdout.output, whole);
  // A single run's CSV merged alone is itself.
  const std::string whole_file = test_temp_path("whole-again.csv");
  std::ofstream(whole_file, std::ios::binary) << whole;
  EXPECT_EQ(run_gputwin("sweep --merge '" + whole_file + "'", false).output, whole);

  // A shard given twice, a whole sweep with a shard, and files with different headers are one-line errors.
  expect_one_line_error("sweep --merge '" + parts[0] + "' '" + parts[1] + "' '" + parts[0] + "'",
                        "shard 1/3 is also " + parts[0]);
  expect_one_line_error("sweep --merge '" + parts[0] + "' '" + whole_file + "'", "shard 1/1 but " + parts[0]);
  const std::string other_header = test_temp_path("other-header.csv");
  std::string renamed = read_file(parts[1]);
  renamed.replace(renamed.find("tokens_per_s"), 12, "tokens_per_h");
  renamed.replace(renamed.find(" shard 2/3 "), 11, " shard 3/3 ");
  std::ofstream(other_header, std::ios::binary) << renamed;
  expect_one_line_error("sweep --merge '" + parts[0] + "' '" + parts[1] + "' '" + other_header + "'",
                        "the header differs from");
  expect_one_line_error("sweep --merge '" + other_header + "' '" + parts[0] + "' '" + parts[1] + "'",
                        "not the header of a CSV written by");
  expect_one_line_error("sweep --merge", "--merge: expected the CSV files");
  expect_one_line_error("sweep --merge '" + parts[0] + "' --gpus 8", "--gpus: not used with --merge");
  expect_one_line_error("sweep --merge /nonexistent/a.csv", "--merge: cannot read '/nonexistent/a.csv'");
  for (const std::string& f : parts)
    std::remove(f.c_str());
  for (const std::string& f : {merged, whole_file, other_header})
    std::remove(f.c_str());
}

// The sweep's table and JSON name each point's attention, cp, fp8 and overlaps; --no-overlaps turns them off.
// A model file's `name:` may hold a line break (CR LF too); the CSV quotes it (RFC 4180) and --merge reads it back:
// A mixture-of-experts point: the sweep's best plan is the search's, expert parallelism included, in the table, the
// CSV and the CSV merged back (which writes the same bytes). Until the ep, etp, sp and zero columns the table and CSV
// dropped them: Qwen3-30B-A3B's best plan on 16 H100, ep 8 with ZeRO-1, read as a plain tp 1 pp 2 dp 8 plan.
TEST(SweepCli, MixtureOfExpertsKeepsItsExpertParallelism)
{
  const std::string point = "--model qwen3-30b-a3b --cluster dgx-h100 --gpus 16 --global-batch 64 --seq-len 4096";
  const traces::JsonValue searched = cli_json_report("search " + point + " --top 1 --json");
  ASSERT_EQ(searched.items.size(), 1u);
  const traces::JsonValue& best = member(searched.items.front(), "plan");
  const auto cell = [&](const char* key) { return std::to_string(static_cast<int64_t>(number(best, key))); };
  ASSERT_GT(number(best, "ep"), 1) << "128 experts on 16 GPUs: the search's best plan splits them";

  const std::string csv = sweep_csv("sweep " + point, "moe.csv");
  const std::vector<std::string> lines = split(csv, '\n');
  ASSERT_EQ(lines.size(), 4u) << "the identity, a header, a row and the final newline: " << csv;
  const std::vector<std::string> row = split(lines[2], ',');
  ASSERT_EQ(row.size(), 29u) << lines[2];
  EXPECT_EQ(row[2] + " " + row[3] + " " + row[4], cell("tp") + " " + cell("pp") + " " + cell("dp")) << lines[2];
  EXPECT_EQ(row[25] + " " + row[26], cell("ep") + " " + cell("etp")) << lines[2];
  EXPECT_EQ(row[27], member(best, "sp").boolean ? "1" : "0") << lines[2];
  EXPECT_EQ(row[28], cell("zero")) << lines[2];

  const CliResult table = run_gputwin("sweep " + point, false);
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find(" ep " + cell("ep") + " etp " + cell("etp") + " pp " + cell("pp") + " "),
            std::string::npos)
      << table.output;

  const std::string shard = test_temp_path("moe-shard.csv"), merged = test_temp_path("moe-merged.csv");
  std::ofstream(shard, std::ios::binary) << csv;
  std::remove(merged.c_str());
  const CliResult r = run_gputwin("sweep --merge '" + shard + "' -o '" + merged + "'", true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_file(merged), csv);
  std::remove(shard.c_str());
  std::remove(merged.c_str());
}

// the merged file is the same bytes.
TEST(SweepCli, MergeReadsBackAModelNameWithALineBreak)
{
  const std::string csv = test_temp_path("newline-name.csv"), merged = test_temp_path("newline-merged.csv");
  const std::string content =
      "# gputwin sweep 0123456789abcdef shard 1/1 of 1 points: --model my-model.yaml --gpus 8\n"
      "cluster,gpus,tp,pp,dp,micro_batch,iteration_time_s,tokens_per_s,mfu,time_to_train_s,gpu_hours,cost,model,"
      "schedule,chunks,recompute,peak_memory_bytes,scaling_efficiency,point,attention,cp,fp8,tp_comm_overlap,"
      "overlap_grad_reduce,overlap_param_gather,ep,etp,sp,zero\n"
      "dgx-a100,8,2,1,4,4,0.87780754948532935,37329.366806212056,0.543105,,,,\"my\nmodel, v2\",1f1b,1,none,"
      "69441019904,1,0,unfused,1,0,0,0,0,1,2,1,1\n";
  // Writes `text` as the shard, merges it alone and expects the merged file to be the same bytes.
  const auto expect_merge_reads_back = [&](const std::string& text) {
    std::ofstream(csv, std::ios::binary) << text;
    std::remove(merged.c_str());
    const CliResult r = run_gputwin("sweep --merge '" + csv + "' -o '" + merged + "'", true);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(read_file(merged), text);
  };
  expect_merge_reads_back(content);

  // A name holding CR LF (YAML "my\r\nmodel"): the CR inside the quoted cell is the name's, not a line end to drop
  // (found by the sweep_csv fuzz harness: it read back as "my\nmodel", so the merge changed the name).
  std::string crlf = content;
  crlf.replace(crlf.find("\"my\nmodel"), 9, "\"my\r\nmodel");
  expect_merge_reads_back(crlf);

  // A bad cell in a quoted, multi-line record is named on one line: its line break shown as '?'.
  std::string bad = content;
  bad.replace(bad.find(",1f1b,"), 6, ",\"1f\n1b\",");
  std::ofstream(csv, std::ios::binary) << bad;
  expect_one_line_error("sweep --merge '" + csv + "'", "schedule: expected 1f1b|interleaved|gpipe, got '1f?1b'");
  std::remove(csv.c_str());
  std::remove(merged.c_str());
}

TEST(SweepCli, TableAndJsonNameAttentionContextParallelismAndOverlaps)
{
  const std::string sweep = "sweep --model llama3-8b --layers 4 --cluster dgx-h100 --gpus 16 --global-batch 16";
  const CliResult table = run_gputwin(sweep, false);
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("attention overlaps"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find(" flash "), std::string::npos) << table.output;
  const CliResult json = run_gputwin(sweep + " --json", false);
  ASSERT_EQ(json.exit_code, 0) << json.output;
  for (const char* key : {"\"attention\": \"flash\"", "\"cp\": ", "\"fp8\": false", "\"tp_comm_overlap\": ",
                          "\"overlap_grad_reduce\": true", "\"overlap_param_gather\": "})
    EXPECT_NE(json.output.find(key), std::string::npos) << key << "\n" << json.output;
  const CliResult off = run_gputwin(sweep + " --no-overlaps --json", false);
  ASSERT_EQ(off.exit_code, 0) << off.output;
  for (const char* key : {"\"tp_comm_overlap\": true", "\"overlap_grad_reduce\": true", "\"overlap_param_gather\": true"})
    EXPECT_EQ(off.output.find(key), std::string::npos) << key << "\n" << off.output;
  expect_one_line_error("sweep --model llama3-8b --cluster dgx-a100 --gpus 16 --cp 1,2",
                        "--cp: context parallelism needs flash attention");
}

TEST(SweepCli, ASlurmArraySlicesLikeShardAndAnEmptySliceIsHeaderOnly)
{
  // --array=1-3: SLURM_ARRAY_TASK_ID 2 is the second slice, as --shard 2/3.
  const std::string slurm =
      sweep_csv(six_points, "slurm2.csv",
                "SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=3 SLURM_ARRAY_TASK_COUNT=3");
  EXPECT_EQ(slurm, sweep_csv(six_points + " --shard 2/3", "shard2.csv"));
  // --array=0-2: task 1 is the second slice too.
  EXPECT_EQ(slurm, sweep_csv(six_points, "slurm1.csv",
                             "SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=3"));
  // --shard wins over the environment.
  EXPECT_EQ(
      split(sweep_csv(six_points + " --shard 1/1", "all.csv", "SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3"), '\n')
          .size(),
      9u);
  // More slices than points: the last ones have nothing to do; they succeed with a header-only CSV (a Slurm array
  // larger than the sweep still merges).
  const std::string empty = sweep_csv(six_points + " --shard 7/7", "empty.csv");
  EXPECT_EQ(split(empty, '\n').size(), 3u) << empty;
}

TEST(SweepCli, ParallelJobsGiveTheSameOutputAsOne)
{
  const CliResult one = run_gputwin(six_points + " --jobs 1 --json", false);
  const CliResult two = run_gputwin(six_points + " --jobs 2 --json", false);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_EQ(one.output, two.output);
  EXPECT_EQ(sweep_csv(six_points + " --jobs 1", "jobs1.csv"), sweep_csv(six_points + " --jobs 3", "jobs3.csv"));
}

TEST(SweepCli, NoProgressBarWhenStderrIsNotATerminal)
{
  // Under ctest stderr is a pipe: no bar on it.
  const CliResult r = run_gputwin(six_points + " --jobs 2", true);
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output.find("elapsed"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\r'), std::string::npos) << r.output;
}

TEST(SweepCli, AProgressBarOnATerminalButNotWithJson)
{
  // `script` (util-linux) gives the command a pseudo-terminal: stderr is a terminal there, stdout goes to /dev/null.
  if (std::system("script --version >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no `script` to run gputwin on a pseudo-terminal";
  const auto on_terminal = [](const std::string& arguments) {
    return run_program("script", "-qec \"'" GPUTWIN_CLI "' " + arguments + " >/dev/null\" /dev/null", false);
  };
  const CliResult bar = on_terminal(six_points + " --jobs 2");
  ASSERT_EQ(bar.exit_code, 0) << bar.output;
  EXPECT_NE(bar.output.find("\rsweep points ["), std::string::npos) << bar.output;
  EXPECT_NE(bar.output.find("] 6/6"), std::string::npos) << bar.output;
  EXPECT_NE(bar.output.find("elapsed"), std::string::npos) << bar.output;
  const CliResult json = on_terminal(six_points + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_EQ(json.output.find("elapsed"), std::string::npos) << "--json: no bar: " << json.output;
  EXPECT_EQ(json.output.find("sweep points"), std::string::npos) << "--json: no bar: " << json.output;
}

TEST(SweepCli, TheSlurmExampleScriptRunsAnArrayAndMergesIt)
{
  // scripts/sweep.sbatch submitted through a stand-in sbatch (tests/data/fake-slurm: runs the jobs at once, in the
  // environment Slurm gives array tasks): the merged CSV is the unsharded one.
  const std::string source = std::string(GPUTWIN_TEST_DATA_DIR) + "/../..";
  const std::string out = test_temp_path("sbatch-out");
  std::system(("rm -rf '" + out + "'").c_str());
  const std::string args = six_points.substr(std::string("sweep ").size());
  const CliResult r = run_program("env",
                                  "-u SLURM_JOB_ID -u SLURM_ARRAY_TASK_ID PATH='" + std::string(GPUTWIN_TEST_DATA_DIR) +
                                      "/fake-slurm':\"$PATH\" SHARDS=3 SWEEP_OUT='" + out + "' SWEEP_ARGS='" + args +
                                      "' GPUTWIN='" GPUTWIN_CLI "' bash '" + source + "/scripts/sweep.sbatch'",
                                  false);
  ASSERT_EQ(r.exit_code, 0) << r.output << read_file(out + "/shard-1.log") << read_file(out + "/merge.log");
  EXPECT_NE(r.output.find("array job"), std::string::npos) << r.output;
  for (int k = 1; k <= 3; ++k)
    EXPECT_FALSE(read_file(out + "/shard-" + std::to_string(k) + ".csv").empty()) << k;
  EXPECT_EQ(read_file(out + "/sweep.csv"), sweep_csv(six_points, "sbatch-whole.csv"));
  std::system(("rm -rf '" + out + "'").c_str());
}

} // namespace
} // namespace gputwin::testing
