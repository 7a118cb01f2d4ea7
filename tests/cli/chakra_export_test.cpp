// `gputwin simulate --chakra DIR` through the real binary: one Chakra ET file per simulated rank, decoded with
// the generated protobuf classes (length-delimited messages), nodes and collectives counted against the
// workload generator's own op graph for the same model and plan.
#include "run_cli.hpp"
#include "traces/chakra_test_plan.hpp"

#include "et_def.pb.h"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/token_exchange.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/models/workload_unfolding.hpp"
#include "gputwin/traces/json_value.hpp"
#include "gputwin/traces/trace_io.hpp"
#include "test_temp_path.hpp"

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace gputwin::testing {
namespace {

namespace fs = std::filesystem;

struct DecodedRank {
  ChakraProtoMsg::GlobalMetadata metadata;
  std::vector<ChakraProtoMsg::Node> nodes;
};

DecodedRank decode(const fs::path& path)
{
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  google::protobuf::io::IstreamInputStream stream(&in);
  DecodedRank r;
  bool clean_eof = false;
  EXPECT_TRUE(google::protobuf::util::ParseDelimitedFromZeroCopyStream(&r.metadata, &stream, &clean_eof)) << path;
  for (;;) {
    ChakraProtoMsg::Node node;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&node, &stream, &clean_eof)) {
      EXPECT_TRUE(clean_eof) << path << ": a truncated or undecodable message after node " << r.nodes.size();
      break;
    }
    r.nodes.push_back(std::move(node));
  }
  return r;
}

const ChakraProtoMsg::AttributeProto* attr(const ChakraProtoMsg::Node& node, const std::string& name)
{
  for (const auto& a : node.attr())
    if (a.name() == name)
      return &a;
  return nullptr;
}

// A catalogue model cut to `layers` layers.
GptConfig catalogue_model(const std::string& name, int64_t layers)
{
  const CatalogEntry* entry = find_catalog_model(name);
  if (entry == nullptr)
    throw std::runtime_error("no catalogue model '" + name + "'");
  GptConfig model = entry->model;
  model.layers = layers;
  return model;
}

fs::path fresh_dir(const std::string& name)
{
  const fs::path dir = fs::path(test_temp_path(name));
  fs::remove_all(dir);
  return dir;
}

