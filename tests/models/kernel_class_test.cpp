// Kernel classes: the workload generator's op names, the engine's traced names and measured kernel names all
// land in the class whose bandwidth the GPU compute model gives them.
#include "gputwin/models/kernel_class.hpp"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace gputwin {
namespace {

void expect_classes(const std::vector<std::pair<const char*, KernelClass>>& cases)
{
  for (const auto& [name, expected] : cases)
    EXPECT_EQ(classify_kernel(name, false), expected) << name << " -> " << to_string(classify_kernel(name, false));
}

TEST(KernelClass, WorkloadGeneratorNames)
{
  // models/workload/src/layer_ops.cpp and workload.cpp
  expect_classes({{"ln1.fwd", KernelClass::LayerNorm},
                  {"ln2.bwd", KernelClass::LayerNorm},
                  {"final_ln.fwd", KernelClass::LayerNorm},
                  {"attn.softmax.fwd", KernelClass::Softmax},
                  {"attn.softmax.bwd", KernelClass::Softmax},
                  {"attn.dropout.fwd", KernelClass::Dropout},
                  {"dropout_add.fwd", KernelClass::Dropout},
                  {"dropout_add.bwd", KernelClass::Dropout},
                  {"embedding.dropout.bwd", KernelClass::Dropout},
                  {"gelu.fwd", KernelClass::Gelu},
                  {"gelu.bwd", KernelClass::Gelu},
                  {"swiglu.fwd", KernelClass::Gelu},
                  {"swiglu.bwd", KernelClass::Gelu},
                  {"rope.fwd", KernelClass::Elementwise},
                  {"rope.bwd", KernelClass::Elementwise},
                  {"bias_grad", KernelClass::Elementwise},
                  {"fc2.bias_grad", KernelClass::Elementwise},
                  {"residual.bwd", KernelClass::Elementwise},
                  {"embedding.fwd", KernelClass::Embedding},
                  {"embedding.wgrad", KernelClass::Embedding},
                  {"cross_entropy.fwd", KernelClass::CrossEntropy},
                  {"cross_entropy.bwd", KernelClass::CrossEntropy},
                  {"grad.zero", KernelClass::Elementwise},
                  {"grad.check_scale", KernelClass::Elementwise},
                  {"optimizer.clip_grad", KernelClass::Optimizer},
                  {"optimizer.adam", KernelClass::Optimizer}});
}

TEST(KernelClass, EngineTracedNames)
{
  // gputwin-engine's tracer (traces/captured/NVIDIA-H100-80GB-HBM3/h1024-tp1.json)
  expect_classes({{"ln1", KernelClass::LayerNorm},
                  {"final_ln.bwd", KernelClass::LayerNorm},
                  {"attn.softmax", KernelClass::Softmax},
                  {"attn.dropout.bwd", KernelClass::Dropout},
                  {"fc2.bias_dropout_add", KernelClass::Dropout},
                  {"proj.dropout.bwd", KernelClass::Dropout},
                  {"embedding.position_dropout", KernelClass::Dropout},
                  {"embedding.word", KernelClass::Embedding},
                  {"embedding.word.bwd", KernelClass::Embedding},
                  {"gelu", KernelClass::Gelu},
                  {"fc1.bias", KernelClass::Elementwise},
                  {"qkv.bias.bwd", KernelClass::Elementwise},
                  {"loss.max", KernelClass::CrossEntropy},
                  {"loss.sums", KernelClass::CrossEntropy},
                  {"loss.bwd", KernelClass::CrossEntropy},
                  {"adam", KernelClass::Optimizer},
                  {"adam.cast", KernelClass::Optimizer}});
}

TEST(KernelClass, MeasuredAndPyTorchKernelNames)
{
  // kernels.trace.json (scripts/gpu-measure-kernels.py) and PyTorch CUDA kernel names
  expect_classes({{"gpt-22b.copy", KernelClass::Elementwise},
                  {"mt-nlg-530b.layernorm", KernelClass::LayerNorm},
                  {"h8192-tp1.gelu", KernelClass::Gelu},
                  {"h4096-tp4.softmax", KernelClass::Softmax},
                  {"vectorized_layer_norm_kernel", KernelClass::LayerNorm},
                  {"softmax_warp_forward", KernelClass::Softmax},
                  {"cunn_SoftMaxForward", KernelClass::Softmax},
                  {"fused_dropout_kernel_vec", KernelClass::Dropout},
                  {"vectorized_elementwise_kernel", KernelClass::Elementwise},
                  {"multi_tensor_apply_kernel", KernelClass::Optimizer},
                  {"nll_loss_forward_reduce_cuda_kernel_2d", KernelClass::CrossEntropy},
                  {"indexSelectLargeIndex", KernelClass::Embedding},
                  {"something.unknown", KernelClass::Other}});
}

TEST(KernelClass, GemmShapedOpsAreGemmsWhateverTheirName)
{
  for (const char* name : {"attn.flash.fwd", "attn.flash.bwd", "qkv.fwd", "gelu.fwd"})
    EXPECT_EQ(classify_kernel(name, true), KernelClass::Gemm) << name;
}

TEST(KernelClass, NamesRoundTrip)
{
  for (int i = 0; i < kernel_class_count; ++i) {
    const auto c = static_cast<KernelClass>(i);
    EXPECT_EQ(parse_kernel_class(to_string(c)), c);
    EXPECT_NE(kernel_class_names().find(to_string(c)), std::string::npos);
  }
  EXPECT_FALSE(parse_kernel_class("LayerNorm"));
  EXPECT_FALSE(parse_kernel_class(""));
}

} // namespace
} // namespace gputwin
