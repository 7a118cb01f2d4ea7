// The rank report (engine/src/train/rank_report.hpp) carries GemmShape::fp8: an FP8 GEMM comes back as one, and
// a flag byte other than 0 or 1 is a corrupt report, not a silently true flag.
#include "gputwin/engine/comm/communicator.hpp"
#include "train/rank_report.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gputwin::engine {
namespace {

RankReport report_with_gemm(bool fp8)
{
  RankReport report;
  report.rank = 0;
  traces::Op op;
  op.id = 0;
  op.kind = traces::OpKind::Compute;
  op.name = "fc1.fwd";
  op.flops = 2.0 * 64 * 256 * 32;
  op.bytes = 1e4;
  op.gemm = traces::GemmShape{64, 256, 32, 1, fp8 ? traces::GemmPrecision::Fp8 : traces::GemmPrecision::Bf16};
  report.program.rank = 0;
  report.program.ops = {op};
  return report;
}

TEST(Fp8RankReport, Fp8GemmRoundTrips)
{
  for (const bool fp8 : {false, true}) {
    const RankReport back = decode_rank_report(encode_rank_report(report_with_gemm(fp8)), "test");
    ASSERT_EQ(back.program.ops.size(), 1u);
    EXPECT_EQ(back.program.ops[0].gemm, report_with_gemm(fp8).program.ops[0].gemm);
    EXPECT_EQ(back.program.ops[0].gemm.precision == traces::GemmPrecision::Fp8, fp8);
  }
}

TEST(Fp8RankReport, PrecisionByteBeyondNvfp4IsCorrupt)
{
  const std::vector<char> bf16 = encode_rank_report(report_with_gemm(false));
  std::vector<char> bytes = encode_rank_report(report_with_gemm(true));
  ASSERT_EQ(bytes.size(), bf16.size());
  // The two encodings differ in the flag byte alone.
  std::vector<size_t> differing;
  for (size_t i = 0; i < bytes.size(); ++i)
    if (bytes[i] != bf16[i])
      differing.push_back(i);
  ASSERT_EQ(differing.size(), 1u);
  // 0-3: bf16, fp8, mxfp8, nvfp4 (GemmPrecision); anything beyond means the bytes are out of step.
  bytes[differing[0]] = 3;
  EXPECT_EQ(decode_rank_report(bytes, "test").program.ops[0].gemm.precision, traces::GemmPrecision::Nvfp4);
  bytes[differing[0]] = 4;
  try {
    decode_rank_report(bytes, "rv/run.rank-0.report");
    FAIL() << "a precision byte of 4 must be rejected";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("rv/run.rank-0.report: truncated or corrupt"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace gputwin::engine
