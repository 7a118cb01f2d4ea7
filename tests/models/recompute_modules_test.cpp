// Megatron-Core's selective recompute by submodule (--recompute-modules): the names as Megatron-Core spells them and
// refuses them, what each module reruns in backward (by op, where its checkpoint reruns it), what it stops storing
// (closed forms from the tensor shapes) and the FLOPs it adds.
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/activation_memory.hpp"
#include "gputwin/models/flops.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/op_vocabulary.hpp"
#include "gputwin/models/workload.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace gputwin {
namespace {

GptConfig catalog_model(const std::string& name)
{
  const CatalogEntry* e = find_catalog_model(name);
  EXPECT_NE(e, nullptr) << name;
  return e ? e->model : GptConfig{};
}

// DeepSeek-V3 cut to its three dense layers and one MoE layer, no MTP; TP 2 with SP, EP 2, one micro-batch.
GptConfig small_deepseek()
{
  GptConfig m = catalog_model("deepseek-v3");
  m.layers = 4;
  m.moe.mtp_layers = 0;
  return m;
}

ParallelPlan deepseek_plan(const std::string& modules)
{
  ParallelPlan plan;
  plan.tp = 2;
  plan.ep = 2;
  plan.etp = 1;
  plan.tp_comm = TpComm::SequenceParallel;
  plan.attention = AttentionKernel::Flash;
  plan.global_batch = 1;
  plan.recompute = Recompute::Selective;
  if (!modules.empty())
    plan.recompute_modules = parse_recompute_modules(modules, "test");
  return plan;
}

// The Recompute-phase ops of micro-batch 0, by layer, in issue order.
std::map<int32_t, std::vector<std::string>> reruns(const GptConfig& m, const ParallelPlan& plan)
{
  std::map<int32_t, std::vector<std::string>> by_layer;
  for (const traces::Op& op : stage_program(make_workload(m, plan), 0).ops)
    if (op.phase == traces::Phase::Recompute && op.micro_batch == 0)
      by_layer[op.layer].push_back(op.name);
  return by_layer;
}

std::vector<std::string> names(std::initializer_list<OpName> ops)
{
  std::vector<std::string> out;
  for (const OpName op : ops)
    out.push_back(op_name(op));
  return out;
}

TEST(RecomputeModules, MegatronCoreNamesParsedAndPrinted)
{
  const RecomputeModules m = parse_recompute_modules("mlp,core_attn,mlp,moe_act", "--recompute-modules");
  EXPECT_TRUE(m.has(RecomputeModule::Mlp));
  EXPECT_TRUE(m.has(RecomputeModule::CoreAttn));
  EXPECT_FALSE(m.has(RecomputeModule::Moe));
  EXPECT_EQ(to_string(m), "core_attn,moe_act,mlp");
  EXPECT_EQ(to_string(parse_recompute_modules(
                "shared_experts,moe,mlp,mla_up_proj,moe_act,layernorm,core_attn", "f")),
            "core_attn,layernorm,moe_act,mla_up_proj,mlp,moe,shared_experts");
  for (const std::string bad : {"attn", "", "mlp,", ",mlp", "mlp,,moe", "MLP"}) {
    try {
      parse_recompute_modules(bad, "--recompute-modules");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--recompute-modules: expected a comma-separated list of core_attn|"),
                std::string::npos)
          << e.what();
    }
  }
}

// transformer_config.py __post_init__: mla_up_proj needs MLA, moe_act grouped GEMMs (experts); the modules act at
// the selective granularity only.
TEST(RecomputeModules, RefusedWhereMegatronCoreRefusesThem)
{
  const GptConfig dense = catalog_model("llama3-8b");
  ParallelPlan plan;
  plan.recompute = Recompute::Selective;
  plan.recompute_modules = parse_recompute_modules("mlp,layernorm,core_attn,moe,shared_experts", "f");
  EXPECT_NO_THROW(validate_plan(dense, plan)); // nothing of moe/shared_experts/layernorm to rerun there
  plan.recompute_modules = parse_recompute_modules("mla_up_proj", "f");
  EXPECT_THROW(validate_plan(dense, plan), InputError);
  plan.recompute_modules = parse_recompute_modules("moe_act", "f");
  EXPECT_THROW(validate_plan(dense, plan), InputError);
  plan.recompute_modules = parse_recompute_modules("mlp", "f");
  plan.recompute = Recompute::Full;
  EXPECT_THROW(validate_plan(dense, plan), InputError);
  plan.recompute = Recompute::None;
  EXPECT_THROW(validate_plan(dense, plan), InputError);
  EXPECT_NO_THROW(validate_plan(small_deepseek(), deepseek_plan("mla_up_proj,moe_act")));
}

