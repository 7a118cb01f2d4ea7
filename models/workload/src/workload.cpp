#include "gputwin/models/workload.hpp"

#include "gputwin/models/combined_step.hpp"
#include "gputwin/models/expert_load.hpp"
#include "gputwin/models/layer_ops.hpp"
#include "gputwin/models/op_vocabulary.hpp"
#include "gputwin/models/parameter_count.hpp"
#include "gputwin/models/pipeline_schedule.hpp"
#include "gputwin/models/plan_metadata.hpp"
#include "gputwin/models/rank_layout.hpp"
#include "gputwin/common/input_error.hpp"

#include <algorithm>
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

// ZeRO-3's unit all-gathers within one forward or backward step of a program (pp = 1): the step's units in
// execution order -- the embedding, the layers, the output layer; backward reversed -- each all-gathered on
// param_gather_stream one unit ahead: the gather of unit i + 1 is issued right before unit i's first op and waits for
// the end of unit i - 1, so at most two units are gathered at once (Megatron-FSDP's double buffer: "AG_{i+1} needs
// to be prefetched before DO_i", megatron/core/distributed/fsdp/src/docs/runtime_schedule.md; FSDP2 prefetches the
// next unit's all-gather likewise), and unit i's first op waits for its own gather. A unit of 0 bytes is not
// gathered (the output layer in backward: gathered since its forward).
class UnitGathers {
public:
  UnitGathers(OpEmitter& e, std::vector<traces::Op>& ops, int32_t dp_group) : e_(e), ops_(ops), dp_group_(dp_group) {}

  // Appends a unit of the step (`layer`: its layer, -1 for the embedding and the output layer).
  void add(int32_t layer, double bytes) { units_.push_back({layer, bytes, -1}); }

  // Issues the gathers through unit i + 1 not issued yet (in `phase` and `chunk`, outside any micro-batch, as the
  // other data-parallel collectives) and returns the index in the program where unit i's ops begin. Returns the
  // program's size and issues nothing without units.
  size_t begin(size_t i, traces::Phase phase, int32_t chunk)
  {
    for (; next_ < units_.size() && next_ <= i + 1; ++next_) {
      Unit& u = units_[next_];
      if (u.bytes <= 0)
        continue;
      std::vector<int64_t> deps;
      if (e_.last_compute_id() >= 0)
        deps.push_back(e_.last_compute_id());
      e_.set_context(phase, u.layer, -1, chunk);
      u.gather = e_.collective(OpName::DpAllGather, CollectiveOp::AllGather, dp_group_, u.bytes, param_gather_stream,
                               std::move(deps));
    }
    return ops_.size();
  }

  // Unit i's first op (at index `first`, if the unit emitted any) waits for the unit's gather.
  void end(size_t i, size_t first)
  {
    if (i < units_.size() && units_[i].gather >= 0 && first < ops_.size())
      ops_[first].deps.push_back(units_[i].gather);
  }

private:
  struct Unit {
    int32_t layer;
    double bytes;
    int64_t gather;
  };
  OpEmitter& e_;
  std::vector<traces::Op>& ops_;
  int32_t dp_group_;
  std::vector<Unit> units_;
  size_t next_ = 0;
};

// ZeRO-2/3 in a stage program (pp = 1): every unit's gradients reduce-scattered on the dp stream as soon as its
// backward ends, in every micro-batch -- the rank keeps only its shard, so they cannot wait for the last one
// (Megatron-FSDP grad_reduce_every_bprop for optim_grads and optim_grads_params; DeepSpeed ZeRO-2/3 and FSDP2
// alike); ZeRO-3 also gathers every unit before its forward and again before its backward (UnitGathers; FSDP2's
// default reshard_after_forward=True, Megatron-FSDP's post-forward reshard). Without data parallelism, nothing.
class ShardedUnitOps {
public:
  ShardedUnitOps(const Workload& w, int64_t stage, OpEmitter& e, std::vector<traces::Op>& ops,
                 std::vector<int64_t>& dp_ops)
      : e_(e), ops_(ops), dp_ops_(dp_ops), dp_group_(w.dp_group(stage)),
        units_(sharded_units(w.model, w.plan, stage)),
        gradients_(w.plan.zero_stage >= 2 && w.plan.dp * w.plan.cp > 1),
        weights_(w.plan.zero_stage == 3 && w.plan.dp * w.plan.cp > 1),
        reduce_bytes_(w.plan.grad_reduce_bf16 ? 2.0 : gradient_bytes_per_parameter),
        layer_gather_bytes_(static_cast<double>(units_.layer) *
                            (w.plan.fp8_param_gather ? quantized_element_bytes(w.plan.precision) : 2.0))
  {
  }

  const ShardedUnits& units() const { return units_; }

  // The gathers of one step over `layers` layers from `first_layer`, with the embedding and/or the output layer
  // where the step has them, in execution order (backward: reversed, the output layer still gathered). Empty
  // unless ZeRO-3. Gathered bytes: BF16, the layers in the plan's precision (scales included) with
  // --fp8-param-gather.
  UnitGathers step(bool backward, bool embedding, bool output, int64_t first_layer, int64_t layers) const
  {
    UnitGathers gathers(e_, ops_, dp_group_);
    if (!weights_)
      return gathers;
    const double embedding_bytes = 2.0 * static_cast<double>(units_.embedding);
    if (!backward && embedding)
      gathers.add(-1, embedding_bytes);
    if (backward && output)
      gathers.add(-1, 0.0);
    for (int64_t k = 0; k < layers; ++k)
      gathers.add(static_cast<int32_t>(backward ? first_layer + layers - 1 - k : first_layer + k), layer_gather_bytes_);
    if (!backward && output)
      gathers.add(-1, 2.0 * static_cast<double>(units_.output_gathered));
    if (backward && embedding)
      gathers.add(-1, embedding_bytes);
    return gathers;
  }

  // ZeRO-2/3: the reduce-scatter of a unit's gradients (`parameters` of them) after its backward's last op.
  void reduce_scatter(int32_t layer, int64_t parameters, int32_t chunk)
  {
    if (!gradients_)
      return;
    e_.set_context(traces::Phase::Backward, layer, -1, chunk);
    dp_ops_.push_back(e_.collective(OpName::DpReduceScatter, CollectiveOp::ReduceScatter, dp_group_,
                                    reduce_bytes_ * static_cast<double>(parameters), dp_stream,
                                    {e_.last_compute_id()}));
  }

  bool shards_gradients() const { return gradients_; }

private:
  OpEmitter& e_;
  std::vector<traces::Op>& ops_;
  std::vector<int64_t>& dp_ops_;
  int32_t dp_group_;
  ShardedUnits units_;
  bool gradients_, weights_;
  double reduce_bytes_, layer_gather_bytes_;
};