// Runs the export and checks every file against the workload's graph: every rank's own program
// (unfolded_workload_graph) by default, the simulated representatives' (workload_graph) with
// `--chakra-ranks folded` in `flags`.
void check_export(const std::string& flags, const Workload& workload, const std::string& dir_name)
{
  SCOPED_TRACE(flags);
  const fs::path dir = fresh_dir(dir_name);
  const CliResult r = run_gputwin("simulate " + flags + " --chakra '" + dir.string() + "'", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const bool folded = flags.find("--chakra-ranks folded") != std::string::npos;
  const traces::OpGraph graph = folded ? workload_graph(workload) : unfolded_workload_graph(workload);
  if (!folded) {
    EXPECT_EQ(static_cast<int64_t>(graph.ranks.size()), workload.plan.gpus());
  }
  // One .et file per rank of the graph, nothing else but the communicator file.
  std::set<std::string> expected_files{"workload.comm_groups.json"}, files;
  for (const traces::RankProgram& p : graph.ranks)
    expected_files.insert("workload." + std::to_string(p.rank) + ".et");
  for (const auto& entry : fs::directory_iterator(dir))
    files.insert(entry.path().filename().string());
  EXPECT_EQ(files, expected_files);

  int64_t total_nodes = 0, total_collectives = 0;
  for (const traces::RankProgram& program : graph.ranks) {
    SCOPED_TRACE("rank " + std::to_string(program.rank));
    const DecodedRank decoded = decode(dir / ("workload." + std::to_string(program.rank) + ".et"));
    EXPECT_EQ(decoded.metadata.version(), "0.0.4");
    const auto convention = std::find_if(decoded.metadata.attr().begin(), decoded.metadata.attr().end(),
                                         [](const auto& a) { return a.name() == "comm_convention"; });
    ASSERT_NE(convention, decoded.metadata.attr().end()); // what tells gputwin's import the sizes are ASTRA-sim's
    EXPECT_EQ(convention->string_val(), "astra-sim");
    ASSERT_EQ(decoded.nodes.size(), program.ops.size());

    std::map<ChakraProtoMsg::NodeType, int64_t> by_type, expected_by_type;
    std::map<ChakraProtoMsg::CollectiveCommType, int64_t> by_comm, expected_by_comm;
    std::set<uint64_t> ids;
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const traces::Op& op = program.ops[i];
      const ChakraProtoMsg::Node& node = decoded.nodes[i];
      EXPECT_EQ(node.id(), static_cast<uint64_t>(op.id));
      EXPECT_EQ(node.name(), op.name);
      for (const uint64_t d : node.data_deps()) // dependencies point to earlier nodes of the file
        EXPECT_TRUE(ids.count(d)) << op.name << " depends on unknown or later node " << d;
      EXPECT_TRUE(ids.insert(node.id()).second) << "duplicate id " << node.id();
      ++by_type[node.type()];
      switch (op.kind) {
      case traces::OpKind::Compute:
      case traces::OpKind::Memcpy:
        ++expected_by_type[ChakraProtoMsg::COMP_NODE];
        ASSERT_NE(attr(node, "num_ops"), nullptr);
        EXPECT_EQ(attr(node, "num_ops")->int64_val(), std::llround(op.flops));
        ASSERT_NE(attr(node, "tensor_size"), nullptr);
        if (op.flops > 1e11) { // a large GEMM takes well over a microsecond on the compute model
          EXPECT_GT(node.duration_micros(), 0u) << op.name;
        }
        break;
      case traces::OpKind::Collective: {
        ++expected_by_type[ChakraProtoMsg::COMM_COLL_NODE];
        const auto expected = op.collective == CollectiveOp::AllReduce       ? ChakraProtoMsg::ALL_REDUCE
                              : op.collective == CollectiveOp::AllGather     ? ChakraProtoMsg::ALL_GATHER
                              : op.collective == CollectiveOp::ReduceScatter ? ChakraProtoMsg::REDUCE_SCATTER
                              : op.collective == CollectiveOp::Broadcast     ? ChakraProtoMsg::BROADCAST
                                                                             : ChakraProtoMsg::ALL_TO_ALL;
        ++expected_by_comm[expected];
        ASSERT_NE(attr(node, "comm_type"), nullptr);
        ++by_comm[static_cast<ChakraProtoMsg::CollectiveCommType>(attr(node, "comm_type")->int64_val())];
        // ASTRA-sim's sizes: an all-gather's comm_size is each rank's share (its ring multiplies by the group
        // size), the others' the nccl-tests bytes; communicator ids from 1 (0 is ASTRA-sim's all-ranks group).
        const size_t members = graph.groups.at(static_cast<size_t>(op.group)).ranks.size();
        ASSERT_NE(attr(node, "comm_size"), nullptr);
        EXPECT_EQ(attr(node, "comm_size")->int64_val(),
                  std::llround(op.collective == CollectiveOp::AllGather ? op.bytes / static_cast<double>(members)
                                                                        : op.bytes))
            << op.name;
        ASSERT_NE(attr(node, "pg_name"), nullptr);
        EXPECT_EQ(attr(node, "pg_name")->string_val(), std::to_string(op.group + 1));
        EXPECT_GE(std::stol(attr(node, "pg_name")->string_val()), 1);
        break;
      }
      case traces::OpKind::Send:
      case traces::OpKind::Recv: {
        const bool send = op.kind == traces::OpKind::Send;
        ++expected_by_type[send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE];
        ASSERT_NE(attr(node, "comm_src"), nullptr);
        ASSERT_NE(attr(node, "comm_dst"), nullptr);
        ASSERT_NE(attr(node, "comm_tag"), nullptr);
        EXPECT_EQ(attr(node, "comm_src")->int32_val(), send ? program.rank : op.peer);
        EXPECT_EQ(attr(node, "comm_dst")->int32_val(), send ? op.peer : program.rank);
        EXPECT_EQ(attr(node, "comm_tag")->int32_val(), op.sequence);
        EXPECT_EQ(attr(node, "comm_size")->int64_val(), std::llround(op.bytes));
        break;
      }
      }
    }
    EXPECT_EQ(by_type, expected_by_type);
    EXPECT_EQ(by_comm, expected_by_comm);
    std::cout << "[ chakra   ] rank " << program.rank << ": " << decoded.nodes.size() << " nodes, "
              << by_type[ChakraProtoMsg::COMP_NODE] << " compute, " << by_type[ChakraProtoMsg::COMM_COLL_NODE]
              << " collectives, " << by_type[ChakraProtoMsg::COMM_SEND_NODE] << " sends, "
              << by_type[ChakraProtoMsg::COMM_RECV_NODE] << " recvs\n";
    total_nodes += static_cast<int64_t>(decoded.nodes.size());
    total_collectives += by_type[ChakraProtoMsg::COMM_COLL_NODE];
  }
  EXPECT_GT(total_nodes, 0);
  EXPECT_GT(total_collectives, 0);

  // The communicator file's keys are the pg_names: every one >= 1.
  std::ifstream groups_file(dir / "workload.comm_groups.json");
  std::stringstream groups_text;
  groups_text << groups_file.rdbuf();
  const traces::JsonValue groups = traces::parse_json(groups_text.str());
  ASSERT_FALSE(groups.keys.empty());
  for (const std::string& key : groups.keys)
    EXPECT_GE(std::stol(key), 1) << groups_text.str();
}

