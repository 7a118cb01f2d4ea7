// FP8 GEMMs in the trace format (GemmShape::fp8, FORMAT.md "gemm"): written as "fp8": true only when set, read
// back exactly (write -> read -> write byte-identical), absent = bf16, and a non-boolean is one line naming the
// file, the op and the field.
#include "gputwin/traces/trace_io.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gputwin::traces {
namespace {

// One rank: an FP8 linear GEMM (fc1.fwd) and a bf16 attention GEMM (attn.scores.fwd).
OpGraph fp8_graph()
{
  OpGraph g;
  g.metadata = {{"fp8", "true"}};
  RankProgram p{0, {}};
  Op fc1;
  fc1.id = 0;
  fc1.kind = OpKind::Compute;
  fc1.name = "fc1.fwd";
  fc1.gemm = GemmShape{8192, 3584, 4096, 1, GemmPrecision::Fp8};
  fc1.flops = 2.0 * 8192 * 3584 * 4096;
  fc1.bytes = 8192.0 * 4096 + 4096.0 * 3584 + 2.0 * 8192 * 3584;
  p.ops.push_back(fc1);
  Op scores;
  scores.id = 1;
  scores.kind = OpKind::Compute;
  scores.name = "attn.scores.fwd";
  scores.gemm = GemmShape{2048, 2048, 128, 32};
  scores.flops = 2.0 * 2048 * 2048 * 128 * 32;
  scores.bytes = 1e6;
  p.ops.push_back(scores);
  g.ranks.push_back(p);
  return g;
}

std::string error_of(const std::string& text)
{
  try {
    parse_op_graph(text, "t.json");
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string replace_once(std::string text, const std::string& from, const std::string& to)
{
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

TEST(Fp8Trace, RoundTripKeepsTheFlagAndIsByteIdentical)
{
  const std::string first = op_graph_to_json(fp8_graph());
  // Written in the gemm object after batch, only for the FP8 GEMM.
  EXPECT_NE(first.find("\"gemm\":{\"m\":8192,\"n\":3584,\"k\":4096,\"batch\":1,\"fp8\":true}"), std::string::npos)
      << first;
  EXPECT_NE(first.find("\"gemm\":{\"m\":2048,\"n\":2048,\"k\":128,\"batch\":32}"), std::string::npos) << first;
  const OpGraph read = parse_op_graph(first, "t.json");
  EXPECT_EQ(read.ranks[0].ops[0].gemm.precision, GemmPrecision::Fp8);
  EXPECT_EQ(read.ranks[0].ops[1].gemm.precision, GemmPrecision::Bf16);
  EXPECT_EQ(read.ranks[0].ops[0].gemm, fp8_graph().ranks[0].ops[0].gemm);
  EXPECT_EQ(op_graph_to_json(read), first);
}

TEST(Fp8Trace, AbsentOrFalseIsBf16)
{
  const std::string good = op_graph_to_json(fp8_graph());
  const OpGraph absent = parse_op_graph(replace_once(good, ",\"fp8\":true}", "}"), "t.json");
  EXPECT_EQ(absent.ranks[0].ops[0].gemm.precision, GemmPrecision::Bf16);
  const OpGraph explicit_false = parse_op_graph(replace_once(good, "\"fp8\":true", "\"fp8\":false"), "t.json");
  EXPECT_EQ(explicit_false.ranks[0].ops[0].gemm.precision, GemmPrecision::Bf16);
  // false is the default and is not written back: the line is a bf16 GEMM's.
  EXPECT_NE(op_graph_to_json(explicit_false).find("\"gemm\":{\"m\":8192,\"n\":3584,\"k\":4096,\"batch\":1}"),
            std::string::npos);
}

TEST(Fp8Trace, NonBooleanIsOneLineNamingFileOpAndField)
{
  const std::string good = op_graph_to_json(fp8_graph());
  for (const auto& [value, got] : {std::pair<std::string, std::string>{"\"yes\"", "got 'yes'"},
                                   {"1", "got 1"},
                                   {"null", "got a null"},
                                   {"{}", "got an object"}}) {
    const std::string message = error_of(replace_once(good, "\"fp8\":true", "\"fp8\":" + value));
    SCOPED_TRACE(value);
    EXPECT_EQ(message.rfind("t.json:", 0), 0u) << message;
    EXPECT_NE(message.find("rank 0 op 0: gemm: field 'fp8': expected true or false, " + got), std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // A misspelt member is still rejected, and the message lists fp8 among the gemm members.
  EXPECT_NE(error_of(replace_once(good, "\"fp8\":true", "\"fp_8\":true"))
                .find("rank 0 op 0: gemm: field 'fp_8': unknown field (expected m, n, k, batch, fp8, precision, "
                       "comm_sms, grouped)"),
            std::string::npos);
}

// The block-scaled formats are written by name ("precision": "mxfp8" | "nvfp4"), FP8 as "fp8": true as before;
// each reads back as written, and a name the reader does not know (or bf16/fp8 spelt that way, or both fields) is
// a one-line error.
TEST(Fp8Trace, BlockScaledPrecisionRoundTrips)
{
  for (const GemmPrecision precision : {GemmPrecision::Mxfp8, GemmPrecision::Nvfp4}) {
    SCOPED_TRACE(to_string(precision));
    OpGraph g = fp8_graph();
    g.ranks[0].ops[0].gemm.precision = precision;
    const std::string text = op_graph_to_json(g);
    EXPECT_NE(text.find("\"batch\":1,\"precision\":\"" + to_string(precision) + "\"}"), std::string::npos) << text;
    EXPECT_EQ(text.find("\"fp8\":true"), std::string::npos);
    const OpGraph read = parse_op_graph(text, "t.json");
    EXPECT_EQ(read.ranks[0].ops[0].gemm.precision, precision);
    EXPECT_EQ(op_graph_to_json(read), text);
  }
  const std::string good = op_graph_to_json(fp8_graph());
  for (const std::string& bad : {std::string("\"precision\":\"fp6\""), std::string("\"precision\":\"fp8\""),
                                 std::string("\"precision\":\"nvfp4\",\"fp8\":true")}) {
    SCOPED_TRACE(bad);
    const std::string message = error_of(replace_once(good, "\"fp8\":true", bad));
    EXPECT_NE(message.find("rank 0 op 0: gemm: field 'precision': expected mxfp8 or nvfp4"), std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

} // namespace
} // namespace gputwin::traces