class AnalyticLayerOps : public LayerOpSource {
public:
  // `tp_comm_overlap`: WorkloadOptions::tp_comm_overlap (layer_ops.hpp, TpCommOverlap: the layers' linear GEMMs
  // chunked and overlapped with their TP communication; with t = 1 or without SP nothing changes).
  // `shared_expert_overlap`: WorkloadOptions::moe_shared_expert_overlap.
  AnalyticLayerOps(const GptConfig& model, const ParallelPlan& plan, bool tp_comm_overlap, bool shared_expert_overlap,
                   std::shared_ptr<const ExpertLoads> loads)
      : model_(model), shape_(layer_shape(model, plan)), recompute_(layer_recompute(plan)), overlap_{tp_comm_overlap},
        loads_(std::move(loads))
  {
    shape_.shared_expert_overlap = shared_expert_overlap;
  }
  void embedding_forward(OpEmitter& e, int32_t g) const override { emit_embedding_forward(e, shape_, g); }
  void embedding_backward(OpEmitter& e, int32_t g) const override { emit_embedding_backward(e, shape_, g); }
  void layer_forward(OpEmitter& e, const LayerGroups& g) const override
  {
    emit_layer_forward(e, shape_of(e.layer()), g, overlap_);
  }
  void layer_backward(OpEmitter& e, const LayerGroups& g) const override
  {
    emit_layer_backward(e, shape_of(e.layer()), g, recompute_, overlap_);
  }
  void output_forward(OpEmitter& e, int32_t g) const override { emit_output_forward(e, shape_, g); }
  void output_backward(OpEmitter& e, int32_t g) const override { emit_output_backward(e, shape_, g); }

private:
  // Layer `layer`'s shape: a MoE layer's at the pace of its busiest EP rank (expert_load.hpp).
  LayerShape shape_of(int32_t layer) const
  {
    LayerShape s = shape_;
    if (layer >= 0 && model_.is_moe_layer(layer)) {
      s.moe_layer = true;
      if (const LayerExpertLoad* load = loads_->find(layer))
        s.expert_load = load->max_rank_load();
    }
    return s;
  }

  GptConfig model_;
  LayerShape shape_;
  LayerRecompute recompute_;
  TpCommOverlap overlap_;
  std::shared_ptr<const ExpertLoads> loads_;
};

// One stage's program (stage_program): the --overlap-param-gather buckets, then the stage's forward and backward
// (micro-batch, chunk) steps in schedule order -- each with its pipeline messages, ZeRO-3 unit gathers and
// ZeRO-2/3 or overlapped data-parallel gradient reductions -- then the end of the iteration: the gradient
// reductions the optimizer waits for and the optimizer step. Emits each op once, in that order.
class StageProgramBuilder {
public:
  StageProgramBuilder(const Workload& w, int64_t stage)
      : w_(w), plan_(w.plan), stage_(stage), shape_(workload_pipeline_shape(w.plan, w.options)),
        s_(layer_shape(w.model, plan_)),
        last_virtual_(plan_.pp * shape_.chunks - 1), tp_(w.tp_group(stage)),
        layer_groups_{tp_, w.cp_group(stage), w.ep_group(stage), w.etp_group(stage)},
        message_bytes_(pipeline_message_bytes(s_)), e_(program_.ops), reduced_(plan_.dp * plan_.cp > 1),
        zero_gather_((plan_.zero_stage == 1 || plan_.zero_stage == 2) && reduced_),
        sharding_(w, stage, e_, program_.ops, dp_ops_),
        params_(data_parallel_buffer_elements(stage_parameter_split(w.model, plan_, stage).dense, plan_.dp * plan_.cp)),
        expert_params_(data_parallel_buffer_elements(stage_parameter_split(w.model, plan_, stage).expert,
                                                     plan_.expert_dp())),
        edp_(w.edp_group(stage))
  {
    for (int64_t c = 0, offset = 0; c < shape_.chunks; ++c) {
      const int64_t size = chunk_layers(w.model, plan_, stage, c);
      chunks_.push_back({size, chunk_first_layer(w.model, plan_, stage, c), offset});
      offset += size;
    }
    program_.rank = w.stage_rank(stage);
    if ((w.options.overlap_grad_reduce && reduced_ && !sharding_.shards_gradients()) ||
        (zero_gather_ && w.options.overlap_param_gather))
      buckets_ = parameter_buckets();
  }
  StageProgramBuilder(const StageProgramBuilder&) = delete; // e_ and sharding_ refer to program_ and dp_ops_
  StageProgramBuilder& operator=(const StageProgramBuilder&) = delete;

  // The whole program; call once.
  traces::RankProgram build()
  {
    if (w_.options.gradient_passes) { // zero_grad_buffer(), before the forward-backward
      e_.set_context(traces::Phase::Optimizer, -1, -1, 0);
      e_.compute(OpName::GradZero, grad_zero_cost(local_gradients(), gradient_buffer_bytes()));
    }
    emit_param_gather_buckets();
    const std::vector<PipelineStep> steps = stage_schedule(shape_, stage_);
    // Ops emitted by the first forward and the first backward step: once both are known, the program's ops are
    // reserved for the steps to come at those sizes (no reallocation of a growing vector of large ops).
    size_t forward_ops = 0, backward_ops = 0;
    for (size_t n = 0; n < steps.size(); ++n) {
      const bool forward = steps[n].phase == PipelinePhase::Forward;
      const size_t before = program_.ops.size();
      if (w_.options.moe_a2a_overlap && n + 1 < steps.size() && combinable(steps[n], steps[n + 1])) {
        const EmittedStep first = emit_step(steps[n]), second = emit_step(steps[n + 1]);
        renumbered(combine_steps(program_.ops, first, second, w_.options.delay_wgrad_compute), first.begin);
        ++n;
        continue;
      }
      emit_step(steps[n]);
      size_t& sized = forward ? forward_ops : backward_ops;
      if (sized != 0)
        continue;
      sized = program_.ops.size() - before;
      if (forward_ops == 0 || backward_ops == 0)
        continue;
      size_t to_come = program_.ops.size() + 64; // and the optimizer step's
      for (size_t later = n + 1; later < steps.size(); ++later)
        to_come += steps[later].phase == PipelinePhase::Forward ? forward_ops : backward_ops;
      program_.ops.reserve(to_come);
    }
    emit_remaining_aligned_reductions();
    emit_optimizer_step(emit_gradient_reductions());
    return std::move(program_);
  }

private:
  // One step of the schedule, emitted; its ops' range and chunk.
  EmittedStep emit_step(const PipelineStep& step)
  {
    EmittedStep emitted;
    emitted.begin = program_.ops.size();
    emitted.forward = step.phase == PipelinePhase::Forward;
    if (emitted.forward)
      emit_forward_step(step);
    else
      emit_backward_step(step);
    emitted.end = program_.ops.size();
    emitted.first_layer = chunk_of(step).first;
    emitted.layers = chunk_of(step).size;
    return emitted;
  }

