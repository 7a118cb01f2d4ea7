// The MoE block's backward: unpermute, the combine's and the experts' backward, the dispatch's, permute and the
// router (through the normalised top-k probabilities and the softmax).
#include "gputwin/engine/model/moe_mlp.hpp"

namespace gputwin::engine {

Tensor MoeMlp::experts_backward(const Tensor& d_expert_out, MoeActivations& acts)
{
  const int64_t h = ctx_.hidden(), f = ctx_.model.moe.expert_ffn_hidden, w1 = fc1_width();
  int64_t rows = 0;
  for (const int64_t r : acts.recv_rows)
    rows += r;
  const int64_t alloc = std::max<int64_t>(rows, 1);
  Backend& be = ctx_.backend;
  Tensor d_act = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {alloc, f});
  ctx_.compute(OpName::ExpertFc2Dgrad, [&] {
    for_each_block(acts, [&](int64_t e, int64_t row, int64_t n) {
      Tensor out = d_act.view(row * f, {n, f});
      be.gemm(out, d_expert_out.view(row * h, {n, h}), false, fc2_[static_cast<size_t>(e)]->weight, true, n, f, h,
              1.0f, 0.0f);
    });
  });
  ctx_.compute(OpName::ExpertFc2Wgrad, [&] {
    for_each_block(acts, [&](int64_t e, int64_t row, int64_t n) {
      be.gemm(fc2_[static_cast<size_t>(e)]->grad, acts.act_out.view(row * f, {n, f}), true,
              d_expert_out.view(row * h, {n, h}), false, f, h, n, 1.0f, 1.0f);
    });
  });
  const bool swiglu = ctx_.model.activation == Activation::SwiGlu;
  Tensor d_fc1 = swiglu ? ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {alloc, w1}) : d_act.view(0, d_act.shape());
  ctx_.compute(OpName::ExpertActBwd, [&] {
    if (swiglu)
      be.swiglu_backward(d_fc1, d_act, acts.fc1_out, rows, f);
    else if (ctx_.model.activation == Activation::SquaredRelu)
      be.squared_relu_backward(d_fc1, d_act, acts.fc1_out, rows * f);
    else
      be.gelu_backward(d_fc1, d_act, acts.fc1_out, rows * f);
  });
  // The input gradient in bf16, as it travels back (Megatron keeps activation gradients in bf16).
  Tensor d_expert_in = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {alloc, h});
  ctx_.compute(OpName::ExpertFc1Dgrad, [&] {
    for_each_block(acts, [&](int64_t e, int64_t row, int64_t n) {
      Tensor out = d_expert_in.view(row * h, {n, h});
      be.gemm(out, d_fc1.view(row * w1, {n, w1}), false, fc1_[static_cast<size_t>(e)]->weight, true, n, h, w1, 1.0f,
              0.0f);
    });
  });
  ctx_.compute(OpName::ExpertFc1Wgrad, [&] {
    for_each_block(acts, [&](int64_t e, int64_t row, int64_t n) {
      be.gemm(fc1_[static_cast<size_t>(e)]->grad, acts.expert_in.view(row * h, {n, h}), true,
              d_fc1.view(row * w1, {n, w1}), false, h, w1, n, 1.0f, 1.0f);
    });
  });
  return d_expert_in;
}

Tensor MoeMlp::backward(const Tensor& d_out, const Tensor& ln2, MoeActivations& acts)
{
  const int64_t tokens = ctx_.rows_local(), h = ctx_.hidden(), experts = ctx_.model.moe.experts;
  const int64_t k = ctx_.model.moe.topk;
  Backend& be = ctx_.backend;
  Tensor d_combined = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {tokens * k, h});
  Tensor d_weights = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {tokens, k});
  ctx_.compute(OpName::MoeUnpermuteBwd, [&] {
    be.moe_unpermute_backward(d_combined, d_weights, d_out, acts.combined, acts.weights, acts.positions, tokens, k, h);
  });
  int64_t rows = 0;
  for (const int64_t r : acts.recv_rows)
    rows += r;
  Tensor d_expert_out = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {std::max<int64_t>(rows, 1), h});
  ctx_.ep.all_to_all_v(d_combined, acts.send_rows, d_expert_out, acts.recv_rows, h,
                       moe_collective_bytes(OpName::MoeCombineBwd, ctx_.shape), op_name(OpName::MoeCombineBwd));
  const Tensor d_expert_in = experts_backward(d_expert_out, acts);
  Tensor d_permuted = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {tokens * k, h});
  ctx_.ep.all_to_all_v(d_expert_in, acts.recv_rows, d_permuted, acts.send_rows, h,
                       moe_collective_bytes(OpName::MoeDispatchBwd, ctx_.shape), op_name(OpName::MoeDispatchBwd));
  Tensor d_ln2 = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {tokens, h});
  ctx_.compute(OpName::MoePermuteBwd,
               [&] { be.moe_permute_backward(d_ln2, d_permuted, acts.positions, tokens, k, h); });
  Tensor d_logits = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {tokens, experts});
  ctx_.compute(OpName::RouterTopkBwd, [&] {
    be.router_topk_backward(d_logits, d_weights, acts.probs, acts.indices, acts.weights, tokens, experts, k);
  });
  ctx_.compute(OpName::RouterDgrad,
               [&] { be.gemm(d_ln2, d_logits, false, router_->weight, true, tokens, h, experts, 1.0f, 1.0f); });
  ctx_.compute(OpName::RouterWgrad,
               [&] { be.gemm(router_->grad, ln2, true, d_logits, false, h, experts, tokens, 1.0f, 1.0f); });
  return d_ln2;
}

} // namespace gputwin::engine
