#pragma once
// The workload of one training iteration: for a GPT model and a parallel plan, the program (op list) of each
// pipeline stage's representative rank, in THE schedule's order (pipeline_schedule.hpp), with the pipeline
// send/recv between stages, the data-parallel gradient reduction and the optimizer step. Plain C++.
//
// Folding: the t ranks of a TP group and the d data-parallel replicas of a stage do identical work, so one
// program per stage (the rank with tp = 0, dp = 0) stands for all of them; the executor puts the flows of
// the folded ranks on the links too (see sim/executor).

#include "gputwin/models/expert_load.hpp"
#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/op_emitter.hpp"
#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/models/pipeline_schedule.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace gputwin {

// The ops of the model's building blocks, for one micro-batch on one rank, in the emitter's current
// layer/micro-batch/chunk. The analytic source (layer_ops.hpp) derives them from the model's shapes; a
// trace's source replays captured ops (sim/replay).
class LayerOpSource {
public:
  virtual ~LayerOpSource() = default;
  virtual void embedding_forward(OpEmitter& e, int32_t tp_group) const = 0;
  virtual void embedding_backward(OpEmitter& e, int32_t tp_group) const = 0;
  virtual void layer_forward(OpEmitter& e, const LayerGroups& groups) const = 0;
  // The layer's backward, with whatever recompute the plan does (its ops in phase Recompute).
  virtual void layer_backward(OpEmitter& e, const LayerGroups& groups) const = 0;
  virtual void output_forward(OpEmitter& e, int32_t tp_group) const = 0;
  virtual void output_backward(OpEmitter& e, int32_t tp_group) const = 0;
};

// The analytic ops of `model` under `plan` (layer_ops.hpp); MoE layers at the pace of `loads`' busiest EP rank
// (default: expert_loads(model, plan)).
std::shared_ptr<const LayerOpSource> analytic_layer_ops(const GptConfig& model, const ParallelPlan& plan,
                                                        std::shared_ptr<const ExpertLoads> loads = nullptr);

// What a communicator of the workload is: its kind, and the pipeline stage whose representative rank it
// serves (-1 for the embedding group, which spans the first and the last stage).
// Dp is Megatron's data-parallel group with context parallelism folded in (dp x cp ranks: gradients are
// reduced, and ZeRO-1 shards, over both); Cp is the context-parallel ring of a stage's TP rank.
// Ep, Etp, Edp: the expert grid of MoE layers (rank_layout.hpp): the all-to-all group, an expert's tensor-parallel
// group and the expert data-parallel group that reduces the expert gradients.
enum class GroupKind { Tp, Dp, Embedding, Cp, Ep, Etp, Edp };
std::string to_string(GroupKind kind); // "tp", "dp", "embedding", "cp", "ep", "etp", "edp": the trace's group kind
struct WorkloadGroup {
  GroupKind kind = GroupKind::Tp;
  int64_t stage = -1;
};