  // --overlap-moe-expert-parallel-comm: a forward and a backward step next to each other in the schedule, of
  // different micro-batches or chunks (independent), run as one combined step (combined_step.hpp): in the 1F1B
  // phase of the interleaved schedule each forward with the backward after it, without pipelining each backward
  // with the next micro-batch's forward (Megatron-Core combined_1f1b_schedule_for_no_pipelining).
  static bool combinable(const PipelineStep& a, const PipelineStep& b)
  {
    return a.phase != b.phase && (a.micro_batch != b.micro_batch || a.chunk != b.chunk);
  }

  // After combine_steps renumbered the ops from `begin` on (`new_id` indexed by old id - begin): the ids the
  // builder keeps for later ops follow, and the emitter's last compute op is the one now last on the compute stream.
  void renumbered(const std::vector<int64_t>& new_id, size_t begin)
  {
    const auto start = static_cast<int64_t>(begin);
    for (int64_t& id : dp_ops_)
      if (id >= start && id < start + static_cast<int64_t>(new_id.size()))
        id = new_id[static_cast<size_t>(id - start)];
    for (size_t i = program_.ops.size(); i > begin; --i)
      if (program_.ops[i - 1].stream == compute_stream) {
        e_.set_last_compute_id(program_.ops[i - 1].id);
        break;
      }
  }

  // Per chunk of this stage: its layers, the global index of its first layer (the virtual stages in order,
  // parallel_plan's chunk_first_layer) and the index of its first layer among the stage's own.
  struct ChunkLayers {
    int64_t size, first, offset;
  };
  const ChunkLayers& chunk_of(const PipelineStep& step) const { return chunks_[static_cast<size_t>(step.chunk)]; }

  // A received message, reassembled by the TP all-gather of its chunks under scatter/gather (on the compute stream,
  // where Megatron's _communicate issues gather_split_1d_tensor right after the receive): the op its first use
  // waits for.
  int64_t receive(OpName name, int32_t peer, int64_t sequence)
  {
    const int64_t id = e_.recv(name, peer, sequence, message_bytes_);
    if (!pipeline_scatter_gather(s_))
      return id;
    return e_.collective(OpName::PpAllGather, CollectiveOp::AllGather, tp_, pipeline_gather_bytes(s_), compute_stream,
                         {id});
  }

  // Bytes an all-gather of `parameters` updated parameters moves, `layer_weights` of them transformer-layer weights:
  // BF16, the layers' weights in the plan's precision with --fp8-param-gather (Megatron-Core keeps them as FP8 --
  // or MXFP8, NVFP4 with --fp4-param-gather -- parameters and gathers those, block scales included: 1, 1 + 1/32,
  // 1/2 + 1/16 bytes per element; embeddings, output layer and norms stay BF16 -- the norms' few elements counted
  // as quantized here).
  double gathered_bytes(int64_t parameters, int64_t layer_weights) const
  {
    const int64_t quantized = plan_.quantized() && plan_.fp8_param_gather ? std::min(layer_weights, parameters) : 0;
    return 2.0 * static_cast<double>(parameters - quantized) +
           static_cast<double>(quantized) * quantized_element_bytes(plan_.precision);
  }

  // --overlap-param-gather: the all-gathers of the parameters the last step updated, bucket by bucket in forward
  // order (the buckets of parameter_buckets, which the gradients are reduced in: Megatron-Core gathers each bucket
  // group it reduced), on their own stream; each layer's first forward waits for the bucket that holds it (a bucket
  // of the embedding or output layer alone: the chunk's first or last layer). Bytes: gathered_bytes. MoE: each
  // layer's experts in their own gather over the expert data-parallel group.
  void emit_param_gather_buckets()
  {
    if (!zero_gather_ || !w_.options.overlap_param_gather)
      return;
    // Forward order: chunk by chunk, each chunk's buckets in reverse of the buffer's order.
    std::vector<const ParameterBucket*> order;
    for (int64_t chunk = 0; chunk < shape_.chunks; ++chunk)
      for (auto b = buckets_.rbegin(); b != buckets_.rend(); ++b)
        if (b->chunk == chunk)
          order.push_back(&*b);
    for (const ParameterBucket* bucket : order) {
      const ChunkLayers& c = chunks_[static_cast<size_t>(bucket->chunk)];
      if (c.size == 0)
        continue;
      std::vector<int64_t> layers = bucket->layers; // in the buffer's order: last layer first
      if (layers.empty())
        layers.push_back(bucket->closed_by == embedding_item ? c.first : c.first + c.size - 1);
      e_.set_context(traces::Phase::Forward, static_cast<int32_t>(layers.back()), -1,
                     static_cast<int32_t>(bucket->chunk));
      int64_t layer_weights = 0;
      for (const int64_t layer : bucket->layers)
        layer_weights += layer_parameter_split_per_gpu(w_.model, plan_, layer).dense;
      const int64_t gather = e_.collective(OpName::DpAllGather, CollectiveOp::AllGather, w_.dp_group(stage_),
                                           gathered_bytes(bucket->parameters, layer_weights), param_gather_stream);
      for (const int64_t layer : layers)
        param_gather_[c.offset + layer - c.first].push_back(gather);
    }
    if (edp_ < 0)
      return;
    for (const ChunkLayers& c : chunks_)
      for (int64_t l = 0; l < c.size; ++l) {
        const LayerParameters split = layer_parameter_split_per_gpu(w_.model, plan_, c.first + l);
        if (split.expert <= 0)
          continue;
        e_.set_context(traces::Phase::Forward, static_cast<int32_t>(c.first + l), -1,
                       static_cast<int32_t>(&c - chunks_.data()));
        param_gather_[c.offset + l].push_back(e_.collective(OpName::EdpAllGather, CollectiveOp::AllGather, edp_,
                                                            2.0 * static_cast<double>(split.expert),
                                                            param_gather_stream));
      }
  }

