// `gputwin replay` of Chakra traces through the real binary: the PyTorch host ET of tests/data/chakra/ (what was
// read, what was ignored, a deterministic report), `simulate --chakra DIR` then `replay DIR/workload.0.et` (the same
// ops, collectives and FLOPs as simulate's workload, and an iteration time close to simulate's), and bad input
// (unknown node type, truncated files, missing fields) as one line naming the file, exit status 2.
#include "json_report.hpp"
#include "traces/chakra_test_plan.hpp"
#include "run_cli.hpp"

#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/models/workload_unfolding.hpp"

#include "et_def.pb.h"
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace gputwin::testing {
namespace {

// A path in single quotes for the command line (built by append: GCC 12's -Wrestrict misfires on "'" + path).
std::string quoted(const std::string& path)
{
  std::string q = "'";
  q.append(path).push_back('\'');
  return q;
}

namespace fs = std::filesystem;

const std::string sample = GPUTWIN_TEST_DATA_DIR "/chakra/tests_data_1.0.2-chakra.0.0.4.json";

traces::JsonValue replay_json(const std::string& arguments)
{
  const CliResult r = run_gputwin("replay " + arguments + " --json", false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return traces::parse_json(r.output);
}

std::string without_wall_time(std::string report)
{
  const size_t at = report.find("\"sim_wall_time_s\"");
  return at == std::string::npos ? report : report.substr(0, at);
}

TEST(ChakraReplayCli, HostExecutionTraceReplaysItsCopiesAndAllGathers)
{
  const traces::JsonValue r = replay_json("'" + sample + "'");
  EXPECT_EQ(member(r, "format").text, "pytorch-et-json");
  EXPECT_EQ(member(r, "schema").text, "1.0.2-chakra.0.0.4");
  EXPECT_EQ(member(r, "mode").text, "as-recorded");
  EXPECT_EQ(number(r, "world_size"), 2);
  EXPECT_EQ(number(r, "simulated_ranks"), 1);
  EXPECT_EQ(number(r, "nodes"), 263);
  EXPECT_EQ(number(r, "collectives"), 10);
  EXPECT_EQ(number(r, "memcpys"), 10);
  EXPECT_EQ(number(r, "collective_bytes"), 80);
  EXPECT_EQ(number(r, "ignored_nodes"), 180);
  EXPECT_NE(member(r, "ignored").find("inside a collective"), nullptr);
  EXPECT_GT(number(r, "iteration_time_s"), 0);
  // Deterministic: the same report twice (apart from the wall time of the simulation).
  const CliResult a = run_gputwin("replay '" + sample + "' --json", false);
  const CliResult b = run_gputwin("replay '" + sample + "' --json", false);
  EXPECT_EQ(without_wall_time(a.output), without_wall_time(b.output));
  // The text report says what it ignored.
  const CliResult text = run_gputwin("replay '" + sample + "'", false);
  EXPECT_NE(text.output.find("ignored    110: inside a collective"), std::string::npos) << text.output;
  // Flags that need a plan or a measured step are refused.
  expect_one_line_error("replay '" + sample + "' --dp 2", "--dp: not available for a Chakra execution trace");
}

TEST(ChakraReplayCli, ExportThenReplayRoundTrips)
{
  const fs::path dir = fs::path(::testing::TempDir()) / ("chakra_roundtrip." + std::to_string(getpid()));
  fs::remove_all(dir);
  const std::string flags = testing::chakra_test_plan_flags;
  const CliResult simulated = run_gputwin("simulate " + flags + " --json --chakra '" + dir.string() + "'", false);
  ASSERT_EQ(simulated.exit_code, 0) << simulated.output;
  const double simulated_s = number(traces::parse_json(simulated.output), "iteration_time_s");

  const traces::OpGraph graph = unfolded_workload_graph(testing::chakra_test_plan_workload()); // every rank's file
  double ops = 0, collectives = 0, flops = 0;
  for (const traces::RankProgram& p : graph.ranks)
    for (const traces::Op& op : p.ops) {
      ++ops;
      collectives += op.kind == traces::OpKind::Collective;
      flops += op.flops;
    }

  const traces::JsonValue r = replay_json(quoted((dir / "workload.0.et").string()));
  EXPECT_EQ(member(r, "format").text, "chakra-et");
  EXPECT_EQ(number(r, "simulated_ranks"), 8);
  EXPECT_EQ(number(r, "ops"), ops);
  EXPECT_EQ(number(r, "collectives"), collectives);
  EXPECT_NEAR(number(r, "flops"), flops, 1e-9 * flops);
  EXPECT_EQ(number(r, "ignored_nodes"), 0);
  // Compute ops keep the exported durations (the compute model's, rounded to microseconds), collectives and
  // messages are simulated again: within 5% of simulate's own iteration.
  EXPECT_NEAR(number(r, "iteration_time_s"), simulated_s, 0.05 * simulated_s);
  fs::remove_all(dir);
}

// Rewrites gputwin's export in `dir` as gputwin wrote it before it followed ASTRA-sim's convention: no
// comm_convention attribute, pg_name = group index (from 0), all-gather comm_size = nccl-tests bytes.
void rewrite_in_old_convention(const fs::path& dir, const traces::OpGraph& graph)
{
  for (const traces::RankProgram& p : graph.ranks) {
    const fs::path path = dir / ("workload." + std::to_string(p.rank) + ".et");
    std::string bytes;
    {
      std::ifstream in(path, std::ios::binary);
      std::stringstream s;
      s << in.rdbuf();
      bytes = s.str();
    }
    google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
    ChakraProtoMsg::GlobalMetadata meta;
    ASSERT_TRUE(google::protobuf::util::ParseDelimitedFromZeroCopyStream(&meta, &stream, nullptr)) << path;
    ChakraProtoMsg::GlobalMetadata old_meta = meta;
    old_meta.clear_attr();
    for (const auto& a : meta.attr())
      if (a.name() != "comm_convention")
        *old_meta.add_attr() = a;
    std::ostringstream out;
    google::protobuf::util::SerializeDelimitedToOstream(old_meta, &out);
    for (ChakraProtoMsg::Node node; google::protobuf::util::ParseDelimitedFromZeroCopyStream(&node, &stream, nullptr);
         node.Clear()) { // parsing merges into the message
      if (node.type() == ChakraProtoMsg::COMM_COLL_NODE) {
        ChakraProtoMsg::AttributeProto *pg = nullptr, *size = nullptr, *type = nullptr;
        for (auto& a : *node.mutable_attr()) {
          if (a.name() == "pg_name")
            pg = &a;
          else if (a.name() == "comm_size")
            size = &a;
          else if (a.name() == "comm_type")
            type = &a;
        }
        ASSERT_TRUE(pg && size && type) << path << ": node " << node.id();
        const size_t group = std::stoul(pg->string_val()) - 1;
        pg->set_string_val(std::to_string(group));
        if (type->int64_val() == ChakraProtoMsg::ALL_GATHER)
          size->set_int64_val(size->int64_val() * static_cast<int64_t>(graph.groups.at(group).ranks.size()));
      }
      google::protobuf::util::SerializeDelimitedToOstream(node, &out);
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << out.str();
  }
  std::ofstream groups(dir / "workload.comm_groups.json", std::ios::trunc);
  groups << "{";
  for (size_t g = 0; g < graph.groups.size(); ++g) {
    groups << (g ? ",\n" : "\n") << "  \"" << g << "\": [";
    for (size_t i = 0; i < graph.groups[g].ranks.size(); ++i)
      groups << (i ? ", " : "") << graph.groups[g].ranks[i];
    groups << "]";
  }
  groups << "\n}\n";
}

TEST(ChakraReplayCli, ExportsOfBothConventionsReplayAlike)
{
  // A fresh export (communicators from 1, all-gathers as each rank's share: ASTRA-sim's convention) and the same
  // export in the convention gputwin wrote before (communicators from 0, every size in nccl-tests bytes) read back
  // to the same collectives, bytes and iteration time: the import knows each by the GlobalMetadata attribute.
  const fs::path dir = fs::path(::testing::TempDir()) / ("chakra_conventions." + std::to_string(getpid()));
  fs::remove_all(dir);
  const std::string flags = testing::chakra_test_plan_flags;
  const CliResult simulated = run_gputwin("simulate " + flags + " --chakra '" + dir.string() + "'", false);
  ASSERT_EQ(simulated.exit_code, 0) << simulated.output;
  const traces::JsonValue fresh = replay_json(quoted((dir / "workload.0.et").string()));
  rewrite_in_old_convention(dir, unfolded_workload_graph(testing::chakra_test_plan_workload()));
  const traces::JsonValue old = replay_json(quoted((dir / "workload.0.et").string()));
  EXPECT_EQ(number(old, "collectives"), number(fresh, "collectives"));
  EXPECT_EQ(number(old, "collective_bytes"), number(fresh, "collective_bytes"));
  EXPECT_EQ(number(old, "iteration_time_s"), number(fresh, "iteration_time_s"));
  fs::remove_all(dir);
}

TEST(ChakraReplayCli, BadInputIsOneLineNamingTheFileAndExitStatus2)
{
  const fs::path dir = fs::path(::testing::TempDir()) / ("chakra_bad." + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return quoted((dir / name).string());
  };
  // Hand-encoded length-delimited messages: GlobalMetadata{version "0.0.4"}, Node{id 1, name "x", type T}.
  const std::string meta = std::string("\x07\x0a\x05") + "0.0.4";
  const auto node = [](char type) { return std::string("\x07\x08\x01\x12\x01x\x18", 7) + type; };
  const std::string unknown = write("unknown.et", meta + node('\x2a'));
  const std::string no_attr = write("noattr.et", meta + node('\x07'));
  const std::string truncated = write("truncated.et", (meta + node('\x04')).substr(0, 12));
  std::ifstream in(sample);
  std::stringstream json;
  json << in.rdbuf();
  const std::string half = write("half.json", json.str().substr(0, json.str().size() / 2));
  const std::string no_nodes = write("nonodes.json", R"({"schema": "1.0.2-chakra.0.0.4", "pid": 1})");

  for (const auto& [file, expected] : std::vector<std::pair<std::string, std::string>>{
           {unknown, "unknown.et: node 1 'x': unknown node type 42"},
           {no_attr, "noattr.et: node 1 'x': COMM_COLL_NODE without attribute 'comm_type'"},
           {truncated, "truncated.et: truncated or corrupt after 0 nodes"},
           {half, "half.json:"},
           {no_nodes, "nonodes.json: no 'nodes' array"}}) {
    expect_one_line_error("replay " + file, expected);
    EXPECT_EQ(run_gputwin("replay " + file, true).exit_code, 2) << file;
  }
  fs::remove_all(dir);
}

} // namespace
} // namespace gputwin::testing
