// The shared model and plan flags: parsing, defaults, and one-line errors that name the flag.
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/models/plan_metadata.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <sstream>

namespace gputwin::cli {
namespace {

struct Parsed {
  GptConfig model;
  ParallelPlan plan;
};

Parsed parse(const std::vector<std::string>& args)
{
  ArgParser parser("test", "test");
  add_model_flags(parser);
  add_plan_flags(parser);
  const ParsedArgs parsed = parser.parse(args);
  Parsed result;
  result.model = read_model(parsed, {});
  result.plan = read_plan(parsed, result.model);
  return result;
}

// The InputError message of parsing `args`, or "" if it parsed.
std::string error_of(const std::vector<std::string>& args)
{
  try {
    parse(args);
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "error spans several lines";
    return e.what();
  }
  return "";
}

TEST(PlanFlags, DefaultsAndOverrides)
{
  const Parsed p = parse({"--model", "gpt3-175b", "--tp", "8", "--pp=8", "--sp", "--recompute", "selective"});
  EXPECT_EQ(p.model.hidden, 12288);
  EXPECT_EQ(p.plan.tp, 8);
  EXPECT_EQ(p.plan.pp, 8);
  EXPECT_EQ(p.plan.dp, 1);
  EXPECT_EQ(p.plan.micro_batch, 1);
  EXPECT_EQ(p.plan.effective_global_batch(), 1);
  EXPECT_TRUE(p.plan.sequence_parallel());
  EXPECT_EQ(p.plan.recompute, Recompute::Selective);
  EXPECT_EQ(p.plan.schedule, Schedule::OneFOneB);
  EXPECT_EQ(p.plan.attention, AttentionKernel::Unfused); // the paper's configurations keep the unfused core
  EXPECT_EQ(parse({"--model", "gpt3-175b", "--attention", "flash"}).plan.attention, AttentionKernel::Flash);
  EXPECT_EQ(parse({"--model", "gpt3-175b", "--attention=unfused"}).plan.attention, AttentionKernel::Unfused);
  EXPECT_NE(describe_plan(parse({"--model", "gpt3-175b", "--attention", "flash"}).plan).find("flash attention"),
            std::string::npos);
  EXPECT_NE(describe_plan(p.plan).find("unfused attention"), std::string::npos);

  const Parsed custom = parse({"--model", "gpt-22b", "--layers", "24", "--hidden", "4096", "--heads", "32"});
  EXPECT_EQ(custom.model.layers, 24);
  EXPECT_EQ(custom.model.hidden, 4096);
  EXPECT_EQ(custom.model.vocab, 51200);
}

TEST(PlanFlags, PaperPlanIsThePapersWholeConfiguration)
{
  // Table 3's plan with Table 5's sequence parallelism and selective recompute, for every built-in model.
  for (const CatalogEntry& entry : model_catalog()) {
    SCOPED_TRACE(entry.model.name);
    const Parsed p = parse({"--model", entry.model.name, "--plan", "paper"});
    EXPECT_TRUE(p.plan.sequence_parallel());
    EXPECT_EQ(p.plan.recompute, Recompute::Selective);
    EXPECT_EQ(p.plan.effective_global_batch(), entry.paper_plan.effective_global_batch());
    EXPECT_EQ(p.plan.tp, entry.paper_plan.tp);
    EXPECT_EQ(p.plan.pp, entry.paper_plan.pp);
    // The catalogue obeys every shape rule the flags and files do.
    EXPECT_NO_THROW(validate_plan(entry.model, entry.paper_plan));
  }
  EXPECT_FALSE(parse({"--model", "gpt-22b", "--plan", "paper", "--no-sp"}).plan.sequence_parallel());
  EXPECT_EQ(parse({"--model", "gpt-22b", "--plan", "paper", "--recompute", "none"}).plan.recompute, Recompute::None);
  EXPECT_NE(error_of({"--model", "gpt-22b", "--sp", "--no-sp"}).find("--no-sp: contradicts --sp"), std::string::npos);
}

TEST(PlanFlags, NotesStateTheDefaultsAndThePipelineFill)
{
  ArgParser parser("test", "test");
  add_model_flags(parser);
  add_plan_flags(parser);
  const ParsedArgs plain = parser.parse({"--model", "gpt3-175b", "--tp", "8", "--pp", "8", "--dp", "2"});
  const ParallelPlan p = read_plan(plain, read_model(plain, {}));
  ASSERT_EQ(plan_notes(plain, p).size(), 1u);
  EXPECT_EQ(plan_notes(plain, p)[0], "--global-batch not given: global batch = micro-batch x dp = 1 x 2 = 2 (one "
                                     "micro-batch per pipeline, Megatron-LM's default)");
  EXPECT_EQ(pipeline_fill_warning(p).value_or(""),
            "1 micro-batch per pipeline for 8 pipeline stages: the pipeline never fills (bubble (p - 1)/m = 7 of "
            "compute); expected --global-batch of at least micro-batch x dp x pp = 16");
  const ParsedArgs filled = parser.parse({"--model", "gpt3-175b", "--tp", "8", "--pp", "8", "--global-batch", "8"});
  EXPECT_TRUE(plan_notes(filled, read_plan(filled, read_model(filled, {}))).empty());
  EXPECT_FALSE(pipeline_fill_warning(read_plan(filled, read_model(filled, {}))));
  const ParsedArgs paper = parser.parse({"--model", "gpt-1t", "--plan", "paper", "--micro-batch", "2"});
  const std::vector<std::string> notes = plan_notes(paper, read_plan(paper, read_model(paper, {})));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "--plan paper (Korthikanti et al. 2022: Table 3's plan, Table 5's SP + selective recompute) set "
                      "tp 8, pp 64, dp 1, global batch 512, schedule 1f1b, sequence parallelism, recompute selective; "
                      "from the flags: --micro-batch");
}

TEST(PlanFlags, PaperPlanThenFlagsOnTop)
{
  const Parsed p = parse({"--model", "mt-nlg-530b", "--plan", "paper", "--recompute", "full"});
  EXPECT_EQ(p.plan.tp, 8);
  EXPECT_EQ(p.plan.pp, 35);
  EXPECT_EQ(p.plan.effective_global_batch(), 280);
  EXPECT_EQ(p.plan.schedule, Schedule::Interleaved);
  EXPECT_EQ(p.plan.chunks, 3);
  EXPECT_EQ(p.plan.recompute, Recompute::Full);
  const Parsed back = parse({"--model", "mt-nlg-530b", "--plan", "paper", "--schedule", "1f1b"});
  EXPECT_EQ(back.plan.chunks, 1);
}

TEST(PlanFlags, ModelFromSizeFlagsAlone)
{
  const Parsed p =
      parse({"--hidden", "1024", "--heads", "16", "--layers", "8", "--seq-len", "512", "--vocab", "32000"});
  EXPECT_EQ(p.model.name, "custom");
  EXPECT_EQ(p.model.layers, 8);
  EXPECT_NE(error_of({"--hidden", "1024"}).find("--model: not given, so --heads is required"), std::string::npos);
}

TEST(PlanFlags, ErrorsNameTheFlag)
{
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--model", "gpt-7"}, "--model: unknown model 'gpt-7' (expected one of gpt-22b, gpt3-175b"},
      {{"--model", "gpt-22b", "--tp", "-2"}, "--tp: expected a positive integer, got -2"},
      {{"--model", "gpt-22b", "--tp", "0"}, "--tp: expected a positive integer, got 0"},
      {{"--model", "gpt-22b", "--hidden", "0"}, "--hidden: expected a positive integer"},
      {{"--model", "gpt-22b", "--tp", "abc"}, "--tp: expected an integer, got 'abc'"},
      {{"--model", "gpt-22b", "--tp", "99999999999999999999"}, "--tp: expected an integer that fits in 64 bits"},
      {{"--model", "gpt-22b", "--tp", "5"},
       "--tp: 64 attention heads of model 'gpt-22b' are not divisible by "
       "tensor-parallel size 5"},
      {{"--model", "gpt-22b", "--pp", "5"}, "--pp: 48 layers of model 'gpt-22b' are not divisible by 5"},
      {{"--model", "gpt-22b", "--pp", "4", "--schedule", "interleaved", "--chunks", "5", "--global-batch", "4"},
       "--chunks: 48 layers are not divisible by pp x chunks = 4 x 5"},
      {{"--model", "gpt-22b", "--chunks", "2"}, "--chunks: 2 model chunks per stage need --schedule interleaved"},
      {{"--model", "gpt-22b", "--micro-batch", "2", "--dp", "2", "--global-batch", "6"},
       "--global-batch: 6 is not divisible by micro-batch x dp = 2 x 2"},
      {{"--model", "gpt-22b", "--pp", "4", "--schedule", "interleaved", "--chunks", "2", "--global-batch", "2"},
       "--global-batch: the interleaved schedule needs the micro-batches per pipeline (2) to be a multiple of"},
      {{"--model", "gpt-22b", "--recompute", "some"}, "--recompute: expected none|selective|full, got 'some'"},
      {{"--model", "gpt-22b", "--schedule", "zb"}, "--schedule: expected 1f1b|interleaved|gpipe, got 'zb'"},
      {{"--model", "gpt-22b", "--attention", "fused"}, "--attention: expected unfused|flash, got 'fused'"},
      {{"--model", "gpt-22b", "--attention"}, "--attention: expected a value (KERNEL)"},
      {{"--model", "gpt-22b", "--zero", "4"}, "--zero: expected 0, 1, 2 or 3, got 4"},
      {{"--model", "gpt-22b", "--zero", "-1"}, "--zero: expected 0, 1, 2 or 3, got -1"},
      {{"--model", "gpt-22b", "--zero", "2", "--pp", "2"},
       "--zero: 2 shards the gradients, which needs --pp 1 (got --pp 2;"},
      {{"--model", "gpt-22b", "--fsdp", "--pp", "4"}, "--fsdp: shards the gradients, which needs --pp 1 (got --pp 4;"},
      {{"--model", "gpt-22b", "--fsdp", "--zero", "1"},
       "--fsdp: shards the weights, gradients and optimizer states (ZeRO-3), got --zero 1"},
      {{"--model", "gpt-22b", "--fsdp", "--fp8"}, "--fsdp: FP8 is modelled as Transformer Engine runs it"},
      {{"--model", "gpt-22b", "--zero", "3", "--fp8", "--no-fp8-param-gather"},
       "--no-fp8-param-gather: with --zero 3 --fp8 the weights are gathered as FP8 parameters"},
      {{"--model", "gpt-22b", "--zero", "0", "--fp8", "--fp8-param-gather"}, "--fp8-param-gather: needs --zero 1, 2 or 3"},
      {{"--model", "gpt-22b", "--heads", "7"}, "--heads: hidden size 6144 of model 'gpt-22b' is not divisible by 7"},
      {{"--model", "gpt-22b", "--plan", "best"}, "--plan: expected 'paper', got 'best'"},
      {{"--model", "gpt-22b", "--seq-len", "1001", "--tp", "8", "--sp"}, "--sp: sequence length 1001"},
      {{"--model", "gpt-22b", "--tpp", "2"}, "unknown option '--tpp' for 'test'"},
      {{"--model"}, "--model: expected a value (NAME|FILE)"},
      {{"--model", "gpt-22b", "--sp=yes"}, "--sp: takes no value"},
  };
  for (const auto& [args, expected] : cases) {
    const std::string message = error_of(args);
    EXPECT_NE(message.find(expected), std::string::npos) << "got: " << message << "\nexpected: " << expected;
  }
}

TEST(PlanFlags, ZeroStagesAndFsdp)
{
  for (const int zero : {0, 1, 2, 3}) {
    const Parsed p = parse({"--model", "llama3-8b", "--dp", "8", "--zero", std::to_string(zero)});
    EXPECT_EQ(p.plan.zero_stage, zero);
    EXPECT_FALSE(p.plan.fsdp);
  }
  // --fsdp is ZeRO-3 with FSDP2's state layout; --zero 3 beside it is allowed.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--model", "llama3-8b", "--dp", "8", "--fsdp"},
        std::vector<std::string>{"--model", "llama3-8b", "--dp", "8", "--fsdp", "--zero", "3"}}) {
    const Parsed p = parse(args);
    EXPECT_EQ(p.plan.zero_stage, 3);
    EXPECT_TRUE(p.plan.fsdp);
  }
  // FP8 with ZeRO-2/3 gathers FP8 parameters by default, as with ZeRO-1 (Megatron-LM allows --fp8-param-gather with
  // the distributed optimizer or FSDP); ZeRO-2 may keep the BF16 weights.
  EXPECT_TRUE(parse({"--model", "llama3-8b", "--dp", "8", "--zero", "3", "--fp8"}).plan.fp8_param_gather);
  EXPECT_TRUE(parse({"--model", "llama3-8b", "--dp", "8", "--zero", "2", "--fp8"}).plan.fp8_param_gather);
  EXPECT_FALSE(
      parse({"--model", "llama3-8b", "--dp", "8", "--zero", "2", "--fp8", "--no-fp8-param-gather"}).plan.fp8_param_gather);
}