  void emit_forward_step(const PipelineStep& step)
  {
    const int64_t v = virtual_stage(plan_, stage_, step.chunk);
    const int32_t mb = static_cast<int32_t>(step.micro_batch), chunk = static_cast<int32_t>(step.chunk);
    const ChunkLayers& c = chunk_of(step);
    e_.set_context(traces::Phase::Forward, -1, mb, chunk);
    std::vector<int64_t> input;
    if (v > 0) {
      const Neighbour from = previous_of(plan_, stage_, step.chunk);
      const int64_t seq = w_.message_sequence.at(message_key(from.stage, Direction::Activation, mb, from.chunk));
      input.push_back(receive(OpName::PpRecvActivation, w_.stage_rank(from.stage), seq));
    }
    UnitGathers gathers = sharding_.step(false, v == 0, v == last_virtual_, c.first, c.size);
    size_t unit = 0;
    if (v == 0) {
      const size_t first = gathers.begin(unit, traces::Phase::Forward, chunk);
      e_.set_context(traces::Phase::Forward, -1, mb, chunk);
      w_.ops->embedding_forward(e_, tp_);
      gathers.end(unit++, first);
    }
    for (int64_t l = 0; l < c.size; ++l) {
      const size_t first = gathers.begin(unit, traces::Phase::Forward, chunk);
      e_.set_context(traces::Phase::Forward, static_cast<int32_t>(c.first + l), mb, chunk);
      const size_t before = program_.ops.size();
      w_.ops->layer_forward(e_, layer_groups_);
      gathers.end(unit++, first);
      const int64_t local = c.offset + l;
      if (const auto g = param_gather_.find(local);
          g != param_gather_.end() && before < program_.ops.size() && gathered_layers_.insert(local).second)
        for (const int64_t gather : g->second)
          program_.ops[before].deps.push_back(gather);
      if (!input.empty() && before < program_.ops.size()) {
        // The first kernel of the chunk needs the received activation.
        for (const int64_t id : input) // (a loop: GCC 13 warns falsely on insert of a 1-element range)
          program_.ops[before].deps.push_back(id);
        input.clear();
      }
    }
    emit_amax_reduction(traces::Phase::Forward, mb, chunk, c.size);
    if (v == last_virtual_) {
      const size_t first = gathers.begin(unit, traces::Phase::Forward, chunk);
      e_.set_context(traces::Phase::Forward, -1, mb, chunk);
      w_.ops->output_forward(e_, tp_);
      gathers.end(unit, first);
      emit_mtp(traces::Phase::Forward, mb, chunk);
    } else {
      e_.set_context(traces::Phase::Forward, -1, mb, chunk);
      const Neighbour to = next_of(plan_, stage_, step.chunk);
      const int64_t seq = w_.message_sequence.at(message_key(stage_, Direction::Activation, mb, step.chunk));
      e_.send(OpName::PpSendActivation, w_.stage_rank(to.stage), seq, message_bytes_, {e_.last_compute_id()});
    }
  }

  // A backward step: the output layer on the last virtual stage or else the received gradient, the chunk's layers
  // in reverse, then the embedding on the first virtual stage or the gradient sent back. ZeRO-2/3 reduce-scatter
  // each unit's gradients after its backward.
  void emit_backward_step(const PipelineStep& step)
  {
    const int64_t v = virtual_stage(plan_, stage_, step.chunk);
    const int32_t mb = static_cast<int32_t>(step.micro_batch), chunk = static_cast<int32_t>(step.chunk);
    const ChunkLayers& c = chunk_of(step);
    UnitGathers gathers = sharding_.step(true, v == 0, v == last_virtual_, c.first, c.size);
    size_t unit = 0;
    e_.set_context(traces::Phase::Backward, -1, mb, chunk);
    std::vector<int64_t> grad_input;
    if (v == last_virtual_) {
      const size_t first = gathers.begin(unit, traces::Phase::Backward, chunk);
      e_.set_context(traces::Phase::Backward, -1, mb, chunk);
      w_.ops->output_backward(e_, tp_);
      gathers.end(unit++, first);
      sharding_.reduce_scatter(-1, sharding_.units().output, chunk);
      emit_mtp(traces::Phase::Backward, mb, chunk);
      if (overlapped_reduction(step))
        emit_bucket_reductions(chunk, output_item, -1);
    } else {
      const Neighbour from = next_of(plan_, stage_, step.chunk);
      const int64_t seq = w_.message_sequence.at(message_key(from.stage, Direction::Gradient, mb, from.chunk));
      grad_input.push_back(receive(OpName::PpRecvGradient, w_.stage_rank(from.stage), seq));
    }
    for (int64_t l = c.size - 1; l >= 0; --l) {
      const int32_t layer = static_cast<int32_t>(c.first + l);
      const size_t first = gathers.begin(unit, traces::Phase::Backward, chunk);
      const size_t before = program_.ops.size();
      e_.set_context(traces::Phase::Backward, layer, mb, chunk);
      w_.ops->layer_backward(e_, layer_groups_);
      gathers.end(unit++, first);
      sharding_.reduce_scatter(layer, sharding_.units().layer, chunk);
      if (!grad_input.empty() && before < program_.ops.size()) {
        // The first kernel of the chunk's backward needs the received gradient.
        for (const int64_t id : grad_input)
          program_.ops[before].deps.push_back(id);
        grad_input.clear();
      }
      if (overlapped_reduction(step)) {
        emit_bucket_reductions(chunk, layer, layer);
        emit_expert_gradient_reduction(layer, chunk);
      }
    }
    emit_amax_reduction(traces::Phase::Backward, mb, chunk, c.size);
    e_.set_context(traces::Phase::Backward, -1, mb, chunk);
    if (v == 0) {
      const size_t first = gathers.begin(unit, traces::Phase::Backward, chunk);
      e_.set_context(traces::Phase::Backward, -1, mb, chunk);
      w_.ops->embedding_backward(e_, tp_);
      gathers.end(unit, first);
      sharding_.reduce_scatter(-1, sharding_.units().embedding, chunk);
      if (overlapped_reduction(step))
        emit_bucket_reductions(chunk, embedding_item, -1);
    }
    backward_steps_.emplace_back(chunk, step.micro_batch == shape_.micro_batches - 1);
    emit_aligned_reduction();
    if (v != 0) {
      e_.set_context(traces::Phase::Backward, -1, mb, chunk);
      const Neighbour to = previous_of(plan_, stage_, step.chunk);
      const int64_t seq = w_.message_sequence.at(message_key(stage_, Direction::Gradient, mb, step.chunk));
      e_.send(OpName::PpSendGradient, w_.stage_rank(to.stage), seq, message_bytes_, {e_.last_compute_id()});
    }
  }

  // FP8 delayed scaling only: TE's MXFP8BlockScaling and NVFP4BlockScaling keep no amax history (quantization.py:
  // add_fp8_tensors_to_global_buffer and reduce_and_update_fp8_tensors are "Delayed scaling only", a no-op unless
  // _has_delayed_scaling_state, i.e. recipe.delayed(); their block scales are computed by the cast kernel itself).
  // NVFP4's per-tensor amax of a sequence-parallel column-parallel input is reduced over the TP group inside the
  // quantizer (module/layernorm_linear.py set_quantizer_amax_reduction_group): one fp32 per GEMM input, not modelled.
  // Delayed scaling (Transformer Engine quantization.py, reduce_and_update_fp8_tensors): the amaxes of a
  // chunk's FP8 tensors are all-reduced (MAX) over the amax reduction group when the chunk's forward leaves its
  // fp8_autocast region (Megatron-Core wraps a TransformerBlock's whole pass: transformer_block.py) and again when
  // its backward ends (the region's first module sets reduce_and_update_bwd_fp8_tensors), on the compute stream
  // (async_op=False: the stream waits), in every micro-batch. The group is Megatron-Core's tensor x data x
  // context-parallel group (parallel_state.get_amax_reduction_group); the data-parallel group (else the tensor-
  // parallel one) stands for it here. fp32 amaxes of the 4 linear modules a layer has (QKV, projection, FC1,
  // FC2): forward their inputs' (the weights' amaxes with FP8 parameters are reduced after the optimizer step;
  // without, with the inputs'), backward their output gradients'.
  void emit_amax_reduction(traces::Phase phase, int32_t mb, int32_t chunk, int64_t layers)
  {
    if (!plan_.delayed_scaling() || plan_.tp * plan_.dp * plan_.cp <= 1 || layers <= 0)
      return;
    const double per_linear = phase == traces::Phase::Forward && !plan_.fp8_param_gather ? 2.0 : 1.0;
    e_.set_context(phase, -1, mb, chunk);
    e_.collective(OpName::Fp8AmaxAllReduce, CollectiveOp::AllReduce, reduced_ ? w_.dp_group(stage_) : tp_,
                  4.0 * 4.0 * per_linear * static_cast<double>(layers), compute_stream);
  }

