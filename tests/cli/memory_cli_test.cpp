// Golden runs of `gputwin memory` and its bad-input errors, through the real binary.
#include "run_cli.hpp"

#include <gtest/gtest.h>

namespace gputwin::testing {
namespace {

TEST(MemoryCli, AcceptanceCommandPrintsTheTable2Bytes)
{
  const CliResult r =
      run_gputwin("memory --model gpt3-175b --tp 8 --pp 8 --micro-batch 1 --sp --recompute selective --json", false);
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("\"activation_bytes_per_layer\": 106954752,"), std::string::npos) << r.output;
  for (const char* key : {"\"activation_bytes\":", "\"weight_bytes\":", "\"gradient_bytes\":", "\"optimizer_bytes\":",
                          "\"total_bytes\":"})
    EXPECT_NE(r.output.find(key), std::string::npos) << key;
}

TEST(MemoryCli, GoldenJsonForThe175BPaperPlan)
{
  // Checked by hand. Stage 0 holds 12 layers of (12 h^2 + 7 h)/8 + 6 h = 226576896 parameters, the word
  // embedding shard 51200/8 x h and the position embedding 2048 x h: 2822731776 parameters, x 2/4/12 bytes.
  // Activations: 31 (micro-batch, chunk) pairs of 4 layers in flight (interleaved, p = 8, v = 3) = 124 layers
  // x 106954752 (Table 2, TP + SP + selective), plus the embedding-dropout masks s b h / t = 3145728 bytes for
  // each of the 16 micro-batches whose chunk 0 is in flight at the peak. Workspace: 5 a s^2 b / t. The whole
  // model: 96 (12 h^2 + 13 h) + (51200 + 2048) h + 2 h = 174615846912 parameters. GPU memory: 81920 MiB.
  const CliResult r = run_gputwin("memory --model gpt3-175b --plan paper --sp --recompute selective --json", false);
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, R"({
  "model": {
    "name": "gpt3-175b",
    "hidden": 12288,
    "heads": 96,
    "layers": 96,
    "seq_len": 2048,
    "vocab": 51200,
    "num_query_groups": 96,
    "ffn_hidden": 49152,
    "activation": "gelu",
    "norm": "layernorm",
    "position": "learned",
    "tie_embeddings": true,
    "bias": true,
    "dropout": true,
    "parameters": 174615846912
  },
  "plan": {
    "tp": 8,
    "cp": 1,
    "pp": 8,
    "dp": 1,
    "micro_batch": 1,
    "global_batch": 64,
    "schedule": "interleaved",
    "chunks": 3,
    "recompute": "selective",
    "sp": true,
    "zero": 0,
    "attention": "unfused",
    "pp_first_stage_layers": 0,
    "pp_last_stage_layers": 0,
    "fp8": false
  },
  "cluster": {
    "name": "dgx-a100",
    "nodes": 8,
    "gpus_per_node": 8,
    "gpus": 64,
    "gpu": "a100-sxm4-80gb",
    "gpu_memory_bytes": 85899345920
  },
  "gpus": 64,
  "stage": 0,
  "parameters_per_gpu": 2822731776,
  "activation_bytes_per_layer": 106954752,
  "activation_layers_in_flight": 124,
  "activation_bytes": 13312720896,
  "recompute_workspace_bytes": 251658240,
  "weight_bytes": 5645463552,
  "gradient_bytes": 11290927104,
  "optimizer_bytes": 33872781312,
  "total_bytes": 64373551104,
  "gpu_memory_bytes": 85899345920,
  "headroom_bytes": 21525794816,
  "fits": true
}
)");
}