TEST(RecomputeModules, EachModuleRerunsItsOwnOps)
{
  const GptConfig m = small_deepseek();
  ASSERT_FALSE(m.is_moe_layer(2));
  ASSERT_TRUE(m.is_moe_layer(3));
  // --recompute selective without modules: nothing to rerun around a fused attention kernel.
  EXPECT_TRUE(reruns(m, deepseek_plan("")).empty());
  // core_attn: the fused kernel's forward, as Megatron-Core's checkpoint reruns it.
  auto r = reruns(m, deepseek_plan("core_attn"));
  EXPECT_EQ(r[0], names({OpName::AttnFlashFwd}));
  EXPECT_EQ(r[3], names({OpName::AttnFlashFwd}));
  // mla_up_proj: the q and kv norms and up projections and RoPE.
  r = reruns(m, deepseek_plan("mla_up_proj"));
  const auto up = names({OpName::MlaQNormFwd, OpName::MlaQUpFwd, OpName::MlaKvNormFwd, OpName::MlaKvUpFwd,
                         OpName::RopeFwd});
  EXPECT_EQ(r[0], up);
  EXPECT_EQ(r[3], up);
  // layernorm: MLA's input norm in every layer, the pre-MLP norm only where it is its own module (MoE layers).
  r = reruns(m, deepseek_plan("layernorm"));
  EXPECT_EQ(r[0], names({OpName::Ln1Fwd}));
  EXPECT_EQ(r[3], names({OpName::Ln2Fwd, OpName::Ln1Fwd}));
  // mlp: a dense layer's norm, SP gather, fc1, activation, fc2 and reduce-scatter; nothing in a MoE layer.
  r = reruns(m, deepseek_plan("mlp"));
  EXPECT_EQ(r[2], names({OpName::Ln2Fwd, OpName::TpAllGather, OpName::Fc1Fwd, OpName::SwigluFwd, OpName::Fc2Fwd,
                         OpName::TpReduceScatter}));
  EXPECT_EQ(r.count(3), 0u);
  // moe_act: the experts' activation only.
  r = reruns(m, deepseek_plan("moe_act"));
  EXPECT_EQ(r.count(0), 0u);
  EXPECT_EQ(r[3], names({OpName::ExpertActFwd}));
  // shared_experts: the shared experts' dense MLP with its TP communication.
  r = reruns(m, deepseek_plan("shared_experts"));
  EXPECT_EQ(r[3], names({OpName::TpAllGather, OpName::Fc1Fwd, OpName::SwigluFwd, OpName::Fc2Fwd,
                         OpName::TpReduceScatter}));
  // moe: the whole MoE layer, its token exchanges included; moe_act and shared_experts add nothing to it.
  const auto moe = reruns(m, deepseek_plan("moe"));
  EXPECT_EQ(moe.count(0), 0u);
  const std::vector<std::string>& layer = moe.at(3);
  for (const OpName op : {OpName::Ln2Fwd, OpName::RouterFwd, OpName::MoeDispatch, OpName::ExpertFc1Fwd,
                          OpName::ExpertActFwd, OpName::ExpertFc2Fwd, OpName::MoeCombine, OpName::MoeUnpermuteFwd})
    EXPECT_NE(std::find(layer.begin(), layer.end(), op_name(op)), layer.end()) << op_name(op);
  EXPECT_EQ(std::find(layer.begin(), layer.end(), op_name(OpName::DropoutAddFwd)), layer.end());
  EXPECT_EQ(reruns(m, deepseek_plan("moe,moe_act,shared_experts")), moe);
}