  // Multi-token prediction modules (DeepSeek-V3; Megatron-Core places them on the last stage, after the decoder,
  // multi_token_prediction.py MultiTokenPredictionBlock): forward, each module's two norms (hidden state and the
  // next tokens' embedding, looked up again), eh_proj, one transformer layer (layer index L + m: a MoE layer when the
  // model's layers are, at balanced load) and the shared output head with its loss; backward the reverse, after the
  // main output layer's backward.
  void emit_mtp(traces::Phase phase, int32_t mb, int32_t chunk)
  {
    const LayerShape& s = s_;
    for (int64_t m = 0; m < w_.model.moe.mtp_layers; ++m) {
      const int32_t layer = static_cast<int32_t>(w_.model.layers + m);
      if (phase == traces::Phase::Forward) {
        e_.set_context(phase, -1, mb, chunk);
        w_.ops->embedding_forward(e_, tp_);
        e_.compute(OpName::MtpNormFwd, s);
        e_.compute(OpName::MtpNormFwd, s);
        e_.compute(OpName::MtpEhProjFwd, s);
        e_.set_context(phase, layer, mb, chunk);
        w_.ops->layer_forward(e_, layer_groups_);
        e_.set_context(phase, -1, mb, chunk);
        w_.ops->output_forward(e_, tp_);
      } else {
        e_.set_context(phase, -1, mb, chunk);
        w_.ops->output_backward(e_, tp_);
        e_.set_context(phase, layer, mb, chunk);
        w_.ops->layer_backward(e_, layer_groups_);
        e_.set_context(phase, -1, mb, chunk);
        e_.compute(OpName::MtpEhProjDgrad, s);
        e_.compute(OpName::MtpEhProjWgrad, s);
        e_.compute(OpName::MtpNormBwd, s);
        e_.compute(OpName::MtpNormBwd, s);
        w_.ops->embedding_backward(e_, tp_);
      }
    }
  }

  // --overlap-grad-reduce (ZeRO-0/1): the dense gradients are reduced (all-reduce, or reduce-scatter with ZeRO-1)
  // bucket by bucket on the dp stream during the chunk's last micro-batch, as Megatron-Core's
  // DistributedDataParallel does (megatron/core/distributed/distributed_data_parallel.py, param_and_grad_buffer.py):
  //   - a chunk's parameters are laid out in reverse registration order -- the output layer and final norm, the
  //     layers last to first, the word embedding -- and cut into buckets of at least bucket_size parameters
  //     (_compute_default_per_buffer_param_layout: a bucket closes at the parameter that reaches the size);
  //   - bucket_size = max(4e7, 1e6 x dp) ("larger DP sizes need larger buckets"), on pipeline rank 0's first model
  //     chunk only: every other stage and chunk is one bucket (pp_rank > 0 or model_chunk_idx > 0: bucket_size
  //     None, megatron/training/models/dist_utils.py);
  //   - a bucket's reduction starts when its last parameter's gradient is ready: here after the backward of the
  //     layer (output layer, embedding) that closes it. Layer granularity: a bucket that closes inside a layer
  //     starts after that layer's backward.
  // Bytes: FP32 gradients (Megatron-LM forces accumulate_allreduce_grads_in_fp32 with bf16), 2 with
  // --grad-reduce-in-bf16. MoE: the experts' gradients are their own buffer, reduced per layer over the expert
  // data-parallel group (emit_expert_gradient_reduction).
  static constexpr int64_t output_item = -2, embedding_item = -1;

  // Bytes per element of the gradient buffer every data-parallel and SP/embedding gradient reduction reads
  // (Megatron-Core's main_grad): FP32, BF16 with --grad-reduce-in-bf16.
  double gradient_buffer_bytes() const { return plan_.grad_reduce_bf16 ? 2.0 : gradient_bytes_per_parameter; }

  // Gradients in this rank's buffers: its dense and expert parameters (padded as the buffers are).
  double local_gradients() const { return static_cast<double>(params_ + expert_params_); }

  // With gradient_passes: start_grad_sync's NaN-check norm and 1/(dp x cp) scaling of `elements` gradients, on the
  // compute stream before their reduction (the reduction then waits for it: e_.last_compute_id()). ZeRO-2/3 reduce
  // each unit's gradients as its backward ends (sharding_): their passes are not emitted.
  void check_and_scale(double elements)
  {
    if (!w_.options.gradient_passes || elements <= 0 || sharding_.shards_gradients())
      return;
    e_.compute(OpName::GradCheckScale, grad_check_scale_cost(elements, gradient_buffer_bytes(), reduced_));
    checked_gradients_ += elements;
  }

  bool overlapped_reduction(const PipelineStep& step) const
  {
    return w_.options.overlap_grad_reduce && step.micro_batch == shape_.micro_batches - 1 && reduced_ &&
           !sharding_.shards_gradients() && !aligned_reduction();
  }

  // WorkloadOptions::align_grad_reduce with an overlapped ZeRO-0/1 reduction: the schedule, not the gradient
  // hooks, starts each chunk's reduction -- except on the first stage of a 1F1B program, whose last backward runs
  // with the hooks enabled (schedules.py forward_backward_pipelining_without_interleaving: `if
  // config.grad_sync_func is None or rank == 0: enable_grad_sync()`).
  bool aligned_reduction() const
  {
    return w_.options.align_grad_reduce && w_.options.overlap_grad_reduce && reduced_ &&
           !sharding_.shards_gradients() && !(shape_.chunks == 1 && stage_ == 0);
  }

  // A chunk's whole reduction as DistributedDataParallel.start_grad_sync starts it: every dense bucket (its check
  // and scaling on the compute stream, then its collective), then the expert layers' (the expert-parallel bucket
  // groups).
  void emit_chunk_reduction(int32_t chunk)
  {
    synced_chunks_.insert(chunk);
    for (const ParameterBucket& bucket : buckets_)
      if (bucket.chunk == chunk)
        emit_bucket_reductions(chunk, bucket.closed_by,
                               bucket.closed_by >= 0 ? static_cast<int32_t>(bucket.closed_by) : -1);
    const ChunkLayers& c = chunks_[static_cast<size_t>(chunk)];
    for (int64_t l = c.size - 1; l >= 0; --l)
      emit_expert_gradient_reduction(static_cast<int32_t>(c.first + l), chunk);
  }

