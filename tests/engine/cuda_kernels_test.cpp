// GPU tests (ctest label `gpu`): every kernel of the CUDA backend against the CPU reference backend on the
// same inputs, validated before anything is timed (llm.c dev/cuda). Skipped, saying why, where no GPU can be
// used. Tolerances: an fp32 output of bf16 inputs differs only by the order of fp32 accumulation
// (|gpu - cpu| <= 2e-3 (1 + |cpu|) for sums over <= 256 terms); a bf16 output may round the other way
// (one bf16 step, 2^-8 relative: |gpu - cpu| <= 1e-2 (1 + |cpu|)); dropout masks, embedding rows and token
// bookkeeping are bit-exact.
#include "cuda/cuda_backend.hpp"
#include "engine_test_support.hpp"
#include "gputwin/engine/backend/counter_rng.hpp"
#include "gputwin/engine/backend/cpu_backend.hpp"
#include "gputwin/engine/backend/host_access.hpp"
#include "gputwin/engine/train/trainer.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace gputwin::engine {
namespace {

constexpr float f32_tol = 2e-3f;
constexpr float bf16_tol = 1e-2f;

class CudaKernels : public ::testing::Test {
protected:
  void SetUp() override
  {
    const std::string why = cuda_backend_unavailable_reason();
    if (!why.empty())
      GTEST_SKIP() << "no usable GPU on this machine, CUDA kernels not run: " << why;
    gpu = std::make_unique<CudaBackend>(0);
  }

  Tensor make(DType dtype, std::vector<int64_t> shape, float scale = 1.0f)
  {
    Tensor t(memory, MemoryPurpose::Workspace, dtype, std::move(shape));
    std::normal_distribution<float> dist(0.0f, scale);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (dtype == DType::F32)
        t.f32()[i] = dist(rng);
      else if (dtype == DType::BF16)
        t.bf16()[i] = float_to_bf16(dist(rng));
    }
    return t;
  }
  Tensor like(const Tensor& t)
  {
    Tensor c(memory, MemoryPurpose::Workspace, t.dtype(), t.shape());
    std::memcpy(c.raw(), t.raw(), static_cast<size_t>(t.bytes()));
    return c;
  }
  static void expect_close(const Tensor& gpu_out, const Tensor& cpu_out, float tol, const std::string& what)
  {
    ASSERT_EQ(gpu_out.numel(), cpu_out.numel());
    int64_t bad = 0;
    for (int64_t i = 0; i < cpu_out.numel(); ++i) {
      const float g = load_float(gpu_out, i), c = load_float(cpu_out, i);
      if (!(std::fabs(g - c) <= tol * (1.0f + std::fabs(c))) && bad++ < 5)
        ADD_FAILURE() << what << "[" << i << "]: gpu " << g << " cpu " << c;
    }
    EXPECT_EQ(bad, 0) << what;
  }

  std::mt19937 rng{1234};
  MemoryAccountant memory;
  CpuBackend cpu;
  std::unique_ptr<CudaBackend> gpu;
};

TEST_F(CudaKernels, GemmEveryTransposeAndType)
{
  const int64_t m = 96, n = 80, k = 136;
  for (const DType in_type : {DType::BF16, DType::F32})
    for (const DType out_type : {DType::F32, DType::BF16})
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb) {
          const Tensor a = make(in_type, {m * k}), b = make(DType::BF16, {k * n});
          const float beta = out_type == DType::F32 ? 0.5f : 0.0f;
          Tensor c_gpu = make(out_type, {m, n}), c_cpu = like(c_gpu);
          gpu->gemm(c_gpu, a, ta != 0, b, tb != 0, m, n, k, 0.75f, beta);
          cpu.gemm(c_cpu, a, ta != 0, b, tb != 0, m, n, k, 0.75f, beta);
          expect_close(c_gpu, c_cpu, out_type == DType::F32 ? f32_tol : bf16_tol,
                       "gemm " + to_string(in_type) + "->" + to_string(out_type) + " ta" + std::to_string(ta) + " tb" +
                           std::to_string(tb));
        }
}

