#pragma once
// The vocabulary-parallel embedding (Megatron-LM VocabParallelEmbedding): each rank owns rows
// [vocab_start, vocab_start + owned_rows) of the table and contributes zeros for the other tokens.

#include "cuda/ops/common.cuh"

namespace gputwin::engine::cuda {

__global__ void embedding_forward_kernel(FloatPtr out, const int32_t* tokens, ConstFloatPtr table, int64_t vocab_start,
                                         int64_t owned_rows, int64_t n, int64_t h)
{
  // out (n, h); tokens (n); table (owned_rows, h)
  const size_t total = static_cast<size_t>(n) * static_cast<size_t>(h);
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t t = e / static_cast<size_t>(h), c = e % static_cast<size_t>(h);
    const int64_t row = tokens[t] - vocab_start;
    store(out, e,
          row >= 0 && row < owned_rows ? load(table, static_cast<size_t>(row) * static_cast<size_t>(h) + c) : 0.0f);
  }
}

// out (n, h) = the owned table row of each token, 0 for tokens of other ranks.
inline void embedding_forward(FloatPtr out, const int32_t* tokens, ConstFloatPtr table, int64_t vocab_start,
                              int64_t owned_rows, int64_t n, int64_t h, cudaStream_t stream)
{
  embedding_forward_kernel<<<grid_for(static_cast<size_t>(n * h), 256), 256, 0, stream>>>(
      out, tokens, table, vocab_start, owned_rows, n, h);
  CUDA_CHECK(cudaGetLastError());
}

// One thread per column: walks the tokens in order, so repeated tokens add up in the CPU's order (no atomics).
__global__ void embedding_backward_kernel(float* d_table, ConstFloatPtr d_out, const int32_t* tokens,
                                          int64_t vocab_start, int64_t owned_rows, int64_t n, int64_t h)
{
  // d_table (owned_rows, h, fp32); d_out (n, h); tokens (n)
  const size_t c = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (c >= static_cast<size_t>(h))
    return;
  for (size_t t = 0; t < static_cast<size_t>(n); ++t) {
    const int64_t row = tokens[t] - vocab_start;
    if (row >= 0 && row < owned_rows)
      d_table[static_cast<size_t>(row) * static_cast<size_t>(h) + c] += load(d_out, t * static_cast<size_t>(h) + c);
  }
}

// d_table (owned_rows, h, fp32) += the rows of d_out (n, h) of the tokens this rank owns, in token order.
inline void embedding_backward(float* d_table, ConstFloatPtr d_out, const int32_t* tokens, int64_t vocab_start,
                               int64_t owned_rows, int64_t n, int64_t h, cudaStream_t stream)
{
  embedding_backward_kernel<<<ceil_div(static_cast<size_t>(h), 128), 128, 0, stream>>>(d_table, d_out, tokens,
                                                                                       vocab_start, owned_rows, n, h);
  CUDA_CHECK(cudaGetLastError());
}

} // namespace gputwin::engine::cuda