TEST(PlanFlags, ZeroStageAndFsdpRoundTripThroughPlanMetadata)
{
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--model", "llama3-8b", "--dp", "8", "--zero", "2"},
        std::vector<std::string>{"--model", "llama3-8b", "--dp", "8", "--zero", "3", "--recompute", "full"},
        std::vector<std::string>{"--model", "llama3-8b", "--dp", "8", "--fsdp"},
        std::vector<std::string>{"--model", "llama3-8b", "--dp", "8", "--zero", "1"}}) {
    const Parsed p = parse(args);
    Metadata md;
    write_plan_metadata(p.model, p.plan, md);
    EXPECT_EQ(md.at("zero"), std::to_string(p.plan.zero_stage));
    EXPECT_EQ(md.count("fsdp"), p.plan.fsdp ? 1U : 0U); // written only where set: older readers see ZeRO-3
    const PlanMetadata back = read_plan_metadata(md, "test");
    EXPECT_EQ(back.plan.zero_stage, p.plan.zero_stage);
    EXPECT_EQ(back.plan.fsdp, p.plan.fsdp);
    EXPECT_EQ(describe_plan(back.plan), describe_plan(p.plan));
    EXPECT_NO_THROW(validate_plan(back.model, back.plan));
  }
  // A trace that says zero 5 or fsdp with zero 1 is refused when validated, naming the flag.
  Metadata md;
  write_plan_metadata(find_catalog_model("llama3-8b")->model, ParallelPlan{}, md);
  md["zero"] = "5";
  const PlanMetadata five = read_plan_metadata(md, "test");
  EXPECT_THROW(validate_plan(five.model, five.plan), InputError);
  md["zero"] = "1";
  md["fsdp"] = "true";
  const PlanMetadata mixed = read_plan_metadata(md, "test");
  try {
    validate_plan(mixed.model, mixed.plan);
    ADD_FAILURE() << "fsdp with zero 1 validated";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--fsdp: ", 0), 0U) << e.what();
  }
}