  // After backward step `backward_steps_.size() - 1`'s compute, before its send: the interleaved schedule starts
  // the reduction of the chunk whose last micro-batch was `stage_` backward steps earlier (backward_step_helper:
  // grad_sync_virtual_microbatch_id = virtual_microbatch_id - pipeline_parallel_rank).
  void emit_aligned_reduction()
  {
    if (!aligned_reduction() || shape_.chunks == 1)
      return;
    const int64_t j = static_cast<int64_t>(backward_steps_.size()) - 1 - stage_;
    if (j >= 0 && backward_steps_[static_cast<size_t>(j)].second)
      emit_chunk_reduction(backward_steps_[static_cast<size_t>(j)].first);
  }

  // After the cooldown: the chunks the schedule has not started yet, in chunk order (and a 1F1B stage's only chunk
  // after its last backward).
  void emit_remaining_aligned_reductions()
  {
    if (!aligned_reduction())
      return;
    for (int32_t chunk = 0; chunk < static_cast<int32_t>(shape_.chunks); ++chunk)
      if (!synced_chunks_.count(chunk))
        emit_chunk_reduction(chunk);
  }

  // One bucket of a chunk's buffer: its dense parameters, the layers it holds and the item (layer, output_item,
  // embedding_item) whose backward closes it.
  struct ParameterBucket {
    int64_t chunk = 0, closed_by = 0, parameters = 0;
    std::vector<int64_t> layers;
  };

  // The buckets of every chunk of this stage, chunk by chunk, each chunk's in the buffer's order.
  std::vector<ParameterBucket> parameter_buckets() const
  {
    std::vector<ParameterBucket> buckets;
    int64_t in_layers = 0;
    for (const ChunkLayers& c : chunks_)
      for (int64_t l = 0; l < c.size; ++l)
        in_layers += layer_parameter_split_per_gpu(w_.model, plan_, c.first + l).dense;
    // The buffer's other elements: the word and position embeddings on stage 0, the rest (output layer or tied
    // copy, final norm, padding to dp x cp) with the output layer where the stage has it, else with the embedding
    // or the last layer.
    const int64_t rest = std::max<int64_t>(0, params_ - in_layers);
    const int64_t embedding = stage_ == 0 ? std::min(rest, embedding_parameters_per_gpu(w_.model, plan_.tp)) : 0;
    const int64_t output = rest - embedding;
    const bool has_output = stage_ == plan_.pp - 1;
    // Megatron-Core sizes buckets only with --overlap-grad-reduce (else one bucket per chunk).
    const int64_t bucket_size = std::max<int64_t>(40'000'000, 1'000'000 * plan_.dp);
    for (int64_t chunk = 0; chunk < shape_.chunks; ++chunk) {
      const ChunkLayers& c = chunks_[static_cast<size_t>(chunk)];
      const bool first_virtual = stage_ == 0 && chunk == 0, last_virtual = has_output && chunk == shape_.chunks - 1;
      std::vector<std::pair<int64_t, int64_t>> items; // (item, parameters) in the buffer's order
      if (last_virtual)
        items.emplace_back(output_item, output);
      for (int64_t l = c.size - 1; l >= 0; --l)
        items.emplace_back(c.first + l, layer_parameter_split_per_gpu(w_.model, plan_, c.first + l).dense);
      if (first_virtual)
        items.emplace_back(embedding_item, embedding + (has_output ? 0 : output));
      else if (!last_virtual && chunk == shape_.chunks - 1 && !items.empty())
        items.back().second += output; // a middle stage's padding
      // ZeRO-2 (Megatron-FSDP, FSDP2): every unit (embedding, layer, output layer) its own bucket, as its
      // gradients are reduce-scattered.
      const bool units = sharding_.shards_gradients();
      const bool bucketed = units || (first_virtual && w_.options.overlap_grad_reduce); // pp_rank 0, model chunk 0
      ParameterBucket open{chunk, 0, 0, {}};
      for (size_t k = 0; k < items.size(); ++k) {
        open.parameters += items[k].second;
        if (items[k].first >= 0)
          open.layers.push_back(items[k].first);
        if ((bucketed && (units || open.parameters >= bucket_size)) || k + 1 == items.size()) {
          open.closed_by = items[k].first;
          if (open.parameters > 0)
            buckets.push_back(open);
          open = ParameterBucket{chunk, 0, 0, {}};
        }
      }
    }
    return buckets;
  }

  // The buckets of `chunk` that `item`'s backward closes, each reduced on the dp stream after the last compute op.
  void emit_bucket_reductions(int32_t chunk, int64_t item, int32_t layer)
  {
    e_.set_context(traces::Phase::Backward, layer, -1, chunk);
    const double bytes_per_parameter = gradient_buffer_bytes();
    for (const ParameterBucket& bucket : buckets_) {
      if (bucket.chunk != chunk || bucket.closed_by != item)
        continue;
      const int64_t parameters = bucket.parameters;
      check_and_scale(static_cast<double>(parameters));
      dp_ops_.push_back(e_.collective(plan_.zero_stage ? OpName::DpReduceScatter : OpName::DpAllReduce,
                                      plan_.zero_stage ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce,
                                      w_.dp_group(stage_), bytes_per_parameter * static_cast<double>(parameters),
                                      dp_stream, {e_.last_compute_id()}));
    }
  }

  // A MoE layer's expert gradients over the expert data-parallel group, after the layer's backward in the chunk's
  // last micro-batch.
  void emit_expert_gradient_reduction(int32_t layer, int32_t chunk)
  {
    const LayerParameters split = layer_parameter_split_per_gpu(w_.model, plan_, layer);
    if (split.expert <= 0 || edp_ < 0)
      return;
    e_.set_context(traces::Phase::Backward, layer, -1, chunk);
    check_and_scale(static_cast<double>(split.expert));
    dp_ops_.push_back(expert_reduction(gradient_buffer_bytes() * static_cast<double>(split.expert),
                                       {e_.last_compute_id()}));
  }

  // The expert gradients' reduction over the expert data-parallel group (reduce-scatter with ZeRO-1).
  int64_t expert_reduction(double bytes, std::vector<int64_t> deps)
  {
    return e_.collective(plan_.zero_stage ? OpName::EdpReduceScatter : OpName::EdpAllReduce,
                         plan_.zero_stage ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce, edp_, bytes,
                         dp_stream, std::move(deps));
  }

