#pragma once
// The model and parallel-plan flags every subcommand shares (`gputwin memory`, `simulate`, ... and
// `gputwin-engine train`): one definition, so the CLIs cannot drift apart.
//
//   model: --model NAME|FILE.yaml  --hidden --heads --layers --seq-len --vocab
//          --num-query-groups --ffn-hidden --activation gelu|swiglu|squared-relu --norm layernorm|rmsnorm
//          --position learned|rope --untie-embeddings --no-bias --no-dropout
//   plan:  --plan paper  --tp --cp --pp --dp --micro-batch --global-batch --sp --no-sp
//          --recompute none|selective|full  --attention unfused|flash  --schedule 1f1b|interleaved|gpipe
//          --chunks N  --zero 0|1  --pp-first-stage-layers N --pp-last-stage-layers N  --fp8
//          --fp8-param-gather --no-fp8-param-gather --grad-reduce-in-bf16 --cross-entropy-fusion

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gputwin::cli {

void add_model_flags(ArgParser& parser);
void add_plan_flags(ArgParser& parser);

// Loads a model description file; throws InputError naming file:line:field on bad content.
using ModelFileLoader = std::function<GptConfig(const std::string& path)>;

// The model named by --model (a built-in name, or a file given to `load_file` when the argument ends in
// .yaml/.yml or names an existing file), with --hidden/--heads/... applied on top. Without --model all five
// size flags are required. `load_file` may be empty (the engine takes built-in names and flags only).
// The result is validated; errors name the flag.
GptConfig read_model(const ParsedArgs& args, const ModelFileLoader& load_file);

// The plan from the flags, on top of the paper's configuration of the built-in model when --plan paper is given
// (Table 3's plan with sequence parallelism and selective recompute, as Table 5 ran it).
// Validated against `model` (validate_plan); errors name the flag.
ParallelPlan read_plan(const ParsedArgs& args, const GptConfig& model);

// What the flags left to defaults, for a command to state on stderr once its run has succeeded: what --plan
// paper set (and which flags overrode it), or the default global batch when --global-batch is not given.
std::vector<std::string> plan_notes(const ParsedArgs& args, const ParallelPlan& plan);

// A warning when the plan gives each pipeline fewer micro-batches than it has stages (the pipeline never
// fills: most of the iteration is bubble); nullopt otherwise.
std::optional<std::string> pipeline_fill_warning(const ParallelPlan& plan);

} // namespace gputwin::cli
