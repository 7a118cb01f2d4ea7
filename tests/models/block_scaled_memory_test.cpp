// MXFP8 and NVFP4 in the memory model: Transformer Engine keeps the same tensors as with FP8 -- the weight's
// row-wise and column-wise copies, the linear layers' quantized inputs -- in the block-scaled format, each with its
// scales (transformer_engine/common/recipe/__init__.py: MXFP8BlockScaling, one E8M0 byte per 32 values;
// NVFP4BlockScaling, 4-bit values and one E4M3 byte per 16). Every expectation is built from those element sizes.
#include "gputwin/models/activation_memory.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/parameter_count.hpp"

#include <gtest/gtest.h>

namespace gputwin {
namespace {

int64_t ceil_div(int64_t a, int64_t b)
{
  return (a + b - 1) / b;
}

// Bytes of n values with their block scales, written out per recipe.
int64_t scaled_bytes(GemmPrecision p, int64_t n)
{
  switch (p) {
  case GemmPrecision::Bf16: return 2 * n;
  case GemmPrecision::Fp8: return n;
  case GemmPrecision::Mxfp8: return n + ceil_div(n, 32);         // 1-byte E4M3 values, an E8M0 scale per 32
  case GemmPrecision::Nvfp4: return ceil_div(n, 2) + ceil_div(n, 16); // 4-bit E2M1 values, an E4M3 scale per 16
  }
  return 0;
}

constexpr GemmPrecision all_precisions[] = {GemmPrecision::Bf16, GemmPrecision::Fp8, GemmPrecision::Mxfp8,
                                            GemmPrecision::Nvfp4};

TEST(BlockScaledMemory, TensorBytesCountValuesAndScales)
{
  for (const GemmPrecision p : all_precisions)
    for (const int64_t n : {int64_t{0}, int64_t{1}, int64_t{16}, int64_t{31}, int64_t{33}, int64_t{4096 * 14336}})
      EXPECT_EQ(quantized_tensor_bytes(p, n), scaled_bytes(p, n)) << to_string(p) << " " << n;
  EXPECT_EQ(quantized_tensor_bytes(GemmPrecision::Mxfp8, 64), 66);
  EXPECT_EQ(quantized_tensor_bytes(GemmPrecision::Nvfp4, 64), 36);
}

// Llama 3 8B, one stage at tp 1: TE's weight caches hold both copies of every layer weight in the recipe's format;
// with quantized parameters the BF16 layer copy is gone and one copy stays besides.
TEST(BlockScaledMemory, WeightCachesAndQuantizedParametersCarryTheirScales)
{
  const GptConfig& model = find_catalog_model("llama3-8b")->model;
  ParallelPlan p;
  p.dp = 4;
  p.zero_stage = 1;
  p.attention = AttentionKernel::Flash;
  const int64_t n = stage_parameters_per_gpu(model, p, 0);
  const int64_t layers = 32 * layer_parameters_per_gpu(model, 1);
  for (const GemmPrecision precision : {GemmPrecision::Fp8, GemmPrecision::Mxfp8, GemmPrecision::Nvfp4}) {
    SCOPED_TRACE(to_string(precision));
    p.precision = precision;
    p.fp8_param_gather = false;
    const ModelStateMemory cached = stage_model_state_memory(model, p, 0);
    EXPECT_EQ(cached.weight_bytes, 2 * n);
    EXPECT_EQ(cached.fp8_cache_bytes, 2 * scaled_bytes(precision, layers));
    p.fp8_param_gather = true;
    const ModelStateMemory params = stage_model_state_memory(model, p, 0);
    EXPECT_EQ(params.weight_bytes, 2 * (n - layers) + scaled_bytes(precision, layers));
    EXPECT_EQ(params.fp8_cache_bytes, scaled_bytes(precision, layers));
  }
}

// A layer's stored linear inputs (QKV and fc1 inputs, the attention output the projection takes, fc2's input) are
// the only activations in the recipe's format: the layer's bytes differ from FP8's by their scales (MXFP8) or by
// half their values less their scales (NVFP4). tp 1, no SP: the tensors are whole.
TEST(BlockScaledMemory, LinearInputsStoredInTheRecipesFormat)
{
  const GptConfig& model = find_catalog_model("llama3-8b")->model;
  ParallelPlan p;
  p.attention = AttentionKernel::Flash;
  p.precision = GemmPrecision::Fp8;
  const int64_t fp8 = activation_bytes_per_layer(model, p);
  const int64_t sb = model.seq_len * p.micro_batch;
  const int64_t inputs[] = {sb * model.hidden, sb * model.hidden, sb * model.attention_width(), sb * model.ffn()};
  for (const GemmPrecision precision : {GemmPrecision::Mxfp8, GemmPrecision::Nvfp4}) {
    SCOPED_TRACE(to_string(precision));
    p.precision = precision;
    int64_t expected = fp8;
    for (const int64_t elements : inputs)
      expected += scaled_bytes(precision, elements) - elements;
    EXPECT_EQ(activation_bytes_per_layer(model, p), expected);
  }
}

} // namespace
} // namespace gputwin
