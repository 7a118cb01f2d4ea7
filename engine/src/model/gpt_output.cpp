#include "gputwin/engine/backend/host_access.hpp"
#include "gputwin/engine/model/gpt_edges.hpp"
#include "gputwin/engine/parallel/tp_regions.hpp"

#include <cmath>

namespace gputwin::engine {

GptOutput::GptOutput(RankContext& ctx, ParameterStore& store, Parameter& word) : ctx_(ctx), word_(word)
{
  norm_ = NormParameters::declare(ctx, store, "final_ln");
}

double GptOutput::forward(Tensor y, Tensor targets, OutputSaved& saved)
{
  const int64_t h = ctx_.hidden(), rows = ctx_.rows_full(), rows_l = ctx_.rows_local();
  const int64_t v_local = ctx_.vocab_local(), v_owned = ctx_.vocab_owned();
  OpContext c = ctx_.tracer.context();
  ctx_.set_context(traces::Phase::Forward, -1, c.micro_batch, c.chunk);
  saved.y = std::move(y);
  saved.y.retag(MemoryPurpose::EdgeActivations);
  saved.targets = std::move(targets);
  saved.targets.retag(MemoryPurpose::EdgeActivations);
  saved.ln = ctx_.tensor(MemoryPurpose::EdgeActivations, DType::BF16, {ctx_.seq_local(), ctx_.batch(), h});
  ctx_.compute(OpName::FinalLnFwd, [&] { norm_.forward(ctx_, saved.ln, saved.y, rows_l); });
  saved.logits = ctx_.tensor(MemoryPurpose::EdgeActivations, DType::F32, {rows, v_local});
  {
    const Tensor in = ctx_.sequence_parallel()
                          ? gather_from_sequence_parallel_region_forward(ctx_, saved.ln, h, op_name(OpName::TpAllGather))
                          : saved.ln.view(0, saved.ln.shape());
    ctx_.compute(OpName::LogitsFwd,
                 [&] { ctx_.backend.gemm(saved.logits, in, false, word_.weight, true, rows, v_local, h, 1.0f, 0.0f); });
  }
  // Fused vocabulary-parallel cross-entropy: max, then sum of exponentials and target logit, over the tp group.
  saved.row_max = ctx_.tensor(MemoryPurpose::EdgeActivations, DType::F32, {rows});
  ctx_.compute(OpName::CrossEntropyMaxFwd,
               [&] { ctx_.backend.cross_entropy_local_max(saved.row_max, saved.logits, rows, v_local, v_owned); });
  ctx_.tp.all_reduce(saved.row_max, rows, ReduceOp::Max, op_name(OpName::CrossEntropyMaxAllReduce));
  Tensor sums = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {2, rows}); // [sum_exp | target logit]
  Tensor sum_exp = sums.view(0, {rows}), target_logit = sums.view(rows, {rows});
  ctx_.compute(OpName::CrossEntropyFwd, [&] {
    ctx_.backend.cross_entropy_local_sums(sum_exp, target_logit, saved.logits, saved.targets, saved.row_max, rows,
                                          v_local, v_owned, ctx_.vocab_start());
  });
  // Megatron-LM's order: the target logit, then the sum of exponentials.
  ctx_.tp.all_reduce(target_logit, rows, ReduceOp::Sum, op_name(OpName::CrossEntropyTargetAllReduce));
  ctx_.tp.all_reduce(sum_exp, rows, ReduceOp::Sum, op_name(OpName::CrossEntropySumAllReduce));
  saved.sum_exp = ctx_.tensor(MemoryPurpose::EdgeActivations, DType::F32, {rows});
  ctx_.backend.copy_bytes(saved.sum_exp, sum_exp, rows * static_cast<int64_t>(sizeof(float)));
  // The loss is read back to the host (the only per-micro-batch readback of the step).
  const std::vector<float> host_sums = download<float>(ctx_.backend, sums);
  const std::vector<float> host_max = download<float>(ctx_.backend, saved.row_max);
  double loss = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const size_t i = static_cast<size_t>(r);
    loss += std::log(static_cast<double>(host_sums[i])) + host_max[i] - host_sums[static_cast<size_t>(rows) + i];
  }
  ctx_.set_context(c.phase, c.layer, c.micro_batch, c.chunk);
  return loss / static_cast<double>(rows);
}

Tensor GptOutput::backward(OutputSaved& saved, float loss_scale)
{
  const int64_t h = ctx_.hidden(), rows = ctx_.rows_full(), rows_l = ctx_.rows_local();
  const int64_t v_local = ctx_.vocab_local(), v_owned = ctx_.vocab_owned();
  OpContext c = ctx_.tracer.context();
  ctx_.set_context(traces::Phase::Backward, -1, c.micro_batch, c.chunk);
  Tensor d_logits = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {rows, v_local});
  ctx_.compute(OpName::CrossEntropyBwd, [&] {
    ctx_.backend.cross_entropy_backward(d_logits, saved.logits, saved.targets, saved.row_max, saved.sum_exp, rows,
                                        v_local, v_owned, ctx_.vocab_start(), loss_scale / static_cast<float>(rows));
  });
  saved.logits.reset();
  Tensor d_in = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {ctx_.seq(), ctx_.batch(), h});
  // Megatron's order: the input gradient, its reduction overlapped with the weight gradient (with SP the
  // layernorm output re-gathered first).
  const Tensor in = ctx_.sequence_parallel()
                        ? gather_from_sequence_parallel_region_forward(ctx_, saved.ln, h, op_name(OpName::TpAllGather))
                        : saved.ln.view(0, saved.ln.shape());
  ctx_.compute(OpName::LogitsDgrad,
               [&] { ctx_.backend.gemm(d_in, d_logits, false, word_.weight, false, rows, h, v_local, 1.0f, 0.0f); });
  Tensor d_ln;
  if (ctx_.sequence_parallel()) {
    d_ln = gather_from_sequence_parallel_region_backward(ctx_, d_in, h, op_name(OpName::TpReduceScatter));
  } else {
    copy_to_tensor_parallel_region_backward(ctx_, d_in, rows, h, op_name(OpName::TpAllReduce));
    d_ln = std::move(d_in);
  }
  ctx_.compute(OpName::LogitsWgrad,
               [&] { ctx_.backend.gemm(word_.grad, d_logits, true, in, false, v_local, h, rows, 1.0f, 1.0f); });
  Tensor d_y = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {ctx_.seq_local(), ctx_.batch(), h});
  ctx_.compute(OpName::FinalLnBwd, [&] { norm_.backward(ctx_, d_y, d_ln, saved.y, rows_l); });
  saved = OutputSaved{};
  ctx_.set_context(c.phase, c.layer, c.micro_batch, c.chunk);
  return d_y;
}

} // namespace gputwin::engine
