#include "gputwin/engine/train/pipeline_driver.hpp"

#include "gputwin/engine/backend/host_access.hpp"
#include "gputwin/models/pipeline_schedule.hpp"

#include <algorithm>

namespace gputwin::engine {

void SavedBytesPerLayer::add(int64_t bytes)
{
  min = min < 0 ? bytes : std::min(min, bytes);
  max = std::max(max, bytes);
}

PipelineDriver::PipelineDriver(RankContext& ctx, GptStage& stage, const SyntheticCorpus& corpus)
    : ctx_(ctx), stage_(stage), corpus_(corpus)
{
}

double PipelineDriver::run_iteration()
{
  loss_sum_ = 0;
  const PipelineShape shape = pipeline_shape(ctx_.plan);
  for (const PipelineStep& step : stage_schedule(shape, stage_.stage())) {
    if (step.phase == PipelinePhase::Forward)
      forward_step(step.micro_batch, step.chunk);
    else
      backward_step(step.micro_batch, step.chunk);
  }
  return loss_sum_;
}

Tensor PipelineDriver::tokens(int64_t micro_batch, int64_t shift)
{
  const int64_t s = ctx_.seq(), b = ctx_.batch();
  Tensor t = ctx_.tensor(MemoryPurpose::Workspace, DType::I32, {s, b});
  std::vector<int32_t> ids(static_cast<size_t>(s * b));
  for (int64_t j = 0; j < b; ++j) {
    const std::vector<int32_t> sample = corpus_.sample(ctx_.sample_base(micro_batch) + j, s + 1);
    for (int64_t i = 0; i < s; ++i)
      ids[static_cast<size_t>(i * b + j)] = sample[static_cast<size_t>(i + shift)];
  }
  upload(ctx_.backend, t, ids);
  return t;
}

int PipelineDriver::peer_rank(int64_t virtual_stage) const
{
  return ctx_.grid.rank_of(ctx_.coords.dp, virtual_stage % ctx_.plan.pp, ctx_.coords.tp);
}

namespace {
// A message's tag: direction, micro-batch and the virtual stage it goes to.
int64_t message_tag(bool gradient, int64_t micro_batch, int64_t to_virtual_stage)
{
  return (static_cast<int64_t>(gradient) << 48) | (micro_batch << 20) | to_virtual_stage;
}
} // namespace

void PipelineDriver::send(const Tensor& message, int64_t to_virtual_stage, int64_t micro_batch, bool gradient)
{
  const int peer = peer_rank(to_virtual_stage);
  // Scatter/gather (op_vocabulary.hpp pipeline_scatter_gather): this TP rank's 1/t of the flattened message.
  const int64_t parts = pipeline_scatter_gather(ctx_.shape) ? ctx_.tp_size() : 1;
  const int64_t part_numel = message.numel() / parts;
  const Tensor t = message.view(parts > 1 ? ctx_.coords.tp * part_numel : 0, {part_numel});
  traces::Op op;
  op.kind = traces::OpKind::Send;
  op.name = op_name(gradient ? OpName::PpSendGradient : OpName::PpSendActivation);
  op.stream = static_cast<int32_t>(TraceStream::Pipeline);
  op.peer = peer;
  op.bytes = static_cast<double>(t.bytes());
  op.sequence = ctx_.tracer.next_send_sequence(peer);
  const int64_t sequence = op.sequence;
  // On the communication stream: after the compute issued so far, and the compute after it.
  const BackendRange range(ctx_.backend, op.name);
  ctx_.backend.communication_waits_for_compute();
  {
    TraceScope scope(ctx_.tracer, std::move(op));
    const int64_t tag = message_tag(gradient, micro_batch, to_virtual_stage);
    if (ctx_.world->messages_reach(t.device())) { // host memory in-process; device memory over NCCL
      ctx_.world->send(t.raw(), t.bytes(), peer, tag, sequence);
    } else { // the in-process communicator moves host bytes: stage a device tensor through the host
      std::vector<char> host(static_cast<size_t>(t.bytes()));
      ctx_.backend.download(host.data(), t, t.bytes());
      ctx_.world->send(host.data(), t.bytes(), peer, tag, sequence);
    }
  }
  ctx_.backend.compute_waits_for_communication();
}

Tensor PipelineDriver::recv(DType dtype, int64_t from_virtual_stage, int64_t micro_batch, bool gradient)
{
  const int peer = peer_rank(from_virtual_stage);
  const int64_t me = gradient ? from_virtual_stage - 1 : from_virtual_stage + 1;
  Tensor message = ctx_.tensor(MemoryPurpose::Workspace, dtype, {ctx_.seq_local(), ctx_.batch(), ctx_.hidden()});
  // Scatter/gather: this rank receives the sender's chunk of its own TP index, then all-gathers the t chunks.
  const bool scattered = pipeline_scatter_gather(ctx_.shape);
  Tensor chunk;
  if (scattered)
    chunk = ctx_.tensor(MemoryPurpose::Workspace, dtype, {message.numel() / ctx_.tp_size()});
  const Tensor t = scattered ? chunk.view(0, {chunk.numel()}) : message.view(0, {message.numel()});
  traces::Op op;
  op.kind = traces::OpKind::Recv;
  op.name = op_name(gradient ? OpName::PpRecvGradient : OpName::PpRecvActivation);
  op.stream = static_cast<int32_t>(TraceStream::Pipeline);
  op.peer = peer;
  op.bytes = static_cast<double>(t.bytes());
  {
    const BackendRange range(ctx_.backend, op.name);
    ctx_.backend.communication_waits_for_compute(); // `t` was allocated and zeroed on the compute stream
    {
      TraceScope scope(ctx_.tracer, std::move(op));
      const int64_t tag = message_tag(gradient, micro_batch, me);
      int64_t sequence = 0;
      if (ctx_.world->messages_reach(t.device())) {
        sequence = ctx_.world->recv(t.raw(), t.bytes(), peer, tag);
      } else {
        std::vector<char> host(static_cast<size_t>(t.bytes()));
        sequence = ctx_.world->recv(host.data(), t.bytes(), peer, tag);
        ctx_.backend.upload(t, host.data(), t.bytes());
      }
      if (traces::Op* recorded = scope.op())
        recorded->sequence = sequence; // the sender's number for this message on the (peer, this rank) channel
    }
    ctx_.backend.compute_waits_for_communication();
  }
  if (scattered)
    ctx_.tp.all_gather(chunk, message, chunk.numel(), op_name(OpName::PpAllGather));
  return message;
}

void PipelineDriver::forward_step(int64_t micro_batch, int64_t chunk)
{
  const int64_t vs = stage_.virtual_stage(chunk);
  ctx_.set_context(traces::Phase::Forward, -1, static_cast<int32_t>(micro_batch), static_cast<int32_t>(chunk));
  InFlight& state = in_flight_[{micro_batch, chunk}];
  Tensor x = vs == 0 ? stage_.embedding()->forward(tokens(micro_batch, 0), micro_batch, state.embedding)
                     : recv(DType::BF16, vs - 1, micro_batch, false);
  std::deque<TransformerLayer>& layers = stage_.layers(chunk);
  state.layers.resize(layers.size());
  for (size_t l = 0; l < layers.size(); ++l) {
    const int64_t before = ctx_.memory.current_bytes(MemoryPurpose::LayerActivations);
    x = layers[l].forward(std::move(x), micro_batch, state.layers[l]);
    saved_per_layer_.add(ctx_.memory.current_bytes(MemoryPurpose::LayerActivations) - before);
  }
  if (vs == stage_.virtual_stages() - 1)
    loss_sum_ += stage_.output()->forward(std::move(x), tokens(micro_batch, 1), state.output);
  else
    send(x, vs + 1, micro_batch, false);
}

void PipelineDriver::backward_step(int64_t micro_batch, int64_t chunk)
{
  const int64_t vs = stage_.virtual_stage(chunk);
  ctx_.set_context(traces::Phase::Backward, -1, static_cast<int32_t>(micro_batch), static_cast<int32_t>(chunk));
  InFlight& state = in_flight_.at({micro_batch, chunk});
  // Each micro-batch's mean loss counts 1/(m dp) in the iteration's mean loss.
  const float loss_scale = 1.0f / static_cast<float>(ctx_.plan.micro_batches() * ctx_.plan.dp);
  Tensor d = vs == stage_.virtual_stages() - 1 ? stage_.output()->backward(state.output, loss_scale)
                                               : recv(DType::F32, vs + 1, micro_batch, true);
  std::deque<TransformerLayer>& layers = stage_.layers(chunk);
  for (size_t l = layers.size(); l-- > 0;)
    d = layers[l].backward(std::move(d), micro_batch, state.layers[l]);
  if (vs == 0)
    stage_.embedding()->backward(d, state.embedding);
  else
    send(d, vs - 1, micro_batch, true);
  in_flight_.erase({micro_batch, chunk});
}

} // namespace gputwin::engine