TEST_F(CudaKernels, LayernormForwardBackward)
{
  const int64_t rows = 37, cols = 200;
  const Tensor in = make(DType::BF16, {rows, cols}), gamma = make(DType::BF16, {cols}),
               beta = make(DType::BF16, {cols}), d_out = make(DType::BF16, {rows, cols});
  Tensor out_gpu = make(DType::BF16, {rows, cols}), out_cpu = like(out_gpu);
  gpu->layernorm_forward(out_gpu, in, gamma, beta, rows, cols, 1e-5f);
  cpu.layernorm_forward(out_cpu, in, gamma, beta, rows, cols, 1e-5f);
  expect_close(out_gpu, out_cpu, bf16_tol, "layernorm out");
  Tensor dx_gpu = make(DType::F32, {rows, cols}), dx_cpu = like(dx_gpu);
  Tensor dg_gpu = make(DType::F32, {cols}), dg_cpu = like(dg_gpu), db_gpu = make(DType::F32, {cols}),
         db_cpu = like(db_gpu);
  gpu->layernorm_backward(dx_gpu, dg_gpu, db_gpu, d_out, in, gamma, rows, cols, 1e-5f);
  cpu.layernorm_backward(dx_cpu, dg_cpu, db_cpu, d_out, in, gamma, rows, cols, 1e-5f);
  expect_close(dx_gpu, dx_cpu, f32_tol, "layernorm d_in");
  expect_close(dg_gpu, dg_cpu, f32_tol, "layernorm d_gamma (+=)");
  expect_close(db_gpu, db_cpu, f32_tol, "layernorm d_beta (+=)");
}

TEST_F(CudaKernels, GeluForwardBackward)
{
  const int64_t n = 5000;
  const Tensor in = make(DType::BF16, {n}, 2.0f), d_out = make(DType::F32, {n});
  Tensor out_gpu = make(DType::BF16, {n}), out_cpu = like(out_gpu);
  gpu->gelu_forward(out_gpu, in, n);
  cpu.gelu_forward(out_cpu, in, n);
  expect_close(out_gpu, out_cpu, bf16_tol, "gelu");
  Tensor d_gpu = make(DType::F32, {n}), d_cpu = like(d_gpu);
  gpu->gelu_backward(d_gpu, d_out, in, n);
  cpu.gelu_backward(d_cpu, d_out, in, n);
  expect_close(d_gpu, d_cpu, f32_tol, "gelu backward");
}

TEST_F(CudaKernels, SquaredReluForwardBackward)
{
  const int64_t n = 5000;
  const Tensor in = make(DType::BF16, {n}, 2.0f), d_out = make(DType::F32, {n});
  Tensor out_gpu = make(DType::BF16, {n}), out_cpu = like(out_gpu);
  gpu->squared_relu_forward(out_gpu, in, n);
  cpu.squared_relu_forward(out_cpu, in, n);
  expect_close(out_gpu, out_cpu, bf16_tol, "squared relu");
  Tensor d_gpu = make(DType::F32, {n}), d_cpu = like(d_gpu);
  gpu->squared_relu_backward(d_gpu, d_out, in, n);
  cpu.squared_relu_backward(d_cpu, d_out, in, n);
  expect_close(d_gpu, d_cpu, f32_tol, "squared relu backward");
}

