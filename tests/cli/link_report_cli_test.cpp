// The link report of `gputwin simulate` and `gputwin collective`, and degraded and failed fabric, through the real
// binary.
//
// The NIC bytes of the report must equal the inter-node bytes of the workload, worked out here without the
// executor: every pipeline message of every folded copy (t x d of them per stage program) and every collective
// of every copy of its communicator (planned alone by plan_collective), counting the flows between GPUs of
// different nodes. The simulator folds ranks; this is what checks that the folded copies' flows are all counted.
#include "json_plan.hpp"
#include "run_cli.hpp"

#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/rank_layout.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/collective_plan.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/traces/json_value.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>

namespace gputwin::testing {
namespace {

const std::string tiny = GPUTWIN_SOURCE_DIR "/tests/topologies/data/clusters/tiny.yaml";

// The bytes the workload of `report` (a simulate --json report of a catalog model on dgx-a100) sends between
// nodes, from the stage programs and the rank layout alone.
double workload_inter_node_bytes(const traces::JsonValue& report)
{
  const CatalogEntry* entry = find_catalog_model(member(member(report, "model"), "name").text);
  if (entry == nullptr)
    throw std::runtime_error("not a catalog model");
  const ParallelPlan plan = plan_of(report);
  const Workload workload = make_workload(entry->model, plan);
  const int64_t nodes = *member(member(report, "cluster"), "nodes").as_int64();
  const topo::ClusterSpec cluster = topo::load_cluster("dgx-a100", static_cast<int>(nodes), {});
  const auto node = [&](int64_t rank) { return rank / cluster.gpus_per_node; };
  double bytes = 0;
  std::set<std::pair<int32_t, int64_t>> collectives_seen; // a collective shared by two programs counts once
  for (int64_t stage = 0; stage < plan.pp; ++stage) {
    const traces::RankProgram program = stage_program(workload, stage);
    for (const traces::Op& op : program.ops) {
      if (op.kind == traces::OpKind::Send) {
        const int64_t peer_stage = rank_coord(plan, op.peer).stage;
        for (int64_t d = 0; d < plan.dp; ++d)
          for (int64_t t = 0; t < plan.tp; ++t)
            if (node(global_rank(plan, {stage, d, t})) != node(global_rank(plan, {peer_stage, d, t})))
              bytes += op.bytes;
      } else if (op.kind == traces::OpKind::Collective && collectives_seen.insert({op.group, op.sequence}).second) {
        std::vector<std::vector<int32_t>> copies;
        if (op.group == workload.embedding_group()) {
          for (int64_t d = 0; d < plan.dp; ++d)
            for (int64_t t = 0; t < plan.tp; ++t)
              copies.push_back({static_cast<int32_t>(global_rank(plan, {0, d, t})),
                                static_cast<int32_t>(global_rank(plan, {plan.pp - 1, d, t}))});
        } else if (op.group == workload.dp_group(stage)) {
          for (int64_t t = 0; t < plan.tp; ++t)
            copies.push_back(dp_group_ranks(plan, stage, t));
        } else {
          for (int64_t d = 0; d < plan.dp; ++d)
            copies.push_back(tp_group_ranks(plan, stage, d));
        }
        for (const std::vector<int32_t>& copy : copies)
          for (const sim::Flow& f :
               sim::plan_collective(cluster, op.collective, std::vector<int>(copy.begin(), copy.end()), op.bytes).flows)
            if (node(f.src_gpu) != node(f.dst_gpu))
              bytes += f.bytes;
      }
    }
  }
  return bytes;
}

std::map<std::string, double> bytes_by_kind(const traces::JsonValue& report)
{
  std::map<std::string, double> bytes;
  for (const traces::JsonValue& link : member(report, "links").items)
    bytes[member(link, "kind").text] += number(link, "bytes");
  return bytes;
}

void expect_nic_bytes_equal_workload(const std::string& arguments)
{
  SCOPED_TRACE(arguments);
  const CliResult r = run_gputwin(arguments, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const traces::JsonValue report = traces::parse_json(r.output);
  const double expected = workload_inter_node_bytes(report);
  ASSERT_GT(expected, 0);
  const std::map<std::string, double> bytes = bytes_by_kind(report);
  EXPECT_NEAR(bytes.at("nic_tx"), expected, 1e-9 * expected);
  EXPECT_NEAR(bytes.at("nic_rx"), expected, 1e-9 * expected);
  EXPECT_NEAR(number(member(report, "link_report"), "inter_node_bytes"), expected, 1e-9 * expected);
}

TEST(LinkReportCli, Gpt3PaperPlanHasLinksAndTheNicBytesOfTheWorkload)
{
  // The check command.
  const std::string args = "simulate --model gpt3-175b --plan paper --sp --recompute selective --link-report --json";
  const CliResult r = run_gputwin(args, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const traces::JsonValue report = traces::parse_json(r.output);
  const traces::JsonValue& links = member(report, "links");
  ASSERT_GT(links.items.size(), 0u);
  for (const traces::JsonValue& link : links.items) {
    EXPECT_FALSE(member(link, "name").text.empty());
    EXPECT_FALSE(member(link, "kind").text.empty());
    EXPECT_GT(number(link, "bytes"), 0);
    const double busy = number(link, "busy_fraction");
    EXPECT_GT(busy, 0);
    EXPECT_LE(busy, 1);
  }
  // TP traffic on NVLink dominates Table 5's plans (t = 8 inside a node; pipeline messages are small).
  EXPECT_EQ(member(report, "busiest_link_kind").text, "nvlink");
  expect_nic_bytes_equal_workload(args);
}

// Bytes of each link kind in a simulate --link-report --json report.
std::map<std::string, double> bytes_by_link_kind(const std::string& args)
{
  const CliResult r = run_gputwin(args, false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const traces::JsonValue report = traces::parse_json(r.output);
  std::map<std::string, double> bytes;
  for (const traces::JsonValue& kind : member(member(report, "link_report"), "kinds").items)
    bytes[member(kind, "kind").text] = number(kind, "bytes");
  bytes["between_domains"] = number(member(report, "link_report"), "inter_node_bytes");
  return bytes;
}

// TP 16 spans 4 trays of one GB200 NVL72 rack: its collectives run on the rack's NVLink only. The same plan on two
// 8-GPU DGX B200 nodes sends its TP traffic through the NICs.
TEST(LinkReportCli, TensorParallel16InsideOneNvl72RunsOnNvlinkOnly)
{
  const std::string plan = " --model gpt3-175b --tp 16 --pp 1 --dp 1 --layers 2 --global-batch 2 --seq-len 2048 --sp "
                           "--attention flash --allow-oom --link-report --json";
  const auto nvl72 = bytes_by_link_kind("simulate --cluster gb200-nvl72" + plan);
  EXPECT_GT(nvl72.at("nvlink"), 0);
  EXPECT_EQ(nvl72.at("nic_tx"), 0);
  EXPECT_EQ(nvl72.at("pcie"), 0);
  EXPECT_EQ(nvl72.at("between_domains"), 0);
  const auto b200 = bytes_by_link_kind("simulate --cluster dgx-b200" + plan);
  EXPECT_GT(b200.at("nic_tx"), 0);
  EXPECT_GT(b200.at("between_domains"), 0);
}

TEST(LinkReportCli, FoldedDataParallelCopiesAreAllCounted)
{
  // tp 4 x dp 4 per stage: each stage spans two nodes, its DP all-reduces (4 folded copies, one per TP rank)
  // and its pipeline messages (16 copies) cross nodes.
  expect_nic_bytes_equal_workload("simulate --model gpt-22b --tp 4 --pp 2 --dp 4 --global-batch 16 --micro-batch 1 "
                                  "--sp --recompute selective --link-report --json");
}

TEST(LinkReportCli, TextReportAndFileAndTimelineCounters)
{
  const std::string file = ::testing::TempDir() + "link_report_cli_test." + std::to_string(::getpid()) + ".json";
  const std::string timeline = file + ".timeline.json";
  const CliResult text = run_gputwin("simulate --model gpt3-175b --plan paper --link-report", false);
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_NE(text.output.find("busiest link kind: nvlink"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("exposed communication of stage 0"), std::string::npos) << text.output;
  const CliResult to_file =
      run_gputwin("simulate --model gpt3-175b --plan paper --link-report " + file + " --timeline " + timeline, false);
  ASSERT_EQ(to_file.exit_code, 0);
  EXPECT_EQ(to_file.output.find("link report"), std::string::npos); // into the file instead
  std::ifstream in(file);
  std::stringstream content;
  content << in.rdbuf();
  const traces::JsonValue report = traces::parse_json(content.str());
  EXPECT_GT(member(report, "links").items.size(), 0u);
  const traces::JsonValue& exposed = member(member(report, "link_report"), "exposed_communication");
  double attributed = number(exposed, "unattributed_s");
  for (const traces::JsonValue& kind : member(exposed, "by_kind").items)
    attributed += number(kind, "seconds");
  EXPECT_NEAR(attributed, number(exposed, "exposed_s"), 1e-9);
  std::ifstream timeline_in(timeline);
  std::stringstream events;
  events << timeline_in.rdbuf();
  EXPECT_NE(events.str().find("\"ph\":\"C\""), std::string::npos);
  EXPECT_NE(events.str().find("link utilisation"), std::string::npos);
  std::remove(file.c_str());
  std::remove(timeline.c_str());
}

TEST(LinkReportCli, ResultsAreUnchangedByTheReport)
{
  const CliResult plain = run_gputwin("simulate --model gpt3-175b --plan paper --json", false);
  const CliResult with = run_gputwin("simulate --model gpt3-175b --plan paper --json --link-report", false);
  ASSERT_EQ(plain.exit_code, 0);
  ASSERT_EQ(with.exit_code, 0);
  EXPECT_EQ(number(traces::parse_json(plain.output), "iteration_time_s"),
            number(traces::parse_json(with.output), "iteration_time_s"));
  expect_one_line_error("simulate --model gpt3-175b --plan paper --estimate --link-report", "--link-report:");
}

TEST(LinkReportCli, CollectiveLinkReport)
{
  const CliResult r = run_gputwin("collective --cluster dgx-a100 --nodes 2 --op all-reduce --bytes 1G --link-report "
                                  "--json",
                                  false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const traces::JsonValue report = traces::parse_json(r.output);
  const std::map<std::string, double> bytes = bytes_by_kind(report);
  // Every byte that leaves a NIC arrives at one.
  EXPECT_GT(bytes.at("nic_tx"), 0);
  EXPECT_DOUBLE_EQ(bytes.at("nic_tx"), bytes.at("nic_rx"));
  EXPECT_FALSE(member(report, "busiest_link_kind").text.empty());
}

// All-reduce time of `bytes` on the tiny cluster's 4 nodes (16 ranks, 2 rails), ring and Simple forced.
std::pair<double, double> tiny_all_reduce_s(const std::string& faults)
{
  const CliResult r = run_gputwin("collective --cluster " + tiny +
                                      " --nodes 4 --op all-reduce --sweep 1G:2G --algo ring --proto simple --json " +
                                      faults,
                                  false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const traces::JsonValue report = traces::parse_json(r.output);
  const auto& rows = member(report, "results").items;
  return {number(rows.at(0), "time_s"), number(rows.at(1), "time_s")};
}

TEST(FabricFaultsCli, FailedLeafSpineLinkSlowsTheAllReduceByTheRemainingBandwidth)
{
  // The tiny cluster on 4 nodes: a 2-level tree, leaf l holding node l's 2 NICs, u = 2 uplinks per leaf to 2
  // spines, uplinks as fast as a NIC. The ring's 2 channels (one per rail) leave each node on their own uplink
  // (spine 0 for rail 0, spine 1 for rail 1). With leaf.0 <-> spine.0 failed, leaf 0 keeps 1 of its 2 uplinks:
  // both channels into and out of node 0 share it, the bandwidth the remaining paths give is 1/2, and the
  // transfer (the time beyond the fixed latencies: the difference between 2G and 1G) takes u / (u - 1) = 2x.
  const auto [healthy_1g, healthy_2g] = tiny_all_reduce_s("");
  const auto [failed_1g, failed_2g] = tiny_all_reduce_s("--fail-link 'leaf.0->spine.0'");
  const double ratio = (failed_2g - failed_1g) / (healthy_2g - healthy_1g);
  EXPECT_NEAR(ratio, 2.0, 1e-6) << healthy_1g << " " << healthy_2g << " " << failed_1g << " " << failed_2g;
  // The same uplink degraded to half its bandwidth instead: the same 2x, the routes unchanged.
  const auto [degraded_1g, degraded_2g] = tiny_all_reduce_s("--degrade-link 'leaf.0->spine.0=0.5'");
  EXPECT_NEAR((degraded_2g - degraded_1g) / (healthy_2g - healthy_1g), 2.0, 1e-6);
}

TEST(FabricFaultsCli, FailedNicLeavesNcclTheRemainingRails)
{
  // 2 DGX A100 nodes, all 16 GPUs: 8 rails. With NIC 3 of node 1 failed the rings run over the 7 others, each
  // carrying 1/7 instead of 1/8 of the data: the network transfer takes 8/7 as long.
  auto times = [](const std::string& faults) {
    const CliResult r = run_gputwin("collective --cluster dgx-a100 --nodes 2 --op all-reduce --sweep 4G:8G "
                                    "--algo ring --proto simple --json " +
                                        faults,
                                    false);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const traces::JsonValue report = traces::parse_json(r.output);
    const auto& rows = member(report, "results").items;
    return number(rows.at(1), "time_s") - number(rows.at(0), "time_s");
  };
  EXPECT_NEAR(times("--fail-nic 1:3") / times(""), 8.0 / 7.0, 1e-6);
  EXPECT_NEAR(times("--fail-link 'n1.nic3->leaf.r3.0'") / times(""), 8.0 / 7.0, 1e-6);
}

TEST(FabricFaultsCli, FailingTheOnlyLinkOfANodeIsAnError)
{
  // One NIC per node: its cable is the node's only way out.
  const std::string one_nic = "--set node.nics.count=1 --set 'node.nics.gpus=[[0, 1, 2, 3]]'";
  expect_one_line_error("collective --cluster " + tiny + " --nodes 2 " + one_nic +
                            " --op all-reduce --bytes 1M --fail-link 'n1.nic0->leaf.0'",
                        "--fail-link: the failure disconnects the job: no path from");
  expect_one_line_error("simulate --model gpt-22b --tp 8 --pp 1 --dp 2 --global-batch 2 --fail-nic 1:0 --fail-nic 1:1 "
                        "--fail-nic 1:2 --fail-nic 1:3 --fail-nic 1:4 --fail-nic 1:5 --fail-nic 1:6 --fail-nic 1:7",
                        "--fail-nic: the failure disconnects the job");
  const CliResult r = run_gputwin("collective --cluster " + tiny + " --nodes 2 " + one_nic +
                                      " --op all-reduce --bytes 1M --fail-link 'n1.nic0->leaf.0'",
                                  true);
  EXPECT_EQ(r.exit_code, 2);
}

TEST(FabricFaultsCli, BadNamesAndFactorsAreOneLineErrors)
{
  expect_one_line_error("collective --nodes 2 --op all-reduce --bytes 1M --fail-link 'n0.gpu0->nowhere'",
                        "--fail-link: no link 'n0.gpu0->nowhere' in cluster 'dgx-a100'");
  expect_one_line_error("collective --nodes 2 --op all-reduce --bytes 1M --degrade-link 'n9.nic0->leaf.r0.0=0.5'",
                        "--degrade-link: no link 'n9.nic0->leaf.r0.0'");
  expect_one_line_error("collective --nodes 2 --op all-reduce --bytes 1M --degrade-link 'n0.nic0->leaf.r0.0=0'",
                        "--degrade-link: expected a FACTOR > 0, got '0'");
  expect_one_line_error("collective --nodes 2 --op all-reduce --bytes 1M --degrade-link 'n0.nic0->leaf.r0.0=-1'",
                        "--degrade-link: expected a FACTOR > 0, got '-1'");
  expect_one_line_error("collective --nodes 2 --op all-reduce --bytes 1M --degrade-link 'n0.nic0->leaf.r0.0=fast'",
                        "--degrade-link: expected a number as FACTOR");
  expect_one_line_error("collective --nodes 2 --op all-reduce --bytes 1M --degrade-link 'n0.nic0->leaf.r0.0'",
                        "--degrade-link: expected NAME=FACTOR");
  expect_one_line_error("collective --nodes 2 --op all-reduce --bytes 1M --fail-nic 2:0",
                        "--fail-nic: node 2 is not in cluster 'dgx-a100'");
  expect_one_line_error("collective --nodes 2 --op all-reduce --bytes 1M --fail-nic 0:8",
                        "--fail-nic: NIC 8: a node of 'dgx-a100' has 8 NIC(s)");
  expect_one_line_error("collective --nodes 2 --op all-reduce --bytes 1M --fail-nic zero", "--fail-nic: expected NODE:NIC");
  expect_one_line_error("simulate --model gpt3-175b --plan paper --fail-link nope", "--fail-link: no link 'nope'");
  const CliResult r = run_gputwin("simulate --model gpt3-175b --plan paper --degrade-link x=0", true);
  EXPECT_EQ(r.exit_code, 2);
}

TEST(FabricFaultsCli, ACableNamedTwiceIsAOneLineError)
{
  const std::string run = "collective --nodes 2 --op all-reduce --bytes 1M ";
  const std::string expected = " (expected each cable at most once across --degrade-link and --fail-link)";
  expect_one_line_error(run + "--degrade-link 'n1.nic0->leaf.r0.0=0.5' --fail-link 'leaf.r0.0->n1.nic0'",
                        "--fail-link: cable n1.nic0<->leaf.r0.0 is also in --degrade-link" + expected);
  expect_one_line_error(run + "--degrade-link 'n1.nic0->leaf.r0.0=0.5' --degrade-link 'n1.nic0->leaf.r0.0=0.5'",
                        "--degrade-link: cable n1.nic0<->leaf.r0.0 is given twice" + expected);
  expect_one_line_error(run + "--fail-link 'n1.nic0->leaf.r0.0' --fail-link 'n1.nic0->leaf.r0.0'",
                        "--fail-link: cable n1.nic0<->leaf.r0.0 is given twice" + expected);
  EXPECT_EQ(run_gputwin(run + "--fail-nic 1:3 --fail-nic 1:3", true).exit_code, 2);
}

// A small GPT on 4 DGX A100 nodes, tp 8 x dp 4: node n holds replica n's TP group. The simulator runs one folded
// program for the 4 replicas; a fault on the node of replica 1, 2 or 3 must slow the iteration as on replica 0's.
double folded_iteration_s(const std::string& flags)
{
  SCOPED_TRACE(flags);
  const CliResult r = run_gputwin("simulate --hidden 1024 --heads 16 --layers 8 --seq-len 1024 --vocab 51200 --tp 8 "
                                  "--dp 4 --global-batch 8 --cluster dgx-a100 --json " +
                                      flags,
                                  false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.exit_code == 0 ? number(traces::parse_json(r.output), "iteration_time_s") : -1;
}

TEST(FabricFaultsCli, AFaultOnAnyReplicaSlowsTheFoldedIterationAsOnReplicaZero)
{
  for (const std::string executor : {"", "--estimate "}) {
    const double healthy = folded_iteration_s(executor);
    const double on_replica_0 = folded_iteration_s(executor + "--degrade-link 'n0.gpu0->n0.nvswitch=0.01'");
    EXPECT_GT(on_replica_0, 2 * healthy);
    EXPECT_DOUBLE_EQ(folded_iteration_s(executor + "--degrade-link 'n3.gpu0->n3.nvswitch=0.01'"), on_replica_0);
    EXPECT_DOUBLE_EQ(folded_iteration_s(executor + "--degrade-link 'n2.gpu5->n2.nvswitch=0.01'"), on_replica_0);
  }
  // A failed NVLink cable of replica 1's node disconnects its TP group (its GPUs share no PCIe switch) as it does
  // replica 0's.
  for (const std::string node : {"n0", "n1"})
    expect_one_line_error("simulate --hidden 1024 --heads 16 --layers 8 --seq-len 1024 --vocab 51200 --tp 8 --dp 2 "
                          "--global-batch 2 --fail-link '" +
                              node + ".gpu0->" + node + ".nvswitch'",
                          "--fail-link: the failure disconnects the job: no path from " + node + ".gpu0 to " + node +
                              ".gpu");
}

} // namespace
} // namespace gputwin::testing

namespace gputwin::testing {
namespace {

// busbw of one collective on dgx-h100 with 64 nodes, and the leaf-spine links' busy fractions.
struct FabricRun {
  double busbw_gbps = 0;
  double spine_mean_busy = 0, spine_max_busy = 0;
};

FabricRun h100_fabric_run(const std::string& collective, const std::string& sets)
{
  const CliResult r = run_gputwin("collective --cluster dgx-h100 --nodes 64 " + collective +
                                      " --link-report --json " + sets,
                                  false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const traces::JsonValue report = traces::parse_json(r.output);
  FabricRun run;
  run.busbw_gbps = number(member(report, "results").items.at(0), "busbw_gbps");
  for (const traces::JsonValue& kind : member(member(report, "link_report"), "kinds").items)
    if (member(kind, "kind").text == "leaf_spine") {
      run.spine_mean_busy = number(kind, "mean_busy_fraction");
      run.spine_max_busy = number(kind, "max_busy_fraction");
    }
  return run;
}

// A non-blocking rail-optimized tree is never slower than the same tree without rails (the uplinks
// spread D-mod-K over every spine), for all-reduce, all-to-all and point-to-point across nodes; the spines a
// collective uses are evenly busy.
TEST(FabricRoutingCli, RailOptimizedTreeIsNeverSlowerThanTheTreeWithoutRails)
{
  for (const std::string collective : {"--op all-to-all --ranks 64 --ranks-per-node 1 --bytes 1G",
                                       "--op all-reduce --ranks 512 --bytes 1G",
                                       "--op all-to-all --ranks 512 --bytes 4G",
                                       "--op send-recv --ranks 64 --ranks-per-node 1 --bytes 256M"}) {
    SCOPED_TRACE(collective);
    const FabricRun rails = h100_fabric_run(collective, "");
    const FabricRun flat = h100_fabric_run(collective, "--set fabric.rail_optimized=false");
    ASSERT_GT(flat.busbw_gbps, 0);
    EXPECT_GE(rails.busbw_gbps, 0.95 * flat.busbw_gbps);
    if (rails.spine_max_busy > 0) { // the spines in use carry equal shares
      EXPECT_LE(rails.spine_max_busy, 1.05 * rails.spine_mean_busy);
    }
  }
}

// Oversubscription per tier: the aggregation tier at 3:1 makes the core uplinks the bottleneck of an all-to-all
// across pods, at the time their bandwidth gives. dgx-a100 with radix-8 switches, 16 nodes: 4 groups of 4 nodes x
// 8 rails = 32 leaves (leaf 8j + r), 3 levels. [1, 3]: pods of d2 = floor(8 x 3/4) = 6 leaves, u = 4 aggregation
// switches per pod with u2 = floor(8/4) = 2 core links each: 8 uplinks of 25 GB/s per pod. Leaves 8j + r and
// 8j' + r of different groups are 8 apart, so in different pods: of a NIC's traffic to the 15 other nodes, the 12
// nodes of the other groups cross the cores. NIC (node, rail k) carries what the node's 8 GPUs send to GPU k of
// the 15 other nodes (PXN): 8 x 15 x S/128 bytes. Pod 0 (24 NICs) sends 24 x 8 x 12 x S/128 bytes up through 8
// links at 25 GB/s x net_efficiency 0.96. Non-blocking (1), each NIC is the bottleneck: 8 x 15 x S/128 at the
// same 24 GB/s.
TEST(FabricRoutingCli, AggregationOversubscriptionLimitsAnAllToAllAcrossPods)
{
  const double bytes = 1073741824; // 1G
  const double link_bytes_per_s = 25e9 * 0.96;
  const auto time_s = [&](const std::string& ratio) {
    const std::string cluster = "--cluster dgx-a100 --nodes 16 --set fabric.switch_radix=8";
    const CliResult r = run_gputwin("collective " + cluster + " --set fabric.oversubscription=" + ratio +
                                        " --op all-to-all --ranks 128 --bytes 1G --json",
                                    false);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return number(member(traces::parse_json(r.output), "results").items.at(0), "time_s");
  };
  const double nic_bound_s = 8 * 15 * bytes / 128 / link_bytes_per_s;
  const double core_bound_s = 24 * 8 * 12 * bytes / 128 / (8 * link_bytes_per_s);
  EXPECT_NEAR(time_s("1"), nic_bound_s, 0.01 * nic_bound_s);
  EXPECT_NEAR(time_s("[1,3]"), core_bound_s, 0.01 * core_bound_s);
}

} // namespace
} // namespace gputwin::testing
