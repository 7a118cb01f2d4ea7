#include "gputwin/models/token_exchange.hpp"

#include "gputwin/models/op_vocabulary.hpp"

#include <algorithm>

namespace gputwin {

bool returns_tokens(const traces::Op& op)
{
  const std::optional<OpName> name = parse_op_name(op.name);
  return name == OpName::MoeCombine || name == OpName::MoeDispatchBwd;
}

std::optional<AllToAllWeights> token_exchange_weights(const ExpertLoads& loads, const traces::Op& op)
{
  if (op.kind != traces::OpKind::Collective || op.collective != CollectiveOp::AllToAll)
    return std::nullopt;
  const std::optional<OpName> name = parse_op_name(op.name);
  if (name != OpName::MoeDispatch && name != OpName::MoeCombine && name != OpName::MoeDispatchBwd &&
      name != OpName::MoeCombineBwd)
    return std::nullopt;
  const LayerExpertLoad* load = loads.find(op.layer);
  if (load == nullptr || std::all_of(load->rank.begin(), load->rank.end(), [](double w) { return w == 1.0; }))
    return std::nullopt;
  return AllToAllWeights{load->rank, returns_tokens(op)};
}

} // namespace gputwin