// Multi-head attention and grouped-query attention (4 query heads over 2 K/V groups: batched GEMMs per group
// reading K and V with batch stride 0, dK and dV summed over the group's heads).
TEST_F(CudaKernels, AttentionCoreForwardBackward)
{
  for (const AttentionDims& d : {AttentionDims{2, 3, 40, 32}, AttentionDims{2, 4, 40, 32, 2}}) {
    SCOPED_TRACE("heads " + std::to_string(d.heads) + ", K/V groups " + std::to_string(d.groups()));
    const int64_t rows = d.batch * d.heads * d.seq;
    const Tensor qkv = make(DType::BF16, {d.seq, d.batch, d.qkv_width()});
    Tensor s_gpu = make(DType::F32, {rows, d.seq}), s_cpu = make(DType::F32, {rows, d.seq});
    cpu.zero(s_cpu);
    gpu->attention_scores_forward(s_gpu, qkv, d);
    cpu.attention_scores_forward(s_cpu, qkv, d);
    expect_close(s_gpu, s_cpu, f32_tol, "scores");
    Tensor p_gpu = make(DType::BF16, {rows, d.seq}), p_cpu = like(p_gpu);
    gpu->causal_softmax_forward(p_gpu, s_cpu, rows, d.seq);
    cpu.causal_softmax_forward(p_cpu, s_cpu, rows, d.seq);
    expect_close(p_gpu, p_cpu, bf16_tol, "softmax");
    Tensor c_gpu = make(DType::BF16, {d.seq, d.batch, d.heads * d.head_dim}), c_cpu = like(c_gpu);
    gpu->attention_context_forward(c_gpu, p_cpu, qkv, d);
    cpu.attention_context_forward(c_cpu, p_cpu, qkv, d);
    expect_close(c_gpu, c_cpu, bf16_tol, "context");

    const Tensor d_ctx = make(DType::BF16, c_cpu.shape());
    Tensor dp_gpu = make(DType::F32, {rows, d.seq}), dp_cpu = like(dp_gpu);
    Tensor dqkv_gpu = make(DType::F32, qkv.shape()), dqkv_cpu = like(dqkv_gpu);
    gpu->attention_context_backward(dp_gpu, dqkv_gpu, d_ctx, p_cpu, qkv, d);
    cpu.attention_context_backward(dp_cpu, dqkv_cpu, d_ctx, p_cpu, qkv, d);
    expect_close(dp_gpu, dp_cpu, f32_tol, "d_probs");
    expect_close(dqkv_gpu, dqkv_cpu, f32_tol, "d_qkv after context backward (V part; Q, K unchanged)");
    Tensor ds_gpu = make(DType::F32, {rows, d.seq}), ds_cpu = like(ds_gpu);
    gpu->causal_softmax_backward(ds_gpu, dp_cpu, p_cpu, rows, d.seq);
    cpu.causal_softmax_backward(ds_cpu, dp_cpu, p_cpu, rows, d.seq);
    expect_close(ds_gpu, ds_cpu, f32_tol, "softmax backward");
    gpu->attention_scores_backward(dqkv_gpu, ds_cpu, qkv, d);
    cpu.attention_scores_backward(dqkv_cpu, ds_cpu, qkv, d);
    expect_close(dqkv_gpu, dqkv_cpu, f32_tol, "d_qkv after scores backward");
  }
}

TEST_F(CudaKernels, RmsnormForwardBackward)
{
  const int64_t rows = 37, cols = 200;
  const Tensor in = make(DType::BF16, {rows, cols}), gamma = make(DType::BF16, {cols}),
               d_out = make(DType::BF16, {rows, cols});
  Tensor out_gpu = make(DType::BF16, {rows, cols}), out_cpu = like(out_gpu);
  gpu->rmsnorm_forward(out_gpu, in, gamma, rows, cols, 1e-5f);
  cpu.rmsnorm_forward(out_cpu, in, gamma, rows, cols, 1e-5f);
  expect_close(out_gpu, out_cpu, bf16_tol, "rmsnorm out");
  Tensor dx_gpu = make(DType::F32, {rows, cols}), dx_cpu = like(dx_gpu);
  Tensor dg_gpu = make(DType::F32, {cols}), dg_cpu = like(dg_gpu);
  gpu->rmsnorm_backward(dx_gpu, dg_gpu, d_out, in, gamma, rows, cols, 1e-5f);
  cpu.rmsnorm_backward(dx_cpu, dg_cpu, d_out, in, gamma, rows, cols, 1e-5f);
  expect_close(dx_gpu, dx_cpu, f32_tol, "rmsnorm d_in");
  expect_close(dg_gpu, dg_cpu, f32_tol, "rmsnorm d_gamma (+=)");
}

TEST_F(CudaKernels, RopeForwardBackward)
{
  RopeDims r;
  r.attention = AttentionDims{2, 4, 40, 32, 2};
  r.first_position = 5;
  const AttentionDims& d = r.attention;
  Tensor qkv_gpu = make(DType::BF16, {d.seq, d.batch, d.qkv_width()}), qkv_cpu = like(qkv_gpu);
  gpu->rope_forward(qkv_gpu, r);
  cpu.rope_forward(qkv_cpu, r);
  expect_close(qkv_gpu, qkv_cpu, bf16_tol, "rope forward (V untouched)");
  Tensor d_gpu = make(DType::F32, {d.seq, d.batch, d.qkv_width()}), d_cpu = like(d_gpu);
  gpu->rope_backward(d_gpu, r);
  cpu.rope_backward(d_cpu, r);
  expect_close(d_gpu, d_cpu, f32_tol, "rope backward");
}

