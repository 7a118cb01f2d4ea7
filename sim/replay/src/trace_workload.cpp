#include "gputwin/sim/trace_workload.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/op_emitter.hpp"
#include "gputwin/models/plan_metadata.hpp"

#include <map>
#include <optional>
#include <stdexcept>

namespace gputwin::sim {

namespace {

using Segment = std::vector<traces::Op>;

// The captured ops of one micro-batch, cut into the building blocks.
struct MicroBatchOps {
  Segment embedding_forward, output_forward, output_backward, embedding_backward;
  std::map<int32_t, Segment> layer_forward, layer_backward;
};

class TraceLayerOps : public LayerOpSource {
public:
  TraceLayerOps(std::vector<MicroBatchOps> captured, int32_t layers, bool keep_durations)
      : captured_(std::move(captured)), layers_(layers), keep_durations_(keep_durations)
  {
  }
  void embedding_forward(OpEmitter& e, int32_t g) const override { emit(e, g, at(e).embedding_forward); }
  void embedding_backward(OpEmitter& e, int32_t g) const override { emit(e, g, at(e).embedding_backward); }
  void layer_forward(OpEmitter& e, const LayerGroups& g) const override
  {
    emit(e, g.tp, at(e).layer_forward.at(e.layer() % layers_));
  }
  void layer_backward(OpEmitter& e, const LayerGroups& g) const override
  {
    emit(e, g.tp, at(e).layer_backward.at(e.layer() % layers_));
  }
  void output_forward(OpEmitter& e, int32_t g) const override { emit(e, g, at(e).output_forward); }
  void output_backward(OpEmitter& e, int32_t g) const override { emit(e, g, at(e).output_backward); }

private:
  const MicroBatchOps& at(const OpEmitter& e) const
  {
    return captured_[static_cast<size_t>(e.micro_batch()) % captured_.size()];
  }

  // Copies a segment: compute on the compute stream, TP collectives on the TP stream with their captured
  // dependencies inside the segment (so the ops that waited for them still do).
  void emit(OpEmitter& e, int32_t tp_group, const Segment& segment) const
  {
    std::map<int64_t, int64_t> new_id;
    for (const traces::Op& op : segment) {
      std::vector<int64_t> deps;
      for (const int64_t d : op.deps)
        if (const auto it = new_id.find(d); it != new_id.end())
          deps.push_back(it->second);
      traces::Op copy = op;
      if (!keep_durations_)
        copy.duration_ns = -1;
      const int32_t stream = op.kind == traces::OpKind::Collective ? tp_async_stream : compute_stream;
      new_id[op.id] = e.replay(copy, stream, tp_group, std::move(deps));
    }
  }

  std::vector<MicroBatchOps> captured_;
  int32_t layers_;
  bool keep_durations_;
};

// Rank 0's ops cut into building blocks, per micro-batch.
std::vector<MicroBatchOps> cut(const traces::OpGraph& trace)
{
  const traces::RankProgram& rank0 = trace.ranks.front();
  std::map<int32_t, MicroBatchOps> by_micro_batch;
  std::map<int32_t, bool> seen_layer_forward, seen_layer_backward;
  for (const traces::Op& op : rank0.ops) {
    if (op.micro_batch < 0 || op.kind == traces::OpKind::Send || op.kind == traces::OpKind::Recv)
      continue;
    if (op.kind == traces::OpKind::Collective && trace.groups[static_cast<size_t>(op.group)].kind != "tp")
      continue; // pipeline and data-parallel communication is regenerated for the new plan
    MicroBatchOps& m = by_micro_batch[op.micro_batch];
    const bool forward = op.phase == traces::Phase::Forward;
    if (op.layer >= 0) {
      (forward ? m.layer_forward : m.layer_backward)[op.layer].push_back(op);
      (forward ? seen_layer_forward : seen_layer_backward)[op.micro_batch] = true;
    } else if (forward) {
      (seen_layer_forward[op.micro_batch] ? m.output_forward : m.embedding_forward).push_back(op);
    } else {
      (seen_layer_backward[op.micro_batch] ? m.embedding_backward : m.output_backward).push_back(op);
    }
  }
  std::vector<MicroBatchOps> out;
  for (auto& [mb, ops] : by_micro_batch)
    out.push_back(std::move(ops));
  return out;
}

} // namespace

TraceWorkload make_trace_workload(const traces::OpGraph& trace, const ScaleOut& scale)
{
  if (trace.ranks.empty())
    throw InputError("replay: the trace has no ranks");
  const PlanMetadata captured_run = read_plan_metadata(trace.metadata, "replay");
  GptConfig model = captured_run.model;
  ParallelPlan plan = captured_run.plan;
  const int64_t trace_pp = plan.pp, trace_dp = plan.dp, trace_global = plan.global_batch;
  if (trace_pp != 1)
    throw InputError(
        "--pp: scaling out needs a trace captured with pp 1 (whole model on every rank), this one has pp " +
        std::to_string(trace_pp));
  // The captured run itself must be one the models accept (the same shape rules as --model and its flags):
  // its metadata are read as a model and plan, and a division below needs dp > 0.
  {
    try {
      validate_plan(model, captured_run.plan);
    } catch (const InputError& e) {
      std::string why = e.what();
      if (why.rfind("--", 0) == 0) // "--heads: ..." names the metadata field, not a flag of this command
        why = why.substr(2);
      throw InputError("replay: the trace's metadata describe no valid run: " + why);
    }
  }
  const int32_t captured_layers = static_cast<int32_t>(model.layers);
  // The scaled-out run's pipeline is the default 1F1B over the stages asked for.
  plan.schedule = Schedule::OneFOneB;
  plan.chunks = 1;

  if (scale.layers) {
    if (*scale.layers <= 0)
      throw InputError("--layers: expected a positive integer, got " + std::to_string(*scale.layers));
    model.layers = *scale.layers;
  }
  plan.pp = scale.pp.value_or(1);
  plan.dp = scale.dp.value_or(trace_dp);
  plan.global_batch = scale.global_batch.value_or(trace_global / trace_dp * plan.dp);
  validate_plan(model, plan);

  std::vector<MicroBatchOps> captured = cut(trace);
  if (captured.empty() || captured.front().layer_forward.empty())
    throw InputError("replay: rank 0 of the trace has no layer ops to scale out");
  for (const MicroBatchOps& m : captured)
    if (static_cast<int32_t>(m.layer_forward.size()) != captured_layers ||
        static_cast<int32_t>(m.layer_backward.size()) != captured_layers)
      throw InputError("replay: the trace's rank 0 does not hold all " + std::to_string(captured_layers) +
                       " layers of every micro-batch (expected a pp 1 capture)");
  return TraceWorkload{model, plan, std::make_shared<TraceLayerOps>(captured, captured_layers, true),
                       std::make_shared<TraceLayerOps>(captured, captured_layers, false)};
}

GpuComputeModel template_compute_model(const topo::ClusterSpec& cluster)
{
  try {
    return builtin_compute_model(cluster.gpu.generation, cluster.gpu.kind, cluster.gpu.peak_bf16_flops, cluster.gpu.hbm_bytes_per_s,
                                 cluster.gpu.peak_fp8_flops, cluster.gpu.peak_fp4_flops);
  } catch (const std::invalid_argument&) {
    return nominal_roofline_model(cluster.gpu.kind, cluster.gpu.peak_bf16_flops, cluster.gpu.hbm_bytes_per_s,
                                  "nominal roofline at the cluster file's peak and bandwidth (not calibrated)");
  }
}

} // namespace gputwin::sim
