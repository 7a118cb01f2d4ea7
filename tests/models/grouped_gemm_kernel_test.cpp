// Grouped GEMMs (GemmShape::grouped: Transformer Engine's GroupedLinear, one kernel per local expert): each of the
// batch's kernels adds the GPU model's grouped_gemm_kernel_s to what the same products cost as one batched kernel,
// on the plain and the interference path alike; the flag survives a trace round trip. (That the workload marks the
// expert GEMMs grouped is held by SimuMaxB200Moe's bound: without the cost its rows' MAPE is 15.5 %, above 14 %.)
#include "gputwin/models/comm_interference.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gputwin {
namespace {

traces::Op expert_op(bool grouped, int64_t experts)
{
  traces::Op op;
  op.kind = traces::OpKind::Compute;
  op.name = "expert.fc1.fwd";
  op.gemm = traces::GemmShape{256, 4096, 7168, experts};
  op.gemm.grouped = grouped;
  op.flops = 2.0 * 256 * 4096 * 7168 * static_cast<double>(experts);
  op.bytes = (2.0 * (256.0 * 7168 + 7168.0 * 4096) + 2.0 * 256 * 4096) * static_cast<double>(experts);
  return op;
}

TEST(GroupedGemmKernel, EachExpertKernelAddsItsFixedCost)
{
  for (const GpuGeneration generation : {GpuGeneration::Hopper, GpuGeneration::Blackwell}) {
    const GpuComputeModel gpu = generation == GpuGeneration::Hopper
                                    ? builtin_compute_model(generation, "h100-sxm5-80gb", 989e12, 3.35e12, 1979e12)
                                    : builtin_compute_model(generation, "b200-sxm-180gb", 2250e12, 7.7e12, 4500e12);
    SCOPED_TRACE(gpu.gpu_kind);
    EXPECT_DOUBLE_EQ(gpu.grouped_gemm_kernel_s, 5.5e-6); // the fit on measured B200 grouped GEMMs, assumed on Hopper
    for (const int64_t experts : {1, 32, 256}) {
      const double batched_s = compute_duration_s(gpu, expert_op(false, experts));
      EXPECT_NEAR(compute_duration_s(gpu, expert_op(true, experts)) - batched_s,
                  static_cast<double>(experts) * gpu.grouped_gemm_kernel_s, 1e-12);
      CommLoad load;
      load.channels = 16;
      EXPECT_NEAR(interfered_duration_s(gpu, expert_op(true, experts), load) -
                      interfered_duration_s(gpu, expert_op(false, experts), load),
                  static_cast<double>(experts) * gpu.grouped_gemm_kernel_s, 1e-12);
    }
  }
  // A model without the cost (a plain roofline, a model file that does not name it): grouped costs what batched does.
  const GpuComputeModel roofline = nominal_roofline_model("cpu", 1e12, 1e11, "test");
  EXPECT_DOUBLE_EQ(compute_duration_s(roofline, expert_op(true, 8)), compute_duration_s(roofline, expert_op(false, 8)));
}

TEST(GroupedGemmKernel, FlagRoundTripsThroughATrace)
{
  traces::OpGraph g;
  traces::Op grouped = expert_op(true, 32);
  traces::Op batched = expert_op(false, 32);
  batched.id = 1;
  g.ranks.push_back(traces::RankProgram{0, {grouped, batched}});
  const std::string text = traces::op_graph_to_json(g);
  EXPECT_EQ(text.find("\"grouped\":false"), std::string::npos) << "written only when true";
  const traces::OpGraph back = traces::parse_op_graph(text, "t.json");
  ASSERT_EQ(back.ranks.at(0).ops.size(), 2u);
  EXPECT_TRUE(back.ranks[0].ops[0].gemm.grouped);
  EXPECT_FALSE(back.ranks[0].ops[1].gemm.grouped);
  EXPECT_EQ(traces::op_graph_to_json(back), text);
  const std::string bad = text.substr(0, text.find("\"grouped\":true")) + "\"grouped\":3" +
                          text.substr(text.find("\"grouped\":true") + std::string("\"grouped\":true").size());
  try {
    traces::parse_op_graph(bad, "t.json");
    FAIL() << "a non-boolean grouped must be refused";
  } catch (const std::exception& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("gemm: field 'grouped': expected true or false"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

} // namespace
} // namespace gputwin
