#pragma once
// Kernel classes: what kind of kernel a compute op is, read from its name, so that the GPU compute model can
// give memory-bound kernels of different access patterns their own bandwidth efficiency (a row-wise
// layernorm or softmax reduction streams HBM at about half the rate of a plain copy on an H100:
// traces/captured/NVIDIA-H100-80GB-HBM3/kernels.trace.json).
//
// Names come from three producers, all classified by the same rules: the workload generator
// (models/workload/src/layer_ops.cpp, workload.cpp: `ln1.fwd`, `attn.softmax.bwd`, `dropout_add.fwd`, `fc2.bias_grad`,
// `optimizer.adam`, ...), the engine's tracer (`ln1`, `fc2.bias_dropout_add`, `embedding.position_dropout`,
// `loss.sums`, `adam.cast`, ...) and kernel measurements (`gpt-22b.layernorm`, `h8192-tp1.copy`; PyTorch
// kernel names such as `vectorized_layer_norm_kernel`, `softmax_warp_forward`, `multi_tensor_apply_kernel`).

#include <optional>
#include <string>
#include <string_view>

namespace gputwin {

enum class KernelClass {
  Gemm,         // any op with a GEMM shape (linears, attention products, fused flash attention)
  LayerNorm,    // layernorm / RMSNorm forward and backward: row reductions
  Softmax,      // attention softmax forward and backward: row reductions over the keys
  Gelu,         // GeLU forward and backward: elementwise with transcendental math
  Dropout,      // dropout, fused bias-dropout-add, embedding dropout: elementwise plus a random mask
  Elementwise,  // copies, bias adds and their gradients, residual adds, casts: plain streaming
  Embedding,    // embedding lookup (gather) and its gradient (scatter-add)
  CrossEntropy, // vocabulary-parallel cross-entropy (loss max, sums, gradient)
  Optimizer,    // Adam step and the parameter cast after it
  Other,        // a name none of the rules knows: the global memory efficiency
};

inline constexpr int kernel_class_count = static_cast<int>(KernelClass::Other) + 1;

// The class of compute op `name`; `gemm_shaped` (the op has a GEMM shape) makes it KernelClass::Gemm whatever
// its name. Case-insensitive; rules in kernel_class.cpp, most specific first.
KernelClass classify_kernel(std::string_view name, bool gemm_shaped);

// "gemm", "layernorm", "softmax", "gelu", "dropout", "elementwise", "embedding", "cross_entropy", "optimizer",
// "other"; parse_kernel_class is its inverse (nullopt for any other text).
std::string to_string(KernelClass c);
std::optional<KernelClass> parse_kernel_class(const std::string& text);

// The accepted names, "gemm|layernorm|...|other", for error messages.
std::string kernel_class_names();

} // namespace gputwin
