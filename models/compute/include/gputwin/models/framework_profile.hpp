#pragma once
// The host side of a rank: a training framework issues every op from one host thread, in program order, and
// an op cannot start on its GPU stream before the host has issued it. When kernels are long the host runs
// ahead and its cost is hidden; when they are short (small models, high TP) the GPU idles between kernels
// and the iteration becomes host-bound. A framework profile holds the per-op host costs, the launch latency
// and the points where the host waits for the GPU; `simulate`, `replay --gpu`, `compare` and `calibrate
// --iterations` take one with `--framework NAME|FILE`.
//
// Issue model (both executors run it through one state machine, sim/estimator/host_issue.hpp; sim/README.md
// "Host issue model"):
//   issue(i) = free(i-1) + host_cost(i)          free(-1) = 0 (the iteration starts)
//   free(i)  = issue(i), or max(issue(i), end(i)) when op i synchronises the host (a batch of adjacent p2p ops
//              synchronises once, at its last op)
//   start(i) >= issue(i) + launch_latency_s      (besides its stream order and dependencies)

#include "gputwin/common/gpu_generation.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gputwin {

struct FrameworkProfile {
  std::string name;
  std::string source; // where the figures come from (measured, fitted, set)
  // Host seconds to issue one op of each kind (framework code + the CUDA/NCCL launch call).
  double kernel_issue_s = 0;     // a memory-bound kernel (elementwise, norm, softmax, optimizer)
  double gemm_issue_s = 0;       // a GEMM or fused attention kernel (cuBLAS/cuDNN call, heavier dispatch)
  double collective_issue_s = 0; // one NCCL collective
  double p2p_issue_s = 0;        // one pipeline send or receive
  // One expert's GEMM of a grouped GEMM (HostOpClass::launches); 0: gemm_issue_s.
  double expert_gemm_issue_s = 0;
  // Extra host seconds once per micro-batch step of the schedule (forward_step/backward_step: data, loss
  // bookkeeping) and once per iteration (before the optimizer: gradient bookkeeping, norms, scheduler).
  double microbatch_issue_s = 0;
  double iteration_issue_s = 0;
  double launch_latency_s = 0; // from the launch call to the earliest start on the GPU
  // Points where the host waits for the GPU: after each pipeline transfer (Megatron's torch.cuda.synchronize()
  // around batch_isend_irecv), and before the optimizer (the inf/NaN check and gradient norm read on the host).
  bool sync_after_p2p = false;
  bool sync_before_optimizer = false;
  // Megatron-Core's MoE token dispatchers read the routed token counts on the host in every MoE layer's forward
  // (megatron/core/transformer/moe/token_dispatcher.py MoEAlltoAllTokenDispatcher.preprocess: the counts are copied
  // device-to-host after the router and `d2h_event.synchronize()` runs at cuda_sync_point, "before_ep_alltoall" with
  // ep or tp > 1, "before_permutation_1" with a capacity factor, "before_finish" otherwise -- the all-to-all's
  // split sizes and the grouped GEMM's per-expert sizes are host values): the host waits for the router's
  // top-k before it issues the rest of the layer.
  bool sync_at_moe_routing = false;
  // Megatron-Core's `overlap_p2p_comm`, on by default with virtual pipeline stages (megatron/training/arguments.py
  // `--no-overlap-p2p-communication`; argument_utils.py sets batch_p2p_comm = not overlap_p2p_comm): in the
  // interleaved schedule the sends and receives are individual isend/irecv whose handles the schedule waits on
  // from the GPU stream, so the host never synchronises there. The torch.cuda.synchronize() of
  // p2p_communication.py `_communicate` runs only with batch_p2p_comm and batch_p2p_sync, i.e. in the
  // non-interleaved 1F1B schedule. true: `sync_after_p2p` applies to programs without chunks only.
  bool overlap_p2p_interleaved = false;
  // Megatron-LM's training loop with --overlap-grad-reduce hands the pipeline schedules a grad_sync_func
  // (megatron/training/training.py: `if args.align_grad_reduce: config.grad_sync_func = [model_chunk.start_grad_sync
  // ...]`, on by default, --no-align-grad-reduce turns it off): the hooks then never start a bucket's reduction
  // during the backward; the schedule starts a whole chunk's (every bucket) after a backward step, `pipeline rank`
  // backward steps after the chunk's last micro-batch in the interleaved schedule ("we launch asynchronous
  // communication at the same time across the pipeline-parallel group": pipeline_parallel/schedules.py
  // backward_step_helper, grad_sync_virtual_microbatch_id = virtual_microbatch_id - pipeline_parallel_rank; the
  // chunks not started by the end of the cooldown after it), after the last backward on stages other than the
  // first in 1F1B. NeMo 2 never sets it (nemo/lightning/megatron_parallel.py extract_ddp_funcs reads
  // ddp_config.align_grad_reduce, a field Megatron-Core's DistributedDataParallelConfig does not have: false), so
  // its buckets start from the hooks as their gradients become ready in the last micro-batch's backward.
  bool align_grad_reduce = false;
  // Per-layer CUDA graphs (Megatron-Core --enable-cuda-graph / --cuda-graph-scope: Transformer Engine's
  // make_graphed_callables captures each layer's forward and backward per micro-batch): the host launches one graph
  // per (layer, micro-batch, direction) instead of its kernels -- `graph_launch_s` for the first op of the group,
  // nothing for the others (the TP collectives inside the layer are captured with it). Pipeline p2p, data-parallel
  // collectives, the embedding, the loss and the optimizer stay eager. The GPU-side launch latency is unchanged.
  bool cuda_graphs = false;
  double graph_launch_s = 0;
  // Ops the framework issues beyond the one fused softmax kernel where that kernel does not support the shape.
  // Megatron's FusedScaleMaskSoftmax (megatron/model/fused_softmax.py is_kernel_available) runs its fused CUDA
  // kernel only when 16 < sk <= 4096, sq % 4 == 0 and the attention batches b x heads/t are a multiple of the
  // kernel's batches per thread block (4 from sk > 128 on); otherwise PyTorch's path runs: fp32 cast, scale, mask
  // fill, softmax and cast back forward (4 more ops, torch calls from the module's Python code like the GEMMs',
  // each costing gemm_issue_s) and their 4 more gradient kernels backward (autograd's C++ engine, kernel_issue_s
  // each). 0: always fused.
  int unfused_softmax_extra_ops = 0;

