#include "gputwin/models/memory_report.hpp"

#include "gputwin/common/checked_math.hpp"
#include "gputwin/models/expert_load.hpp"

#include <algorithm>
#include <cmath>

namespace gputwin {

StageMemory stage_memory(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  StageMemory m;
  m.stage = stage;
  m.activations = stage_activation_memory(model, plan, stage);
  m.recompute_workspace_bytes = recompute_workspace_bytes(model, plan);
  // The backward's first step holds every stored activation: on the last stage the loss and output layer run
  // first (their transients), then each layer's backward (its MLP gradients, next to the layer rebuilt by
  // recompute). The larger moment decides.
  int64_t layer = checked_sum(m.recompute_workspace_bytes, layer_backward_workspace_bytes(model, plan), "memory");
  if (model.moe.enabled()) // a MoE layer's dispatch and combine receive buffers at the busiest rank's load
    layer = checked_sum(layer, moe_dispatch_buffer_bytes(model, plan, expert_loads(model, plan).max_rank_load()),
                        "memory");
  const int64_t output = stage == plan.pp - 1 ? output_backward_workspace_bytes(model, plan) : 0;
  m.backward_workspace_bytes = std::max(layer, output) - m.recompute_workspace_bytes;
  m.state = stage_model_state_memory(model, plan, stage);
  m.total_bytes = checked_sum(checked_sum(m.activations.total_bytes, m.recompute_workspace_bytes, "memory"),
                              checked_sum(m.backward_workspace_bytes, m.state.total_bytes, "memory"), "memory");
  return m;
}

std::vector<StageMemory> all_stage_memory(const GptConfig& model, const ParallelPlan& plan)
{
  std::vector<StageMemory> stages;
  stages.reserve(static_cast<size_t>(plan.pp));
  for (int64_t stage = 0; stage < plan.pp; ++stage)
    stages.push_back(stage_memory(model, plan, stage));
  return stages;
}

StageMemory busiest_stage_memory(const GptConfig& model, const ParallelPlan& plan)
{
  // Stage 0 holds the most micro-batches in flight and the embedding, the last stage the logits; with uneven
  // stages a middle stage (more layers, almost as many in flight) can need the most: every stage is looked at.
  StageMemory busiest = stage_memory(model, plan, 0);
  for (int64_t stage = 1; stage < plan.pp; ++stage) {
    StageMemory m = stage_memory(model, plan, stage);
    if (m.total_bytes > busiest.total_bytes)
      busiest = std::move(m);
  }
  return busiest;
}

} // namespace gputwin

namespace gputwin {

namespace {

constexpr int64_t mib = 1024 * 1024;

} // namespace

int64_t MemoryReserve::bytes(int64_t allocated_bytes) const
{
  const double slack = std::ceil(fragmentation * static_cast<double>(std::max<int64_t>(allocated_bytes, 0)));
  return checked_sum(checked_sum(context_bytes, nccl_bytes, "memory reserve"), static_cast<int64_t>(slack),
                     "memory reserve");
}

MemoryReserve default_memory_reserve(const std::string& framework)
{
  MemoryReserve r;
  r.framework = framework;
  if (framework == "none") {
    r.source = "no reserve: the allocated peak against the whole GPU";
    return r;
  }
  // CUDA context with lazy module loading (CUDA >= 11.7 CUDA_MODULE_LOADING=LAZY, PyTorch's default) plus the
  // cuBLAS/cuBLASLt workspaces (TE: 32 MiB per stream on Hopper, module/base.py get_cublas_workspace_size_bytes)
  // and cuDNN's: 512 MiB.
  r.context_bytes = 512 * mib;
  // NCCL: NCCL_BUFFSIZE = 4 MiB per channel and peer for the Simple protocol (plus LL128's ~4.5 MiB and LL's
  // 256 KiB), up to 32 channels on NVLink, in each of the tp, cp, dp (x cp), pp and embedding communicators a
  // Megatron rank holds: 1 GiB.
  r.nccl_bytes = 1024 * mib;
  if (framework == "gputwin-engine") {
    r.source = "CUDA context + workspaces 0.5 GiB, NCCL buffers 1 GiB (buffers allocated once: no allocator slack)";
    return r;
  }
  // PyTorch's caching allocator keeps blocks it cannot reuse: max_memory_reserved / max_memory_allocated - 1
  // measured 2.8 % to 9.3 % (median 4.7 %) on the 15 dense Llama runs of SimuMax's B200 table (MooreThreads/SimuMax
  // docs/b200/b200_release_v1.2_summary.json, real_reserved_gib vs real_alloc_gib, Megatron-Core + TE 2.11, default
  // allocator); 3 %, the runs whose activations are a small share, as with expandable segments
  // (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, NeMo's setting) segments grow in place.
  r.fragmentation = 0.03;
  r.source = "CUDA context + workspaces 0.5 GiB, NCCL buffers 1 GiB, allocator fragmentation 3 % of the allocated "
             "peak (SimuMax B200 runs: 2.8-9.3 %)";
  return r;
}

MemoryReserve flat_memory_reserve(int64_t bytes)
{
  MemoryReserve r;
  r.framework = "--memory-reserve";
  r.context_bytes = bytes;
  r.source = "--memory-reserve";
  return r;
}

} // namespace gputwin
