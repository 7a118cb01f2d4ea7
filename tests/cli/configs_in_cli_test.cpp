// The configurations users already have, through the real binary: `--model hf:config.json` simulates exactly the
// built-in model it describes, `--megatron-args FILE` runs exactly the plan the launch line describes (the paper's
// GPT-3 175B run as --plan paper), with the arguments not modelled named once, and bad files are one-line errors.
#include "json_report.hpp"
#include "run_cli.hpp"
#include "test_temp_path.hpp"

#include "gputwin/traces/json_value.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>

namespace gputwin::testing {
namespace {

const std::string hf_dir = GPUTWIN_SOURCE_DIR "/tests/data/hf/";
const std::string megatron_dir = GPUTWIN_SOURCE_DIR "/tests/data/megatron/";

// The report without what may differ between two runs of one model under two names: the wall time and the name.
std::string without_wall_time_and_name(const std::string& report)
{
  static const std::regex wall(R"re("sim_wall_time_s": [-0-9.e+]+)re");
  static const std::regex name(R"re("name": "[^"]*",\n    "hidden")re");
  return std::regex_replace(std::regex_replace(report, wall, "\"sim_wall_time_s\": 0"), name, "\"hidden\"");
}

// The text of the report's "plan" object.
std::string plan_text(const std::string& report)
{
  const size_t begin = report.find("\"plan\": {");
  return begin == std::string::npos ? "" : report.substr(begin, report.find('}', begin) - begin);
}

size_t count(const std::string& text, const std::string& what)
{
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

// Meta-Llama-3-8B's config.json is the catalog's llama3-8b: the same report, figure for figure.
TEST(ConfigsInCli, HuggingFaceLlamaSimulatesAsTheBuiltInModel)
{
  const CliResult hf =
      run_gputwin("simulate --model hf:" + hf_dir + "llama3-8b.json --cluster dgx-h100 --tp 8 --json", false);
  const CliResult builtin = run_gputwin("simulate --model llama3-8b --cluster dgx-h100 --tp 8 --json", false);
  ASSERT_EQ(hf.exit_code, 0) << hf.output;
  ASSERT_EQ(builtin.exit_code, 0) << builtin.output;
  EXPECT_EQ(without_wall_time_and_name(hf.output), without_wall_time_and_name(builtin.output));
  const traces::JsonValue report = traces::parse_json(hf.output);
  // 32 x (attention 2 x 4096^2 + 2 x 4096 x 1024, MLP 3 x 4096 x 14336, norms 2 x 4096) + 2 x 128256 x 4096 + 4096.
  EXPECT_EQ(number(member(report, "model"), "parameters"), 8030261248.0);
  EXPECT_GT(number(report, "iteration_time_s"), 0);

  // --seq-len overrides max_position_embeddings.
  const CliResult short_seq =
      run_gputwin("memory --model hf:" + hf_dir + "llama3-8b.json --seq-len 2048 --cluster dgx-h100 --json", false);
  ASSERT_EQ(short_seq.exit_code, 0);
  EXPECT_EQ(number(member(traces::parse_json(short_seq.output), "model"), "seq_len"), 2048);
}

// The paper's GPT-3 175B run as a torchrun launch line: the iteration and plan of --plan paper with SP and selective
// recompute (Korthikanti et al. 2022, Tables 3 and 5); the ignored arguments named once, in one note.
TEST(ConfigsInCli, MegatronGptThreeRunsThePapersPlan)
{
  const CliResult file = run_gputwin("simulate --megatron-args " + megatron_dir + "gpt3-175b.args --json", false);
  const CliResult paper =
      run_gputwin("simulate --model gpt3-175b --plan paper --sp --recompute selective --json", false);
  ASSERT_EQ(file.exit_code, 0) << file.output;
  ASSERT_EQ(paper.exit_code, 0) << paper.output;
  EXPECT_EQ(plan_text(file.output), plan_text(paper.output));
  EXPECT_FALSE(plan_text(file.output).empty());
  EXPECT_EQ(number(traces::parse_json(file.output), "iteration_time_s"),
            number(traces::parse_json(paper.output), "iteration_time_s"));

  const CliResult notes =
      run_gputwin("memory --megatron-args " + megatron_dir + "gpt3-175b.args --json", true);
  ASSERT_EQ(notes.exit_code, 0) << notes.output;
  EXPECT_EQ(count(notes.output, "ignored (not modelled): "), 1U) << notes.output;
  for (const char* ignored : {" --lr ", " --train-iters ", " --data-path ", " --split ", " --master-port"})
    EXPECT_EQ(count(notes.output, ignored), 1U) << ignored << " in " << notes.output;
}

// `memory --megatron-args FILE` on dgx-h100 prints exactly the report of `memory FLAGS`.
void expect_memory_report_of_file_is_its_flags(const std::string& file_name, const std::string& flags)
{
  SCOPED_TRACE(file_name);
  const CliResult file =
      run_gputwin("memory --megatron-args " + megatron_dir + file_name + " --cluster dgx-h100 --json", false);
  const CliResult expanded = run_gputwin("memory " + flags + " --cluster dgx-h100 --json", false);
  ASSERT_EQ(file.exit_code, 0) << file.output;
  ASSERT_EQ(expanded.exit_code, 0) << expanded.output;
  EXPECT_EQ(file.output, expanded.output);
}

// Llama 3 70B as Megatron-Core runs it: the same report as the flags the file stands for.
TEST(ConfigsInCli, MegatronLlamaIsItsFlags)
{
  expect_memory_report_of_file_is_its_flags("llama3-70b.args",
                                            "--model llama3-70b --tp 8 --pp 4 --schedule interleaved --chunks 5 --cp 2 "
                                            "--dp 2 --micro-batch 1 --global-batch 128 --sp --zero 1 --fp8 "
                                            "--fp8-param-gather --attention flash");
  // memory has no overlap switches: the file's are named, not lost.
  const CliResult notes =
      run_gputwin("memory --megatron-args " + megatron_dir + "llama3-70b.args --cluster dgx-h100 --json", true);
  EXPECT_NE(notes.output.find("not used by gputwin memory: --overlap-grad-reduce --overlap-param-gather "
                              "--tp-comm-overlap"),
            std::string::npos)
      << notes.output;
}

// DeepSeek-V3 as a Megatron-Core launch line (MLA, 256 experts, EP 64, recompute modules): the catalogue's model and the
// flags the file stands for, report for report.
TEST(ConfigsInCli, MegatronDeepSeekIsItsFlags)
{
  expect_memory_report_of_file_is_its_flags(
      "deepseek-v3.args", "--model deepseek-v3 --tp 2 --pp 8 --pp-first-stage-layers 7 --pp-last-stage-layers 6 "
                          "--dp 32 --ep 64 --etp 1 --micro-batch 1 --global-batch 4096 --sp --zero 1 --attention flash "
                          "--moe-dispatcher alltoall --moe-capacity-factor 1 --recompute-modules mla_up_proj "
                          "--cross-entropy-fusion");
}

TEST(ConfigsInCli, BadFilesAreOneLineErrors)
{
  // An architecture gputwin does not read names the field and lists the ones it reads.
  const std::string gpt2 = test_temp_path("gpt2.json");
  std::ofstream(gpt2) << "{\"architectures\":\n  [\"GPT2LMHeadModel\"], \"n_embd\": 768}\n";
  expect_one_line_error("simulate --model hf:" + gpt2,
                        "gpt2.json:2:4: architectures: 'GPT2LMHeadModel' is not supported (expected one of LlamaForCausalLM");
  expect_one_line_error("memory --model hf:" + hf_dir + "absent.json", "absent.json: cannot open the file");
  expect_one_line_error("simulate --megatron-args " + megatron_dir + "absent.args",
                        "--megatron-args: " + megatron_dir + "absent.args: cannot open the file");
  const std::string path = test_temp_path("bad.args");
  std::ofstream(path) << "torchrun --nproc-per-node 8 pretrain_gpt.py \\\n  --num-layers 24 --hidden-size 2048 \\\n"
                         "  --num-attention-heads sixteen --seq-length 2048 --micro-batch-size 1\n";
  expect_one_line_error("memory --megatron-args " + path,
                        path + ":3: --num-attention-heads: expected a positive integer, got 'sixteen'");
}

} // namespace
} // namespace gputwin::testing
