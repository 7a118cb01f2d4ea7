#pragma once
// How one training iteration is split over GPUs: tensor, sequence, pipeline and data parallelism,
// activation recompute and the pipeline schedule.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/recompute_modules.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace gputwin {

// What is kept for backward (Korthikanti et al. 2022, Section 4).
enum class Recompute {
  None,      // every activation of Table 2's first rows is stored
  Selective, // the attention core (QK^T, softmax, softmax dropout, attention over V) is recomputed, or with
             // ParallelPlan::recompute_modules the submodules named there (Megatron-Core's selective granularity)
  Full,      // only each layer's input is stored; the layer's forward is rerun in backward
};

// How the tensor-parallel regions communicate.
enum class TpComm {
  AllReduce,        // Megatron TP: all-reduce after the row-parallel linears; layernorms/dropouts replicated
  SequenceParallel, // TP + SP: all-gather / reduce-scatter along the sequence; everything splits by t
};

// How the attention core (Q K^T, causal softmax, dropout, attention over V) runs.
enum class AttentionKernel {
  Unfused, // separate kernels (Megatron-LM's default in Korthikanti et al. 2022): the s x s softmax output, its
           // dropout mask and the dropout output are stored for backward (the 5 a s^2 b of Table 2)
  Flash,   // one fused tiled kernel forward and one backward (FlashAttention-2, Dao 2023): no s x s tensor is
           // stored, only Q, K, V, the output, the fp32 log-sum-exp per (sample, head, query) and the dropout
           // RNG state; backward recomputes the probabilities tile by tile
};

// Order of forward/backward micro-batches on each pipeline stage.
enum class Schedule {
  GPipe,       // all forwards, then all backwards
  OneFOneB,    // PipeDream-Flush: warm-up forwards, one-forward-one-backward, cool-down backwards
  Interleaved, // 1F1B over `chunks` model chunks per stage (Narayanan et al. 2021)
};

// How a MoE layer moves tokens to the ranks of their experts (Megatron-Core --moe-token-dispatcher-type).
enum class MoeDispatcher {
  AllToAll,  // permute, all-to-all(-v) over the EP group, grouped GEMMs, all-to-all back, unpermute (default)
  AllGather, // every EP rank all-gathers the tokens, keeps those of its experts, reduce-scatters the outputs
  DeepEp,    // DeepEP (flex dispatcher): one copy of a token per destination node over RDMA, fanned out over
             // NVLink there; combine the reverse (deepseek-ai/DeepEP, internode.cu)
};
std::string to_string(MoeDispatcher d); // "alltoall", "allgather", "deepep"

// The precision of the linear layers' GEMMs (--precision bf16|fp8|mxfp8|nvfp4; --fp8 = --precision fp8): the trace's
// operand format (op_graph.hpp), as the plan's Transformer Engine recipe quantizes QKV, projection and MLP.
using traces::GemmPrecision;
using traces::parse_gemm_precision;
using traces::quantized_element_bytes;
using traces::to_string;
// Bytes of `elements` values stored in `precision` with their block scales (op_graph.hpp): 2 n (bf16), n (fp8),
// n + ceil(n / 32) (mxfp8), ceil(n / 2) + ceil(n / 16) (nvfp4; its per-tensor FP32 scale left out). Overflow is an
// InputError. REQUIRES: elements >= 0.
int64_t quantized_tensor_bytes(GemmPrecision precision, int64_t elements);
std::optional<MoeDispatcher> parse_moe_dispatcher(const std::string& text);

// Transformer Engine's per-tensor FP8 recipes (Megatron-Core --fp8-recipe): delayed scaling (a scale from the amax
// history, the amax of each cast computed by the cast kernel itself and reduced per fp8_autocast region) or
// tensorwise current scaling (Float8CurrentScaling: each tensor's amax computed by its own pass before the cast --
// transformer_engine/pytorch/csrc/extensions/cast.cpp quantize: nvte_compute_amax, nvte_compute_scale_from_amax,
// nvte_quantize_v2 -- and no amax history).
enum class Fp8Recipe : uint8_t { Delayed, Tensorwise };