struct WorkloadOptions {
  bool overlap_grad_reduce = false; // launch each layer's DP gradient reduction as soon as its last backward ends
  // ZeRO-1/2 (Megatron-Core distributed optimizer): gather the updated parameters bucket by bucket (one bucket
  // per layer) on their own stream, each layer's first forward waiting only for its own bucket, instead of one
  // blocking all-gather after the step. The gathers belong to the iteration being timed: they are emitted
  // before the first forward, for the parameters the previous iteration's step updated.
  bool overlap_param_gather = false;
  // Megatron-Core --tp-comm-overlap (Transformer Engine userbuffers): the TP all-gather / reduce-scatter next to
  // a linear layer split into chunks, each overlapped with the GEMM of the neighbouring chunk.
  bool tp_comm_overlap = false;
  // Megatron's passes over the gradients besides their reduction and Adam, memory-bound on the compute stream
  // (Megatron-LM megatron/training/training.py train_step, megatron/core/distributed/param_and_grad_buffer.py
  // start_grad_sync, megatron/core/optimizer/clip_grads.py): the grad buffer zeroed before the first forward
  // (grad.zero), each buffer's norm taken for the NaN check (--check-for-nan-in-loss-and-grad, on by default) and
  // the buffer scaled by 1/(dp x cp) before its reduction (grad.check_scale; the scaling unless
  // --ddp-average-in-collective), and --clip-grad's norm and scaling of the owned main gradients in the step
  // (optimizer.clip_grad; the scaling runs only when the norm exceeds the bound: counted always). Megatron-LM 2022
  // had no NaN check (a read of the gradients, < 0.1 % of its A100 iterations). False: none of them (the CPU
  // engine, which only zeroes its gradients: TwinContract builds its generator programs so).
  bool gradient_passes = true;
  // With overlap_grad_reduce: the pipeline schedule starts each chunk's whole reduction after a backward step,
  // `pipeline rank` steps after the chunk's last micro-batch (interleaved), or after the last backward (1F1B, stages
  // other than the first), instead of the gradient hooks starting each bucket in the last micro-batch's backward.
  // Megatron-LM's training loop (FrameworkProfile::align_grad_reduce, set from the host profile by
  // with_framework_options); NeMo's does not.
  bool align_grad_reduce = false;
  // Megatron-Core --overlap-moe-expert-parallel-comm: each forward step and the independent backward step next to
  // it in the schedule's 1F1B phase run as one combined step, layer by layer, the MoE token exchanges of the one on
  // their own stream behind the other's computation (combined_step.hpp). Needs ep > 1 and the alltoall or DeepEP
  // dispatcher, pp 1 or the interleaved schedule, no full recompute and ZeRO-0/1 (validate_moe_a2a_overlap).
  bool moe_a2a_overlap = false;
  // Megatron-Core --delay-wgrad-compute (with moe_a2a_overlap only, as Megatron-Core asserts): in a combined step
  // the backward's weight gradients run after its exchanges are issued, so each exchange waits for the data
  // gradients alone and overlaps the weight-gradient GEMMs (combined_step.hpp).
  bool delay_wgrad_compute = false;
  // Megatron-Core --moe-shared-expert-overlap (TransformerConfig moe_shared_expert_overlap, which Megatron-Bridge's
  // DeepSeek and GLM-4.5 recipes turn on): a MoE layer's shared experts compute while its token all-to-alls move --
  // fc1 and the activation beside the dispatch, fc2 beside the combine, and likewise in backward (layer_ops.cpp
  // moe_forward). Needs the alltoall or DeepEP dispatcher, not with moe_a2a_overlap or a shared_experts recompute
  // (validate_shared_expert_overlap); no effect on a model without shared experts or with ep 1 (Megatron-Core's too).
  bool moe_shared_expert_overlap = false;
};

// Throws InputError naming the flag when `plan` cannot run --overlap-moe-expert-parallel-comm (as Megatron-Core's
// TransformerConfig asserts: expert parallelism, the alltoall/flex dispatcher, virtual pipeline stages when pp > 1,
// no full recompute; here also ZeRO-0/1, whose steps emit no per-unit gathers or reductions).
void validate_moe_a2a_overlap(const ParallelPlan& plan);
// Throws InputError naming --moe-shared-expert-overlap when `plan` with `options` cannot run it (Megatron-Core's
// TransformerConfig: the alltoall or flex dispatcher, no shared_experts recompute, not with the EP A2A overlap).
void validate_shared_expert_overlap(const ParallelPlan& plan, const WorkloadOptions& options);

// The pipeline shape the stage programs of a workload with `options` run: the plan's, with the extra warm-up
// forward of --overlap-moe-expert-parallel-comm on the interleaved schedule (PipelineShape::extra_warmup).
PipelineShape workload_pipeline_shape(const ParallelPlan& plan, const WorkloadOptions& options);