// The all-gather nodes' comm_size values of a decoded rank file.
std::multiset<int64_t> all_gather_sizes(const DecodedRank& rank)
{
  std::multiset<int64_t> sizes;
  for (const auto& node : rank.nodes)
    if (node.type() == ChakraProtoMsg::COMM_COLL_NODE &&
        attr(node, "comm_type")->int64_val() == ChakraProtoMsg::ALL_GATHER)
      sizes.insert(attr(node, "comm_size")->int64_val());
  return sizes;
}

TEST(ChakraExport, PaperPlanOfGpt22bOnOneNode)
{
  // The paper plan: tp 8, pp 1 — eight ranks, one simulated.
  const CatalogEntry* entry = find_catalog_model("gpt-22b");
  ASSERT_NE(entry, nullptr);
  ParallelPlan paper = entry->paper_plan; // --plan paper: Table 3's plan with SP and selective recompute (Table 5)
  paper.tp_comm = TpComm::SequenceParallel;
  paper.recompute = Recompute::Selective;
  check_export("--model gpt-22b --plan paper --nodes 1", make_workload(entry->model, paper), "chakra_22b");
  // SP's TP all-gather gathers s·b·h bf16 values: 2048 · 4 · 6144 · 2 = 100,663,296 B in nccl-tests' count, which
  // ASTRA-sim (Ring.cc, All_Gather: final_data_size = data_size * nodes_in_ring) wants as the share of one of 8.
  const fs::path rank0 = fs::path(test_temp_path("chakra_22b")) / "workload.0.et";
  const std::multiset<int64_t> sizes = all_gather_sizes(decode(rank0));
  EXPECT_GT(sizes.count(100'663'296 / 8), 0u);
  EXPECT_EQ(sizes.count(100'663'296), 0u);
}

