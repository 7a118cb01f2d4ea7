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
  EXPECT_EQ(r.output, R"json({
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
  "total_parameters": 174615846912,
  "activated_parameters": 174615846912,
  "mtp_parameters": 0,
  "parameters_per_gpu": 2822731776,
  "dense_parameters_per_gpu": 2822731776,
  "expert_parameters_per_gpu": 0,
  "activation_bytes_per_layer": 106954752,
  "activation_layers_in_flight": 124,
  "activation_bytes": 13312720896,
  "recompute_workspace_bytes": 251658240,
  "backward_workspace_bytes": 0,
  "weight_bytes": 5645463552,
  "fp8_cache_bytes": 0,
  "wgrad_placeholder_bytes": 0,
  "gradient_bytes": 11290927104,
  "optimizer_bytes": 33872781312,
  "gathered_weight_bytes": 0,
  "gathered_gradient_bytes": 0,
  "total_bytes": 64373551104,
  "reserve_bytes": 3541819270,
  "reserve_source": "CUDA context + workspaces 0.5 GiB, NCCL buffers 1 GiB, allocator fragmentation 3 % of the allocated peak (SimuMax B200 runs: 2.8-9.3 %)",
  "gpu_memory_bytes": 85899345920,
  "headroom_bytes": 17983975546,
  "fits": true
}
)json");
}

TEST(MemoryCli, FlashAttentionBytesByHandForThe175BPaperPlan)
{
  // Table 2's TP + SP + selective row with the attention core fused (models/activation_memory.hpp): the
  // s x s tensors are never stored, the fp32 log-sum-exp (4 a s b / t) and the 16-byte dropout RNG state are:
  // 34 x 2048 x 12288 / 8 + 4 x 96 x 2048 / 8 + 16 = 106954752 + 98304 + 16. Selective recompute has nothing
  // left to recompute: no workspace. 124 layers in flight + the embedding masks 16 x 3145728. Flash is counted
  // as Megatron-Core + TE keep it: + the two LayerNorms' fp32 mu and rsigma, 2 x 8 x 2048 / 8 = 4096.
  const CliResult r =
      run_gputwin("memory --model gpt3-175b --plan paper --sp --recompute selective --attention flash --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"activation_bytes_per_layer\": 107057168,"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"activation_bytes\": " + std::to_string(107057168LL * 124 + 16 * 3145728) + ","),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\"recompute_workspace_bytes\": 0,"), std::string::npos) << r.output;
  const CliResult table = run_gputwin("memory --model gpt3-175b --plan paper --sp --attention flash", false);
  EXPECT_NE(table.output.find("flash attention"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("activations per layer (TE, flash)"), std::string::npos) << table.output;
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

// Llama 3.1 8B FP8 at TP 1, CP 2, DP 4, seq 8192 with the distributed optimizer runs in NVIDIA's
// NeMo performance tables on 8 x 80 GB H100, whose FP8 recipe keeps FP8 parameters (bf16_with_fp8_mixed:
// fp8_param_gather = True); with the default reserve it must fit. Keeping the BF16 weights next to TE's FP8
// caches (2 bytes more per layer parameter, 13 GiB) it does not.
TEST(MemoryCli, LlamaEightBFp8ProductionPlanFitsTheH100)
{
  const std::string plan = "memory --model llama3-8b --cluster dgx-h100 --tp 1 --cp 2 --dp 4 --micro-batch 1 "
                           "--global-batch 128 --seq-len 8192 --attention flash --zero 1 --fp8";
  const CliResult fits = run_gputwin(plan + " --json", false);
  ASSERT_EQ(fits.exit_code, 0) << fits.output;
  EXPECT_NE(fits.output.find("\"fits\": true"), std::string::npos) << fits.output;
  const CliResult notes = run_gputwin(plan, true); // stderr
  EXPECT_NE(notes.output.find("note: --fp8 with --zero 1: FP8 parameters"), std::string::npos) << notes.output;
  const CliResult bf16_copy = run_gputwin(plan + " --no-fp8-param-gather --json", false);
  EXPECT_NE(bf16_copy.output.find("\"fits\": false"), std::string::npos) << bf16_copy.output;
  // --memory-reserve replaces the default: 20 GiB more than the headroom leaves no fit.
  const CliResult big_reserve = run_gputwin(plan + " --memory-reserve 20 --json", false);
  EXPECT_NE(big_reserve.output.find("\"reserve_bytes\": 21474836480,"), std::string::npos) << big_reserve.output;
  EXPECT_NE(big_reserve.output.find("\"fits\": false"), std::string::npos) << big_reserve.output;
}

TEST(MemoryCli, PipelineWithoutGlobalBatchIsFilledAndSaysSo)
{
  // The paper's 175B plan without --plan: tp 8, pp 8; one micro-batch per pipeline would hold one micro-batch's
  // activations, a filled 1F1B pipeline holds p = 8 on stage 0.
  const std::string args = "memory --model gpt3-175b --tp 8 --pp 8 --sp --recompute selective --json";
  const CliResult note = run_gputwin(args, true); // stderr
  EXPECT_NE(note.output.find("the pipeline filled, global batch = micro-batch x dp x pp = 1 x 1 x 8 = 8"),
            std::string::npos)
      << note.output;
  const CliResult r = run_gputwin(args, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"global_batch\": 8,"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"activation_layers_in_flight\": 96,"), std::string::npos) << r.output; // 12 x 8
}

TEST(MemoryCli, NewFlagsRejectBadInputNamingTheFlag)
{
  expect_one_line_error("memory --model llama3-8b --memory-reserve -1", "--memory-reserve: expected GiB >= 0");
  expect_one_line_error("memory --model llama3-8b --memory-reserve lots", "--memory-reserve: expected GiB >= 0");
  expect_one_line_error("memory --model llama3-8b --fp8-param-gather --zero 1", "--fp8-param-gather: needs --fp8");
  expect_one_line_error("memory --model llama3-8b --fp8 --fp8-param-gather", "--fp8-param-gather: needs --zero 1");
  expect_one_line_error("memory --model llama3-8b --fp8 --zero 1 --fp8-param-gather --no-fp8-param-gather",
                        "--no-fp8-param-gather: contradicts --fp8-param-gather");
}

} // namespace
} // namespace gputwin::testing
