// The MoE block's parameters, routing and forward pass.
#include "gputwin/engine/model/moe_mlp.hpp"

#include "gputwin/engine/backend/host_access.hpp"

#include <stdexcept>

namespace gputwin::engine {

std::vector<Tensor*> MoeActivations::tensors()
{
  return {&probs, &indices, &weights, &positions, &expert_in, &fc1_out, &act_out, &combined};
}

int64_t MoeActivations::bytes() const
{
  int64_t total = 0;
  for (const Tensor* t : const_cast<MoeActivations*>(this)->tensors())
    total += t->bytes();
  return total;
}

MoeMlp::MoeMlp(RankContext& ctx, ParameterStore& store, int64_t layer) : ctx_(ctx), layer_(layer)
{
  const GptConfig& m = ctx.model;
  const int64_t h = ctx.hidden(), experts = m.moe.experts, per_rank = experts / ctx.plan.ep;
  const std::string p = "layers." + std::to_string(layer) + ".";
  const Sharding replicated{-1, 1};
  // The router reads the rank's own tokens: under SP its gradient is partial over the tp ranks.
  router_ = &store.add(ctx, ParameterSpec{p + "router.weight", h, experts, replicated, ParameterInit::Normal, true});
  const int64_t first = ctx.ep.rank() * per_rank, f = m.moe.expert_ffn_hidden;
  const int64_t fc1 = m.activation == Activation::SwiGlu ? 2 * f : f;
  for (int64_t e = first; e < first + per_rank; ++e) {
    const std::string q = p + "experts." + std::to_string(e) + ".";
    ParameterSpec w1{q + "fc1.weight", h, fc1, replicated, ParameterInit::Normal, false};
    ParameterSpec w2{q + "fc2.weight", f, h, replicated, ParameterInit::ScaledNormal, false};
    w1.expert = w2.expert = true;
    fc1_.push_back(&store.add(ctx, w1));
    fc2_.push_back(&store.add(ctx, w2));
  }
}

int64_t MoeMlp::fc1_width() const
{
  return ctx_.model.activation == Activation::SwiGlu ? 2 * ctx_.model.moe.expert_ffn_hidden
                                                     : ctx_.model.moe.expert_ffn_hidden;
}

// Copies sorted by expert, then token, then slot (the order of Megatron-Core's permute): copy (t, j) of expert e
// goes to row (copies of experts < e) + (copies of e by earlier tokens).
std::vector<int64_t> MoeMlp::route(MoeActivations& acts)
{
  const int64_t tokens = ctx_.rows_local(), k = ctx_.model.moe.topk, experts = ctx_.model.moe.experts;
  const std::vector<int32_t> chosen = download<int32_t>(ctx_.backend, acts.indices, tokens * k);
  std::vector<int64_t> per_expert(static_cast<size_t>(experts), 0), next(static_cast<size_t>(experts), 0);
  for (const int32_t e : chosen)
    ++per_expert.at(static_cast<size_t>(e));
  for (int64_t e = 1; e < experts; ++e)
    next[static_cast<size_t>(e)] = next[static_cast<size_t>(e - 1)] + per_expert[static_cast<size_t>(e - 1)];
  std::vector<int32_t> positions(chosen.size());
  for (size_t c = 0; c < chosen.size(); ++c)
    positions[c] = static_cast<int32_t>(next[static_cast<size_t>(chosen[c])]++);
  upload(ctx_.backend, acts.positions, positions);
  return per_expert;
}

// The token counts first (each EP rank learns how many rows of each of its experts every rank sends), then the
// rows.
void MoeMlp::dispatch(const Tensor& permuted, MoeActivations& acts)
{
  const int64_t per_rank = local_experts(), ranks = ctx_.ep.size(), h = ctx_.hidden();
  std::vector<int64_t> per_expert(static_cast<size_t>(ranks * per_rank));
  for (int64_t c = 0; c < ranks * per_rank; ++c) // rows per expert, from the positions' counts
    per_expert[static_cast<size_t>(c)] = acts.block_rows[static_cast<size_t>(c)];
  acts.block_rows = ctx_.ep.exchange_counts(per_expert, per_rank);
  acts.send_rows.assign(static_cast<size_t>(ranks), 0);
  acts.recv_rows.assign(static_cast<size_t>(ranks), 0);
  for (int64_t r = 0; r < ranks; ++r)
    for (int64_t l = 0; l < per_rank; ++l) {
      acts.send_rows[static_cast<size_t>(r)] += per_expert[static_cast<size_t>(r * per_rank + l)];
      acts.recv_rows[static_cast<size_t>(r)] += acts.block_rows[static_cast<size_t>(r * per_rank + l)];
    }
  int64_t received = 0;
  for (const int64_t r : acts.recv_rows)
    received += r;
  acts.expert_in = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {std::max<int64_t>(received, 1), h});
  ctx_.ep.all_to_all_v(permuted, acts.send_rows, acts.expert_in, acts.recv_rows, h,
                       moe_collective_bytes(OpName::MoeDispatch, ctx_.shape), op_name(OpName::MoeDispatch));
}