TEST(PlanFlags, HelpListsEveryPlanFlag)
{
  ArgParser parser("gputwin memory", "summary");
  add_model_flags(parser);
  add_plan_flags(parser);
  const std::string help = parser.help();
  for (const char* flag :
       {"--model", "--hidden", "--heads", "--layers", "--seq-len", "--vocab", "--tp", "--pp", "--dp", "--micro-batch",
        "--global-batch", "--sp", "--recompute", "--attention", "--schedule", "--chunks", "--zero", "--fsdp", "--plan"})
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
}

} // namespace
} // namespace gputwin::cli

namespace gputwin::cli {
namespace {

// model_flag_arguments forwards every model flag add_model_flags declares but --model (sweep applies them to each
// model of its list): the flags are read from the help's "model" section, so a flag added there and not to the
// forwarded list fails here.
TEST(PlanFlags, ModelFlagArgumentsForwardEveryModelFlag)
{
  ArgParser parser("test", "test");
  add_model_flags(parser);
  std::vector<std::string> args, expected;
  std::istringstream help(parser.help());
  bool in_model_section = false;
  for (std::string line; std::getline(help, line);) {
    if (line == "model:")
      in_model_section = true;
    else if (line.empty() || line.back() == ':')
      in_model_section = false;
    if (!in_model_section)
      continue;
    std::istringstream words(line);
    std::string flag, value;
    words >> flag >> value;
    if (flag.rfind("--", 0) != 0 || flag == "--model")
      continue;
    // An option's help line names its value in capitals ("--hidden H", "--norm NAME"); a switch's goes on in words.
    const bool takes_value = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
      return std::isupper(static_cast<unsigned char>(c)) || c == '|';
    });
    args.push_back(flag);
    expected.push_back(flag);
    if (takes_value) {
      args.push_back("7");
      expected.push_back("7");
    }
  }
  ASSERT_GE(expected.size(), 13U) << parser.help();
  const std::vector<std::string> forwarded = model_flag_arguments(parser.parse(args));
  for (const std::string& flag : expected)
    EXPECT_NE(std::find(forwarded.begin(), forwarded.end(), flag), forwarded.end()) << flag << " not forwarded";
  EXPECT_EQ(forwarded.size(), expected.size());
}