struct ParallelPlan {
  int64_t tp = 1;           // t, tensor-parallel size
  int64_t pp = 1;           // p, pipeline stages
  int64_t dp = 1;           // data-parallel replicas
  int64_t micro_batch = 1;  // b, samples per micro-batch
  int64_t global_batch = 0; // B, samples per iteration over all replicas; 0 = micro_batch * dp
  int64_t chunks = 1;       // model chunks per stage (interleaved schedule only)
  TpComm tp_comm = TpComm::AllReduce;
  Recompute recompute = Recompute::None;
  // With Recompute::Selective: Megatron-Core's --recompute-modules (recompute_modules.hpp); empty: the attention core
  // as Korthikanti et al. 2022 recompute it (nothing with a fused kernel). Only with Selective (validate_plan).
  RecomputeModules recompute_modules;
  Schedule schedule = Schedule::OneFOneB;
  AttentionKernel attention = AttentionKernel::Unfused;
  // ZeRO stage (Rajbhandari et al. 2020), sharding over the dp x cp ranks that hold the same parameters:
  // 0: nothing sharded; 1: the optimizer states (Megatron-Core's distributed optimizer); 2: also the gradients,
  // reduce-scattered layer by layer in every micro-batch's backward (Megatron-FSDP optim_grads, DeepSpeed ZeRO-2);
  // 3: also the weights, each FSDP unit (a layer, the embedding, the output layer) all-gathered before its forward
  // and again before its backward (Megatron-FSDP optim_grads_params, DeepSpeed ZeRO-3, PyTorch FSDP2).
  // 2 and 3 need pp = 1 (validate_plan).
  int zero_stage = 0;
  // --fsdp: ZeRO-3 as PyTorch FSDP2 runs it in TorchTitan (fully_shard with MixedPrecisionPolicy(param_dtype=bf16,
  // reduce_dtype=fp32)): the sharded FP32 parameter is the optimizer's master weight -- no BF16 copy is kept, the
  // BF16 weights exist only gathered -- so a parameter costs 16 sharded bytes instead of Megatron's 18.
  // REQUIRES zero_stage == 3.
  bool fsdp = false;
  // Context parallelism (Megatron-Core): the sequence of every micro-batch split over cp ranks; attention
  // exchanges K/V blocks around the cp ring. Ranks: tp innermost, then cp, then dp, then pp.
  int64_t cp = 1;
  // Uneven pipeline stages (Megatron-Core --decoder-first/last-pipeline-num-layers): layers of the first and
  // the last stage; 0: an even share. The middle stages split the rest evenly. Interleaved: each stage's layers
  // split over its chunks (chunk_layers).
  int64_t pp_first_stage_layers = 0;
  int64_t pp_last_stage_layers = 0;
  // Quantized linear layers (Transformer Engine): the GEMMs of QKV, projection and MLP at the precision's peak,
  // their inputs cast to it; logits, attention and norms stay bf16. Fp8: the delayed-scaling recipe (per-tensor
  // scales from an amax history reduced over the amax group); Mxfp8 / Nvfp4: TE's MXFP8BlockScaling /
  // NVFP4BlockScaling (block scales computed by the cast kernel itself, no amax history; Blackwell only).
  GemmPrecision precision = GemmPrecision::Bf16;
  // Megatron-Core --fp8-param-gather (--fp4-param-gather for NVFP4; with a quantized precision and the distributed
  // optimizer): the layers' weights are kept only in the precision's format, scales included (no BF16 copy), and
  // all-gathered in it.
  bool fp8_param_gather = false;
  // With precision Fp8: TE's recipe (Megatron-Core --fp8-recipe delayed|tensorwise).
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;
  // Megatron-Core --grad-reduce-in-bf16: the gradient buffer in BF16 (2 bytes per parameter) instead of the
  // default FP32 main grads (--accumulate-allreduce-grads-in-fp32, 4 bytes).
  bool grad_reduce_bf16 = false;
  // Megatron-Core --cross-entropy-loss-fusion --cross-entropy-fusion-impl te: Transformer Engine's fused
  // vocabulary-parallel cross entropy (keeps the BF16 logits and writes the gradient into them in place).
  bool cross_entropy_fusion = false;

  // Mixture of experts (Megatron-Core): experts split over ep ranks, each expert's MLP over etp ranks; the
  // expert grid folds the tp x cp x dp ranks of a stage as etp x ep x edp (etp innermost), so
  // edp = tp cp dp / (ep etp) replicas of each expert reduce its gradients (expert_layout.hpp).
  int64_t ep = 1;
  int64_t etp = 0; // 0: = tp (Megatron's default --expert-tensor-parallel-size is tp)
  MoeDispatcher dispatcher = MoeDispatcher::AllToAll;
  double capacity_factor = 0; // tokens an expert takes at most, x its balanced share; 0: dropless
  // Load imbalance: the coefficient of variation of the experts' token counts (0: perfectly balanced, as
  // benchmarks force it); each MoE layer draws its expert popularity from a log-normal with this CV, seeded.
  double moe_imbalance_cv = 0;
  uint64_t moe_seed = 1;

  int64_t expert_tp() const { return etp > 0 ? etp : tp; }
  int64_t expert_dp() const { return tp * cp * dp / (ep * expert_tp()); }
  int64_t gpus() const { return tp * cp * pp * dp; }
  int64_t effective_global_batch() const { return global_batch > 0 ? global_batch : micro_batch * dp; }
  // Micro-batches each pipeline runs per iteration.
  int64_t micro_batches() const { return effective_global_batch() / (micro_batch * dp); }
  bool sequence_parallel() const { return tp_comm == TpComm::SequenceParallel; }
  // The linear layers run quantized (TE's FP8 or block-scaled recipes): cast kernels, quantized weight caches.
  bool quantized() const { return precision != GemmPrecision::Bf16; }
  // Per-tensor FP8 GEMMs (--fp8, --precision fp8), whichever recipe scales them.
  bool fp8() const { return precision == GemmPrecision::Fp8; }
  // TE's delayed scaling (--fp8): the only recipe with amax-history all-reduces.
  bool delayed_scaling() const { return fp8() && fp8_recipe == Fp8Recipe::Delayed; }
  // TE's tensorwise current scaling (--fp8-recipe tensorwise): an amax pass before every cast.
  bool current_scaling() const { return fp8() && fp8_recipe == Fp8Recipe::Tensorwise; }
};