void MoeMlp::experts_forward(MoeActivations& acts, Tensor& expert_out)
{
  const int64_t h = ctx_.hidden(), f = ctx_.model.moe.expert_ffn_hidden, w1 = fc1_width();
  int64_t rows = 0;
  for (const int64_t r : acts.recv_rows)
    rows += r;
  const int64_t alloc = std::max<int64_t>(rows, 1);
  acts.fc1_out = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {alloc, w1});
  acts.act_out = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {alloc, f});
  expert_out = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {alloc, h});
  Backend& be = ctx_.backend;
  ctx_.compute(OpName::ExpertFc1Fwd, [&] {
    for_each_block(acts, [&](int64_t e, int64_t row, int64_t n) {
      Tensor out = acts.fc1_out.view(row * w1, {n, w1});
      be.gemm(out, acts.expert_in.view(row * h, {n, h}), false, fc1_[static_cast<size_t>(e)]->weight, false, n, w1, h,
              1.0f, 0.0f);
    });
  });
  ctx_.compute(OpName::ExpertActFwd, [&] {
    if (ctx_.model.activation == Activation::SwiGlu)
      be.swiglu_forward(acts.act_out, acts.fc1_out, rows, f);
    else if (ctx_.model.activation == Activation::SquaredRelu)
      be.squared_relu_forward(acts.act_out, acts.fc1_out, rows * f);
    else
      be.gelu_forward(acts.act_out, acts.fc1_out, rows * f);
  });
  ctx_.compute(OpName::ExpertFc2Fwd, [&] {
    for_each_block(acts, [&](int64_t e, int64_t row, int64_t n) {
      Tensor out = expert_out.view(row * h, {n, h});
      be.gemm(out, acts.act_out.view(row * f, {n, f}), false, fc2_[static_cast<size_t>(e)]->weight, false, n, h, f,
              1.0f, 0.0f);
    });
  });
}

Tensor MoeMlp::forward(const Tensor& ln2, MoeActivations& acts)
{
  const int64_t tokens = ctx_.rows_local(), h = ctx_.hidden(), experts = ctx_.model.moe.experts;
  const int64_t k = ctx_.model.moe.topk;
  Backend& be = ctx_.backend;
  Tensor logits = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {tokens, experts});
  ctx_.compute(OpName::RouterFwd,
               [&] { be.gemm(logits, ln2, false, router_->weight, false, tokens, experts, h, 1.0f, 0.0f); });
  acts.probs = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {tokens, experts});
  acts.indices = ctx_.tensor(MemoryPurpose::Workspace, DType::I32, {tokens, k});
  acts.weights = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {tokens, k});
  ctx_.compute(OpName::RouterTopkFwd,
               [&] { be.router_topk_forward(acts.probs, acts.indices, acts.weights, logits, tokens, experts, k); });
  acts.positions = ctx_.tensor(MemoryPurpose::Workspace, DType::I32, {tokens * k});
  Tensor permuted = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {tokens * k, h});
  ctx_.compute(OpName::MoePermuteFwd, [&] {
    acts.block_rows = route(acts); // rows per expert, all E
    be.moe_permute_forward(permuted, ln2, acts.positions, tokens, k, h);
  });
  dispatch(permuted, acts);
  Tensor expert_out;
  experts_forward(acts, expert_out);
  acts.combined = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {tokens * k, h});
  ctx_.ep.all_to_all_v(expert_out, acts.recv_rows, acts.combined, acts.send_rows, h,
                       moe_collective_bytes(OpName::MoeCombine, ctx_.shape), op_name(OpName::MoeCombine));
  Tensor out = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {tokens, h});
  ctx_.compute(OpName::MoeUnpermuteFwd, [&] {
    be.moe_unpermute_forward(out, acts.combined, acts.weights, acts.positions, tokens, k, h);
  });
  return out;
}

} // namespace gputwin::engine
