#pragma once
// The model and parallel-plan flags every subcommand shares (`gputwin memory`, `simulate`, ... and
// `gputwin-engine train`): one definition, so the CLIs cannot drift apart.
//
//   model: --model NAME|FILE.yaml|hf:CONFIG.json  --hidden --heads --layers --seq-len --vocab
//          --num-query-groups --ffn-hidden --activation gelu|swiglu|squared-relu --norm layernorm|rmsnorm
//          --position learned|rope --untie-embeddings --no-bias --no-dropout
//   plan:  --plan paper  --tp --cp --pp --dp --micro-batch --global-batch --sp --no-sp
//          --recompute none|selective|full  --attention unfused|flash  --schedule 1f1b|interleaved|gpipe
//          --chunks N  --zero 0|1|2|3  --fsdp  --pp-first-stage-layers N --pp-last-stage-layers N  --fp8
//          --precision bf16|fp8|mxfp8|nvfp4 (--fp8 = --precision fp8)  --fp8-param-gather --no-fp8-param-gather --grad-reduce-in-bf16 --cross-entropy-fusion
//          --megatron-args FILE (megatron_args.hpp: a Megatron-LM launch line as the flags above)

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gputwin::cli {

// `model_list`: --model takes a comma-separated list (gputwin sweep), the other flags apply to each model.
void add_model_flags(ArgParser& parser, bool model_list = false);

// The model flags of `args` other than --model, as arguments ("--hidden", "4096", "--no-bias", ...): what applies
// on top of each model of a list.
std::vector<std::string> model_flag_arguments(const ParsedArgs& args);
void add_plan_flags(ArgParser& parser);

// --precision bf16|fp8|mxfp8|nvfp4 (add_plan_flags adds it; add_search_space_flags adds it with --fp8).
void add_precision_flag(ArgParser& parser);

// The plan flags of a search space (search, sweep): the list forms of the plan's own flags -- --cp LIST (plan: --cp N),
// --micro-batches LIST (plan: --micro-batch N; `micro_batch_list`), --attention and --fp8 / --precision (every plan
// with that kernel and precision), and --no-overlaps (plan: none of --tp-comm-overlap, --overlap-grad-reduce,
// --overlap-param-gather; by default each plan is tried with every overlap that applies and with none).
void add_search_space_flags(ArgParser& parser, bool micro_batch_list);
// The GEMM precision --precision and --fp8 (its synonym for fp8) ask for; bf16 without either. InputError naming
// --precision for an unknown value or one that contradicts --fp8.
GemmPrecision read_precision(const ParsedArgs& args);
// --fp8-recipe (delayed when absent); a bad spelling, or the flag with another `precision` than FP8, is an
// InputError naming the flag.
Fp8Recipe read_fp8_recipe(const ParsedArgs& args, GemmPrecision precision);

// Loads a model description file; throws InputError naming file:line:field on bad content.
using ModelFileLoader = std::function<GptConfig(const std::string& path)>;

// The model named by --model (a built-in name, or a file given to `load_file` when the argument ends in
// .yaml/.yml, starts with hf: or names an existing file), with --hidden/--heads/... applied on top. Without --model all five
// size flags are required. `load_file` may be empty (the engine takes built-in names and flags only).
// The result is validated; errors name the flag.
GptConfig read_model(const ParsedArgs& args, const ModelFileLoader& load_file);

// The plan from the flags, on top of the paper's configuration of the built-in model when --plan paper is given
// (Table 3's plan with sequence parallelism and selective recompute, as Table 5 ran it).
// Validated against `model` (validate_plan); errors name the flag.
ParallelPlan read_plan(const ParsedArgs& args, const GptConfig& model);

// What the flags left to defaults, for a command to state on stderr once its run has succeeded: what --plan
// paper set (and which flags overrode it), or the default global batch when --global-batch is not given; then what
// --megatron-args noted (ParsedArgs::notes).
std::vector<std::string> plan_notes(const ParsedArgs& args, const ParallelPlan& plan);

// A warning when the plan gives each pipeline fewer micro-batches than it has stages (the pipeline never
// fills: most of the iteration is bubble); nullopt otherwise.
std::optional<std::string> pipeline_fill_warning(const ParallelPlan& plan);

} // namespace gputwin::cli
