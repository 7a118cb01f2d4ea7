#include "gputwin/traces/op_graph.hpp"

namespace gputwin::traces {

std::string to_string(OpKind k)
{
  switch (k) {
  case OpKind::Compute: return "compute";
  case OpKind::Collective: return "collective";
  case OpKind::Send: return "send";
  case OpKind::Recv: return "recv";
  case OpKind::Memcpy: return "memcpy";
  }
  return "?";
}

std::string to_string(Phase p)
{
  switch (p) {
  case Phase::Forward: return "forward";
  case Phase::Backward: return "backward";
  case Phase::Recompute: return "recompute";
  case Phase::Optimizer: return "optimizer";
  }
  return "?";
}

std::optional<OpKind> parse_op_kind(const std::string& text)
{
  for (const OpKind k : {OpKind::Compute, OpKind::Collective, OpKind::Send, OpKind::Recv, OpKind::Memcpy})
    if (to_string(k) == text)
      return k;
  return std::nullopt;
}

std::optional<Phase> parse_phase(const std::string& text)
{
  for (const Phase p : {Phase::Forward, Phase::Backward, Phase::Recompute, Phase::Optimizer})
    if (to_string(p) == text)
      return p;
  return std::nullopt;
}

} // namespace gputwin::traces
