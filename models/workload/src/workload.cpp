#include "gputwin/models/workload.hpp"

#include "gputwin/models/layer_ops.hpp"
#include "gputwin/models/op_vocabulary.hpp"
#include "gputwin/models/parameter_count.hpp"
#include "gputwin/models/pipeline_schedule.hpp"
#include "gputwin/models/plan_metadata.hpp"
#include "gputwin/models/rank_layout.hpp"

#include <map>
#include <set>

namespace gputwin {

namespace {

enum class Direction { Activation = 0, Gradient = 1 };

int64_t message_key(int64_t sender_stage, Direction dir, int64_t micro_batch, int64_t chunk)
{
  return ((sender_stage * 2 + static_cast<int64_t>(dir)) * (int64_t{1} << 24) + micro_batch) * 1024 + chunk;
}

// Virtual pipeline stage of (stage, chunk): chunk c of every stage, in stage order, then chunk c + 1.
int64_t virtual_stage(const ParallelPlan& plan, int64_t stage, int64_t chunk)
{
  return chunk * plan.pp + stage;
}

struct Neighbour {
  int64_t stage, chunk;
};
Neighbour next_of(const ParallelPlan& p, int64_t stage, int64_t chunk)
{
  return stage + 1 < p.pp ? Neighbour{stage + 1, chunk} : Neighbour{0, chunk + 1};
}
Neighbour previous_of(const ParallelPlan& p, int64_t stage, int64_t chunk)
{
  return stage > 0 ? Neighbour{stage - 1, chunk} : Neighbour{p.pp - 1, chunk - 1};
}

class AnalyticLayerOps : public LayerOpSource {
public:
  // `tp_comm_overlap`: WorkloadOptions::tp_comm_overlap (layer_ops.hpp, TpCommOverlap: the layers' linear GEMMs
  // chunked and overlapped with their TP communication; with t = 1 or without SP nothing changes).
  AnalyticLayerOps(const GptConfig& model, const ParallelPlan& plan, bool tp_comm_overlap = false)
      : shape_(layer_shape(model, plan)), recompute_(plan.recompute), overlap_{tp_comm_overlap}
  {
  }
  void embedding_forward(OpEmitter& e, int32_t g) const override { emit_embedding_forward(e, shape_, g); }
  void embedding_backward(OpEmitter& e, int32_t g) const override { emit_embedding_backward(e, shape_, g); }
  void layer_forward(OpEmitter& e, const LayerGroups& g) const override { emit_layer_forward(e, shape_, g, overlap_); }
  void layer_backward(OpEmitter& e, const LayerGroups& g) const override
  {
    if (recompute_ == Recompute::Full) {
      // Full recompute: the layer's forward again, collectives (and their overlap) included, before its backward.
      const traces::Phase phase = e.phase();
      e.set_phase(traces::Phase::Recompute);
      emit_layer_forward(e, shape_, g, overlap_);
      e.set_phase(phase);
    }
    emit_layer_backward(e, shape_, g, recompute_, overlap_);
  }
  void output_forward(OpEmitter& e, int32_t g) const override { emit_output_forward(e, shape_, g); }
  void output_backward(OpEmitter& e, int32_t g) const override { emit_output_backward(e, shape_, g); }

private:
  LayerShape shape_;
  Recompute recompute_;
  TpCommOverlap overlap_;
};

} // namespace

std::shared_ptr<const LayerOpSource> analytic_layer_ops(const GptConfig& model, const ParallelPlan& plan)
{
  return std::make_shared<AnalyticLayerOps>(model, plan);
}

std::string to_string(GroupKind kind)
{
  switch (kind) {
  case GroupKind::Tp: return "tp";
  case GroupKind::Dp: return "dp";
  case GroupKind::Embedding: return "embedding";
  case GroupKind::Cp: return "cp";
  }
  return "unknown";
}

WorkloadOptions applicable_overlaps(const ParallelPlan& plan)
{
  const bool gradients_reduced = plan.dp * plan.cp > 1;
  WorkloadOptions options;
  options.tp_comm_overlap = plan.tp > 1 && plan.sequence_parallel();
  options.overlap_grad_reduce = gradients_reduced;
  options.overlap_param_gather = gradients_reduced && plan.zero_stage == 1;
  return options;
}

bool any_overlap(const WorkloadOptions& options)
{
  return options.tp_comm_overlap || options.overlap_grad_reduce || options.overlap_param_gather;
}

int32_t Workload::stage_rank(int64_t stage) const
{
  return static_cast<int32_t>(global_rank(plan, {stage, 0, 0}));
}

Workload make_workload(const GptConfig& model, const ParallelPlan& plan, const WorkloadOptions& options,
                       std::shared_ptr<const LayerOpSource> ops)
{
  Workload w;
  w.model = model;
  w.plan = plan;
  w.options = options;
  w.ops = ops ? std::move(ops) : std::make_shared<AnalyticLayerOps>(model, plan, options.tp_comm_overlap);
  auto add_group = [&w](GroupKind kind, int64_t stage, std::vector<int32_t> ranks) {
    w.groups.push_back({to_string(kind), std::move(ranks)});
    w.roles.push_back({kind, stage});
    return static_cast<int32_t>(w.groups.size() - 1);
  };
  for (int64_t stage = 0; stage < plan.pp; ++stage) {
    w.tp_groups.push_back(add_group(GroupKind::Tp, stage, tp_group_ranks(plan, stage, 0)));
    w.dp_groups.push_back(add_group(GroupKind::Dp, stage, dp_group_ranks(plan, stage, 0)));
    if (plan.cp > 1)
      w.cp_groups.push_back(add_group(GroupKind::Cp, stage, cp_group_ranks(plan, stage, 0, 0)));
  }
  w.embedding_group_index =
      add_group(GroupKind::Embedding, -1,
                plan.pp > 1 ? std::vector<int32_t>{w.stage_rank(0), w.stage_rank(plan.pp - 1)}
                            : std::vector<int32_t>{w.stage_rank(0)});

  // Number each stage's messages per destination in the order the stage sends them.
  const PipelineShape shape = pipeline_shape(plan);
  const int64_t last_virtual = plan.pp * shape.chunks - 1;
  for (int64_t stage = 0; stage < plan.pp; ++stage) {
    std::unordered_map<int64_t, int64_t> next_sequence; // per destination stage
    for (const PipelineStep& step : stage_schedule(shape, stage)) {
      const int64_t v = virtual_stage(plan, stage, step.chunk);
      if (step.phase == PipelinePhase::Forward && v < last_virtual) {
        const int64_t dst = next_of(plan, stage, step.chunk).stage;
        w.message_sequence[message_key(stage, Direction::Activation, step.micro_batch, step.chunk)] =
            next_sequence[dst]++;
      } else if (step.phase == PipelinePhase::Backward && v > 0) {
        const int64_t dst = previous_of(plan, stage, step.chunk).stage;
        w.message_sequence[message_key(stage, Direction::Gradient, step.micro_batch, step.chunk)] =
            next_sequence[dst]++;
      }
    }
  }
  return w;
}

traces::RankProgram stage_program(const Workload& w, int64_t stage)
{
  const ParallelPlan& plan = w.plan;
  const PipelineShape shape = pipeline_shape(plan);
  const LayerShape s = layer_shape(w.model, plan);
  const int64_t last_virtual = plan.pp * shape.chunks - 1;
  const int32_t tp = w.tp_group(stage);
  const LayerGroups layer_groups{tp, w.cp_group(stage)};
  // Per chunk of this stage: its layers, the global index of its first layer (the virtual stages in order,
  // parallel_plan's chunk_first_layer) and the index of its first layer among the stage's own.
  std::vector<int64_t> chunk_size, chunk_first, chunk_offset;
  for (int64_t c = 0, offset = 0; c < shape.chunks; ++c) {
    chunk_size.push_back(chunk_layers(w.model, plan, stage, c));
    chunk_first.push_back(chunk_first_layer(w.model, plan, stage, c));
    chunk_offset.push_back(offset);
    offset += chunk_size.back();
  }
  auto at = [](const std::vector<int64_t>& per_chunk, int64_t chunk) { return per_chunk[static_cast<size_t>(chunk)]; };
  const double message_bytes = pipeline_message_bytes(s);
  const double grad_bytes_per_param = gradient_bytes_per_parameter;

  traces::RankProgram program;
  program.rank = w.stage_rank(stage);
  OpEmitter e(program.ops);
  // A received message, reassembled by the TP all-gather of its chunks under scatter/gather (on the compute stream,
  // where Megatron's _communicate issues gather_split_1d_tensor right after the receive): the op its first use
  // waits for.
  auto receive = [&](OpName name, int32_t peer, int64_t sequence) {
    const int64_t id = e.recv(name, peer, sequence, message_bytes);
    if (!pipeline_scatter_gather(s))
      return id;
    return e.collective(OpName::PpAllGather, CollectiveOp::AllGather, tp, pipeline_gather_bytes(s), compute_stream,
                        {id});
  };
  std::vector<int64_t> dp_ops;
  const bool zero_gather = plan.zero_stage && plan.dp * plan.cp > 1;
  // Elements of the flat buffer the gradients are reduced in and the optimizer steps over, padded to a multiple
  // of the replicas that reduce (and, with ZeRO-1, shard) it: dp x cp.
  const int64_t params =
      data_parallel_buffer_elements(stage_parameters_per_gpu(w.model, plan, stage), plan.dp * plan.cp);

  // --overlap-param-gather: the all-gathers of the parameters the last step updated, one bucket per layer
  // (the stage's non-layer parameters with its first layer's), on their own stream; each layer's first forward
  // waits for its bucket only.
  // Buckets are numbered in the stage's layer order: chunk c's layer l is bucket chunk_offset[c] + l.
  std::map<int64_t, int64_t> param_gather; // bucket -> gather op
  if (zero_gather && w.options.overlap_param_gather) {
    const int64_t layers = stage_layers(w.model, plan, stage);
    const int64_t per_layer = layer_parameters_per_gpu(w.model, plan.tp);
    for (int64_t chunk = 0; chunk < shape.chunks; ++chunk) {
      for (int64_t l = 0; l < at(chunk_size, chunk); ++l) {
        const int64_t k = at(chunk_offset, chunk) + l;
        const int64_t bucket_params = k == 0 ? params - per_layer * (layers - 1) : per_layer;
        e.set_context(traces::Phase::Forward, static_cast<int32_t>(at(chunk_first, chunk) + l), -1,
                      static_cast<int32_t>(chunk));
        param_gather[k] = e.collective(OpName::DpAllGather, CollectiveOp::AllGather, w.dp_group(stage),
                                       2.0 * static_cast<double>(bucket_params), param_gather_stream);
      }
    }
  }
  std::set<int64_t> gathered_layers; // buckets whose layer's first forward already waited for them

  for (const PipelineStep& step : stage_schedule(shape, stage)) {
    const int64_t v = virtual_stage(plan, stage, step.chunk);
    const int32_t mb = static_cast<int32_t>(step.micro_batch), chunk = static_cast<int32_t>(step.chunk);
    const int64_t first_layer = at(chunk_first, step.chunk), layers_per_chunk = at(chunk_size, step.chunk);
    if (step.phase == PipelinePhase::Forward) {
      e.set_context(traces::Phase::Forward, -1, mb, chunk);
      std::vector<int64_t> input;
      if (v > 0) {
        const Neighbour from = previous_of(plan, stage, step.chunk);
        const int64_t seq = w.message_sequence.at(message_key(from.stage, Direction::Activation, mb, from.chunk));
        input.push_back(receive(OpName::PpRecvActivation, w.stage_rank(from.stage), seq));
      }
      if (v == 0) {
        w.ops->embedding_forward(e, tp);
      }
      for (int64_t l = 0; l < layers_per_chunk; ++l) {
        e.set_context(traces::Phase::Forward, static_cast<int32_t>(first_layer + l), mb, chunk);
        const size_t before = program.ops.size();
        w.ops->layer_forward(e, layer_groups);
        const int64_t bucket = at(chunk_offset, step.chunk) + l;
        if (!param_gather.empty() && before < program.ops.size() && gathered_layers.insert(bucket).second)
          program.ops[before].deps.push_back(param_gather.at(bucket));
        if (!input.empty() && before < program.ops.size()) {
          // The first kernel of the chunk needs the received activation.
          for (const int64_t id : input) // (a loop: GCC 13 warns falsely on insert of a 1-element range)
            program.ops[before].deps.push_back(id);
          input.clear();
        }
      }
      e.set_context(traces::Phase::Forward, -1, mb, chunk);
      if (v == last_virtual) {
        w.ops->output_forward(e, tp);
      } else {
        const Neighbour to = next_of(plan, stage, step.chunk);
        const int64_t seq = w.message_sequence.at(message_key(stage, Direction::Activation, mb, step.chunk));
        e.send(OpName::PpSendActivation, w.stage_rank(to.stage), seq, message_bytes, {e.last_compute_id()});
      }
      continue;
    }

    // Backward.
    e.set_context(traces::Phase::Backward, -1, mb, chunk);
    std::vector<int64_t> grad_input;
    if (v == last_virtual) {
      w.ops->output_backward(e, tp);
    } else {
      const Neighbour from = next_of(plan, stage, step.chunk);
      const int64_t seq = w.message_sequence.at(message_key(from.stage, Direction::Gradient, mb, from.chunk));
      grad_input.push_back(receive(OpName::PpRecvGradient, w.stage_rank(from.stage), seq));
    }
    const bool last_backward_of_chunk = step.micro_batch == shape.micro_batches - 1;
    for (int64_t l = layers_per_chunk - 1; l >= 0; --l) {
      const int32_t layer = static_cast<int32_t>(first_layer + l);
      const size_t before = program.ops.size();
      e.set_context(traces::Phase::Backward, layer, mb, chunk);
      w.ops->layer_backward(e, layer_groups);
      if (!grad_input.empty() && before < program.ops.size()) {
        // The first kernel of the chunk's backward needs the received gradient.
        for (const int64_t id : grad_input)
          program.ops[before].deps.push_back(id);
        grad_input.clear();
      }
      if (w.options.overlap_grad_reduce && last_backward_of_chunk && plan.dp * plan.cp > 1) {
        const double bytes = grad_bytes_per_param * static_cast<double>(layer_parameters_per_gpu(w.model, plan.tp));
        e.set_context(traces::Phase::Backward, layer, -1, chunk);
        dp_ops.push_back(e.collective(plan.zero_stage ? OpName::DpReduceScatter : OpName::DpAllReduce,
                                      plan.zero_stage ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce,
                                      w.dp_group(stage), bytes, dp_stream, {e.last_compute_id()}));
      }
    }
    e.set_context(traces::Phase::Backward, -1, mb, chunk);
    if (v == 0) {
      w.ops->embedding_backward(e, tp);
    } else {
      const Neighbour to = previous_of(plan, stage, step.chunk);
      const int64_t seq = w.message_sequence.at(message_key(stage, Direction::Gradient, mb, step.chunk));
      e.send(OpName::PpSendGradient, w.stage_rank(to.stage), seq, message_bytes, {e.last_compute_id()});
    }
  }

  // End of the iteration: tied-embedding gradient, data-parallel reduction, optimizer.
  e.set_context(traces::Phase::Optimizer, -1, -1, 0);
  std::vector<int64_t> before_step{e.last_compute_id()};
  if (s.sp) {
    // The gradients of the parameters SP leaves partial on each TP rank (layernorms, row-parallel biases,
    // position embedding), summed over the TP group in one coalesced all-reduce (Megatron-LM
    // finalize_model_grads: _allreduce_layernorm_grads).
    const double bytes = grad_bytes_per_param * static_cast<double>(sp_partial_parameters(w.model, plan, stage));
    before_step.push_back(
        e.collective(OpName::SpGradAllReduce, CollectiveOp::AllReduce, tp, bytes, compute_stream));
  }
  if (plan.pp > 1 && w.model.tie_embeddings && (stage == 0 || stage == plan.pp - 1)) {
    const double bytes = grad_bytes_per_param * static_cast<double>(s.vocab_per_rank * s.h);
    before_step.push_back(
        e.collective(OpName::EmbeddingGradAllReduce, CollectiveOp::AllReduce, w.embedding_group(), bytes, compute_stream));
  }
  if (plan.fp8 && plan.tp * plan.dp * plan.cp > 1) {
    // Delayed scaling: the amax histories of every FP8 tensor (3 per linear: input, weight, output gradient;
    // 1024-entry fp32 histories, Transformer Engine's default) reduced over the data- and tensor-parallel ranks
    // once per iteration; the data-parallel group stands for that reduction here.
    const double bytes = 4.0 * 1024 * 3 * 4 * static_cast<double>(stage_layers(w.model, plan, stage));
    before_step.push_back(e.collective(OpName::Fp8AmaxAllReduce, CollectiveOp::AllReduce,
                                       plan.dp * plan.cp > 1 ? w.dp_group(stage) : tp, bytes, compute_stream));
  }
  if (plan.dp * plan.cp > 1) {
    if (!w.options.overlap_grad_reduce)
      dp_ops.push_back(e.collective(plan.zero_stage ? OpName::DpReduceScatter : OpName::DpAllReduce,
                                    plan.zero_stage ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce,
                                    w.dp_group(stage), grad_bytes_per_param * static_cast<double>(params), dp_stream,
                                    {e.last_compute_id()}));
    before_step.insert(before_step.end(), dp_ops.begin(), dp_ops.end());
  }
  const double owned = static_cast<double>(params) / static_cast<double>(plan.zero_stage ? plan.dp * plan.cp : 1);
  e.compute(OpName::OptimizerAdam, optimizer_cost(owned), before_step);
  if (zero_gather && !w.options.overlap_param_gather)
    e.collective(OpName::DpAllGather, CollectiveOp::AllGather, w.dp_group(stage), 2.0 * static_cast<double>(params),
                 compute_stream);
  if (plan.fp8) {
    const double layer_weights = static_cast<double>(stage_layers(w.model, plan, stage)) *
                                 static_cast<double>(layer_parameters_per_gpu(w.model, plan.tp));
    e.compute(OpName::Fp8WeightCast, fp8_weight_cast_cost(layer_weights));
  }
  return program;
}

traces::OpGraph workload_graph(const Workload& w)
{
  traces::OpGraph graph;
  graph.groups = w.groups;
  for (int64_t stage = 0; stage < w.plan.pp; ++stage)
    graph.ranks.push_back(stage_program(w, stage));
  graph.metadata = {{"generator", "gputwin workload"}, {"folded", "true"}};
  write_plan_metadata(w.model, w.plan, graph.metadata);
  return graph;
}

} // namespace gputwin
