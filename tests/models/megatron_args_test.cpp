// `--megatron-args FILE`: launch lines split as a shell would (launch_line.hpp), Megatron-LM's arguments mapped to
// the model and plan Megatron would run (values derived from the arguments by Megatron's own rules, cited from
// megatron/training/arguments.py), the command line winning, and one-line errors naming the file and argument.
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/launch_line.hpp"
#include "gputwin/models/megatron_args.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/parameter_count.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <utility>

namespace gputwin::cli {
namespace {

struct Mapped {
  GptConfig model;
  ParallelPlan plan;
  ParsedArgs args;
};

// `--megatron-args` with `text` as the file, plus the command line's `flags`, through the real flag parser.
Mapped run(const std::string& text, std::vector<std::string> flags = {})
{
  const std::string path = test_temp_path("launch.args");
  std::ofstream(path) << text;
  flags.insert(flags.begin(), {"--megatron-args", path});
  ArgParser parser("gputwin test", "");
  add_model_flags(parser);
  add_plan_flags(parser);
  Mapped r;
  r.args = parser.parse(flags);
  r.model = read_model(r.args, {});
  r.plan = read_plan(r.args, r.model);
  return r;
}

std::string error_of(const std::string& text, std::vector<std::string> flags = {})
{
  try {
    run(text, std::move(flags));
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "error spans several lines";
    return e.what();
  }
  return "";
}

std::string notes_of(const Mapped& r)
{
  std::string all;
  for (const std::string& n : r.args.notes())
    all += n + "\n";
  return all;
}

const char* const small = "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 4096 "
                          "--vocab-size 32000 --micro-batch-size 2 --bf16 ";

// The generic mechanism (common/arg_parser): the expansion's flags are parsed as if given, the command line's own
// win, flags the parser does not take are named in a note, and --help does not expand.
TEST(ArgParser, ExpandingOption)
{
  ArgParser parser("gputwin test", "");
  parser.add_option("--tp", "T", "");
  parser.add_switch("--sp", "");
  std::string seen_tp;
  parser.add_expanding_option("--from", "FILE", "", [&](const std::string& value, const ParsedArgs& explicit_args) {
    seen_tp = explicit_args.value("--tp").value_or("none");
    return Expansion{{"--tp", "8", "--sp", "--unknown", "3", "--other"}, {value + ": a note"}};
  });
  const ParsedArgs a = parser.parse({"--from", "f", "--tp", "2"});
  EXPECT_EQ(seen_tp, "2") << "the expander sees the command line's flags";
  EXPECT_EQ(a.value("--tp"), "2") << "the command line wins";
  EXPECT_TRUE(a.has("--sp"));
  EXPECT_EQ(a.notes(), (std::vector<std::string>{"f: a note", "--from f: not used by gputwin test: --unknown --other"}));
  EXPECT_EQ(parser.parse({"--from", "f"}).value("--tp"), "8");
  EXPECT_TRUE(parser.parse({"--from", "f", "--help"}).notes().empty());
}

TEST(LaunchLine, SplitsAsAShellWould)
{
  const LaunchLine l = parse_launch_line(R"(# a comment
export CUDA_DEVICE_MAX_CONNECTIONS=1
N=4 # nodes
WORLD_SIZE=32 torchrun --nnodes $N --nproc-per-node=8 \
   pretrain_gpt.py --data-path "/data/a b" 0.3 '/data/$c' \
   --lr=1e-4 --tokenizer-type GPT2BPETokenizer --num-layers ${N}8 --eval-iters -1)",
                                         "f.args");
  EXPECT_EQ(l.env.at("CUDA_DEVICE_MAX_CONNECTIONS"), "1");
  EXPECT_EQ(l.env.at("WORLD_SIZE"), "32");
  EXPECT_EQ(l.launcher, "torchrun");
  ASSERT_EQ(l.launcher_args.size(), 2U);
  EXPECT_EQ(l.launcher_args[0].name, "--nnodes");
  EXPECT_EQ(l.launcher_args[0].values, std::vector<std::string>{"4"});
  EXPECT_EQ(l.launcher_args[1].values, std::vector<std::string>{"8"});
  EXPECT_EQ(l.script, "pretrain_gpt.py");
  ASSERT_EQ(l.script_args.size(), 5U);
  EXPECT_EQ(l.script_args[0].values, (std::vector<std::string>{"/data/a b", "0.3", "/data/$c"}));
  EXPECT_EQ(l.script_args[0].line, 5);
  EXPECT_EQ(l.script_args[1].name, "--lr");
  EXPECT_EQ(l.script_args[1].values, std::vector<std::string>{"1e-4"});
  EXPECT_EQ(l.script_args[3].values, std::vector<std::string>{"48"});
  EXPECT_EQ(l.script_args[4].values, std::vector<std::string>{"-1"}) << "a negative number is a value";
  EXPECT_EQ(l.script_args[4].line, 6);