// --precision bf16|fp8|mxfp8|nvfp4; --fp8 is --precision fp8. A contradiction or an unknown value names --precision.
TEST(PlanFlags, PrecisionAndItsFp8Synonym)
{
  const std::vector<std::string> base = {"--model", "llama3-8b", "--tp", "8"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  EXPECT_EQ(parse(base).plan.precision, GemmPrecision::Bf16);
  EXPECT_EQ(parse(with({"--fp8"})).plan.precision, GemmPrecision::Fp8);
  EXPECT_EQ(parse(with({"--precision", "fp8"})).plan.precision, GemmPrecision::Fp8);
  EXPECT_EQ(parse(with({"--precision", "fp8", "--fp8"})).plan.precision, GemmPrecision::Fp8);
  EXPECT_EQ(parse(with({"--precision=mxfp8"})).plan.precision, GemmPrecision::Mxfp8);
  EXPECT_EQ(parse(with({"--precision", "nvfp4"})).plan.precision, GemmPrecision::Nvfp4);
  EXPECT_EQ(parse(with({"--precision", "bf16"})).plan.precision, GemmPrecision::Bf16);
  EXPECT_EQ(describe_plan(parse(with({"--fp8"})).plan), describe_plan(parse(with({"--precision", "fp8"})).plan));
  EXPECT_NE(describe_plan(parse(with({"--precision", "nvfp4"})).plan).find(" · NVFP4"), std::string::npos);
  EXPECT_EQ(error_of(with({"--precision", "fp6"})), "--precision: expected bf16|fp8|mxfp8|nvfp4, got 'fp6'");
  EXPECT_EQ(error_of(with({"--precision", "mxfp8", "--fp8"})),
            "--precision: mxfp8 contradicts --fp8 (= --precision fp8; expected one of them)");
  // Quantized parameters are the default with the distributed optimizer for every quantized precision.
  EXPECT_TRUE(parse(with({"--precision", "mxfp8", "--dp", "2", "--zero", "1"})).plan.fp8_param_gather);
  EXPECT_FALSE(parse(with({"--precision", "nvfp4", "--dp", "2", "--zero", "1", "--no-fp8-param-gather"}))
                   .plan.fp8_param_gather);
  EXPECT_EQ(error_of(with({"--fp8-param-gather", "--dp", "2", "--zero", "1"})),
            "--fp8-param-gather: needs --fp8 (FP8 weights are TE's FP8 GEMM operands)");
}

// FP8 is written as it was ("fp8": "true"), the block-scaled formats by name; each reads back as it was written.
TEST(PlanFlags, PrecisionRoundTripsThroughPlanMetadata)
{
  for (const GemmPrecision precision :
       {GemmPrecision::Bf16, GemmPrecision::Fp8, GemmPrecision::Mxfp8, GemmPrecision::Nvfp4}) {
    SCOPED_TRACE(to_string(precision));
    const Parsed p = parse({"--model", "llama3-8b", "--tp", "8", "--dp", "2", "--zero", "1", "--precision",
                            to_string(precision)});
    Metadata md;
    write_plan_metadata(p.model, p.plan, md);
    EXPECT_EQ(md.count("fp8"), precision == GemmPrecision::Fp8 ? 1U : 0U);
    EXPECT_EQ(md.count("precision"), p.plan.quantized() && precision != GemmPrecision::Fp8 ? 1U : 0U);
    const PlanMetadata back = read_plan_metadata(md, "test");
    EXPECT_EQ(back.plan.precision, precision);
    EXPECT_EQ(back.plan.fp8_param_gather, p.plan.fp8_param_gather);
    EXPECT_EQ(describe_plan(back.plan), describe_plan(p.plan));
  }
  // FP8 current scaling: written as fp8_recipe, read back; delayed scaling, the default, writes nothing.
  for (const Fp8Recipe recipe : {Fp8Recipe::Delayed, Fp8Recipe::Tensorwise}) {
    const Parsed p = parse({"--model", "llama3-8b", "--tp", "8", "--fp8", "--fp8-recipe", to_string(recipe)});
    EXPECT_EQ(p.plan.fp8_recipe, recipe);
    Metadata md;
    write_plan_metadata(p.model, p.plan, md);
    EXPECT_EQ(md.count("fp8_recipe"), recipe == Fp8Recipe::Tensorwise ? 1U : 0U);
    EXPECT_EQ(read_plan_metadata(md, "test").plan.fp8_recipe, recipe);
  }
  Metadata md;
  write_plan_metadata(find_catalog_model("llama3-8b")->model, ParallelPlan{}, md);
  md["precision"] = "fp6";
  EXPECT_THROW(read_plan_metadata(md, "test"), InputError);
  md.erase("precision");
  md["fp8"] = "true";
  md["fp8_recipe"] = "blockwise";
  EXPECT_THROW(read_plan_metadata(md, "test"), InputError);
}

} // namespace
} // namespace gputwin::cli