TEST_F(CudaKernels, SwigluForwardBackward)
{
  const int64_t rows = 33, cols = 150;
  const Tensor in = make(DType::BF16, {rows, 2 * cols}, 2.0f), d_out = make(DType::F32, {rows, cols});
  Tensor out_gpu = make(DType::BF16, {rows, cols}), out_cpu = like(out_gpu);
  gpu->swiglu_forward(out_gpu, in, rows, cols);
  cpu.swiglu_forward(out_cpu, in, rows, cols);
  expect_close(out_gpu, out_cpu, bf16_tol, "swiglu");
  Tensor d_gpu = make(DType::F32, {rows, 2 * cols}), d_cpu = like(d_gpu);
  gpu->swiglu_backward(d_gpu, d_out, in, rows, cols);
  cpu.swiglu_backward(d_cpu, d_out, in, rows, cols);
  expect_close(d_gpu, d_cpu, f32_tol, "swiglu backward");
}

TEST_F(CudaKernels, DropoutMaskIsTheCpuMaskBitForBit)
{
  DropoutSite site;
  site.key = dropout_key(7, 3, 2, DropoutSiteKind::AttentionProbs);
  site.probability = 0.1f;
  site.local_dims = {2, 3, 17, 33};
  site.offsets = {1, 0, 5, 11};
  site.global_dims = {4, 3, 40, 64};
  const int64_t n = 2 * 3 * 17 * 33;
  const Tensor in = make(DType::BF16, {n});
  Tensor out_gpu = make(DType::BF16, {n}), out_cpu = like(out_gpu);
  Tensor m_gpu(memory, MemoryPurpose::Workspace, DType::U8, {n}),
      m_cpu(memory, MemoryPurpose::Workspace, DType::U8, {n});
  gpu->dropout_forward(out_gpu, m_gpu, in, site);
  cpu.dropout_forward(out_cpu, m_cpu, in, site);
  ASSERT_EQ(std::memcmp(m_gpu.raw(), m_cpu.raw(), static_cast<size_t>(n)), 0) << "dropout masks differ";
  expect_close(out_gpu, out_cpu, 0.0f, "dropout out (exact)");
  const Tensor d_out = make(DType::F32, {n});
  Tensor d_gpu = make(DType::F32, {n}), d_cpu = like(d_gpu);
  gpu->dropout_backward(d_gpu, d_out, m_cpu, site.probability);
  cpu.dropout_backward(d_cpu, d_out, m_cpu, site.probability);
  expect_close(d_gpu, d_cpu, 0.0f, "dropout backward (exact)");
}

TEST_F(CudaKernels, EmbeddingAndCrossEntropy)
{
  const int64_t n = 50, h = 96, vocab_start = 32, owned = 40, cols = 48, valid = 40;
  Tensor tokens(memory, MemoryPurpose::Workspace, DType::I32, {n});
  for (int64_t t = 0; t < n; ++t)
    tokens.i32()[t] = static_cast<int32_t>((t * 37) % 100); // some owned, some repeated, some not
  const Tensor table = make(DType::BF16, {owned, h});
  Tensor e_gpu = make(DType::BF16, {n, h}), e_cpu = like(e_gpu);
  gpu->embedding_forward(e_gpu, tokens, table, vocab_start, owned, n, h);
  cpu.embedding_forward(e_cpu, tokens, table, vocab_start, owned, n, h);
  expect_close(e_gpu, e_cpu, 0.0f, "embedding (exact)");
  const Tensor d_out = make(DType::F32, {n, h});
  Tensor dt_gpu = make(DType::F32, {owned, h}), dt_cpu = like(dt_gpu);
  gpu->embedding_backward(dt_gpu, d_out, tokens, vocab_start, owned, n, h);
  cpu.embedding_backward(dt_cpu, d_out, tokens, vocab_start, owned, n, h);
  expect_close(dt_gpu, dt_cpu, 0.0f, "embedding backward (token order, exact)");

  const Tensor logits = make(DType::F32, {n, cols}, 3.0f);
  Tensor mx_gpu = make(DType::F32, {n}), mx_cpu = like(mx_gpu);
  gpu->cross_entropy_local_max(mx_gpu, logits, n, cols, valid);
  cpu.cross_entropy_local_max(mx_cpu, logits, n, cols, valid);
  expect_close(mx_gpu, mx_cpu, 0.0f, "row max (exact)");
  Tensor se_gpu = make(DType::F32, {n}), se_cpu = like(se_gpu), tl_gpu = make(DType::F32, {n}), tl_cpu = like(tl_gpu);
  gpu->cross_entropy_local_sums(se_gpu, tl_gpu, logits, tokens, mx_cpu, n, cols, valid, vocab_start);
  cpu.cross_entropy_local_sums(se_cpu, tl_cpu, logits, tokens, mx_cpu, n, cols, valid, vocab_start);
  expect_close(se_gpu, se_cpu, 1e-5f, "sum exp");
  expect_close(tl_gpu, tl_cpu, 0.0f, "target logit (exact)");
  Tensor dl_gpu = make(DType::F32, {n, cols}), dl_cpu = like(dl_gpu);
  gpu->cross_entropy_backward(dl_gpu, logits, tokens, mx_cpu, se_cpu, n, cols, valid, vocab_start, 0.02f);
  cpu.cross_entropy_backward(dl_cpu, logits, tokens, mx_cpu, se_cpu, n, cols, valid, vocab_start, 0.02f);
  expect_close(dl_gpu, dl_cpu, 1e-5f, "d_logits");
}