std::string to_string(Recompute r);
// The recompute of a plan in one table or CSV cell: "none", "selective", "full", or with recompute modules
// "selective:mla_up_proj+moe_act" (Megatron-Core's names, '+'-separated so that the cell holds no comma).
std::string recompute_label(const ParallelPlan& plan);
// Reads recompute_label's text into plan.recompute and plan.recompute_modules; false when it is not one.
bool parse_recompute_label(const std::string& text, ParallelPlan& plan);
// Whether backward reruns module m (Recompute::Selective with m in recompute_modules).
bool recomputes(const ParallelPlan& plan, RecomputeModule m);
// Whether backward reruns the attention core's forward: "core_attn" listed (whichever kernel: Megatron-Core
// checkpoints the fused attention too), or --recompute selective without modules and the unfused kernel.
bool recomputes_attention_core(const ParallelPlan& plan);
std::string to_string(Schedule s);
std::string to_string(TpComm c);
std::string to_string(AttentionKernel k); // "unfused", "flash"
std::string to_string(Fp8Recipe r);         // "delayed", "tensorwise"
// Parse the CLI spelling ("none|selective|full", "1f1b|interleaved|gpipe", "unfused|flash"); nullopt if unknown.
std::optional<Recompute> parse_recompute(const std::string& text);
std::optional<Schedule> parse_schedule(const std::string& text);
std::optional<AttentionKernel> parse_attention(const std::string& text);
// Megatron-Core's --fp8-recipe spelling of a per-tensor recipe ("delayed", "tensorwise"); nullopt otherwise.
std::optional<Fp8Recipe> parse_fp8_recipe(const std::string& text);

// Throws InputError naming the flag to change if `plan` cannot run `model`: sizes not positive, heads or query
// groups not divisible by --tp, the sequence not divisible by 2 x --cp, layers not splitting over --pp (with
// uneven first/last stages: the middle stages' share) or --pp x --chunks (uneven: a middle stage's layers not
// divisible by --chunks, a first/last stage with fewer layers than chunks), global batch not divisible by
// micro-batch x dp, an interleaved schedule with fewer micro-batches than stages, ...
void validate_plan(const GptConfig& model, const ParallelPlan& plan);

// Transformer layers of pipeline stage `stage` over all its chunks, and the global index of the first layer of
// its chunk 0. REQUIRES: validate_plan passed.
int64_t stage_layers(const GptConfig& model, const ParallelPlan& plan, int64_t stage);
int64_t stage_first_layer(const GptConfig& model, const ParallelPlan& plan, int64_t stage);

// Model chunks per stage: plan.chunks with the interleaved schedule, 1 otherwise.
int64_t stage_chunks(const ParallelPlan& plan);
// Transformer layers of model chunk `chunk` of `stage` (virtual stage chunk x pp + stage): stage_layers / chunks,
// as Megatron-Core's get_transformer_layer_offset splits an uneven first/last stage over its virtual stages
// (megatron/core/transformer/transformer_layer.py). Where a first or last stage's layers do not divide by the
// chunks (Megatron-Core refuses that; Meta's Llama 3 405B plan needs it: 126 = 16 x 8 - 2), the lighter chunks
// are the first ones of the first stage (chunk 0 also holds the embedding) and the last ones of the last stage
// (the last chunk also holds the output layer): 7 layers over 2 chunks are 3 + 4 there and 4 + 3 here.
// REQUIRES: validate_plan passed, 0 <= chunk < stage_chunks(plan).
int64_t chunk_layers(const GptConfig& model, const ParallelPlan& plan, int64_t stage, int64_t chunk);
// Global index of the first layer of (stage, chunk): the layers are laid out over the virtual stages in order
// (chunk 0 of stages 0 .. pp-1, then chunk 1, ...), Megatron-Core's layer offset.
int64_t chunk_first_layer(const GptConfig& model, const ParallelPlan& plan, int64_t stage, int64_t chunk);
// The most layers any one chunk of `stage` holds.
int64_t max_chunk_layers(const GptConfig& model, const ParallelPlan& plan, int64_t stage);

// One line such as "tp 8 · pp 8 · dp 1 · micro-batch 1 · global batch 64 (64 micro-batches) · SP · ...
// · unfused attention · ...".
std::string describe_plan(const ParallelPlan& plan);

} // namespace gputwin