TEST(ChakraExport, PipelinedPlanHasAFilePerRankWithItsOwnCommunicatorsAndPeers)
{
  // tp 2, pp 2, dp 2 on one node (chakra_test_plan.hpp): eight files. Every rank is a member of each
  // communicator it names, the communicators are the plan's (4 TP pairs, 4 DP pairs, 4 first/last-stage
  // embedding pairs, each in the communicator file), and every send has its receive in the peer's file: same
  // (src, dst, tag, size).
  const Workload workload = testing::chakra_test_plan_workload();
  check_export(testing::chakra_test_plan_flags, workload, "chakra_all");

  const fs::path dir = fs::path(test_temp_path("chakra_all"));
  const traces::OpGraph graph = unfolded_workload_graph(workload);
  ASSERT_EQ(graph.groups.size(), 12u);
  std::map<std::string, int> kinds;
  for (const traces::CommGroup& g : graph.groups) {
    ++kinds[g.kind];
    EXPECT_EQ(g.ranks.size(), 2u) << g.kind;
  }
  EXPECT_EQ(kinds, (std::map<std::string, int>{{"dp", 4}, {"embedding", 4}, {"tp", 4}}));
  std::ifstream groups_file(dir / "workload.comm_groups.json");
  std::stringstream groups_text;
  groups_text << groups_file.rdbuf();
  for (size_t g = 0; g < graph.groups.size(); ++g) {
    std::ostringstream entry;
    entry << '"' << g + 1 << "\": [" << graph.groups[g].ranks[0] << ", " << graph.groups[g].ranks[1] << ']';
    EXPECT_NE(groups_text.str().find(entry.str()), std::string::npos) << groups_text.str();
  }
  std::multiset<std::tuple<int32_t, int32_t, int32_t, int64_t>> sends, recvs;
  for (int32_t rank = 0; rank < 8; ++rank) {
    std::set<int32_t> partners;
    for (const auto& node : decode(dir / ("workload." + std::to_string(rank) + ".et")).nodes) {
      if (node.type() == ChakraProtoMsg::COMM_COLL_NODE) {
        const auto& members = graph.groups.at(std::stoul(attr(node, "pg_name")->string_val()) - 1).ranks;
        EXPECT_NE(std::find(members.begin(), members.end(), rank), members.end()) << "rank " << rank;
        partners.insert(members.begin(), members.end());
      }
      if (node.type() == ChakraProtoMsg::COMM_SEND_NODE || node.type() == ChakraProtoMsg::COMM_RECV_NODE)
        (node.type() == ChakraProtoMsg::COMM_SEND_NODE ? sends : recvs)
            .insert({attr(node, "comm_src")->int32_val(), attr(node, "comm_dst")->int32_val(),
                     attr(node, "comm_tag")->int32_val(), attr(node, "comm_size")->int64_val()});
    }
    // rank = tp + 2 (dp + 2 stage): its TP partner, its DP partner and its embedding partner on the other stage.
    EXPECT_EQ(partners, (std::set<int32_t>{rank, rank ^ 1, rank ^ 2, rank ^ 4})) << "rank " << rank;
  }
  // Each of the 8 ranks sends one message per micro-batch: activations forward, gradients backward.
  EXPECT_EQ(static_cast<int64_t>(sends.size()), 8 * workload.plan.micro_batches());
  EXPECT_EQ(sends, recvs);
}

TEST(ChakraExport, FoldedExportWritesTheSimulatedRanksOnly)
{
  const Workload workload = testing::chakra_test_plan_workload();
  check_export(testing::chakra_test_plan_flags + std::string(" --chakra-ranks folded"), workload, "chakra_folded");
}