TEST_F(CudaKernels, AdamAndElementwise)
{
  const int64_t rows = 33, cols = 70, n = rows * cols;
  const Tensor grad = make(DType::F32, {n});
  Tensor w_gpu = make(DType::F32, {n}), m_gpu = make(DType::F32, {n}, 0.1f), v_gpu = make(DType::F32, {n}, 0.1f);
  for (int64_t i = 0; i < n; ++i)
    v_gpu.f32()[i] = std::fabs(v_gpu.f32()[i]);
  Tensor w_cpu = like(w_gpu), m_cpu = like(m_gpu), v_cpu = like(v_gpu);
  AdamHyper hyper;
  hyper.weight_decay = 0.1f;
  gpu->adam_step(w_gpu, m_gpu, v_gpu, grad, n, hyper, 3);
  cpu.adam_step(w_cpu, m_cpu, v_cpu, grad, n, hyper, 3);
  expect_close(w_gpu, w_cpu, 1e-6f, "adam master");
  expect_close(m_gpu, m_cpu, 1e-6f, "adam momentum");
  expect_close(v_gpu, v_cpu, 1e-6f, "adam variance");

  const Tensor a = make(DType::BF16, {rows, cols}), b = make(DType::F32, {rows, cols}),
               bias = make(DType::BF16, {cols});
  Tensor o_gpu = make(DType::BF16, {rows, cols}), o_cpu = like(o_gpu);
  gpu->add(o_gpu, a, b, n);
  cpu.add(o_cpu, a, b, n);
  expect_close(o_gpu, o_cpu, 0.0f, "add (exact)");
  gpu->add_bias(o_gpu, o_gpu, bias, rows, cols);
  cpu.add_bias(o_cpu, o_cpu, bias, rows, cols);
  expect_close(o_gpu, o_cpu, 0.0f, "add_bias in place (exact)");
  Tensor db_gpu = make(DType::F32, {cols}), db_cpu = like(db_gpu);
  gpu->bias_backward(db_gpu, b, rows, cols);
  cpu.bias_backward(db_cpu, b, rows, cols);
  expect_close(db_gpu, db_cpu, 1e-5f, "bias_backward (+=)");
  Tensor c_gpu = make(DType::BF16, {n}), c_cpu = like(c_gpu);
  gpu->copy(c_gpu, b, n);
  cpu.copy(c_cpu, b, n);
  expect_close(c_gpu, c_cpu, 0.0f, "copy f32->bf16 (round to nearest even, exact)");
  Tensor acc_gpu = make(DType::F32, {n}), acc_cpu = like(acc_gpu);
  gpu->accumulate(acc_gpu, a, n);
  cpu.accumulate(acc_cpu, a, n);
  expect_close(acc_gpu, acc_cpu, 0.0f, "accumulate (exact)");
  gpu->zero(acc_gpu);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(acc_gpu.f32()[i], 0.0f);
}

