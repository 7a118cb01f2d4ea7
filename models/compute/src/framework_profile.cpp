#include "gputwin/models/framework_profile.hpp"

#include "gputwin/common/input_error.hpp"

#include <algorithm>
#include <set>
#include <tuple>

namespace gputwin {

namespace {

// PyTorch eager with Megatron's Python modules, as fitted by `gputwin calibrate --iterations` to vTrain's 1440
// measured single-node A100 iterations of Megatron-DeepSpeed (tests/data/vtrain/, sim/README.md "Host issue
// model"). Megatron-LM runs the same PyTorch modules and the same p2p calls (batch_isend_irecv followed by
// torch.cuda.synchronize()), so it shares the per-op figures; it has not been measured separately.
FrameworkProfile megatron_host(const std::string& name, const std::string& source)
{
  FrameworkProfile p;
  p.name = name;
  p.source = source;
  p.kernel_issue_s = 9e-6;
  p.gemm_issue_s = 14e-6;
  p.collective_issue_s = 25e-6;
  p.p2p_issue_s = 60e-6;
  p.microbatch_issue_s = 400e-6;
  p.iteration_issue_s = 5e-3;
  p.launch_latency_s = 4e-6;
  p.unfused_softmax_extra_ops = 4; // Megatron's FusedScaleMaskSoftmax falls back to PyTorch's 5-op path
  p.sync_after_p2p = true;
  p.sync_before_optimizer = true;
  return p;
}

// Megatron-Core with Transformer Engine (NeMo, Megatron-LM since 2023): the same PyTorch eager host (TE's modules
// are Python modules that launch their fused kernels through the same dispatcher, so the per-op figures are
// Megatron's), the same per-step and per-iteration bookkeeping, the same torch.cuda.synchronize() after the
// batched p2p of the non-interleaved 1F1B schedule (megatron/core/pipeline_parallel/p2p_communication.py
// `_communicate`: `if config.batch_p2p_comm and config.batch_p2p_sync`), but none in the interleaved schedule,
// whose p2p overlaps (overlap_p2p_comm, the default with virtual stages), and the optimizer's host read of
// the found-inf flag and gradient norm (megatron/core/optimizer/optimizer.py `step`: .item() calls).
FrameworkProfile megatron_core_host(const std::string& name)
{
  FrameworkProfile p = megatron_host(name, "Megatron-Core + Transformer Engine: Megatron's PyTorch host costs (not "
                                           "measured separately); no host sync at the interleaved schedule's p2p "
                                           "(overlap_p2p_comm)");
  p.overlap_p2p_interleaved = true;
  p.sync_at_moe_routing = true;
  p.align_grad_reduce = name != "nemo"; // FrameworkProfile::align_grad_reduce: Megatron-LM's loop, not NeMo's
  return p;
}

// TorchTitan (PyTorch eager, FSDP2 fully_shard per transformer block, SDPA attention): not measured. Carried over
// from megatron_host, the same PyTorch eager dispatcher and Python module calls: the per-op issue costs, the launch
// latency, the per-micro-batch step (torchtitan/train.py forward_backward_step: data, loss) and the per-iteration
// bookkeeping (clip_grad_norm_ over every parameter, optimizer and scheduler steps, as Megatron's). Taken from
// TorchTitan's source: no host sync before the optimizer (train_step reads grad_norm and the loss with .item() only
// on logging steps, metrics_processor.should_log; bf16 training has no found-inf check), and SDPA's fused kernels
// (no softmax fallback). Assumed: no host sync after pipeline p2p (torch.distributed.pipelining waits on its works
// from the stream; FSDP plans here have pp = 1 anyway). Not costed: FSDP2's Python pre/post hooks and the copy-in /
// copy-out kernels around each unit's all-gather and reduce-scatter (per-parameter sharding,
// megatron/core/distributed/fsdp/src/docs/runtime_schedule.md "FSDP2"): each collective costs collective_issue_s.
FrameworkProfile torchtitan_host()
{
  FrameworkProfile p = megatron_host("torchtitan", "TorchTitan (PyTorch eager + FSDP2): Megatron's PyTorch host "
                                                   "costs (not measured); no host sync before the optimizer");
  p.unfused_softmax_extra_ops = 0;
  p.sync_after_p2p = false;
  p.sync_before_optimizer = false;
  return p;
}

} // namespace

const char* default_framework_for(GpuGeneration generation)
{
  switch (generation) {
  case GpuGeneration::Hopper:
  case GpuGeneration::Blackwell: return "megatron-core";
  case GpuGeneration::Ampere:
  case GpuGeneration::Cpu: return default_framework;
  }
  return default_framework;
}

std::vector<std::string> builtin_framework_names()
{
  return {"none", "megatron-lm", "megatron-core", "nemo", "megatron-deepspeed", "torchtitan", "gputwin-engine"};
}

FrameworkProfile builtin_framework_profile(const std::string& name, const std::string& flag)
{
  if (name == "none") {
    FrameworkProfile p;
    p.name = name;
    p.source = "no host model: every op starts as soon as its stream and dependencies allow";
    return p;
  }
  if (name == "megatron-deepspeed")
    return megatron_host(name, "fit to vTrain's A100 single-node iterations (Megatron-DeepSpeed)");
  if (name == "megatron-core" || name == "nemo")
    return megatron_core_host(name);
  if (name == "torchtitan")
    return torchtitan_host();
  if (name == "megatron-lm")
    return megatron_host(name, "the megatron-deepspeed host costs (same PyTorch modules and p2p calls; not "
                               "measured separately)");
  if (name == "gputwin-engine") {
    // The engine's C++ host: no Python; a traced op costs its backend call plus the tracer's event record.
    FrameworkProfile p;
    p.name = name;
    p.source = "issue gaps of the engine's H100 captures (traces/captured/NVIDIA-H100-80GB-HBM3)";
    p.kernel_issue_s = 4e-6;
    p.gemm_issue_s = 6e-6;
    p.collective_issue_s = 8e-6;
    p.p2p_issue_s = 8e-6;
    p.launch_latency_s = 3e-6;
    return p;
  }
  std::string known;
  for (const std::string& n : builtin_framework_names())
    known += (known.empty() ? "" : ", ") + n;
  throw InputError(flag + ": unknown framework '" + name + "' (expected one of " + known +
                   ", or a framework .yaml file)");
}

namespace {

// Forward and backward steps of the schedule: a recompute belongs to the backward step that runs it.
int step_kind(const traces::Op& op)
{
  switch (op.phase) {
  case traces::Phase::Forward: return 0;
  case traces::Phase::Backward:
  case traces::Phase::Recompute: return 1;
  case traces::Phase::Optimizer: return 2;
  }
  return 0;
}

HostOpClass::Kind host_kind(const traces::Op& op)
{
  switch (op.kind) {
  case traces::OpKind::Compute: return op.gemm.m > 0 ? HostOpClass::Gemm : HostOpClass::Kernel;
  case traces::OpKind::Memcpy: return HostOpClass::Kernel;
  case traces::OpKind::Collective: return HostOpClass::Collective;
  case traces::OpKind::Send:
  case traces::OpKind::Recv: return HostOpClass::P2p;
  }
  return HostOpClass::Kernel;
}

bool is_softmax(const traces::Op& op)
{
  return op.name == "attn.softmax.fwd" || op.name == "attn.softmax.bwd"; // forward and recompute, backward
}

} // namespace

bool fused_softmax_supported(int64_t attention_batches, int64_t sq, int64_t sk)
{
  if (!(16 < sk && sk <= 4096) || sq % 4 != 0 || sk % 4 != 0 || attention_batches % 4 != 0)
    return false;
  int64_t pow2 = 1;
  while (pow2 < sk)
    pow2 *= 2;
  const int64_t warp = std::min<int64_t>(32, pow2);
  const int64_t batches_per_block = (128 / warp) * (pow2 <= 128 ? 2 : 1);
  return attention_batches % batches_per_block == 0;
}

std::vector<HostOpClass> host_op_classes(const traces::RankProgram& program)
{
  const std::vector<traces::Op>& ops = program.ops;
  std::vector<HostOpClass> classes(ops.size());
  bool optimizer_seen = false;
  const traces::Op* step_op = nullptr; // the last op that belonged to a micro-batch step
  std::set<std::tuple<int32_t, int32_t, int>> begun; // the steps begun so far
  traces::GemmShape scores;            // the last attention scores GEMM
  for (size_t i = 0; i < ops.size(); ++i) {
    const traces::Op& op = ops[i];
    HostOpClass& c = classes[i];
    c.kind = host_kind(op);
    if (op.gemm.grouped && op.gemm.batch > 1)
      c.launches = static_cast<uint32_t>(op.gemm.batch);
    // The attention scores GEMM (batch = micro-batch x heads per rank, m = queries, n = keys) gives the softmax
    // after it, and the backward softmax of the same layer, its shape.
    if (op.name == "attn.scores.fwd" && op.gemm.m > 0)
      scores = op.gemm;
    if (is_softmax(op) && scores.m > 0 && !fused_softmax_supported(scores.batch, scores.m, scores.n))
      c.unfused_softmax = op.phase == traces::Phase::Backward ? HostOpClass::Backward : HostOpClass::Forward;
    // A new schedule step begins at the first op of its (micro-batch, chunk, direction) (ops outside a micro-batch,
    // such as an overlapped gradient reduction, belong to the step around them; a combined 1F1B step interleaves
    // two steps' ops, each begun once: combined_step.hpp).
    if (op.micro_batch >= 0 && op.phase != traces::Phase::Optimizer) {
      const bool changed = step_op == nullptr || step_op->micro_batch != op.micro_batch ||
                           step_op->chunk != op.chunk || step_kind(*step_op) != step_kind(op);
      c.starts_step = changed && begun.insert({op.micro_batch, op.chunk, step_kind(op)}).second;
      step_op = &op;
    }
    if (op.phase == traces::Phase::Optimizer && !optimizer_seen) {
      optimizer_seen = true;
      c.starts_optimizer = true;
    }
  }
  const bool interleaved = std::any_of(ops.begin(), ops.end(), [](const traces::Op& op) { return op.chunk > 0; });
  for (size_t i = 0; i < ops.size(); ++i) {
    classes[i].interleaved = interleaved && classes[i].kind == HostOpClass::P2p;
    classes[i].batched_with_next =
        classes[i].kind == HostOpClass::P2p && i + 1 < ops.size() && host_kind(ops[i + 1]) == HostOpClass::P2p;
  }
  // Per-layer graph groups: the ops of one layer's forward (or recompute) or backward of one micro-batch.
  const traces::Op* previous = nullptr; // the last op of a layer group so far
  for (size_t i = 0; i < ops.size(); ++i) {
    const traces::Op& op = ops[i];
    HostOpClass& c = classes[i];
    c.moe_routing = op.name == "moe.router_topk.fwd";
    c.in_layer = op.layer >= 0 && op.micro_batch >= 0 && op.phase != traces::Phase::Optimizer &&
                 c.kind != HostOpClass::P2p;
    if (!c.in_layer)
      continue;
    c.starts_layer = previous == nullptr || previous->layer != op.layer || previous->micro_batch != op.micro_batch ||
                     previous->chunk != op.chunk || step_kind(*previous) != step_kind(op) ||
                     (previous->phase == traces::Phase::Recompute) != (op.phase == traces::Phase::Recompute);
    previous = &op;
  }
  if (interleaved)
    for (size_t end = 0; end + 1 < ops.size(); ++end) {
      if (classes[end].kind != HostOpClass::P2p || classes[end].batched_with_next)
        continue;
      size_t first = end;
      while (first > 0 && classes[first - 1].batched_with_next)
        --first;
      const bool backward_next = step_kind(ops[end + 1]) == 1;
      const bool forward_before = first > 0 && ops[first - 1].phase == traces::Phase::Forward;
      classes[end].forward_to_backward = forward_before && backward_next;
    }
  for (size_t i = 1; i < ops.size(); ++i)
    if (ops[i].phase == traces::Phase::Optimizer && ops[i].kind == traces::OpKind::Compute) {
      classes[i - 1].before_optimizer = true;
      break;
    }
  return classes;
}

HostProgram host_program(const FrameworkProfile& f, const std::vector<HostOpClass>& ops)
{
  const double cost_of_kind[] = {f.kernel_issue_s, f.gemm_issue_s, f.collective_issue_s, f.p2p_issue_s};
  HostProgram host;
  host.launch_latency_s = f.launch_latency_s;
  host.issue_cost_s.resize(ops.size());
  host.syncs.resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const HostOpClass& c = ops[i];
    // Megatron's unfused softmax: the extra torch calls from Python forward, the extra autograd kernels backward.
    const double unfused_op_s = c.unfused_softmax == HostOpClass::Forward    ? f.gemm_issue_s
                                : c.unfused_softmax == HostOpClass::Backward ? f.kernel_issue_s
                                                                             : 0.0;
    // With per-layer CUDA graphs a layer's kernels cost the host one graph launch, at the group's first op.
    // A grouped GEMM issues one GEMM per local expert from the host (HostOpClass::launches).
    const double kind_cost_s = c.launches > 1 && f.expert_gemm_issue_s > 0
                                   ? f.expert_gemm_issue_s * static_cast<double>(c.launches)
                                   : cost_of_kind[c.kind] * static_cast<double>(c.launches);
    const double op_cost_s = f.cuda_graphs && c.in_layer ? (c.starts_layer ? f.graph_launch_s : 0.0)
                                                         : kind_cost_s + f.unfused_softmax_extra_ops * unfused_op_s;
    host.issue_cost_s[i] = op_cost_s + (c.starts_step ? f.microbatch_issue_s : 0.0) +
                           (c.starts_optimizer ? f.iteration_issue_s : 0.0);
    // Megatron's p2p calls end in torch.cuda.synchronize(); before the update the host reads the gradients'
    // inf/NaN flag and norm, waiting for everything issued so far (the gradient reductions included).
    // Megatron-Core overlaps the interleaved schedule's p2p instead (no sync there).
    const bool p2p_sync = f.sync_after_p2p && c.kind == HostOpClass::P2p && !c.batched_with_next &&
                          !c.forward_to_backward && !(f.overlap_p2p_interleaved && c.interleaved);
    host.syncs[i] = p2p_sync || (f.sync_before_optimizer && c.before_optimizer) ||
                    (f.sync_at_moe_routing && c.moe_routing && !f.cuda_graphs);
  }
  return host;
}

FrameworkProfile on_host_cpu(const FrameworkProfile& profile, double issue_scale)
{
  FrameworkProfile p = profile;
  for (double* cost : {&p.kernel_issue_s, &p.gemm_issue_s, &p.collective_issue_s, &p.p2p_issue_s,
                       &p.expert_gemm_issue_s, &p.microbatch_issue_s, &p.iteration_issue_s, &p.graph_launch_s})
    *cost *= issue_scale;
  return p;
}

HostProgram host_program(const FrameworkProfile& f, const traces::RankProgram& program)
{
  return host_program(f, host_op_classes(program));
}

} // namespace gputwin