// What stops being stored, one layer of one micro-batch (s b = 4096 tokens, 128 heads, tp 2 with SP).
TEST(RecomputeModules, MemoryDropsWhatTheCheckpointFrees)
{
  const GptConfig m = small_deepseek();
  const int64_t T = 4096, a = 128, tp = 2;
  const auto per_layer = [&](int64_t layer, const std::string& modules) {
    ParallelPlan plan = deepseek_plan(modules);
    if (modules.empty())
      plan.recompute = Recompute::None;
    return layer < 3 ? activation_bytes_per_layer(m, plan) : activation_bytes_per_layer(m, plan, layer, 1.0);
  };
  // mla_up_proj: Q and K (a x 192 wide), V (a x 128), BF16, split by t; the q and kv latents' norm outputs
  // (1536 + 512 wide), BF16, on the SP shard.
  const int64_t up = (4 * T * a * 192 + 2 * T * a * 128) / tp + 2 * T * (1536 + 512) / tp;
  EXPECT_EQ(per_layer(0, "") - per_layer(0, "mla_up_proj"), up);
  EXPECT_EQ(per_layer(3, "") - per_layer(3, "mla_up_proj"), up);
  // moe_act: the activation output (expert F = 2048 wide, BF16) of each routed copy: s b / t x top-8.
  EXPECT_EQ(per_layer(3, "") - per_layer(3, "moe_act"), T / tp * 8 * 2 * 2048);
  EXPECT_EQ(per_layer(0, "moe_act"), per_layer(0, ""));
  // mlp: a dense layer's fc1 input (the fused norm's output, BF16, its fp32 RMS statistics) on the SP shard, fc1's
  // output (2 F = 36864 wide) and the activation output (F), BF16, split by t.
  EXPECT_EQ(per_layer(0, "") - per_layer(0, "mlp"), (2 * T * 7168 + 4 * T) / tp + (2 * T * 36864 + 2 * T * 18432) / tp);
  // core_attn with the fused kernel: its fp32 log-sum-exp per (head, token), split by t.
  EXPECT_EQ(per_layer(0, "") - per_layer(0, "core_attn"), 4 * a * T / tp);
  // The modules together drop the sum of what each drops.
  EXPECT_EQ(per_layer(3, "") - per_layer(3, "mla_up_proj,moe_act,core_attn"),
            (per_layer(3, "") - per_layer(3, "mla_up_proj")) + (per_layer(3, "") - per_layer(3, "moe_act")) +
                (per_layer(3, "") - per_layer(3, "core_attn")));
}

TEST(RecomputeModules, FlopsCountTheReruns)
{
  GptConfig m = small_deepseek();
  const double tokens = 4096; // one sample
  // mla_up_proj: 2 T (q_lora a d_qk + kv_lora a (d_nope + d_v)) per layer.
  EXPECT_DOUBLE_EQ(recompute_module_flops(m, 1, deepseek_plan("mla_up_proj")).linear,
                   4 * 2 * tokens * (1536.0 * 128 * 192 + 512.0 * 128 * (128 + 128)));
  // mlp: the three dense layers' SwiGLU MLP forward, 2 T (h 2F + F h).
  EXPECT_DOUBLE_EQ(recompute_module_flops(m, 1, deepseek_plan("mlp")).total,
                   3 * 2 * tokens * (7168.0 * 2 * 18432 + 18432.0 * 7168));
  // moe_act and layernorm are elementwise.
  EXPECT_EQ(recompute_module_flops(m, 1, deepseek_plan("moe_act,layernorm")).total, 0.0);
  // core_attn: the attention core's forward as the causal fused kernel executes it, counted outside the linears.
  const RecomputeModuleFlops core = recompute_module_flops(m, 1, deepseek_plan("core_attn"));
  EXPECT_GT(core.total, 0.0);
  EXPECT_EQ(core.linear, 0.0);
  // None without modules.
  EXPECT_EQ(recompute_module_flops(m, 1, deepseek_plan("")).total, 0.0);
}

} // namespace
} // namespace gputwin