TEST(MemoryCli, FlashAttentionBytesByHandForThe175BPaperPlan)
{
  // Table 2's TP + SP + selective row with the attention core fused (models/activation_memory.hpp): the
  // s x s tensors are never stored, the fp32 log-sum-exp (4 a s b / t) and the 16-byte dropout RNG state are:
  // 34 x 2048 x 12288 / 8 + 4 x 96 x 2048 / 8 + 16 = 106954752 + 98304 + 16. Selective recompute has nothing
  // left to recompute: no workspace. 124 layers in flight + the embedding masks 16 x 3145728.
  const CliResult r =
      run_gputwin("memory --model gpt3-175b --plan paper --sp --recompute selective --attention flash --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"activation_bytes_per_layer\": 107053072,"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"activation_bytes\": " + std::to_string(107053072LL * 124 + 16 * 3145728) + ","),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\"recompute_workspace_bytes\": 0,"), std::string::npos) << r.output;
  const CliResult table = run_gputwin("memory --model gpt3-175b --plan paper --sp --attention flash", false);
  EXPECT_NE(table.output.find("flash attention"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("activations per layer (flash)"), std::string::npos) << table.output;
}

TEST(MemoryCli, SameInputSameBytes)
{
  const std::string args = "memory --model gpt-1t --plan paper --sp --recompute full --zero 1 --dp 2 "
                           "--global-batch 1024";
  EXPECT_EQ(run_gputwin(args, false).output, run_gputwin(args, false).output);
}

TEST(MemoryCli, TableAndHelp)
{
  const CliResult table = run_gputwin("memory --model gpt-22b --plan paper --no-sp --recompute none", false);
  ASSERT_EQ(table.exit_code, 0);
  EXPECT_NE(table.output.find("activations per layer (Table 2)"), std::string::npos);
  EXPECT_NE(table.output.find("1325400064"), std::string::npos) << table.output; // TP row of Table 2
  const CliResult help = run_gputwin("memory --help", false);
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("--recompute MODE"), std::string::npos);
  EXPECT_EQ(run_gputwin("--help", false).exit_code, 0);
}

TEST(MemoryCli, ModelFromYamlFile)
{
  const CliResult r = run_gputwin(std::string("memory --model ") + GPUTWIN_TEST_DATA_DIR +
                                      "/models/gpt-13b.yaml --tp 4 --sp --recompute selective --json",
                                  false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // s b h 34 / t = 2048 x 5120 x 34 / 4
  EXPECT_NE(r.output.find("\"activation_bytes_per_layer\": 89128960,"), std::string::npos) << r.output;
}

TEST(MemoryCli, BadInputIsOneLineAndNonZeroExit)
{
  const std::string data = GPUTWIN_TEST_DATA_DIR;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"memory --model gpt-7", "--model: unknown model 'gpt-7'"},
      {"memory --model gpt-22b --attention tiled", "--attention: expected unfused|flash, got 'tiled'"},
      {"memory --model gpt-22b --tp -8", "--tp: expected a positive integer, got -8"},
      {"memory --model gpt-22b --micro-batch 0", "--micro-batch: expected a positive integer, got 0"},
      {"memory --model gpt-22b --tp 3", "--tp: 64 attention heads of model 'gpt-22b' are not divisible"},
      {"memory --model gpt-22b --pp 7", "--pp: 48 layers of model 'gpt-22b' are not divisible by 7"},
      {"memory --model gpt-22b --pp 4 --schedule interleaved --chunks 5 --global-batch 8",
       "--chunks: 48 layers are not divisible by pp x chunks"},
      {"memory --model gpt-22b --dp 2 --global-batch 5", "--global-batch: 5 is not divisible by micro-batch x dp"},
      {"memory --model " + data + "/models/malformed.yaml", "malformed.yaml:3:"},
      {"memory --model " + data + "/models/missing-seq-len.yaml", "missing-seq-len.yaml:1:1: missing field 'seq_len'"},
      {"memory --model gpt-22b --seq-len 4000000000 --micro-batch 4000000000", "overflow"},
      {"memory --model gpt-22b --frobnicate", "unknown option '--frobnicate'"},
      {"frobnicate", "unknown subcommand 'frobnicate'"},
  };
  for (const auto& [args, expected] : cases)
    expect_one_line_error(args, expected);
}

} // namespace
} // namespace gputwin::testing