// Every overlap that has something to overlap under `plan` (what Megatron-Core users turn on): tp_comm_overlap with
// sequence parallelism (tp > 1), overlap_grad_reduce when gradients are reduced (dp x cp > 1) with ZeRO-0/1,
// overlap_param_gather with ZeRO-1/2 over dp x cp > 1. (ZeRO-2/3 reduce-scatter every unit as its backward ends and
// ZeRO-3 prefetches every unit's gather whatever the options say: stage_program.)
WorkloadOptions applicable_overlaps(const ParallelPlan& plan);
// True when `options` turns on at least one overlap.
bool any_overlap(const WorkloadOptions& options);
// `options` as the host's training loop runs them (align_grad_reduce from FrameworkProfile::align_grad_reduce):
// what every workload made for a framework profile is made with.
WorkloadOptions with_framework_options(WorkloadOptions options, const FrameworkProfile& framework);

struct Workload {
  GptConfig model;
  ParallelPlan plan;
  WorkloadOptions options;
  std::shared_ptr<const LayerOpSource> ops; // what each layer, the embedding and the output layer emit
  // MoE: every MoE layer's expert and EP-rank loads (expert_load.hpp), which the analytic ops and the token
  // all-to-alls' per-pair sizes (sim/collectives) both read; empty layers for a dense model.
  std::shared_ptr<const ExpertLoads> expert_loads;
  // Communicators of the representative ranks: tp_group(stage), dp_group(stage), and the embedding group
  // (first and last stage, tied word embedding); `roles[g]` says what groups[g] is.
  std::vector<traces::CommGroup> groups;
  std::vector<WorkloadGroup> roles;
  // Sequence number of each pipeline message, keyed by (sender stage, direction, micro-batch, chunk).
  std::unordered_map<int64_t, int64_t> message_sequence;

  int32_t tp_group(int64_t stage) const { return tp_groups.at(static_cast<size_t>(stage)); }
  int32_t cp_group(int64_t stage) const { return cp_groups.empty() ? -1 : cp_groups.at(static_cast<size_t>(stage)); }
  int32_t dp_group(int64_t stage) const { return dp_groups.at(static_cast<size_t>(stage)); }
  // Expert groups of a stage's representative rank; -1 when the group has one rank (or the model no experts).
  int32_t ep_group(int64_t stage) const { return ep_groups.empty() ? -1 : ep_groups.at(static_cast<size_t>(stage)); }
  int32_t etp_group(int64_t stage) const { return etp_groups.empty() ? -1 : etp_groups.at(static_cast<size_t>(stage)); }
  int32_t edp_group(int64_t stage) const { return edp_groups.empty() ? -1 : edp_groups.at(static_cast<size_t>(stage)); }
  int32_t embedding_group() const { return embedding_group_index; }
  // What group `index` is. REQUIRES: 0 <= index < groups.size().
  const WorkloadGroup& role(int32_t index) const { return roles.at(static_cast<size_t>(index)); }

  std::vector<int32_t> tp_groups, dp_groups, cp_groups; // by stage (cp_groups empty when cp = 1)
  std::vector<int32_t> ep_groups, etp_groups, edp_groups; // by stage (empty when that size is 1 or no experts)
  int32_t embedding_group_index = -1;
  // The rank whose program stands for `stage`: tp 0, cp 0, dp 0.
  int32_t stage_rank(int64_t stage) const;
};

// REQUIRES: validate_plan(model, plan) passed. `ops` defaults to analytic_layer_ops(model, plan, loads); `loads` to
// expert_loads(model, plan) (a test may give its own, e.g. every token on one expert).
Workload make_workload(const GptConfig& model, const ParallelPlan& plan, const WorkloadOptions& options = {},
                       std::shared_ptr<const LayerOpSource> ops = nullptr,
                       std::shared_ptr<const ExpertLoads> loads = nullptr);

// `workload` with `micro_batches` micro-batches per iteration (the global batch changed to match), the same layer
// ops and expert loads. REQUIRES: validate_plan accepts the plan with that count.
Workload with_micro_batches(const Workload& workload, int64_t micro_batches);

// The program of `stage`'s representative rank.
traces::RankProgram stage_program(const Workload& workload, int64_t stage);

// Every stage's program, the communicators and the model/plan as metadata: the whole op graph.
traces::OpGraph workload_graph(const Workload& workload);

} // namespace gputwin
