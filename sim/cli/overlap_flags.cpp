#include "overlap_flags.hpp"

#include "gputwin/common/input_error.hpp"

namespace gputwin::cli {

void add_overlap_flags(ArgParser& parser)
{
  parser.add_switch("--overlap-grad-reduce",
                    "reduce each layer's gradients over dp while backward goes on (built into ZeRO-2/3 and --fsdp: "
                    "per-layer reduce-scatter)");
  parser.add_switch("--overlap-param-gather",
                    "ZeRO-1/2: all-gather the updated parameters layer by layer overlapped with the first forward "
                    "(Megatron-Core's distributed optimizer), instead of one all-gather after the step; built into "
                    "ZeRO-3 / --fsdp (per-layer gathers prefetched)");
  parser.add_switch("--tp-comm-overlap",
                    "split each TP all-gather / reduce-scatter next to a linear layer into chunks overlapped with "
                    "the neighbouring GEMM chunks (Megatron-Core with Transformer Engine; turns --sp on)");
  parser.add_switch("--overlap-moe-expert-parallel-comm",
                    "MoE: run each 1F1B forward step with the neighbouring backward step of another micro-batch, "
                    "layer by layer, so each one's token all-to-alls hide behind the other's computation "
                    "(Megatron-Core's EP A2A overlap; needs --ep > 1, pp 1 or --schedule interleaved)");
  parser.add_switch("--moe-shared-expert-overlap",
                    "MoE: the shared experts compute while the token all-to-alls move (fc1 beside the dispatch, fc2 "
                    "beside the combine; Megatron-Core's shared-expert stream; alltoall or deepep dispatcher)");
  parser.add_switch("--delay-wgrad-compute",
                    "with --overlap-moe-expert-parallel-comm: the backward's weight gradients run after its token "
                    "exchanges are issued, so each exchange waits for the data gradients only (Megatron-Core)");
}

WorkloadOptions overlap_options_from_flags(const ParsedArgs& args, const ParallelPlan& plan)
{
  WorkloadOptions options;
  options.overlap_grad_reduce = args.has("--overlap-grad-reduce");
  options.overlap_param_gather = args.has("--overlap-param-gather");
  options.tp_comm_overlap = args.has("--tp-comm-overlap");
  options.moe_a2a_overlap = args.has("--overlap-moe-expert-parallel-comm");
  if (options.moe_a2a_overlap)
    validate_moe_a2a_overlap(plan);
  options.moe_shared_expert_overlap = args.has("--moe-shared-expert-overlap"); // make_workload validates it
  options.delay_wgrad_compute = args.has("--delay-wgrad-compute");
  if (options.delay_wgrad_compute && !options.moe_a2a_overlap)
    throw InputError("--delay-wgrad-compute: needs --overlap-moe-expert-parallel-comm (Megatron-Core asserts it)");
  if (options.tp_comm_overlap && plan.tp > 1 && !plan.sequence_parallel())
    throw InputError("--tp-comm-overlap: contradicts --no-sp (it overlaps the sequence-parallel all-gather and "
                     "reduce-scatter; Megatron-LM asserts SP with it)");
  if (options.overlap_param_gather && plan.zero_stage == 0)
    throw InputError("--overlap-param-gather: needs --zero 1 (only the distributed optimizer gathers parameters)");
  return options;
}

} // namespace gputwin::cli
