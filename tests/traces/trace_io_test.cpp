// The trace format: write -> read -> write is byte-identical; every rule of the reader rejects bad content
// with one line naming the file, the op and the field; a seeded random-mutation fuzz never crashes, hangs or
// gives an unclear message; the Perfetto converter writes one event per measured op.
#include "gputwin/traces/json_value.hpp"
#include "gputwin/traces/perfetto.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <sstream>

namespace gputwin::traces {
namespace {

Op make_op(int64_t id, OpKind kind, const std::string& name)
{
  Op op;
  op.id = id;
  op.kind = kind;
  op.name = name;
  op.start_ns = 1000 * id;
  op.duration_ns = 900;
  return op;
}

// Two tp ranks of one stage and a second stage: a GEMM, a tp all-reduce, a send/recv pair.
OpGraph sample_graph()
{
  OpGraph g;
  g.metadata = {{"device", "cpu"}, {"tp", "2"}, {"quote\"d", "line\nbreak"}};
  g.measured_iteration_s = {0.25, 0.125, 1.0 / 3.0};
  g.groups = {CommGroup{"tp", {0, 1}}, CommGroup{"dp", {1, 2}}};
  for (int32_t r = 0; r < 3; ++r) {
    RankProgram p{r, {}};
    Op gemm = make_op(0, OpKind::Compute, "qkv");
    gemm.layer = 0;
    gemm.micro_batch = 1;
    gemm.flops = 2.0 * 64 * 192 * 64;
    gemm.bytes = 1.5e5;
    gemm.gemm = GemmShape{64, 192, 64, 1};
    p.ops.push_back(gemm);
    if (r < 2) {
      Op ar = make_op(1, OpKind::Collective, "tp.all_reduce");
      ar.collective = CollectiveOp::AllReduce;
      ar.group = 0;
      ar.sequence = 0;
      ar.bytes = 8192;
      ar.stream = 1;
      ar.deps = {0};
      p.ops.push_back(ar);
    }
    if (r == 0 || r == 2) {
      Op pp = make_op(5, r == 0 ? OpKind::Send : OpKind::Recv, r == 0 ? "pp.send" : "pp.recv");
      pp.peer = r == 0 ? 2 : 0;
      pp.sequence = 0;
      pp.bytes = 4096;
      pp.stream = 2;
      pp.phase = Phase::Forward;
      p.ops.push_back(pp);
    }
    g.ranks.push_back(p);
  }
  return g;
}

std::string error_of(const std::string& text)
{
  try {
    parse_op_graph(text, "t.json");
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

std::string replace_once(std::string text, const std::string& from, const std::string& to)
{
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

TEST(TraceFormat, RoundTripIsByteIdentical)
{
  const OpGraph g = sample_graph();
  const std::string first = op_graph_to_json(g);
  const OpGraph read = parse_op_graph(first, "t.json");
  EXPECT_EQ(op_graph_to_json(read), first);
  EXPECT_EQ(read.metadata.at("quote\"d"), "line\nbreak");
  EXPECT_EQ(read.measured_iteration_s[2], 1.0 / 3.0);
  EXPECT_EQ(read.ranks[0].ops[0].gemm, (GemmShape{64, 192, 64, 1}));
  EXPECT_EQ(read.ranks[2].ops[1].kind, OpKind::Recv);
}

TEST(TraceFormat, BadContentIsOneLineNamingFileOpAndField)
{
  const std::string good = op_graph_to_json(sample_graph());
  const struct {
    std::string text, expected;
  } cases[] = {
      {replace_once(good, "\"format_version\":1", "\"format_version\":2"),
       "t.json:1:47: field 'format_version': expected 1 (the version this reader understands), got 2"},
      {replace_once(good, "\"kind\":\"compute\"", "\"kind\":\"gemm\""),
       "rank 0 op 0: field 'kind': expected compute|collective|send|recv|memcpy, got 'gemm'"},
      {replace_once(good, "\"phase\":\"forward\"", "\"phase\":\"sideways\""),
       "rank 0 op 0: field 'phase': expected forward|backward|recompute|optimizer, got 'sideways'"},
      {replace_once(good, "\"stream\":0,", ""), "rank 0 op 0: missing field 'stream' (expected an integer in [0,"},
      {replace_once(good, "\"deps\":[0]", "\"deps\":[7]"),
       "rank 0 op 1: field 'deps': expected ids of earlier ops of rank 0, got 7 (not earlier)"},
      {replace_once(good, "\"group\":0", "\"group\":9"),
       "rank 0 op 1: field 'group': expected a group index in [0, 2), got 9"},
      {replace_once(good, "\"group\":0", "\"group\":1"),
       "rank 0 op 1: field 'group': rank 0 is not a member of group 1"},
      {replace_once(good, "\"bytes\":8192", "\"bytes\":4096"),
       "rank 1 op 1: field 'bytes': collective sequence 0 of group 0 has 4096 bytes on rank 0 op 1 but 8192 bytes "
       "here"},
      {replace_once(good, "\"collective\":\"all-reduce\"", "\"collective\":\"all-gather\""),
       "field 'collective': collective sequence 0 of group 0 is all-gather on rank 0 op 1 but all-reduce here"},
      {replace_once(good, "\"peer\":2", "\"peer\":1"), "has no matching recv on that rank"},
      {replace_once(good, "\"peer\":0,\"sequence\":0", "\"peer\":0,\"sequence\":3"), "has no matching"},
      {replace_once(good, "\"id\":5", "\"id\":0"), "rank 0 op 0: field 'id': expected ids increasing in issue order"},
      {replace_once(good, "\"flops\":0,", "\"flops\":-1,"), "field 'flops': expected a finite number >= 0, got -1"},
      {replace_once(good, "\"stream\":0,", "\"stream\":0,\"strem\":1,"), "rank 0 op 0: field 'strem': unknown field"},
      {good.substr(0, good.size() / 2), "(truncated file?)"},
      {"", "t.json:1:1: expected a value, got end of input (truncated file?)"},
      {std::string(100000, '['), "expected at most 64 levels of nesting"},
      {"[1,2]", "expected a trace object"},
  };
  for (const auto& c : cases) {
    const std::string message = error_of(c.text);
    EXPECT_NE(message.find(c.expected), std::string::npos) << "expected: " << c.expected << "\ngot: " << message;
    EXPECT_EQ(message.rfind("t.json:", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(TraceFormat, SeededMutationFuzzNeverCrashesOrHangs)
{
  const std::string good = op_graph_to_json(sample_graph());
  std::mt19937 rng(2024);
  const std::string alphabet = "{}[]\",:0123456789-.eE tfnul\\abcxyz\n\x01\xff";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  int runs = 0, rejected = 0;
  while (std::chrono::steady_clock::now() < deadline && runs < 20000) {
    std::string text = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = rng() % text.size();
      switch (rng() % 4) {
      case 0: text[at] = alphabet[rng() % alphabet.size()]; break;          // replace a byte
      case 1: text.erase(at, 1 + rng() % 8); break;                         // delete a run
      case 2: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break; // insert a byte
      case 3: text.resize(at); break;                                       // truncate
      }
    }
    ++runs;
    try {
      parse_op_graph(text, "fuzz.json");
    } catch (const TraceError& e) {
      ++rejected;
      const std::string message = e.what();
      ASSERT_EQ(message.rfind("fuzz.json:", 0), 0u) << message;
      ASSERT_EQ(message.find('\n'), std::string::npos) << message;
      ASSERT_TRUE(message.find("expected") != std::string::npos || message.find("unknown field") != std::string::npos ||
                  message.find("duplicate") != std::string::npos || message.find("appears twice") != std::string::npos)
          << message;
    }
  }
  EXPECT_GT(runs, 1000);
  EXPECT_GT(rejected, runs / 2);
}

TEST(JsonParser, DecodesEscapesAndKeepsNumbersExact)
{
  const JsonValue v = parse_json(R"({"s":"a\u00e9\ud83d\ude00\n","big":9007199254740993,"x":-1.5e-3})");
  EXPECT_EQ(v.find("s")->text, "a\xc3\xa9\xf0\x9f\x98\x80\n");
  EXPECT_EQ(*v.find("big")->as_int64(), 9007199254740993);
  EXPECT_EQ(*v.find("x")->as_double(), -1.5e-3);
  EXPECT_FALSE(v.find("x")->as_int64());
  EXPECT_THROW(parse_json(R"({"a":1,"a":2})"), JsonParseError);
  EXPECT_THROW(parse_json("01"), JsonParseError);
  EXPECT_THROW(parse_json("[1,]"), JsonParseError);
  EXPECT_THROW(parse_json("\"\\ud800\""), JsonParseError);
}

TEST(Perfetto, OneCompleteEventPerMeasuredOp)
{
  OpGraph g = sample_graph();
  g.ranks[0].ops[0].start_ns = -1; // not measured
  std::ostringstream out;
  EXPECT_EQ(write_perfetto_trace(out, g), 1);
  const JsonValue v = parse_json(out.str());
  int complete = 0, named = 0;
  for (const JsonValue& e : v.find("traceEvents")->items) {
    complete += e.find("ph")->text == "X";
    named += e.find("ph")->text == "M";
  }
  EXPECT_EQ(complete, 7 - 1);
  EXPECT_EQ(named, 3 + 3 + 2 + 2); // process names + threads (streams) per rank
  EXPECT_EQ(v.find("displayTimeUnit")->text, "ns");
}

} // namespace
} // namespace gputwin::traces