// Device-resident tensors: allocated by the backend's allocator (zero-filled), written and read only through
// upload/download, used in place by the kernels (no staging), views by pointer arithmetic.
TEST_F(CudaKernels, DeviceResidentTensorsInPlace)
{
  ASSERT_EQ(gpu->device(), Device::Cuda);
  ASSERT_NE(gpu->allocator(), nullptr);
  const int64_t m = 64, n = 48, k = 80;
  auto on_gpu = [&](const Tensor& host) {
    Tensor d(memory, MemoryPurpose::Workspace, host.dtype(), host.shape(), gpu->allocator());
    EXPECT_EQ(d.device(), Device::Cuda);
    gpu->upload(d, host.raw(), host.bytes());
    return d;
  };
  {
    Tensor zeros(memory, MemoryPurpose::Workspace, DType::F32, {1000}, gpu->allocator());
    for (const float v : download<float>(*gpu, zeros))
      ASSERT_EQ(v, 0.0f) << "device tensors start zero-filled";
    EXPECT_THROW(zeros.f32(), std::logic_error) << "no host dereference of device memory";
  }
  const Tensor a = make(DType::BF16, {m, k}), b = make(DType::BF16, {k, n});
  Tensor c_cpu = make(DType::F32, {m, n});
  const Tensor da = on_gpu(a), db = on_gpu(b);
  Tensor dc = on_gpu(c_cpu);
  gpu->gemm(dc, da, false, db, false, m, n, k, 1.0f, 1.0f);
  cpu.gemm(c_cpu, a, false, b, false, m, n, k, 1.0f, 1.0f);
  Tensor c_back(memory, MemoryPurpose::Workspace, DType::F32, {m, n});
  gpu->download(c_back.raw(), dc, dc.bytes());
  expect_close(c_back, c_cpu, f32_tol, "gemm on device tensors");

  // A view of a device tensor: the second half of the rows through layernorm.
  const Tensor x = make(DType::BF16, {m, n}), gamma = make(DType::BF16, {n}), beta = make(DType::BF16, {n});
  const Tensor dx = on_gpu(x), dgamma = on_gpu(gamma), dbeta = on_gpu(beta);
  Tensor dy(memory, MemoryPurpose::Workspace, DType::BF16, {m, n}, gpu->allocator());
  Tensor y_cpu(memory, MemoryPurpose::Workspace, DType::BF16, {m, n});
  const int64_t half = m / 2;
  Tensor dy_view = dy.view(half * n, {half, n});
  Tensor y_view = y_cpu.view(half * n, {half, n});
  gpu->layernorm_forward(dy_view, dx.view(half * n, {half, n}), dgamma, dbeta, half, n, 1e-5f);
  cpu.layernorm_forward(y_view, x.view(half * n, {half, n}), gamma, beta, half, n, 1e-5f);
  Tensor y_back(memory, MemoryPurpose::Workspace, DType::BF16, {m, n});
  gpu->download(y_back.raw(), dy, dy.bytes());
  expect_close(y_back, y_cpu, bf16_tol, "layernorm on a device view (first half stays 0)");

  // copy_bytes between device tensors, then back.
  Tensor dcopy(memory, MemoryPurpose::Workspace, DType::F32, {m, n}, gpu->allocator());
  gpu->copy_bytes(dcopy, dc, dc.bytes());
  EXPECT_EQ(download<float>(*gpu, dcopy), download<float>(*gpu, dc));
}

// A few training steps with the CUDA backend (device-resident tensors, tp 2 x pp 2 with sequence parallelism
// and selective recompute, as ranks on one GPU) give the CPU backend's losses within bf16 tolerance.
TEST_F(CudaKernels, TrainingStepsMatchTheCpuLosses)
{
  TrainConfig config = testing::small_tp2_pp2_sp_selective(5);
  config.record_trace = true; // exercises the per-op synchronization of the traced step
  config.backend = BackendKind::Cpu;
  const TrainResult cpu_run = train(config);
  config.backend = BackendKind::Cuda;
  const TrainResult gpu_run = train(config);
  ASSERT_EQ(gpu_run.loss_per_step.size(), cpu_run.loss_per_step.size());
  for (size_t i = 0; i < cpu_run.loss_per_step.size(); ++i) {
    const double c = cpu_run.loss_per_step[i], g = gpu_run.loss_per_step[i];
    EXPECT_TRUE(std::isfinite(g)) << "step " << i;
    EXPECT_NEAR(g, c, 1e-2 * (1.0 + std::fabs(c))) << "step " << i << ": gpu " << g << " cpu " << c;
  }
  ASSERT_FALSE(gpu_run.trace.ranks.empty());
}

} // namespace
} // namespace gputwin::engine