  // End of the iteration, before the optimizer: the SP-partial and tied-embedding gradient all-reduces, the FP8
  // amax reduction and the data-parallel gradient reduction (whole-buffer unless overlapped or sharded by unit).
  // Returns what the optimizer step waits for: the last compute op, these collectives and every data-parallel
  // gradient reduction of the iteration.
  std::vector<int64_t> emit_gradient_reductions()
  {
    e_.set_context(traces::Phase::Optimizer, -1, -1, 0);
    // The gradients no overlapped bucket checked yet (all of them without --overlap-grad-reduce): checked and scaled
    // before the reductions below.
    check_and_scale(local_gradients() - checked_gradients_);
    std::vector<int64_t> before_step{e_.last_compute_id()};
    if (s_.sp) {
      // The gradients of the parameters SP leaves partial on each TP rank (layernorms, row-parallel biases,
      // position embedding), summed over the TP group in one coalesced all-reduce (Megatron-LM
      // finalize_model_grads: _allreduce_layernorm_grads).
      const double bytes =
          gradient_buffer_bytes() * static_cast<double>(sp_partial_parameters(w_.model, plan_, stage_));
      before_step.push_back(
          e_.collective(OpName::SpGradAllReduce, CollectiveOp::AllReduce, tp_, bytes, compute_stream));
    }
    if (plan_.pp > 1 && w_.model.tie_embeddings && (stage_ == 0 || stage_ == plan_.pp - 1)) {
      const double bytes = gradient_buffer_bytes() * static_cast<double>(s_.vocab_per_rank * s_.h);
      before_step.push_back(e_.collective(OpName::EmbeddingGradAllReduce, CollectiveOp::AllReduce, w_.embedding_group(),
                                          bytes, compute_stream));
    }
    if (plan_.fp8() && plan_.fp8_param_gather && plan_.tp * plan_.dp * plan_.cp > 1) {
      // FP8 parameters: the weights' amaxes (one fp32 per linear module, 4 a layer) reduced once per iteration
      // around the optimizer step (Transformer Engine's autocast_exit leaves the FP8 weight modules to it; with
      // current scaling TE tensor/utils.py _cast_master_weights_to_fp8_current_scaling all-reduces the shards'
      // amaxes); delayed scaling's forward and backward amaxes are reduced per chunk and micro-batch
      // (emit_amax_reduction). Modelled before the step.
      const double bytes = 4.0 * 4 * static_cast<double>(stage_layers(w_.model, plan_, stage_));
      before_step.push_back(e_.collective(OpName::Fp8AmaxAllReduce, CollectiveOp::AllReduce,
                                          reduced_ ? w_.dp_group(stage_) : tp_, bytes, compute_stream));
    }
    if (reduced_) {
      if (!w_.options.overlap_grad_reduce && !sharding_.shards_gradients()) {
        dp_ops_.push_back(e_.collective(
            plan_.zero_stage ? OpName::DpReduceScatter : OpName::DpAllReduce,
            plan_.zero_stage ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce, w_.dp_group(stage_),
            gradient_buffer_bytes() * static_cast<double>(params_), dp_stream, {e_.last_compute_id()}));
        if (expert_params_ > 0 && edp_ >= 0)
          dp_ops_.push_back(expert_reduction(gradient_buffer_bytes() * static_cast<double>(expert_params_),
                                             {e_.last_compute_id()}));
      }
      before_step.insert(before_step.end(), dp_ops_.begin(), dp_ops_.end());
    }
    return before_step;
  }

  // The optimizer step over the parameters this rank owns (after `before_step`), then, with ZeRO-1/2 without
  // --overlap-param-gather, the all-gather of the updated parameters, and with FP8 the weights' cast.
  void emit_optimizer_step(const std::vector<int64_t>& before_step)
  {
    const double owned =
        static_cast<double>(params_) / static_cast<double>(plan_.zero_stage ? plan_.dp * plan_.cp : 1) +
        static_cast<double>(expert_params_) / static_cast<double>(plan_.zero_stage ? plan_.expert_dp() : 1);
    // (with the gradient passes the clipping waits for the reductions, and Adam follows it on the compute stream)
    const bool clip = w_.options.gradient_passes;
    if (clip)
      e_.compute(OpName::OptimizerClipGrad, clip_grad_cost(owned), before_step);
    e_.compute(OpName::OptimizerAdam, optimizer_cost(owned), clip ? std::vector<int64_t>{} : before_step);
    if (zero_gather_ && !w_.options.overlap_param_gather) {
      int64_t layer_weights = 0;
      for (const ChunkLayers& c : chunks_)
        for (int64_t l = 0; l < c.size; ++l)
          layer_weights += layer_parameter_split_per_gpu(w_.model, plan_, c.first + l).dense;
      e_.collective(OpName::DpAllGather, CollectiveOp::AllGather, w_.dp_group(stage_),
                    gathered_bytes(params_, layer_weights), compute_stream);
      if (expert_params_ > 0 && edp_ >= 0)
        e_.collective(OpName::EdpAllGather, CollectiveOp::AllGather, edp_, 2.0 * static_cast<double>(expert_params_),
                      compute_stream);
    }
    if (plan_.quantized()) {
      // ZeRO-3: each rank casts the shard it updated (its quantized parameters are gathered as they are). MoE: the
      // stage's layers' dense and expert weights.
      const StageParameters split = stage_parameter_split(w_.model, plan_, stage_);
      const double stage_layer_weights =
          w_.model.moe.enabled() ? static_cast<double>(split.total())
                                 : static_cast<double>(stage_layers(w_.model, plan_, stage_)) *
                                       static_cast<double>(layer_parameters_per_gpu(w_.model, plan_.tp));
      const double layer_weights =
          stage_layer_weights / static_cast<double>(plan_.zero_stage == 3 ? plan_.dp * plan_.cp : 1);
      e_.compute(OpName::Fp8WeightCast, fp8_weight_cast_cost(layer_weights, plan_.precision, plan_.current_scaling()));
    }
  }

  const Workload& w_;
  const ParallelPlan& plan_;
  int64_t stage_;
  PipelineShape shape_;
  LayerShape s_;
  int64_t last_virtual_;
  int32_t tp_;
  LayerGroups layer_groups_;
  double message_bytes_;
  std::vector<ChunkLayers> chunks_;
  traces::RankProgram program_;
  OpEmitter e_;                 // emits into program_.ops
  std::vector<int64_t> dp_ops_; // the data-parallel gradient reductions the optimizer step waits for
  bool reduced_;                // gradients reduced over the dp x cp replicas
  double checked_gradients_ = 0; // gradients grad.check_scale passed over so far (check_and_scale)
  // ZeRO-1/2: the updated parameters all-gathered after the step (or bucket by bucket in the next forward).
  bool zero_gather_;
  ShardedUnitOps sharding_; // ZeRO-2/3
  // Elements of the flat buffer the gradients are reduced in and the optimizer steps over, padded to a multiple
  // of the replicas that reduce (and, with ZeRO-1, shard) it: dp x cp.
  int64_t params_;
  // MoE: the routed experts' parameters of this GPU, in their own buffer padded to a multiple of the expert
  // data-parallel ranks that reduce (and with ZeRO-1 shard) them over `edp_` (-1: edp = 1, nothing reduced).
  int64_t expert_params_;
  int32_t edp_;
  // --overlap-grad-reduce, --overlap-param-gather: the buckets of the gradient and parameter buffer.
  std::vector<ParameterBucket> buckets_;
  // WorkloadOptions::align_grad_reduce: the chunk of each backward step emitted so far and whether it was the
  // chunk's last micro-batch; the chunks whose reduction the schedule started.
  std::vector<std::pair<int32_t, bool>> backward_steps_;
  std::set<int32_t> synced_chunks_;
  std::map<int64_t, std::vector<int64_t>> param_gather_; // --overlap-param-gather: stage-local layer -> gather ops
  std::set<int64_t> gathered_layers_;       // stage-local layers whose first forward already waited for their gathers
};

} // namespace