  bool operator==(const FrameworkProfile&) const = default;
};

// Built-in profiles: "none" (no host: ops start as soon as the GPU can run them), "megatron-lm" (the 2022
// Megatron of the paper's A100 runs), "megatron-core" (Megatron-LM's current training loop over Megatron-Core
// with Transformer Engine), "nemo" (NeMo 2 over Megatron-Core: the same host, gradient reductions not aligned),
// "megatron-deepspeed", "torchtitan" (PyTorch eager + FSDP2, with
// --fsdp), "gputwin-engine". Throws InputError naming
// `flag` for an unknown name.
FrameworkProfile builtin_framework_profile(const std::string& name, const std::string& flag = "--framework");
std::vector<std::string> builtin_framework_names();
// The profile `simulate` uses without --framework on Ampere-era clusters (and CPU hosts).
inline constexpr const char* default_framework = "megatron-lm";
// The profile a user of the GPU's generation runs: megatron-core on Hopper and later (what NeMo and
// Megatron-LM's current releases train with), megatron-lm (2022) on Ampere and CPU hosts.
const char* default_framework_for(GpuGeneration generation);

// The host's per-op cost and synchronisation points of one rank program, in op (issue) order.
struct HostProgram {
  std::vector<double> issue_cost_s; // host seconds spent issuing op i (per-micro-batch and per-iteration
                                    // extras are charged to the first op of the step / of the optimizer)
  std::vector<bool> syncs;          // the host waits for op i and every op issued before it to end
                                    // (a device synchronisation) before issuing op i + 1
  double launch_latency_s = 0;
};

HostProgram host_program(const FrameworkProfile& profile, const traces::RankProgram& program);

// The profile on a host whose CPU issues ops `issue_scale` times as slowly as the hosts its figures were measured on
// (ClusterSpec::host_issue_scale): every host-side cost scaled -- per-op issue, per step, per iteration, graph
// launches -- the GPU-side launch latency not.
FrameworkProfile on_host_cpu(const FrameworkProfile& profile, double issue_scale);

// What the host model needs to know of one op, independent of the profile's figures: a fit re-costs the same
// programs many times from these alone.
struct HostOpClass {
  enum Kind : uint8_t { Kernel, Gemm, Collective, P2p } kind = Kernel;
  // Launches of the op's kind the host issues for it: 1, or for a grouped GEMM (GemmShape::grouped: Transformer
  // Engine's GroupedLinear) one per local expert -- TE issues each expert's GEMM from a host loop
  // (transformer_engine/pytorch/module/grouped_linear.py `_GroupedLinear` splits the input and loops over its
  // per-expert quantizers in Python; cpp_extensions/gemm.py general_grouped_gemm -> te_general_grouped_gemm ->
  // common/gemm/cublaslt_gemm.cu nvte_multi_stream_cublas_gemm calls cublas_gemm once per GEMM, each building its
  // cuBLASLt descriptors and querying its algorithm), each costing what one GEMM call costs the host.
  uint32_t launches = 1;
  bool starts_step = false;       // first op of a micro-batch step
  bool starts_optimizer = false;  // first op of the optimizer phase
  bool before_optimizer = false;  // the last op before the optimizer's first kernel
  bool interleaved = false;       // a p2p op of a program with virtual pipeline stages (chunks)
  // A p2p op followed by another in program order: Megatron's combined calls (send_forward_recv_backward,
  // send_backward_recv_forward, ...) post adjacent sends and receives as one batch_isend_irecv and synchronise
  // once, after the batch; the host's sync point is the batch's last op.
  bool batched_with_next = false;
  // The last op of a batch between a forward step and a backward step of an interleaved program: Megatron's
  // interleaved schedule runs the steady state's forward and backward back to back and exchanges both steps'
  // tensors afterwards in one call (send_forward_backward_recv_forward_backward), so no sync falls between them.
  bool forward_to_backward = false;
  bool moe_routing = false;   // a MoE layer's router top-k in forward or recompute (sync_at_moe_routing)
  bool in_layer = false;      // a kernel, GEMM or collective of a transformer layer's forward, recompute or backward
  bool starts_layer = false;  // ... the first of its (layer, micro-batch, chunk, direction) group
  // An attention softmax whose shape the fused softmax kernel does not support, forward (or recompute) or backward.
  enum UnfusedSoftmax : uint8_t { No, Forward, Backward } unfused_softmax = No;
};

// Whether Megatron's fused scale-mask-softmax kernel (causal, upper-triangular) supports attention scores of
// `attention_batches` = micro-batch x heads per rank, `sq` queries and `sk` keys (fused_softmax.py
// is_kernel_available with scaled_masked_softmax.h get_batch_per_block: 128 threads per block, a warp of
// min(32, next power of two of sk) threads per row, two rows per warp up to 128 keys).
bool fused_softmax_supported(int64_t attention_batches, int64_t sq, int64_t sk);
std::vector<HostOpClass> host_op_classes(const traces::RankProgram& program);
HostProgram host_program(const FrameworkProfile& profile, const std::vector<HostOpClass>& ops);

} // namespace gputwin
