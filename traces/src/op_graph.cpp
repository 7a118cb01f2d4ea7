#include "gputwin/traces/op_graph.hpp"

namespace gputwin::traces {

std::string to_string(GemmPrecision p)
{
  switch (p) {
  case GemmPrecision::Bf16: return "bf16";
  case GemmPrecision::Fp8: return "fp8";
  case GemmPrecision::Mxfp8: return "mxfp8";
  case GemmPrecision::Nvfp4: return "nvfp4";
  }
  return "?";
}

std::optional<GemmPrecision> parse_gemm_precision(const std::string& text)
{
  for (const GemmPrecision p : {GemmPrecision::Bf16, GemmPrecision::Fp8, GemmPrecision::Mxfp8, GemmPrecision::Nvfp4})
    if (to_string(p) == text)
      return p;
  return std::nullopt;
}

// Element sizes and block scales: Transformer Engine's recipes (transformer_engine/common/recipe/__init__.py:
// MXFP8BlockScaling "each group of 32 consecutive values is scaled together ... E8M0"; NVFP4BlockScaling "each
// group of 16 consecutive values ... E4M3 ... a global per tensor FP32 scaling factor").
double quantized_element_bytes(GemmPrecision p)
{
  switch (p) {
  case GemmPrecision::Bf16: return 2.0;
  case GemmPrecision::Fp8: return 1.0;
  case GemmPrecision::Mxfp8: return 1.0 + 1.0 / 32.0;
  case GemmPrecision::Nvfp4: return 0.5 + 1.0 / 16.0;
  }
  return 2.0;
}

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