std::shared_ptr<const LayerOpSource> analytic_layer_ops(const GptConfig& model, const ParallelPlan& plan,
                                                        std::shared_ptr<const ExpertLoads> loads)
{
  if (!loads)
    loads = std::make_shared<const ExpertLoads>(expert_loads(model, plan));
  return std::make_shared<AnalyticLayerOps>(model, plan, false, false, std::move(loads));
}

std::string to_string(GroupKind kind)
{
  switch (kind) {
  case GroupKind::Tp: return "tp";
  case GroupKind::Dp: return "dp";
  case GroupKind::Embedding: return "embedding";
  case GroupKind::Cp: return "cp";
  case GroupKind::Ep: return "ep";
  case GroupKind::Etp: return "etp";
  case GroupKind::Edp: return "edp";
  }
  return "unknown";
}

WorkloadOptions applicable_overlaps(const ParallelPlan& plan)
{
  const bool gradients_reduced = plan.dp * plan.cp > 1;
  WorkloadOptions options;
  options.tp_comm_overlap = plan.tp > 1 && plan.sequence_parallel();
  // ZeRO-2/3 reduce-scatter every unit's gradients as its backward ends, and ZeRO-3 prefetches every unit's
  // parameters, whatever the options say (Megatron-FSDP turns overlap_grad_reduce on for both and
  // overlap_param_gather for ZeRO-3, megatron_fsdp.py); ZeRO-2 gathers the updated parameters as ZeRO-1 does.
  options.overlap_grad_reduce = gradients_reduced && plan.zero_stage <= 1;
  options.overlap_param_gather = gradients_reduced && (plan.zero_stage == 1 || plan.zero_stage == 2);
  return options;
}

bool any_overlap(const WorkloadOptions& options)
{
  return options.tp_comm_overlap || options.overlap_grad_reduce || options.overlap_param_gather ||
         options.moe_a2a_overlap;
}

PipelineShape workload_pipeline_shape(const ParallelPlan& plan, const WorkloadOptions& options)
{
  PipelineShape shape = pipeline_shape(plan);
  if (options.moe_a2a_overlap && shape.schedule == Schedule::Interleaved)
    shape.extra_warmup = 1;
  return shape;
}

void validate_moe_a2a_overlap(const ParallelPlan& plan)
{
  const std::string flag = "--overlap-moe-expert-parallel-comm: ";
  if (plan.ep <= 1)
    throw InputError(flag + "needs expert parallelism (--ep > 1; Megatron-Core asserts it)");
  if (plan.dispatcher == MoeDispatcher::AllGather)
    throw InputError(flag + "needs the alltoall or deepep dispatcher (got allgather)");
  if (plan.pp > 1 && plan.schedule != Schedule::Interleaved)
    throw InputError(flag + "with --pp > 1 needs --schedule interleaved (Megatron-Core requires virtual pipeline "
                            "stages)");
  if (plan.recompute == Recompute::Full)
    throw InputError(flag + "does not run with --recompute full (Megatron-Core asserts it)");
  if (recomputes(plan, RecomputeModule::Moe))
    throw InputError(flag + "does not run with moe in --recompute-modules (Megatron-Core asserts it)");
  if (plan.zero_stage > 1)
    throw InputError(flag + "needs --zero 0 or 1 (not modelled with per-unit ZeRO-2/3 gathers and reductions)");
}

void validate_shared_expert_overlap(const ParallelPlan& plan, const WorkloadOptions& options)
{
  const std::string flag = "--moe-shared-expert-overlap: ";
  if (plan.dispatcher == MoeDispatcher::AllGather)
    throw InputError(flag + "needs the alltoall or deepep dispatcher (got allgather; Megatron-Core raises it)");
  if (recomputes(plan, RecomputeModule::SharedExperts))
    throw InputError(flag + "does not run with shared_experts in --recompute-modules (Megatron-Core raises it)");
  if (options.moe_a2a_overlap)
    throw InputError(flag + "contradicts --overlap-moe-expert-parallel-comm (Megatron-Core asserts one or the other)");
}

WorkloadOptions with_framework_options(WorkloadOptions options, const FrameworkProfile& framework)
{
  options.align_grad_reduce = framework.align_grad_reduce;
  return options;
}

int32_t Workload::stage_rank(int64_t stage) const
{
  return static_cast<int32_t>(global_rank(plan, {stage, 0, 0}));
}

Workload make_workload(const GptConfig& model, const ParallelPlan& plan, const WorkloadOptions& options,
                       std::shared_ptr<const LayerOpSource> ops, std::shared_ptr<const ExpertLoads> loads)
{
  Workload w;
  w.model = model;
  w.plan = plan;
  w.options = options;
  w.expert_loads = loads ? std::move(loads) : std::make_shared<const ExpertLoads>(expert_loads(model, plan));
  if (options.moe_shared_expert_overlap)
    validate_shared_expert_overlap(plan, options);
  w.ops = ops ? std::move(ops)
              : std::make_shared<AnalyticLayerOps>(model, plan, options.tp_comm_overlap,
                                                   options.moe_shared_expert_overlap, w.expert_loads);
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
    if (model.moe.enabled() && plan.ep > 1)
      w.ep_groups.push_back(add_group(GroupKind::Ep, stage, ep_group_ranks(plan, stage, 0, 0)));
    if (model.moe.enabled() && plan.expert_tp() > 1)
      w.etp_groups.push_back(add_group(GroupKind::Etp, stage, etp_group_ranks(plan, stage, 0, 0)));
    if (model.moe.enabled() && plan.expert_dp() > 1)
      w.edp_groups.push_back(add_group(GroupKind::Edp, stage, edp_group_ranks(plan, stage, 0, 0)));
  }
  w.embedding_group_index = add_group(GroupKind::Embedding, -1,
                                      plan.pp > 1 ? std::vector<int32_t>{w.stage_rank(0), w.stage_rank(plan.pp - 1)}
                                                  : std::vector<int32_t>{w.stage_rank(0)});

  // Number each stage's messages per destination in the order the stage sends them.
  const PipelineShape shape = workload_pipeline_shape(plan, w.options);
  const int64_t last_virtual = plan.pp * shape.chunks - 1;
  // At most an activation and a gradient per stage, micro-batch and chunk: sized once, not rehashed as it grows.
  w.message_sequence.reserve(static_cast<size_t>(2 * plan.pp * plan.micro_batches() * shape.chunks));
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

Workload with_micro_batches(const Workload& workload, int64_t micro_batches)
{
  ParallelPlan plan = workload.plan;
  plan.global_batch = micro_batches * plan.micro_batch * plan.dp;
  return make_workload(workload.model, plan, workload.options, workload.ops, workload.expert_loads);
}

traces::RankProgram stage_program(const Workload& w, int64_t stage)
{
  return StageProgramBuilder(w, stage).build();
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