// Ring exchanges (context parallelism's K/V blocks, a SendRecv collective in the generator) have no Chakra
// collective type: each is a send to the next rank of the ring and a receive from the previous one, and the ops
// after it depend on both. llama3-8b cut to 2 layers, tp 2 x cp 2 on an H100 node: rank = tp + 2 cp.
TEST(ChakraExport, ContextParallelRingExchangesAreSendsAndReceives)
{
  const fs::path dir = fresh_dir("chakra_cp");
  const CliResult r = run_gputwin("simulate --model llama3-8b --layers 2 --attention flash --cluster dgx-h100 --tp 2 "
                                  "--cp 2 --sp --global-batch 1 --chakra '" + dir.string() + "'",
                                  false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::multiset<std::tuple<int32_t, int32_t, int32_t, int64_t>> sends, recvs;
  for (int32_t rank = 0; rank < 4; ++rank) {
    const DecodedRank decoded = decode(dir / ("workload." + std::to_string(rank) + ".et"));
    std::set<uint64_t> ids;
    int64_t exchanges = 0;
    for (size_t i = 0; i < decoded.nodes.size(); ++i) {
      const ChakraProtoMsg::Node& node = decoded.nodes[i];
      for (const uint64_t d : node.data_deps())
        EXPECT_TRUE(ids.count(d)) << node.name() << " depends on unknown or later node " << d;
      EXPECT_TRUE(ids.insert(node.id()).second) << "duplicate id " << node.id();
      const bool send = node.type() == ChakraProtoMsg::COMM_SEND_NODE;
      if (!send && node.type() != ChakraProtoMsg::COMM_RECV_NODE)
        continue;
      (send ? sends : recvs)
          .insert({attr(node, "comm_src")->int32_val(), attr(node, "comm_dst")->int32_val(),
                   attr(node, "comm_tag")->int32_val(), attr(node, "comm_size")->int64_val()});
      if (node.name().rfind("cp.kv", 0) == 0 && send) {
        ++exchanges;
        // Its receive follows it, from the other rank of the two-rank ring (rank +- 2).
        ASSERT_LT(i + 1, decoded.nodes.size());
        const ChakraProtoMsg::Node& recv = decoded.nodes[i + 1];
        EXPECT_EQ(recv.type(), ChakraProtoMsg::COMM_RECV_NODE);
        EXPECT_EQ(recv.name(), node.name());
        EXPECT_EQ(attr(node, "comm_dst")->int32_val(), rank ^ 2);
        EXPECT_EQ(attr(recv, "comm_src")->int32_val(), rank ^ 2);
      }
    }
    // Per layer one K/V exchange forward and one gradient exchange backward (cp - 1 = 1 each), 2 layers.
    EXPECT_EQ(exchanges, 4) << "rank " << rank;
  }
  EXPECT_EQ(sends, recvs);
}

// A MoE token exchange under load imbalance is an all-to-all-v (each pair its own bytes), which Chakra's ALL_TO_ALL
// (one comm_size) cannot say: it is written as a send to and a receive from every other rank of its EP group, tag
// 2^30 + its sequence, each of its pair's bytes (mixtral-8x7b cut to 2 layers, ep 4 x dp 4 on one node). Balanced,
// the same plan keeps one ALL_TO_ALL node per exchange.
TEST(ChakraExport, UnevenMoeAllToAllsAreWrittenAsPerPairMessages)
{
  const std::string flags = "simulate --model mixtral-8x7b --layers 2 --tp 1 --ep 4 --dp 4 --nodes 1 --global-batch 4 ";
  const GptConfig model = catalogue_model("mixtral-8x7b", 2);
  ParallelPlan plan;
  plan.ep = 4;
  plan.dp = 4;
  plan.global_batch = 4;
  plan.moe_imbalance_cv = 0.5;
  const Workload workload = make_workload(model, plan);
  ASSERT_TRUE(workload.expert_loads);
  const traces::OpGraph graph = unfolded_workload_graph(workload);

  const fs::path dir = fresh_dir("chakra_moe_uneven");
  const CliResult r = run_gputwin(flags + "--moe-imbalance 0.5 --chakra '" + dir.string() + "'", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  constexpr int32_t a2a_tag_base = 1 << 30;
  // (src, dst, tag) -> size, sends and receives apart; the exchanges' names by tag.
  std::map<std::tuple<int32_t, int32_t, int32_t>, int64_t> sends, recvs;
  std::map<int32_t, std::string> exchange_name;
  for (const traces::RankProgram& program : graph.ranks) {
    SCOPED_TRACE("rank " + std::to_string(program.rank));
    const DecodedRank decoded = decode(dir / ("workload." + std::to_string(program.rank) + ".et"));
    std::set<uint64_t> ids;
    int64_t a2a_ops = 0, a2a_nodes = 0, coll_a2a = 0;
    for (const traces::Op& op : program.ops)
      a2a_ops += op.collective == CollectiveOp::AllToAll && op.kind == traces::OpKind::Collective ? 1 : 0;
    for (const ChakraProtoMsg::Node& node : decoded.nodes) {
      for (const uint64_t d : node.data_deps())
        EXPECT_TRUE(ids.count(d)) << node.name() << " depends on unknown or later node " << d;
      EXPECT_TRUE(ids.insert(node.id()).second) << "duplicate id " << node.id();
      if (node.type() == ChakraProtoMsg::COMM_COLL_NODE &&
          attr(node, "comm_type")->int64_val() == ChakraProtoMsg::ALL_TO_ALL)
        ++coll_a2a;
      const bool send = node.type() == ChakraProtoMsg::COMM_SEND_NODE;
      if ((!send && node.type() != ChakraProtoMsg::COMM_RECV_NODE) || attr(node, "comm_tag")->int32_val() < a2a_tag_base)
        continue;
      ++a2a_nodes;
      const int32_t tag = attr(node, "comm_tag")->int32_val();
      exchange_name[tag] = node.name();
      const auto key = std::make_tuple(attr(node, "comm_src")->int32_val(), attr(node, "comm_dst")->int32_val(), tag);
      EXPECT_EQ(std::get<0>(key) == program.rank, send);
      EXPECT_EQ(std::get<1>(key) == program.rank, !send);
      EXPECT_TRUE((send ? sends : recvs).emplace(key, attr(node, "comm_size")->int64_val()).second);
    }
    EXPECT_GT(a2a_ops, 0);
    EXPECT_EQ(coll_a2a, 0); // every exchange is skewed under CV 0.5
    EXPECT_EQ(a2a_nodes, a2a_ops * 2 * 3); // a send and a receive for each of the 3 peers
  }
  EXPECT_EQ(sends, recvs); // every message received as sent, same size
  // The traffic matrix has rank one: a dispatch's pair bytes depend on the receiver only (its experts' load), a
  // combine's on the sender only; and they are not all equal (the load is skewed).
  std::map<std::pair<int32_t, int32_t>, std::set<int64_t>> by_side; // (tag, the rank whose load counts) -> sizes
  std::set<int64_t> all_sizes;
  for (const auto& [key, size] : sends) {
    const auto& [src, dst, tag] = key;
    const std::string& name = exchange_name.at(tag);
    const bool at_sender = name == "moe.combine" || name == "moe.dispatch.bwd";
    by_side[{tag, at_sender ? src : dst}].insert(size);
    all_sizes.insert(size);
  }
  for (const auto& [side, sizes] : by_side)
    EXPECT_EQ(sizes.size(), 1u) << "tag " << side.first << " rank " << side.second << ": " << sizes.size() << " sizes";
  EXPECT_GT(all_sizes.size(), 1u);
  // And each is the pair bytes of the model's loads (models/token_exchange.hpp, traces' all_to_all_pair_bytes).
  for (const traces::Op& op : graph.ranks[0].ops) {
    const std::optional<AllToAllWeights> w = token_exchange_weights(*workload.expert_loads, op);
    if (!w)
      continue;
    const int32_t tag = a2a_tag_base + static_cast<int32_t>(op.sequence);
    EXPECT_EQ(sends.at({0, 1, tag}), std::llround(all_to_all_pair_bytes(op.bytes, *w, 0, 1, 4))) << op.name;
    EXPECT_EQ(sends.at({2, 0, tag}), std::llround(all_to_all_pair_bytes(op.bytes, *w, 2, 0, 4))) << op.name;
  }

  // Balanced: one ALL_TO_ALL collective per exchange, no all-to-all-v messages.
  const fs::path even = fresh_dir("chakra_moe_even");
  const CliResult balanced = run_gputwin(flags + "--chakra '" + even.string() + "'", false);
  ASSERT_EQ(balanced.exit_code, 0) << balanced.output;
  int64_t coll_a2a = 0;
  for (const ChakraProtoMsg::Node& node : decode(even / "workload.0.et").nodes) {
    if (node.type() == ChakraProtoMsg::COMM_COLL_NODE &&
        attr(node, "comm_type")->int64_val() == ChakraProtoMsg::ALL_TO_ALL)
      ++coll_a2a;
    if (node.type() == ChakraProtoMsg::COMM_SEND_NODE) {
      EXPECT_LT(attr(node, "comm_tag")->int32_val(), a2a_tag_base);
    }
  }
  EXPECT_GT(coll_a2a, 0);
}

// cp 2 and dp 1: the CP ring and the dp x cp group have the same two members but are separate communicators,
// each numbering its own collectives from 0; the unfolded graph keeps them apart (merged, the dp all-reduce reused
// the ring's sequence 0 and the graph did not validate -- found by the chakra_writer fuzz harness's author).
TEST(ChakraExport, UnfoldedGraphKeepsCommunicatorsOfOneMemberSetApart)
{
  const GptConfig model = catalogue_model("llama3-8b", 2);
  ParallelPlan plan;
  plan.tp = 2;
  plan.cp = 2;
  plan.tp_comm = TpComm::SequenceParallel;
  plan.global_batch = 1;
  plan.attention = AttentionKernel::Flash;
  const traces::OpGraph graph = unfolded_workload_graph(make_workload(model, plan));
  EXPECT_NO_THROW(traces::validate_op_graph(graph));
  std::map<std::vector<int32_t>, std::set<std::string>> kinds; // members -> the kinds of their communicators
  for (const traces::CommGroup& g : graph.groups)
    kinds[g.ranks].insert(g.kind);
  EXPECT_EQ(kinds.at({0, 2}), (std::set<std::string>{"cp", "dp"}));
}

TEST(ChakraExport, SameInputGivesByteIdenticalFiles)
{
  const std::string flags = "simulate --model gpt-22b --layers 2 --tp 2 --pp 2 --nodes 1 --estimate --chakra ";
  const fs::path a = fresh_dir("chakra_a"), b = fresh_dir("chakra_b");
  ASSERT_EQ(run_gputwin(flags + "'" + a.string() + "'", false).exit_code, 0);
  ASSERT_EQ(run_gputwin(flags + "'" + b.string() + "'", false).exit_code, 0);
  for (const auto& entry : fs::directory_iterator(a)) {
    std::ifstream x(entry.path(), std::ios::binary), y(b / entry.path().filename(), std::ios::binary);
    std::stringstream sx, sy;
    sx << x.rdbuf();
    sy << y.rdbuf();
    EXPECT_EQ(sx.str(), sy.str()) << entry.path().filename();
  }
}

TEST(ChakraExport, UnwritableDirectoryIsAOneLineErrorNamingThePath)
{
  const fs::path file = fs::path(test_temp_path("chakra_not_a_dir"));
  std::ofstream(file) << "x";
  expect_one_line_error("simulate --model gpt-22b --layers 2 --tp 8 --nodes 1 --chakra '" + file.string() + "/sub'",
                        file.string() + "/sub");
  const CliResult r = run_gputwin("simulate --model gpt-22b --layers 2 --tp 8 --nodes 1 --chakra '" + file.string() + "'",
                                  true);
  EXPECT_EQ(r.exit_code, 2);
}

TEST(ChakraExport, ChakraRanksIsCheckedAndAnExportTooLargeIsRefused)
{
  const std::string plan = "simulate --model gpt-22b --layers 2 --tp 8 --nodes 1 ";
  const std::string dir = test_temp_path("chakra_ranks");
  expect_one_line_error(plan + "--chakra '" + dir + "' --chakra-ranks some", "--chakra-ranks: expected all or folded");
  expect_one_line_error(plan + "--chakra-ranks folded", "--chakra-ranks: needs --chakra DIR");
  // 8192 ranks of GPT-3 175B: 38 million nodes, more than the export writes for every rank; nothing is written.
  const fs::path big = fresh_dir("chakra_too_large");
  expect_one_line_error("simulate --model gpt3-175b --tp 8 --pp 8 --dp 128 --global-batch 1024 --sp --chakra '" +
                            big.string() + "'",
                        "expected --chakra-ranks folded");
  EXPECT_FALSE(fs::exists(big));
}

} // namespace
} // namespace gputwin::testing
