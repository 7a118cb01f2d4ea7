// Chakra import (traces/chakra/chakra_reader.hpp): the PyTorch host execution trace of tests/data/chakra/ read node by
// node, GEMM FLOPs from tensor shapes, communication nodes as collectives, and the protobuf ET that
// `simulate --chakra` writes read back into the op graph it came from (op count, collectives, FLOPs). Bad input is
// one TraceError line naming the file.
#include "gputwin/chakra/chakra_reader.hpp"
#include "gputwin/chakra/chakra_writer.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/chakra_replay.hpp"
#include "gputwin/traces/trace_io.hpp"
#include "traces/chakra_test_plan.hpp"

#include "et_def.pb.h"

#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace gputwin::chakra {
namespace {

namespace fs = std::filesystem;

const char* const sample = GPUTWIN_TEST_DATA_DIR "/chakra/tests_data_1.0.2-chakra.0.0.4.json";

std::string read_text(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int64_t count(const traces::RankProgram& p, traces::OpKind kind)
{
  return std::count_if(p.ops.begin(), p.ops.end(), [&](const traces::Op& op) { return op.kind == kind; });
}

// Expects `f` to throw a TraceError of one line that contains every one of `parts`.
template <class F>
void expect_error(F f, std::initializer_list<std::string> parts)
{
  try {
    f();
    ADD_FAILURE() << "expected a TraceError containing '" << *parts.begin() << "'";
  } catch (const traces::TraceError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const std::string& part : parts)
      EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

TEST(ChakraHostEt, SampleTraceIsReadNodeByNode)
{
  const ChakraTrace t = parse_pytorch_et(read_text(sample), "sample.json");
  EXPECT_EQ(t.schema, "1.0.2-chakra.0.0.4");
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.world_size, 2); // "## process_group:init ##": pg "0", group_size 2
  ASSERT_EQ(t.graph.ranks.size(), 1u);
  const traces::RankProgram& p = t.graph.ranks[0];
  // Ten iterations of: a 1-float host->device copy, an all-gather over both ranks, a wait.
  EXPECT_EQ(t.stats.nodes, 263);
  EXPECT_EQ(t.stats.collectives, 10);
  EXPECT_EQ(t.stats.waits, 10);
  EXPECT_EQ(t.stats.memcpys, 10);
  EXPECT_EQ(count(p, traces::OpKind::Collective), 10);
  EXPECT_EQ(count(p, traces::OpKind::Memcpy), 10);
  EXPECT_EQ(p.ops.size(), 20u);
  // Every node is accounted for exactly once.
  EXPECT_EQ(t.stats.structure + t.stats.compute_ops() + t.stats.collectives + t.stats.waits + t.stats.ignored_nodes(),
            t.stats.nodes);
  EXPECT_EQ(t.stats.ignored.at("inside a collective").at("nccl:all_gather"), 10);
  EXPECT_EQ(t.stats.ignored.at("no GPU work (allocation, view, metadata)").at("aten::empty_strided"), 30);
  ASSERT_EQ(t.graph.groups.size(), 1u);
  EXPECT_EQ(t.graph.groups[0].ranks, (std::vector<int32_t>{0, 1}));
  for (const traces::Op& op : p.ops) {
    if (op.kind != traces::OpKind::Collective)
      continue;
    EXPECT_EQ(op.collective, CollectiveOp::AllGather);
    EXPECT_EQ(op.bytes, 8); // the gathered output: 2 ranks x 1 float
    EXPECT_EQ(op.stream, 1);
  }
  // The copy after a wait depends on the collective it waited for.
  for (size_t i = 2; i < p.ops.size(); i += 2) {
    ASSERT_EQ(p.ops[i].kind, traces::OpKind::Memcpy);
    EXPECT_EQ(p.ops[i].deps, std::vector<int64_t>{p.ops[i - 1].id});
  }
  EXPECT_NO_THROW(sim::check_chakra_graph(t.graph));
}

// A minimal host ET: nodes given as JSON objects, under one thread root.
std::string host_et(const std::vector<std::string>& nodes)
{
  std::string text = R"({"schema": "1.0.2-chakra.0.0.4", "pid": 1, "nodes": [
    {"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "ctrl_deps": 0},
    {"id": 2, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 1})";
  for (const std::string& n : nodes)
    text += ",\n" + n;
  return text + "]}";
}

// A node with tensor inputs/outputs (bf16 on cuda:0 unless `device` says otherwise).
std::string node(int id, const std::string& name, int parent, const std::vector<std::vector<int64_t>>& in,
                 const std::vector<std::vector<int64_t>>& out, const std::string& device = "cuda:0",
                 const std::string& extra = "")
{
  const auto args = [&](const std::vector<std::vector<int64_t>>& shapes) {
    std::string values, dims, types;
    for (size_t i = 0; i < shapes.size(); ++i) {
      int64_t numel = 1;
      std::string d;
      for (const int64_t x : shapes[i]) {
        numel *= x;
        d += (d.empty() ? "" : ",") + std::to_string(x);
      }
      const std::string sep = i ? "," : "";
      values += sep + "[" + std::to_string(100 + i) + ",1,0," + std::to_string(numel) + ",2,\"" + device + "\"]";
      dims += sep + "[" + d + "]";
      types += sep + "\"Tensor(c10::BFloat16)\"";
    }
    return "{\"values\": [" + values + "], \"shapes\": [" + dims + "], \"types\": [" + types + "]}";
  };
  return "{\"id\": " + std::to_string(id) + ", \"name\": \"" + name + "\", \"ctrl_deps\": " + std::to_string(parent) +
         ", \"inputs\": " + args(in) + ", \"outputs\": " + args(out) +
         ", \"attrs\": [{\"name\": \"rf_id\", \"type\": "
         "\"uint64\", \"value\": " +
         std::to_string(id) + "}]" + extra + "}";
}

TEST(ChakraHostEt, GemmFlopsComeFromTensorShapes)
{
  const std::string text = host_et({
      node(3, "aten::mm", 2, {{64, 128}, {128, 32}}, {{64, 32}}),
      node(4, "aten::linear", 2, {{4, 16, 256}, {512, 256}, {512}}, {{4, 16, 512}}),
      node(5, "aten::t", 4, {{512, 256}}, {{256, 512}}), // a child of linear: its work is the linear's
      node(6, "aten::addmm", 4, {{512}, {64, 256}, {256, 512}}, {{64, 512}}),
      node(7, "aten::bmm", 2, {{8, 32, 64}, {8, 64, 16}}, {{8, 32, 16}}),
      node(8, "aten::matmul", 2, {{2, 3, 10, 20}, {20, 30}}, {{2, 3, 10, 30}}),
      node(9, "aten::add", 2, {{1000}, {1000}}, {{1000}}, "cuda:0", ", \"dur\": 12.5"),
      node(10, "aten::add", 2, {{1000}, {1000}}, {{1000}}, "cpu"),
  });
  const ChakraTrace t = parse_pytorch_et(text, "gemm.json");
  const auto& ops = t.graph.ranks.at(0).ops;
  ASSERT_EQ(ops.size(), 5u);
  EXPECT_EQ(ops[0].flops, 2.0 * 64 * 32 * 128);
  EXPECT_EQ(ops[0].gemm, (traces::GemmShape{64, 32, 128, 1}));
  EXPECT_EQ(ops[0].bytes, 2.0 * (64 * 128 + 128 * 32 + 64 * 32));
  EXPECT_EQ(ops[1].name, "aten::linear");
  EXPECT_EQ(ops[1].flops, 2.0 * 64 * 512 * 256); // m = 4 x 16
  EXPECT_EQ(ops[2].gemm, (traces::GemmShape{32, 16, 64, 8}));
  EXPECT_EQ(ops[3].gemm, (traces::GemmShape{60, 30, 20, 1})); // (2, 3, 10, 20) x (20, 30): batch folds into m
  EXPECT_EQ(ops[4].flops, 0);
  EXPECT_EQ(ops[4].duration_ns, 12500); // dur, microseconds
  EXPECT_EQ(ops[4].bytes, 6000);
  EXPECT_EQ(t.stats.timed_by_flops, 4);
  EXPECT_EQ(t.stats.timed_by_duration, 1);
  EXPECT_EQ(t.stats.ignored.at("inside a GEMM-like op (timed by its FLOPs)").at("aten::addmm"), 1);
  EXPECT_EQ(t.stats.ignored.at("host only (no CUDA tensor)").at("aten::add"), 1);
  for (size_t i = 0; i < ops.size(); ++i)
    EXPECT_EQ(ops[i].stream, 0);
  // The GPU compute model times ops without a recorded duration; the recorded one is kept.
  const auto seconds = sim::chakra_compute_duration(builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3.35e12), true);
  EXPECT_GT(seconds(0, ops[1]), ops[1].flops / 989e12);
  EXPECT_DOUBLE_EQ(seconds(0, ops[4]), 12.5e-6);
}

TEST(ChakraHostEt, CollectiveWithoutRecordParamCommsAndWithoutWaitsBlocks)
{
  // c10d::allreduce_(tensors, ...) with no record_param_comms and no wait anywhere: the world of the default
  // group, the buffer's bytes, and the compute after it waits for it.
  const std::string init =
      R"({"id": 3, "name": "## process_group:init ##", "ctrl_deps": 2, "inputs": {"values": ["[{\"pg_name\": \"0\", \"backend_id\": 7, \"ranks\": [], \"group_size\": 4}]"], "shapes": [[]], "types": ["String"]}, "outputs": {"values": [], "shapes": [], "types": []}})";
  const ChakraTrace t = parse_pytorch_et(
      host_et({init, node(4, "aten::mul", 2, {{256}}, {{256}}), node(5, "c10d::allreduce_", 2, {{256}}, {}),
               node(6, "aten::mul", 2, {{256}}, {{256}})}),
      "allreduce.json");
  const auto& ops = t.graph.ranks.at(0).ops;
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[1].kind, traces::OpKind::Collective);
  EXPECT_EQ(ops[1].collective, CollectiveOp::AllReduce);
  EXPECT_EQ(ops[1].bytes, 512);
  EXPECT_EQ(ops[1].deps, std::vector<int64_t>{0});
  EXPECT_EQ(ops[2].deps, std::vector<int64_t>{1});
  EXPECT_EQ(t.world_size, 4);
  EXPECT_EQ(t.graph.groups.at(0).ranks, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_NO_THROW(sim::check_chakra_graph(t.graph));
}

TEST(ChakraHostEt, BadInputIsOneLineNamingTheFile)
{
  expect_error([] { parse_pytorch_et(R"({"schema": "1.0.2"})", "a.json"); }, {"a.json", "no 'nodes' array"});
  expect_error([] { parse_pytorch_et(R"({"schema": "1.0.2", "nodes": [{"name": "x", "ctrl_deps": 1}]})", "b.json"); },
               {"b.json", "nodes[0]", "'id'"});
  expect_error([] { parse_pytorch_et(R"({"schema": "1.0.2", "nodes": [{"id": 4, "ctrl_deps": 1}]})", "c.json"); },
               {"c.json", "node 4", "'name'"});
  expect_error([] { parse_pytorch_et(R"({"schema": "1.0.2", "nodes": [{"id": 4, "name": "x"}]})", "d.json"); },
               {"d.json", "node 4 'x'", "'ctrl_deps'"});
  expect_error(
      [] {
        parse_pytorch_et(host_et({node(3, "aten::mm", 2, {{2, 2}}, {}), node(3, "x", 2, {}, {})}), "e.json");
      },
      {"e.json", "node 3", "duplicate id"});
  expect_error([] { parse_pytorch_et(host_et({node(3, "aten::empty", 2, {}, {})}), "f.json"); },
               {"f.json", "none of its 3 nodes"});
  const std::string text = read_text(sample);
  expect_error([&] { parse_pytorch_et(text.substr(0, text.size() / 2), "g.json"); }, {"g.json:", "end of input"});
}

// The op graph of a pipelined plan, exported as `simulate --chakra` does and read back.
TEST(ChakraEt, ExportThenImportGivesTheSameOpsCollectivesAndFlops)
{
  const traces::OpGraph graph = workload_graph(testing::chakra_test_plan_workload());
  const fs::path dir = fs::path(::testing::TempDir()) / ("chakra_import." + std::to_string(getpid()));
  fs::remove_all(dir);
  ChakraExportOptions options;
  options.compute_duration_s = [](const traces::Op& op) { return op.flops / 1e14 + 1e-5; };
  const ChakraExportSummary summary = write_chakra_traces(graph, dir, options);
  ASSERT_EQ(summary.files.size(), 2u);

  const ChakraTrace t = read_chakra_et(summary.files[0].string());
  EXPECT_EQ(t.input, ChakraInput::ProtobufEt);
  EXPECT_EQ(t.schema, "0.0.4");
  ASSERT_EQ(t.graph.ranks.size(), graph.ranks.size()); // the sibling rank file is read too
  double flops = 0, imported_flops = 0;
  for (size_t r = 0; r < graph.ranks.size(); ++r) {
    const traces::RankProgram& a = graph.ranks[r];
    const traces::RankProgram& b = t.graph.ranks[r];
    SCOPED_TRACE("rank " + std::to_string(a.rank));
    EXPECT_EQ(b.rank, a.rank);
    ASSERT_EQ(b.ops.size(), a.ops.size());
    EXPECT_EQ(count(b, traces::OpKind::Collective), count(a, traces::OpKind::Collective));
    EXPECT_EQ(count(b, traces::OpKind::Send), count(a, traces::OpKind::Send));
    EXPECT_EQ(count(b, traces::OpKind::Recv), count(a, traces::OpKind::Recv));
    for (size_t i = 0; i < a.ops.size(); ++i) {
      const traces::Op &x = a.ops[i], &y = b.ops[i];
      EXPECT_EQ(y.id, x.id);
      EXPECT_EQ(y.name, x.name);
      EXPECT_EQ(y.stream, x.stream);
      EXPECT_EQ(y.phase, x.phase);
      EXPECT_EQ(y.layer, x.layer);
      EXPECT_EQ(y.micro_batch, x.micro_batch);
      EXPECT_NEAR(y.flops, x.flops, 0.5);
      EXPECT_NEAR(y.bytes, x.bytes, 0.5);
      if (x.is_communication()) {
        EXPECT_EQ(y.kind, x.kind);
        EXPECT_EQ(y.collective, x.collective);
        EXPECT_EQ(y.peer, x.peer);
        EXPECT_EQ(y.sequence, x.sequence);
        if (x.kind == traces::OpKind::Collective) { // the communicator, by its pg_name and the comm_groups file
          EXPECT_EQ(t.graph.groups.at(static_cast<size_t>(y.group)).ranks,
                    graph.groups.at(static_cast<size_t>(x.group)).ranks);
        }
      } else {
        EXPECT_EQ(y.duration_ns, std::llround(options.compute_duration_s(x) * 1e6) * 1000) << x.name;
      }
      flops += x.flops;
      imported_flops += y.flops;
    }
  }
  EXPECT_NEAR(imported_flops, flops, 1e-9 * flops);
  EXPECT_NEAR(t.stats.flops, flops, 1e-9 * flops);
  double collective_bytes = 0; // nccl-tests bytes, whatever comm_size the file holds
  for (const traces::RankProgram& p : graph.ranks)
    for (const traces::Op& op : p.ops)
      collective_bytes += op.kind == traces::OpKind::Collective ? op.bytes : 0.0;
  EXPECT_NEAR(t.stats.collective_bytes, collective_bytes, 1e-9 * collective_bytes);
  EXPECT_EQ(t.stats.collectives, summary.collectives);
  EXPECT_EQ(t.stats.nodes, summary.nodes);
  EXPECT_EQ(t.graph.metadata.at("tp"), "2");
  EXPECT_NO_THROW(sim::check_chakra_graph(t.graph));
  fs::remove_all(dir);
}

std::string delimited(const std::vector<const google::protobuf::MessageLite*>& messages)
{
  std::ostringstream out;
  for (const auto* m : messages)
    google::protobuf::util::SerializeDelimitedToOstream(*m, &out);
  return out.str();
}

TEST(ChakraEt, AllGatherSizesFollowTheConventionTheFileNames)
{
  // An all-gather of 800 B (nccl-tests: the gathered tensor) over ranks {0, 1}: ASTRA-sim's comm_size is a rank's
  // 400 B (Ring.cc: final_data_size = data_size * nodes_in_ring), an export without the attribute holds 800 B.
  ChakraProtoMsg::GlobalMetadata old_meta;
  old_meta.set_version("0.0.4");
  ChakraProtoMsg::GlobalMetadata meta = old_meta;
  ChakraProtoMsg::AttributeProto* convention = meta.add_attr();
  convention->set_name(chakra_convention_attr);
  convention->set_string_val(chakra_astra_sim_convention);
  const auto all_gather = [](int64_t comm_size, const std::string& pg_name) {
    ChakraProtoMsg::Node n;
    n.set_id(1);
    n.set_name("ag");
    n.set_type(ChakraProtoMsg::COMM_COLL_NODE);
    for (const auto& [name, value] : {std::pair<const char*, int64_t>{"comm_type", ChakraProtoMsg::ALL_GATHER},
                                      {"comm_size", comm_size}}) {
      ChakraProtoMsg::AttributeProto* a = n.add_attr();
      a->set_name(name);
      a->set_int64_val(value);
    }
    ChakraProtoMsg::AttributeProto* a = n.add_attr();
    a->set_name("pg_name");
    a->set_string_val(pg_name);
    return n;
  };
  const ChakraProtoMsg::Node share = all_gather(400, "1"), whole = all_gather(800, "0");
  const ChakraTrace fresh = parse_chakra_et(delimited({&meta, &share}), "new.et", 0, {{"1", {0, 1}}});
  const ChakraTrace old = parse_chakra_et(delimited({&old_meta, &whole}), "old.et", 0, {{"0", {0, 1}}});
  for (const ChakraTrace* t : {&fresh, &old}) {
    SCOPED_TRACE(t->source);
    EXPECT_EQ(t->graph.ranks.at(0).ops.at(0).bytes, 800);
    EXPECT_EQ(t->stats.collective_bytes, 800);
    EXPECT_EQ(t->graph.groups.at(0).ranks, (std::vector<int32_t>{0, 1}));
  }
  convention->set_string_val("nccl");
  expect_error([&] { parse_chakra_et(delimited({&meta, &share}), "x.et", 0, {{"1", {0, 1}}}); },
               {"x.et", "comm_convention", "'nccl'"});
}

TEST(ChakraEt, BadInputIsOneLineNamingTheFile)
{
  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version("0.0.4");
  ChakraProtoMsg::Node comp;
  comp.set_id(1);
  comp.set_name("gemm");
  comp.set_type(ChakraProtoMsg::COMP_NODE);
  comp.set_duration_micros(5);
  EXPECT_EQ(parse_chakra_et(delimited({&meta, &comp}), "ok.et", 0).graph.ranks.at(0).ops.at(0).duration_ns, 5000);

  ChakraProtoMsg::Node unknown = comp;
  unknown.set_type(static_cast<ChakraProtoMsg::NodeType>(42));
  expect_error(
      [&] {
        parse_chakra_et(delimited({&meta, &comp, &unknown}), "u.et", 0);
      },
      {"u.et", "node 1 'gemm'", "unknown node type 42"});
  ChakraProtoMsg::Node coll;
  coll.set_id(2);
  coll.set_name("ar");
  coll.set_type(ChakraProtoMsg::COMM_COLL_NODE);
  expect_error(
      [&] {
        parse_chakra_et(delimited({&meta, &comp, &coll}), "c.et", 0);
      },
      {"c.et", "node 2 'ar'", "COMM_COLL_NODE without attribute 'comm_type'"});
  ChakraProtoMsg::Node dangling = comp;
  dangling.set_id(3);
  dangling.add_data_deps(99);
  expect_error(
      [&] {
        parse_chakra_et(delimited({&meta, &comp, &dangling}), "d.et", 0);
      },
      {"d.et", "node 3", "dependency 99 names no node"});
  ChakraProtoMsg::Node a = comp, b = comp;
  b.set_id(2);
  a.add_data_deps(2);
  b.add_data_deps(1);
  expect_error([&] { parse_chakra_et(delimited({&meta, &a, &b}), "cycle.et", 0); }, {"cycle.et", "cycle"});
  ChakraProtoMsg::GlobalMetadata no_version;
  expect_error([&] { parse_chakra_et(delimited({&no_version, &comp}), "v.et", 0); }, {"v.et", "'version'"});
  expect_error([&] { parse_chakra_et("", "empty.et", 0); }, {"empty.et", "empty file"});
  // Every truncation of a valid stream is an error or a shorter valid graph, never a crash.
  ChakraProtoMsg::Node second = comp;
  second.set_id(2);
  second.add_data_deps(1);
  const std::string whole = delimited({&meta, &comp, &second});
  for (size_t n = 0; n < whole.size(); ++n) {
    try {
      parse_chakra_et(whole.substr(0, n), "t.et", 0);
    } catch (const traces::TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("t.et: "), std::string::npos) << e.what();
    }
  }
  expect_error([&] { parse_chakra_et(whole.substr(0, whole.size() - 2), "t.et", 0); }, {"t.et", "truncated"});
}

} // namespace
} // namespace gputwin::chakra
