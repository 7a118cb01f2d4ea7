#pragma once
// `--megatron-args FILE`: a Megatron-LM / NeMo (Megatron-Core) launch line turned into the gputwin model, plan and
// overlap flags that run what Megatron would run, e.g.
//
//   torchrun --nnodes 8 --nproc-per-node 8 pretrain_gpt.py --num-layers 96 --hidden-size 12288 ...
//       --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 --sequence-parallel ...
//
// becomes --layers 96 --hidden 12288 ... --tp 8 --pp 8 --dp 1 --sp ... Megatron's names, defaults and derived values
// (data-parallel size, SwiGLU's MLP width, the virtual pipeline size, --recompute-activations, the ZeRO stage of
// --use-distributed-optimizer, --use-megatron-fsdp's --data-parallel-sharding-strategy and --use-torch-fsdp2) follow
// megatron/training/arguments.py and the TransformerConfig fields it exposes; every argument that is not modelled
// is named in one note.

#include "gputwin/common/arg_parser.hpp"

#include <string>

namespace gputwin::cli {

// The gputwin flags equivalent to the launch line in the file `path` (launch_line.hpp), with notes: the arguments
// not modelled, approximations, and a world size the file does not give. `explicit_args` are the command line's
// flags, which win: with --model the file's model arguments are left out; the data-parallel size is derived with
// the command line's --tp/--pp/--cp where it gives them. Throws InputError "PATH:LINE: --ARGUMENT: expected ..." on
// a value that is not a number, a missing required argument, an unknown tokenizer without --vocab-size, and what
// gputwin cannot express (mixture of experts, partial full recompute, FSDP2 without resharding, ...), an unknown
// --data-parallel-sharding-strategy, and what Megatron-LM refuses (both FSDPs, FSDP2 with the distributed optimizer).
Expansion expand_megatron_args(const std::string& path, const ParsedArgs& explicit_args);

// The same from the file's text (tests).
Expansion megatron_args_from_text(const std::string& text, const std::string& path, const ParsedArgs& explicit_args);

} // namespace gputwin::cli
