// The twin contract: the engine (CPU backend, every rank a thread) and the simulator's workload generator
// describe the same iteration. For each plan, every engine rank's traced program is held against the
// generated program of its stage, op by op: the same ops in the same order with the same name, kind, phase,
// layer, micro-batch, chunk, FLOPs, bytes and GEMM shape; collectives on the same communicator (compared by
// its kind and members, not by index) with the same operation and sequence number; sends and receives to the
// same peer with the same sequence number. The generator writes one program per stage for its rank (tp 0,
// dp 0); the other ranks of the stage run the same program on their own communicators and peers
// (models/workload.hpp, "Folding"), which is what the comparison maps.
//
// Documented exceptions (models/op_vocabulary.hpp, "Where the engine differs"), each checked here as the rule
// it is, never skipped:
//   - the engine's fused attention-backward pairs: one engine op for two generator GEMMs, whose FLOPs and
//     bytes it carries (the merged op is built from the vocabulary's pair);
//   - fp32 in the engine where Megatron moves bf16: the pipeline's gradient messages (and, scattered, their
//     TP all-gather), the reductions of the
//     row-parallel linears' partial outputs (the engine's GEMMs write fp32) and every TP collective of
//     gradients in backward: twice the generator's bytes (engine_carries_fp32());
//   - flash attention costed with the engine backend's tile (causal tiles skipped), the generator's default
//     tile otherwise (flash_cost_with_tile());
//   - Megatron's gradient passes (grad.zero, grad.check_scale, optimizer.clip_grad), which the engine does not run:
//     the contract's generator runs without them, and a test checks that they are the only ops that option adds.
#include "gputwin/engine/backend/backend_factory.hpp"
#include "gputwin/engine/train/trainer.hpp"
#include "gputwin/models/flash_attention_cost.hpp"
#include "gputwin/models/op_emitter.hpp"
#include "gputwin/models/op_vocabulary.hpp"
#include "gputwin/models/rank_layout.hpp"
#include "gputwin/models/workload.hpp"
#include "llama_test_model.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace gputwin {
namespace {

GptConfig tiny_model();

struct ContractCase {
  std::string label;
  ParallelPlan plan;
  GptConfig model = tiny_model();
};

std::ostream& operator<<(std::ostream& os, const ContractCase& c)
{
  return os << c.label;
}

GptConfig tiny_model()
{
  GptConfig m;
  m.name = "twin-contract";
  m.hidden = 128;
  m.heads = 4;
  m.layers = 4;
  m.seq_len = 64;
  m.vocab = 128;
  return m;
}

// The same size as a Llama-style model (llama_test_model.hpp), SwiGLU with its own width.
GptConfig tiny_llama()
{
  GptConfig m = with_llama_layers(tiny_model(), 192);
  m.name = "twin-contract-llama";
  return m;
}

ParallelPlan make_plan(int64_t tp, int64_t pp, int64_t dp, int64_t micro_batches)
{
  ParallelPlan p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.micro_batch = 2;
  p.global_batch = p.micro_batch * dp * micro_batches;
  return p;
}

std::vector<ContractCase> contract_cases()
{
  std::vector<ContractCase> cases;
  {
    ParallelPlan p = make_plan(2, 2, 2, 4);
    p.tp_comm = TpComm::SequenceParallel;
    p.recompute = Recompute::Selective;
    cases.push_back({"tp2_pp2_dp2_sp_selective", p});
  }
  {
    ParallelPlan p = make_plan(2, 1, 1, 2);
    cases.push_back({"tp2_plain_tp", p});
  }
  {
    ParallelPlan p = make_plan(1, 2, 1, 4);
    p.recompute = Recompute::Full;
    cases.push_back({"pp2_full_recompute", p});
  }
  {
    // TP without SP across stages (Table 5's full-recompute plans): Megatron's scatter/gather of pipeline
    // messages, each TP rank sending 1/t and the receiver all-gathering (op_vocabulary.hpp).
    ParallelPlan p = make_plan(2, 2, 1, 4);
    p.recompute = Recompute::Full;
    cases.push_back({"tp2_pp2_full_recompute_scatter_gather", p});
  }
  {
    ParallelPlan p = make_plan(2, 2, 1, 4);
    p.tp_comm = TpComm::SequenceParallel;
    p.schedule = Schedule::Interleaved;
    p.chunks = 2;
    cases.push_back({"tp2_pp2_interleaved_sp", p});
  }
  {
    ParallelPlan p = make_plan(1, 1, 2, 2);
    p.zero_stage = 1;
    cases.push_back({"dp2_zero1", p});
  }
  {
    ParallelPlan p = make_plan(2, 1, 2, 2);
    p.tp_comm = TpComm::SequenceParallel;
    p.zero_stage = 1;
    p.recompute = Recompute::Selective;
    cases.push_back({"tp2_dp2_sp_zero1_selective", p});
  }
  {
    ParallelPlan p = make_plan(2, 2, 1, 2);
    p.tp_comm = TpComm::SequenceParallel;
    p.attention = AttentionKernel::Flash;
    p.recompute = Recompute::Selective;
    cases.push_back({"tp2_pp2_sp_flash", p});
  }
  {
    ParallelPlan p = make_plan(2, 2, 1, 4);
    p.tp_comm = TpComm::SequenceParallel;
    p.recompute = Recompute::Selective;
    cases.push_back({"llama_tp2_pp2_sp_selective", p, tiny_llama()});
  }
  {
    // Each architecture switch on its own against the GPT: learned positions without dropout (the positions
    // added inside embedding.fwd), GQA with flash attention, biases with SwiGLU, untied at pp 1, full recompute.
    GptConfig m = tiny_model();
    m.query_groups = 2;
    m.activation = Activation::SwiGlu;
    m.tie_embeddings = false;
    m.dropout = false;
    ParallelPlan p = make_plan(2, 1, 2, 2);
    p.attention = AttentionKernel::Flash;
    p.recompute = Recompute::Full;
    cases.push_back({"gqa2_flash_swiglu_bias_untied_tp2_dp2_full", p, m});
  }
  {
    // Uneven pipeline stages: one layer on the first stage, three on the last.
    ParallelPlan p = make_plan(1, 2, 1, 4);
    p.pp_first_stage_layers = 1;
    cases.push_back({"pp2_uneven_stages", p, tiny_llama()});
  }
  {
    // Interleaved with uneven stages (chunk_layers): 5 layers, 2 on the first stage (1 + 1 over its chunks),
    // 3 on the last (2 + 1: its last chunk, with the output layer, the lighter).
    GptConfig m = tiny_llama();
    m.layers = 5;
    ParallelPlan p = make_plan(2, 2, 1, 4);
    p.tp_comm = TpComm::SequenceParallel;
    p.schedule = Schedule::Interleaved;
    p.chunks = 2;
    p.pp_first_stage_layers = 2;
    p.pp_last_stage_layers = 3;
    cases.push_back({"tp2_pp2_interleaved_uneven_stages_sp", p, m});
  }
  {
    // Nemotron-4's layer: squared-ReLU MLP, GQA, RoPE, LayerNorm, no biases, no dropout, untied embeddings.
    GptConfig m = tiny_llama();
    m.name = "twin-contract-nemotron";
    m.activation = Activation::SquaredRelu;
    m.norm = Norm::LayerNorm;
    m.ffn_hidden = 256;
    ParallelPlan p = make_plan(2, 2, 1, 4);
    p.tp_comm = TpComm::SequenceParallel;
    cases.push_back({"nemotron_squared_relu_tp2_pp2_sp", p, m});
  }
  {
    // Mixture of experts: 4 experts, top-2, the first layer dense; EP 2 over the data-parallel ranks (the expert
    // gradients reduced over edp = 1: none), and EP 2 x TP 2 with SP and whole experts (etp 1) over two stages.
    GptConfig m = tiny_model();
    m.name = "twin-contract-moe";
    m.moe.experts = 4;
    m.moe.topk = 2;
    m.moe.expert_ffn_hidden = 96;
    m.moe.dense_first_layers = 1;
    m.bias = false; // the engine's experts have no biases (engine/README.md "Mixture of experts")
    ParallelPlan p = make_plan(1, 1, 2, 2);
    p.ep = 2;
    cases.push_back({"moe_ep2_dp2", p, m});
    ParallelPlan q = make_plan(2, 2, 1, 4);
    q.tp_comm = TpComm::SequenceParallel;
    q.ep = 2;
    q.etp = 1;
    cases.push_back({"moe_ep2_tp2_pp2_sp_etp1", q, m});
  }
  return cases;
}

std::string describe(const traces::Op& op, const traces::OpGraph& g)
{
  std::ostringstream os;
  os << op.name << " [" << traces::to_string(op.kind) << ", " << traces::to_string(op.phase) << ", layer " << op.layer
     << ", mb " << op.micro_batch << ", chunk " << op.chunk << ", flops " << op.flops << ", bytes " << op.bytes;
  if (op.gemm.m > 0)
    os << ", gemm " << op.gemm.m << "x" << op.gemm.n << "x" << op.gemm.k << "x" << op.gemm.batch;
  if (op.kind == traces::OpKind::Collective && op.group >= 0 && op.group < static_cast<int32_t>(g.groups.size()))
    os << ", " << g.groups[static_cast<size_t>(op.group)].kind << " group, seq " << op.sequence;
  if (op.kind == traces::OpKind::Send || op.kind == traces::OpKind::Recv)
    os << ", peer " << op.peer << ", seq " << op.sequence;
  os << "]";
  return os.str();
}

// The generated op as rank `rank` runs it: its communicator's members and its peer moved from the stage's
// representative rank (tp 0, dp 0) to `rank`'s own tp and dp coordinates.
struct Expected {
  traces::Op op;
  std::vector<int32_t> group_ranks;
  std::string group_kind;
};

// Where the engine moves fp32 and the generator (Megatron) bf16: see the file comment.
bool engine_carries_fp32(const traces::Op& generated)
{
  const std::optional<OpName> name = parse_op_name(generated.name);
  if (!name)
    return false;
  switch (*name) {
  case OpName::PpSendGradient:
  case OpName::PpRecvGradient: return true;
  case OpName::PpAllGather: return generated.phase == traces::Phase::Backward; // a received gradient's chunks
  case OpName::TpReduceScatter:
  case OpName::TpAllReduce:
    // Forward (and its recompute): a layer's row-parallel output; backward: an input gradient. The embedding's
    // forward reduction sums bf16 lookups.
    return generated.phase == traces::Phase::Backward || generated.layer >= 0;
  case OpName::TpAllGather:
    // Backward on the compute stream: a gradient; on the async stream: a saved activation re-gathered.
    return generated.phase == traces::Phase::Backward && generated.stream == WorkloadStream::compute_stream;
  default: return false;
  }
}

// The generator's program with each pair the engine fuses merged into the engine's op.
std::vector<traces::Op> merge_fused_pairs(const std::vector<traces::Op>& ops)
{
  std::vector<traces::Op> merged;
  for (size_t i = 0; i < ops.size(); ++i) {
    const traces::Op& op = ops[i];
    std::optional<FusedPair> pair;
    for (const OpName fused : {OpName::AttnContextBwd, OpName::AttnScoresBwd})
      if (const std::optional<FusedPair> p = engine_fused_pair(fused); p && op.name == op_name(p->first))
        pair = p;
    if (pair && i + 1 < ops.size() && ops[i + 1].name == op_name(pair->second)) {
      traces::Op fused = op;
      fused.name = op_name(pair->fused);
      fused.flops += ops[i + 1].flops;
      fused.bytes += ops[i + 1].bytes;
      fused.gemm.batch *= 2;
      merged.push_back(fused);
      ++i;
      continue;
    }
    merged.push_back(op);
  }
  return merged;
}

// The flash attention op `op` costed with the backend's tile instead of the generator's default.
void flash_cost_with_tile(traces::Op& op, const LayerShape& s, int64_t tile_tokens)
{
  const int64_t batch = s.b * s.heads_per_rank();
  const double kv_share = static_cast<double>(s.g) / static_cast<double>(s.a);
  if (op.name == op_name(OpName::AttnFlashFwd) || op.name == op_name(OpName::AttnFlashBwd)) {
    const FusedAttentionCost c = op.name == op_name(OpName::AttnFlashFwd)
                                     ? flash_attention_forward_cost(batch, s.s, s.head_dim(), tile_tokens, kv_share)
                                     : flash_attention_backward_cost(batch, s.s, s.head_dim(), tile_tokens, kv_share);
    op.flops = c.flops;
    op.bytes = c.bytes;
    op.gemm = c.shape;
  }
}

Expected as_run_by(const traces::Op& op, const traces::OpGraph& generated, const ParallelPlan& plan, int32_t rank,
                   const LayerShape& shape, int64_t tile_tokens)
{
  Expected e{op, {}, {}};
  flash_cost_with_tile(e.op, shape, tile_tokens);
  const RankCoord me = rank_coord(plan, rank);
  if (op.kind == traces::OpKind::Collective) {
    const traces::CommGroup& g = generated.groups.at(static_cast<size_t>(op.group));
    e.group_kind = g.kind;
    const bool expert_group = g.kind == "ep" || g.kind == "etp" || g.kind == "edp";
    for (const int32_t member : g.ranks) {
      if (expert_group) { // the expert grid's coordinates (rank_layout.hpp): only the group's own one varies
        const ExpertCoord mine = expert_coord(plan, rank);
        ExpertCoord c = expert_coord(plan, member);
        if (g.kind != "ep")
          c.ep = mine.ep;
        if (g.kind != "etp")
          c.etp = mine.etp;
        if (g.kind != "edp")
          c.edp = mine.edp;
        e.group_ranks.push_back(static_cast<int32_t>(expert_global_rank(plan, c)));
        continue;
      }
      RankCoord c = rank_coord(plan, member);
      if (g.kind != "dp")
        c.dp = me.dp;
      if (g.kind != "tp")
        c.tp = me.tp;
      e.group_ranks.push_back(static_cast<int32_t>(global_rank(plan, c)));
    }
  }
  if (op.kind == traces::OpKind::Send || op.kind == traces::OpKind::Recv) {
    RankCoord c = rank_coord(plan, op.peer);
    c.dp = me.dp;
    c.tp = me.tp;
    e.op.peer = static_cast<int32_t>(global_rank(plan, c));
  }
  if (engine_carries_fp32(op))
    e.op.bytes *= 2;
  return e;
}

// Every difference between the traced and the generated programs, one line each (at most `limit` per rank).
std::vector<std::string> contract_violations(const traces::OpGraph& traced, const traces::OpGraph& generated,
                                             const ParallelPlan& plan, const LayerShape& shape, int64_t tile_tokens,
                                             int limit = 5)
{
  std::vector<std::string> violations;
  if (traced.ranks.size() != static_cast<size_t>(plan.gpus()))
    violations.push_back("traced ranks: " + std::to_string(traced.ranks.size()));
  for (const traces::RankProgram& program : traced.ranks) {
    const RankCoord coord = rank_coord(plan, program.rank);
    const std::string where = "rank " + std::to_string(program.rank) + " (stage " + std::to_string(coord.stage) +
                              ", dp " + std::to_string(coord.dp) + ", tp " + std::to_string(coord.tp) + ") ";
    const std::vector<traces::Op> expected =
        merge_fused_pairs(generated.ranks.at(static_cast<size_t>(coord.stage)).ops);
    const size_t n = std::min(program.ops.size(), expected.size());
    int mismatches = 0;
    for (size_t i = 0; i < n && mismatches < limit; ++i) {
      const traces::Op& got = program.ops[i];
      const Expected want = as_run_by(expected[i], generated, plan, program.rank, shape, tile_tokens);
      const traces::Op& w = want.op;
      bool same = got.name == w.name && got.kind == w.kind && got.phase == w.phase && got.layer == w.layer &&
                  got.micro_batch == w.micro_batch && got.chunk == w.chunk && got.flops == w.flops &&
                  got.bytes == w.bytes && got.gemm == w.gemm;
      if (same && got.kind == traces::OpKind::Collective) {
        const traces::CommGroup& g = traced.groups.at(static_cast<size_t>(got.group));
        same = g.kind == want.group_kind && g.ranks == want.group_ranks && got.collective == w.collective &&
               got.sequence == w.sequence;
      }
      if (same && (got.kind == traces::OpKind::Send || got.kind == traces::OpKind::Recv))
        same = got.peer == w.peer && got.sequence == w.sequence;
      if (!same) {
        ++mismatches;
        violations.push_back(where + "op " + std::to_string(i) + ": engine " + describe(got, traced) +
                             "\n   generator " + describe(w, generated));
      }
    }
    if (program.ops.size() != expected.size())
      violations.push_back(where + "has " + std::to_string(program.ops.size()) + " ops, the generator's stage " +
                           std::to_string(expected.size()));
  }
  return violations;
}

struct Programs {
  traces::OpGraph traced, generated;
  LayerShape shape;
  int64_t tile_tokens = 0;
};

Programs run_both(const ParallelPlan& plan, const GptConfig& model = tiny_model())
{
  validate_plan(model, plan);
  engine::TrainConfig config;
  config.model = model;
  config.plan = plan;
  config.steps = 1;
  config.record_trace = true;
  Programs p;
  p.traced = engine::train(config).trace;
  // The engine runs none of Megatron's gradient passes (it only zeroes its gradients, untraced): the generator
  // without them (WorkloadOptions::gradient_passes; GradientPassesAreTheOnlyOpsTheEngineLacks holds the rest).
  WorkloadOptions options;
  options.gradient_passes = false;
  p.generated = workload_graph(make_workload(model, plan, options));
  p.shape = layer_shape(model, plan);
  p.tile_tokens = engine::make_backend(engine::BackendKind::Cpu)->fused_attention_tile_tokens();
  return p;
}

class TwinContract : public ::testing::TestWithParam<ContractCase> {};

TEST_P(TwinContract, EngineAndGeneratorRunTheSameOpsOnEveryRank)
{
  const Programs p = run_both(GetParam().plan, GetParam().model);
  for (const std::string& v : contract_violations(p.traced, p.generated, GetParam().plan, p.shape, p.tile_tokens))
    ADD_FAILURE() << v;
}

// The contract is not vacuous: renaming one op on either side, or moving one op, breaks it.
TEST(TwinContractCheck, CatchesARenamedOrMovedOp)
{
  const ParallelPlan plan = contract_cases().front().plan;
  Programs p = run_both(plan);
  ASSERT_TRUE(contract_violations(p.traced, p.generated, plan, p.shape, p.tile_tokens).empty());

  Programs renamed_engine = p;
  renamed_engine.traced.ranks[1].ops[3].name = "ln1.forward";
  EXPECT_FALSE(contract_violations(renamed_engine.traced, p.generated, plan, p.shape, p.tile_tokens).empty());

  Programs renamed_generator = p;
  renamed_generator.generated.ranks[0].ops[20].name += "_v2";
  EXPECT_FALSE(contract_violations(p.traced, renamed_generator.generated, plan, p.shape, p.tile_tokens).empty());

  Programs moved = p;
  std::vector<traces::Op>& ops = moved.traced.ranks[0].ops;
  std::swap(ops[5], ops[6]);
  EXPECT_FALSE(contract_violations(moved.traced, p.generated, plan, p.shape, p.tile_tokens).empty());
}

INSTANTIATE_TEST_SUITE_P(Plans, TwinContract, ::testing::ValuesIn(contract_cases()),
                         [](const ::testing::TestParamInfo<ContractCase>& param_info) { return param_info.param.label; });

} // namespace
} // namespace gputwin