  // The arguments alone, without a launcher.
  const LaunchLine bare = parse_launch_line("--num-layers 2 \\\n  --swiglu\n", "f.args");
  EXPECT_TRUE(bare.script.empty());
  ASSERT_EQ(bare.script_args.size(), 2U);
  EXPECT_TRUE(bare.script_args[1].values.empty());
}

TEST(LaunchLine, BadTextIsOneLineNamingTheLine)
{
  auto error = [](const std::string& text) {
    try {
      parse_launch_line(text, "f.args");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("torchrun x.py --lr 'open\n"), "f.args:1: unterminated ' quote (expected a closing ')");
  EXPECT_NE(error("\n\ntorchrun x.py --nnodes $NODES").find("f.args:3: $NODES: not assigned in the file"),
            std::string::npos);
  EXPECT_NE(error("cd /work\ntorchrun x.py --lr 1").find("f.args:2: 'torchrun': a second command"), std::string::npos);
  EXPECT_NE(error("torchrun --nnodes 2 --lr 1").find("f.args:1: 'torchrun': no training script"), std::string::npos);
  EXPECT_NE(error("x.py 96 --num-layers 2").find("f.args:1: '96': expected an argument --NAME"), std::string::npos);
}

// The paper's GPT-3 175B run (Korthikanti et al. 2022, Table 3: t 8, p 8, 3 chunks, b 1, B 64, on 64 GPUs; Table
// 5: SP + selective recompute): the same plan as --plan paper, with GPT-2's 50257-token vocabulary that Megatron
// pads to 51200 for t 8 (the catalog's padded size).
TEST(MegatronArgs, GptThreeFileIsThePapersPlan)
{
  std::ifstream in(GPUTWIN_SOURCE_DIR "/tests/data/megatron/gpt3-175b.args");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Mapped r = run(text);
  const CatalogEntry& paper = *find_catalog_model("gpt3-175b");
  const std::string file = test_temp_path("launch"); // the file run() writes, without its .args
  EXPECT_EQ(r.model.name, file.substr(file.find_last_of('/') + 1)) << "named after the file";
  EXPECT_EQ(r.model.hidden, paper.model.hidden);
  EXPECT_EQ(r.model.heads, paper.model.heads);
  EXPECT_EQ(r.model.layers, paper.model.layers);
  EXPECT_EQ(r.model.seq_len, paper.model.seq_len);
  EXPECT_EQ(r.model.vocab, 50257);
  EXPECT_TRUE(r.model.gpt_architecture());
  EXPECT_EQ(r.plan.tp, paper.paper_plan.tp);
  EXPECT_EQ(r.plan.pp, paper.paper_plan.pp);
  EXPECT_EQ(r.plan.dp, 1) << "world 8 x 8 = 64 over tp 8 x pp 8";
  EXPECT_EQ(r.plan.micro_batch, paper.paper_plan.micro_batch);
  EXPECT_EQ(r.plan.effective_global_batch(), paper.paper_plan.global_batch);
  EXPECT_EQ(r.plan.schedule, Schedule::Interleaved);
  EXPECT_EQ(r.plan.chunks, 3) << "96 layers / 8 stages / 4 layers per virtual stage";
  EXPECT_TRUE(r.plan.sequence_parallel());
  EXPECT_EQ(r.plan.recompute, Recompute::Selective);
  EXPECT_EQ(r.plan.zero_stage, 0);
  // Every argument gputwin does not read, once, launcher options included.
  ASSERT_EQ(r.args.notes().size(), 1U) << notes_of(r);
  const std::string& note = r.args.notes()[0];
  for (const char* ignored : {" --lr ", " --train-iters ", " --data-path ", " --vocab-file ", " --save ", " --load",
                              " --master-addr "})
    EXPECT_NE(note.find(ignored), std::string::npos) << ignored << " in " << note;
  for (const char* read : {"--num-layers", "--fp16", "--tokenizer-type", "--sequence-parallel", "--nnodes"})
    EXPECT_EQ(note.find(std::string(read) + " "), std::string::npos) << read << " in " << note;
}

// Llama 3 70B as a Megatron-Core run: every field of the file's model and plan, derived from its arguments.
TEST(MegatronArgs, LlamaSeventyBFileMapsFieldByField)
{
  std::ifstream in(GPUTWIN_SOURCE_DIR "/tests/data/megatron/llama3-70b.args");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Mapped r = run(text);
  const GptConfig& m = r.model;
  EXPECT_EQ(m.layers, 80);
  EXPECT_EQ(m.hidden, 8192);
  EXPECT_EQ(m.heads, 64);
  EXPECT_EQ(m.kv_heads(), 8);
  EXPECT_EQ(m.ffn(), 28672);
  EXPECT_EQ(m.seq_len, 8192);
  EXPECT_EQ(m.vocab, 128256);
  EXPECT_EQ(m.activation, Activation::SwiGlu);
  EXPECT_EQ(m.norm, Norm::RmsNorm);
  EXPECT_EQ(m.position, PositionEmbedding::Rope);
  EXPECT_FALSE(m.tie_embeddings);
  EXPECT_FALSE(m.bias);
  EXPECT_FALSE(m.dropout);
  const ParallelPlan& p = r.plan;
  EXPECT_EQ(p.tp, 8);
  EXPECT_EQ(p.pp, 4);
  EXPECT_EQ(p.cp, 2);
  EXPECT_EQ(p.dp, 2) << "16 nodes x 8 / (8 x 4 x 2)";
  EXPECT_EQ(p.schedule, Schedule::Interleaved);
  EXPECT_EQ(p.chunks, 5);
  EXPECT_EQ(p.micro_batch, 1);
  EXPECT_EQ(p.effective_global_batch(), 128);
  EXPECT_TRUE(p.sequence_parallel());
  EXPECT_EQ(p.recompute, Recompute::None);
  EXPECT_EQ(p.zero_stage, 1);
  EXPECT_EQ(p.precision, GemmPrecision::Fp8);
  EXPECT_TRUE(p.fp8_param_gather);
  EXPECT_EQ(p.attention, AttentionKernel::Flash);
  // The overlaps are the simulator's switches (this parser has none): named as not used, so present.
  EXPECT_NE(notes_of(r).find("not used by gputwin test: --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap"),
            std::string::npos)
      << notes_of(r);
  EXPECT_NE(notes_of(r).find("--rotary-base"), std::string::npos);
  EXPECT_NE(notes_of(r).find("--rdzv-endpoint"), std::string::npos);
}

TEST(MegatronArgs, DerivesWhatMegatronDerives)
{
  // arguments.py: SwiGLU without --ffn-hidden-size is int((4 h 2 / 3) / 64) * 64: h 2048 -> 5461.3 -> 85 x 64.
  EXPECT_EQ(run(std::string(small) + "--swiglu").model.ffn(), 5440);
  EXPECT_EQ(run(small).model.ffn(), 4 * 2048);
  // --group-query-attention without --num-query-groups: one group (Megatron's default 1).
  EXPECT_EQ(run(std::string(small) + "--group-query-attention").model.kv_heads(), 1);
  // --num-query-groups alone is ignored by Megatron: multi-head attention, and a note.
  const Mapped mha = run(std::string(small) + "--num-query-groups 4");
  EXPECT_EQ(mha.model.kv_heads(), 16);
  EXPECT_NE(notes_of(mha).find("without --group-query-attention"), std::string::npos);
  // --kv-channels: the default hidden / heads (2048 / 16 = 128) leaves the head size unset; another is the head
  // size (Qwen3-235B-A22B: --kv-channels 128 with --hidden-size 4096 and 64 heads, queries 8192 wide).
  EXPECT_EQ(run(std::string(small) + "--kv-channels 128").model.head_size, 0);
  const Mapped wide = run(std::string(small) + "--kv-channels 256");
  EXPECT_EQ(wide.model.head_size, 256);
  EXPECT_EQ(wide.model.attention_width(), 16 * 256);
  // Dropout 0.1 by default; both 0 is none.
  EXPECT_TRUE(run(small).model.dropout);
  EXPECT_FALSE(run(std::string(small) + "--hidden-dropout 0 --attention-dropout 0.0").model.dropout);
  // Sequence parallelism is off at tp 1 (with a note), on at tp 2.
  const Mapped tp1 = run(std::string(small) + "--sequence-parallel");
  EXPECT_FALSE(tp1.plan.sequence_parallel());
  EXPECT_NE(notes_of(tp1).find("tensor-parallel size 1"), std::string::npos);
  EXPECT_TRUE(run(std::string(small) + "--sequence-parallel --tensor-model-parallel-size 2").plan.sequence_parallel());
  // Virtual stages by count, uneven first and last stages.
  const Mapped vp = run(std::string(small) + "--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 "
                                          "--decoder-first-pipeline-num-layers 4 --decoder-last-pipeline-num-layers 4 "
                                          "--global-batch-size 16");
  EXPECT_EQ(vp.plan.chunks, 2);
  EXPECT_EQ(vp.plan.pp_first_stage_layers, 4);
  EXPECT_EQ(vp.plan.pp_last_stage_layers, 4);
  EXPECT_EQ(run(std::string(small) + "--pipeline-model-parallel-size 2 --virtual-pipeline-model-parallel-size 3 "
                                     "--global-batch-size 8")
                .plan.chunks,
            3);
  // Full recompute: uniform with one layer per checkpoint, or block over a whole chunk (24 / 2 stages = 12).
  EXPECT_EQ(run(std::string(small) + "--recompute-granularity full --recompute-method uniform").plan.recompute,
            Recompute::Full);
  EXPECT_EQ(run(std::string(small) + "--recompute-granularity full --recompute-method block --recompute-num-layers 12 "
                                     "--pipeline-model-parallel-size 2 --global-batch-size 4")
                .plan.recompute,
            Recompute::Full);
  EXPECT_EQ(run(std::string(small) + "--recompute-granularity selective").plan.recompute, Recompute::Selective);
  // The rest of the plan's switches.
  const Mapped mcore = run(std::string(small) + "--tensor-model-parallel-size 2 --sequence-parallel --fp8-format e4m3 "
                                             "--use-distributed-optimizer --grad-reduce-in-bf16 --use-flash-attn "
                                             "--cross-entropy-loss-fusion --cross-entropy-fusion-impl te");
  EXPECT_EQ(mcore.plan.precision, GemmPrecision::Fp8);
  EXPECT_FALSE(mcore.plan.fp8_param_gather) << "Megatron keeps BF16 weights without --fp8-param-gather";
  EXPECT_EQ(mcore.plan.zero_stage, 1);
  EXPECT_TRUE(mcore.plan.grad_reduce_bf16);
  EXPECT_TRUE(mcore.plan.cross_entropy_fusion);
  EXPECT_EQ(mcore.plan.attention, AttentionKernel::Flash);
  EXPECT_EQ(run(std::string(small) + "--attention-backend unfused").plan.attention, AttentionKernel::Unfused);
  // WORLD_SIZE without torchrun, and no world size at all (a note; --dp stays the user's).
  EXPECT_EQ(run(std::string("WORLD_SIZE=16 python pretrain_gpt.py ") + small + "--tensor-model-parallel-size 2").plan.dp,
            8);
  const Mapped no_world = run(small);
  EXPECT_EQ(no_world.plan.dp, 1);
  EXPECT_NE(notes_of(no_world).find("no world size"), std::string::npos);
}

TEST(MegatronArgs, TheCommandLineWins)
{
  std::ifstream in(GPUTWIN_SOURCE_DIR "/tests/data/megatron/gpt3-175b.args");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // --tp 4 from the command line: dp is what Megatron would derive with it, 64 / (4 x 8); the virtual stages are
  // derived with --layers 192: 192 / 8 stages / 4 layers per virtual stage.
  const Mapped tp4 = run(text, {"--tp", "4", "--no-sp", "--recompute", "full", "--layers", "192"});
  EXPECT_EQ(tp4.plan.tp, 4);
  EXPECT_EQ(tp4.plan.dp, 2);
  EXPECT_FALSE(tp4.plan.sequence_parallel());
  EXPECT_EQ(tp4.plan.recompute, Recompute::Full);
  EXPECT_EQ(tp4.model.layers, 192);
  EXPECT_EQ(tp4.plan.chunks, 6);
  // --model replaces the file's model; the plan stays the file's.
  const Mapped named = run(text, {"--model", "gpt-22b", "--pp", "1", "--schedule", "1f1b"});
  EXPECT_EQ(named.model.name, "gpt-22b");
  EXPECT_EQ(named.plan.tp, 8);
  EXPECT_EQ(named.plan.schedule, Schedule::OneFOneB);
  EXPECT_NE(notes_of(named).find("the model is --model gpt-22b"), std::string::npos);
}

TEST(MegatronArgs, FlagsThisCommandDoesNotTakeAreNoted)
{
  // The plan-flag parser has no overlap switches (the simulator's commands add them): named in a note, not an error.
  const Mapped r = run(std::string(small) + "--overlap-grad-reduce");
  EXPECT_FALSE(r.args.has("--overlap-grad-reduce"));
  EXPECT_NE(notes_of(r).find("not used by gputwin test: --overlap-grad-reduce"), std::string::npos) << notes_of(r);
}

TEST(MegatronArgs, BadInputIsOneLineNamingFileAndArgument)
{
  const std::string path = test_temp_path("launch.args");
  EXPECT_EQ(error_of("--num-layers abc --hidden-size 2048"),
            path + ":1: --num-layers: expected a positive integer, got 'abc'");
  EXPECT_EQ(error_of("--hidden-size 2048 --num-attention-heads 16"),
            path + ": --num-layers: missing (Megatron-LM requires it; expected --num-layers N)");
  EXPECT_NE(error_of("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 --micro-batch-size 1 "
                     "--tokenizer-type HuggingFaceTokenizer")
                .find(path + ":1: --tokenizer-type: the vocabulary size of HuggingFaceTokenizer is in its files"),
            std::string::npos);
  EXPECT_EQ(error_of("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 --micro-batch-size 1 "
                     "--tokenizer-type HuggingFaceTokenizer",
                     {"--vocab", "1000"}),
            "")
      << "--vocab on the command line gives the size";
  EXPECT_NE(error_of(std::string(small) + "--hidden-dropout 0.1 --attention-dropout 0").find(":1: --hidden-dropout: gputwin models hidden and attention dropout together"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + "--hidden-dropout x").find("--hidden-dropout: expected a probability"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + "--num-experts 8 --moe-router-score-function sqrtsoftplus")
                .find("--moe-router-score-function: expected softmax or sigmoid"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + "--recompute-granularity full --recompute-method block --recompute-num-layers 4")
                .find("--recompute-num-layers: 4 of a chunk's 24 layers recomputed: partial full recompute"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + "--recompute-granularity full --recompute-method uniform "
                                          "--recompute-num-layers 2")
                .find("--recompute-num-layers: 2 layers per checkpoint"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + "--recompute-granularity full").find("--recompute-method: expected uniform or block"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + "--normalization BatchNorm").find("--normalization: expected LayerNorm or RMSNorm"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + "--swiglu 1").find(":1: --swiglu: takes no value, got '1'"), std::string::npos);
  EXPECT_NE(error_of(std::string("torchrun --nnodes 2:4 pretrain_gpt.py ") + small).find("--nnodes: expected a positive integer, got '2:4'"),
            std::string::npos);
  EXPECT_NE(error_of(std::string("torchrun --nnodes 3 --nproc-per-node 1 pretrain_gpt.py ") + small +
                     "--tensor-model-parallel-size 2")
                .find("world size 3 (3 nodes x 1 processes) is not divisible by tp x pp x cp = 2"),
            std::string::npos);
  // A missing file names the flag and the file.
  ArgParser parser("gputwin test", "");
  add_plan_flags(parser);
  try {
    parser.parse({"--megatron-args", "/nonexistent/x.args"});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--megatron-args: /nonexistent/x.args: cannot open the file (expected a "
                                     "Megatron-LM launch line)");
  }
}

// Megatron-Core's precision arguments (transformer_config.py): --fp8-recipe mxfp8 is --precision mxfp8,
// --fp4-format e2m1 (--fp4-recipe nvfp4, the default) --precision nvfp4 with --fp4-param-gather for NVFP4 weights;
// FP8 and FP4 together, --fp4-param-gather without --fp4-format and another FP4 recipe are one-line errors.
TEST(MegatronArgs, BlockScaledRecipes)
{
  const std::string optimizer = "--tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer ";
  const Mapped mxfp8 = run(std::string(small) + optimizer + "--fp8-format e4m3 --fp8-recipe mxfp8");
  EXPECT_EQ(mxfp8.plan.precision, GemmPrecision::Mxfp8);
  EXPECT_FALSE(mxfp8.plan.fp8_param_gather) << "Megatron keeps BF16 weights without --fp8-param-gather";
  EXPECT_TRUE(run(std::string(small) + optimizer + "--fp8-format hybrid --fp8-recipe mxfp8 --fp8-param-gather")
                  .plan.fp8_param_gather);
  EXPECT_EQ(run(std::string(small) + optimizer + "--fp8-format e4m3 --fp8-recipe delayed").plan.precision,
            GemmPrecision::Fp8);
  const Mapped nvfp4 = run(std::string(small) + optimizer + "--fp4-format e2m1 --fp4-recipe nvfp4");
  EXPECT_EQ(nvfp4.plan.precision, GemmPrecision::Nvfp4);
  EXPECT_FALSE(nvfp4.plan.fp8_param_gather);
  const Mapped nvfp4_params = run(std::string(small) + optimizer + "--fp4-format e2m1 --fp4-param-gather");
  EXPECT_EQ(nvfp4_params.plan.precision, GemmPrecision::Nvfp4);
  EXPECT_TRUE(nvfp4_params.plan.fp8_param_gather);
  EXPECT_NE(error_of(std::string(small) + "--fp8-format e4m3 --fp4-format e2m1")
                .find("--fp4-format: cannot be used with --fp8-format"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + optimizer + "--fp4-param-gather").find("--fp4-param-gather: needs --fp4-format"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + "--fp4-format e2m1 --fp4-recipe custom").find("--fp4-recipe: expected nvfp4"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + "--fp4-format e3m0").find("--fp4-format: expected e2m1"), std::string::npos);
}

// --recompute-modules (nargs '*'): space-separated on a launch line or one YAML-quoted list; read at the selective
// granularity only, as Megatron-Core uses them.
TEST(MegatronArgs, RecomputeModulesAtTheSelectiveGranularity)
{
  const Mapped listed = run(std::string(small) + "--recompute-granularity selective --recompute-modules core_attn mlp");
  EXPECT_EQ(listed.plan.recompute, Recompute::Selective);
  EXPECT_EQ(to_string(listed.plan.recompute_modules), "core_attn,mlp");
  const Mapped quoted = run(std::string(small) + "--recompute-granularity selective --recompute-modules "
                                                 "\"[layernorm mlp]\"");
  EXPECT_EQ(to_string(quoted.plan.recompute_modules), "layernorm,mlp");
  EXPECT_TRUE(run(std::string(small) + "--recompute-granularity selective").plan.recompute_modules.empty());
  const Mapped full = run(std::string(small) + "--recompute-granularity full --recompute-method uniform "
                                               "--recompute-num-layers 1 --recompute-modules mlp");
  EXPECT_TRUE(full.plan.recompute_modules.empty());
  EXPECT_NE(notes_of(full).find("--recompute-modules: ignored"), std::string::npos) << notes_of(full);
  EXPECT_NE(error_of(std::string(small) + "--recompute-granularity selective --recompute-modules attn")
                .find("--recompute-modules: expected a comma-separated list"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + "--recompute-granularity selective --recompute-modules").find("expected one"),
            std::string::npos);
}

// A DeepSeek-V3 launch line (the arguments of Megatron-LM's DeepSeek-V3 recipes: MLA, 256 experts top-8 with one
// shared expert, three dense layers, sigmoid group-limited routing without aux loss, one MTP module) is the catalogue's
// deepseek-v3 parameter for parameter; the expert grid, dispatcher and capacity come with it.
TEST(MegatronArgs, MixtureOfExpertsAndLatentAttention)
{
  const std::string deepseek =
      "--num-layers 61 --hidden-size 7168 --ffn-hidden-size 18432 --num-attention-heads 128 --seq-length 4096 "
      "--vocab-size 129280 --swiglu --normalization RMSNorm --position-embedding-type rope --disable-bias-linear "
      "--untie-embeddings-and-output-weights --hidden-dropout 0 --attention-dropout 0 --bf16 "
      "--multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512 --qk-head-dim 128 --qk-pos-emb-head-dim 64 "
      "--v-head-dim 128 --num-experts 256 --moe-router-topk 8 --moe-ffn-hidden-size 2048 "
      "--moe-shared-expert-intermediate-size 2048 --moe-layer-freq \"([0]*3+[1]*58)\" --moe-router-score-function sigmoid "
      "--moe-router-num-groups 8 --moe-router-group-topk 4 --moe-router-load-balancing-type none --moe-grouped-gemm "
      "--mtp-num-layers 1 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 8 --sequence-parallel "
      "--expert-model-parallel-size 64 --expert-tensor-parallel-size 1 --moe-token-dispatcher-type alltoall "
      "--moe-expert-capacity-factor 1.0 --moe-pad-expert-input-to-capacity --micro-batch-size 1 "
      "--global-batch-size 4096 ";
  const Mapped r = run(deepseek, {"--dp", "32"});
  const GptConfig catalogue = find_catalog_model("deepseek-v3")->model;
  EXPECT_EQ(model_parameters(r.model, 1), model_parameters(catalogue, 1));
  EXPECT_EQ(activated_parameters(r.model, 1), activated_parameters(catalogue, 1));
  EXPECT_EQ(r.model.moe.dense_first_layers, 3);
  EXPECT_EQ(r.model.moe.layer_period, 1);
  EXPECT_EQ(r.model.moe.router, RouterScore::Sigmoid);
  EXPECT_FALSE(r.model.moe.aux_loss);
  EXPECT_EQ(r.model.moe.mtp_layers, 1);
  EXPECT_EQ(r.model.mla.q_lora_rank, 1536);
  EXPECT_EQ(r.plan.ep, 64);
  EXPECT_EQ(r.plan.etp, 1);
  EXPECT_EQ(r.plan.dispatcher, MoeDispatcher::AllToAll);
  EXPECT_DOUBLE_EQ(r.plan.capacity_factor, 1.0);
  // Megatron's defaults: top-2, the allgather dispatcher, expert tp = tp; MLA without query compression, kv rank 32.
  const Mapped defaults = run(std::string(small) + "--num-experts 8 --multi-latent-attention");
  EXPECT_EQ(defaults.model.moe.topk, 2);
  EXPECT_EQ(defaults.plan.dispatcher, MoeDispatcher::AllGather);
  EXPECT_EQ(defaults.model.mla.q_lora_rank, 0);
  EXPECT_EQ(defaults.model.mla.kv_lora_rank, 32);
  EXPECT_NE(notes_of(defaults).find("no --moe-grouped-gemm"), std::string::npos) << notes_of(defaults);
  // Llama 4 Maverick's interleaving and Megatron's integer frequency (layer i has experts when i % N == 0).
  EXPECT_EQ(run(std::string(small) + "--num-experts 8 --moe-layer-freq \"[0,1]*12\"").model.moe.layer_period, 2);
  EXPECT_EQ(run(std::string(small) + "--num-experts 8 --moe-layer-freq 1").model.moe.layer_period, 1);
  EXPECT_NE(error_of(std::string(small) + "--num-experts 8 --moe-layer-freq 2")
                .find("--moe-layer-freq: '2': gputwin models the first layers dense, then every P-th layer"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + "--num-experts 8 --moe-layer-freq \"([0]*3+[1]*3)\"").find("gives 6 layers"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + "--num-experts 8 --moe-layer-freq \"[0,2]*12\"").find("expected 0 (dense)"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + "--num-experts 8 --moe-token-dispatcher-type ring").find("expected allgather"),
            std::string::npos);
  EXPECT_EQ(run(std::string(small) + "--num-experts 8 --moe-token-dispatcher-type flex").plan.dispatcher,
            MoeDispatcher::DeepEp);
}

// Data-parallel sharding (Megatron-LM megatron/training/arguments.py): --use-megatron-fsdp shards what
// --data-parallel-sharding-strategy names (optim_grads_params, its default, is ZeRO-3; optim_grads ZeRO-2; optim
// ZeRO-1; no_shard none), --use-torch-fsdp2 is gputwin's --fsdp; an unknown strategy, both FSDPs, and FSDP2 with the
// distributed optimizer (which arguments.py asserts against) are one-line errors.
TEST(MegatronArgs, FsdpAndShardingStrategies)
{
  const Mapped fsdp2 = run(std::string(small) + "--use-torch-fsdp2 --untie-embeddings-and-output-weights");
  EXPECT_TRUE(fsdp2.plan.fsdp);
  EXPECT_EQ(fsdp2.plan.zero_stage, 3);
  const Mapped megatron_fsdp = run(std::string(small) + "--use-megatron-fsdp --use-distributed-optimizer");
  EXPECT_FALSE(megatron_fsdp.plan.fsdp);
  EXPECT_EQ(megatron_fsdp.plan.zero_stage, 3) << "optim_grads_params is the default strategy";
  const std::pair<const char*, int> strategies[] = {
      {"optim_grads_params", 3}, {"optim_grads", 2}, {"optim", 1}, {"no_shard", 0}};
  for (const auto& [strategy, stage] : strategies) {
    const Mapped r = run(std::string(small) + "--use-megatron-fsdp --data-parallel-sharding-strategy " + strategy);
    EXPECT_EQ(r.plan.zero_stage, stage) << strategy;
    EXPECT_FALSE(r.plan.fsdp) << strategy;
  }
  // Without --use-megatron-fsdp the strategy is not read (a note); the distributed optimizer is ZeRO-1.
  const Mapped unused = run(std::string(small) + "--use-distributed-optimizer --data-parallel-sharding-strategy optim_grads");
  EXPECT_EQ(unused.plan.zero_stage, 1);
  EXPECT_NE(notes_of(unused).find("--data-parallel-sharding-strategy optim_grads: not used without --use-megatron-fsdp"),
            std::string::npos)
      << notes_of(unused);
  // The command line wins: --zero 2 over FSDP2, --fsdp over Megatron-FSDP's optim_grads.
  EXPECT_EQ(run(std::string(small) + "--use-torch-fsdp2", {"--zero", "2"}).plan.zero_stage, 2);
  const Mapped explicit_fsdp =
      run(std::string(small) + "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads", {"--fsdp"});
  EXPECT_TRUE(explicit_fsdp.plan.fsdp);
  EXPECT_EQ(explicit_fsdp.plan.zero_stage, 3);

  const std::string path = test_temp_path("launch.args");
  EXPECT_EQ(error_of(std::string(small) + "--use-megatron-fsdp --data-parallel-sharding-strategy full_shard"),
            path + ":1: --data-parallel-sharding-strategy: expected no_shard, optim, optim_grads or optim_grads_params, "
                   "got 'full_shard'");
  EXPECT_NE(error_of(std::string(small) + "--use-torch-fsdp2 --use-megatron-fsdp")
                .find(":1: --use-megatron-fsdp: cannot be used with --use-torch-fsdp2"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + "--use-torch-fsdp2 --use-distributed-optimizer")
                .find(":1: --use-distributed-optimizer: not supported with --use-torch-fsdp2"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(small) + "--use-torch-fsdp2 --torch-fsdp2-no-reshard-after-forward")
                .find(":1: --torch-fsdp2-no-reshard-after-forward: FSDP2 without resharding (ZeRO-2) is not modelled"),
            std::string::npos);
}

} // namespace
} // namespace gputwin::cli
