#pragma once
// THE vocabulary of a GPT rank's ops: every op the workload generator emits and the engine's tracer records,
// with its name, its kind and its cost (FLOPs, HBM bytes, GEMM shape; communication: the nccl-tests size),
// all sized by the one per-rank shape (layer_shape.hpp). The generator (layer_ops.cpp, workload.cpp) and the
// engine (engine/src/model, engine/src/train) name and cost their ops only through this table, and the test
// TwinContract.* holds the two programs against each other rank by rank, op by op.
//
// Where the engine differs (each difference is checked by TwinContract as the rule it is):
//   - Attention backward: the engine's backend computes dP and dV in one call and dQ and dK in one, traced as
//     `attn.context.bwd` and `attn.scores.bwd`; the generator times Megatron's two batched GEMMs each
//     (`attn.context.dgrad_probs` + `attn.context.dgrad_v`, `attn.scores.dgrad_q` + `attn.scores.dgrad_k`).
//     The fused op's cost is the sum of its pair's (engine_fused_pair()).
//   - Pipeline gradients: the engine keeps activation gradients in fp32 (its plan-vs-one-rank numerics tests
//     compare them bit for bit), Megatron sends them in bf16: the engine's pp.*_gradient ops carry twice
//     the generator's bytes (pipeline_message_bytes()).
//   - Flash attention's cost depends on the kernel's tile (the backend's), the generator uses the default tile.

#include "gputwin/models/layer_shape.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace gputwin {

enum class OpName : uint8_t {
  // Embedding (first model chunk).
  EmbeddingFwd,
  EmbeddingDropoutFwd,
  EmbeddingDropoutBwd,
  EmbeddingWgrad,
  // Transformer layer, forward.
  Ln1Fwd,
  QkvFwd,
  AttnScoresFwd,
  AttnSoftmaxFwd,
  AttnDropoutFwd,
  AttnContextFwd,
  AttnFlashFwd,
  ProjFwd,
  DropoutAddFwd,
  Ln2Fwd,
  Fc1Fwd,
  GeluFwd,
  Fc2Fwd,
  // Transformer layer, backward.
  DropoutAddBwd,
  Fc2Dgrad,
  Fc2Wgrad,
  Fc2BiasGrad,
  GeluBwd,
  Fc1Dgrad,
  Fc1BiasGrad,
  Fc1Wgrad,
  Ln2Bwd,
  ResidualBwd,
  ProjDgrad,
  ProjWgrad,
  ProjBiasGrad,
  AttnContextDgradProbs,
  AttnContextDgradV,
  AttnContextBwd, // the engine's fused pair (see above)
  AttnDropoutBwd,
  AttnSoftmaxBwd,
  AttnScoresDgradQ,
  AttnScoresDgradK,
  AttnScoresBwd, // the engine's fused pair
  AttnFlashBwd,
  QkvDgrad,
  QkvBiasGrad,
  QkvWgrad,
  Ln1Bwd,
  // Output layer and loss (last model chunk).
  FinalLnFwd,
  LogitsFwd,
  CrossEntropyMaxFwd,
  CrossEntropyFwd,
  CrossEntropyBwd,
  LogitsDgrad,
  LogitsWgrad,
  FinalLnBwd,
  // End of the iteration.
  OptimizerAdam,
  // Communication.
  TpAllGather,
  TpReduceScatter,
  TpAllReduce,
  CrossEntropyMaxAllReduce,
  CrossEntropyTargetAllReduce,
  CrossEntropySumAllReduce,
  SpGradAllReduce,
  EmbeddingGradAllReduce,
  DpAllReduce,
  DpReduceScatter,
  DpAllGather,
  PpSendActivation,
  PpRecvActivation,
  PpSendGradient,
  PpRecvGradient,
};
inline constexpr int op_name_count = static_cast<int>(OpName::PpRecvGradient) + 1;

// The op's name in traces ("qkv.fwd", "tp.all_gather", "pp.send_gradient", ...) and its kind.
const char* op_name(OpName op);
traces::OpKind op_kind(OpName op);
// The vocabulary entry of a trace name; nullopt for a name outside it.
std::optional<OpName> parse_op_name(std::string_view name);

struct OpCost {
  double flops = 0;
  double bytes = 0;        // compute: HBM bytes read + written
  traces::GemmShape gemm;  // GEMMs and fused kernels timed as one (m, n, k > 0)
};

// The cost of a compute op sized by `s` alone (every compute op except OptimizerAdam). A bf16 GEMM costs
// 2 m n k batch FLOPs and 2 (m k + k n + m n) batch bytes; memory-bound kernels their bytes and element FLOPs.
OpCost op_cost(OpName op, const LayerShape& s);
// Mixed-precision Adam over `owned_parameters`: read the fp32 gradient, read and write the fp32 master weight,
// momentum and variance, write the bf16 weight (4 + 8 + 8 + 8 + 2 bytes and 12 FLOPs per parameter).
OpCost optimizer_cost(double owned_parameters);

// nccl-tests size of a layer's, the embedding's or the loss's TP collective under `s`.
double tp_collective_bytes(OpName op, const LayerShape& s);
// Bytes of one pipeline message: the stage boundary's activation (or its gradient) in 16 bits, sharded by SP.
double pipeline_message_bytes(const LayerShape& s);
// Megatron keeps and reduces fp32 main gradients: data-parallel and embedding gradient bytes per parameter.
inline constexpr double gradient_bytes_per_parameter = 4.0;

// The engine's fused op for a generator pair (AttnContextBwd -> {AttnContextDgradProbs, AttnContextDgradV}).
struct FusedPair {
  OpName fused, first, second;
};
std::optional<FusedPair> engine_fused_pair(OpName fused);

} // namespace gputwin
