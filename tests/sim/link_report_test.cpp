// The link report (sim/estimator/link_report.hpp) on hand-made flow logs, computed by hand; and the flow runner's
// flow log (every flow recorded, whichever way it ran). SimGrid allows one platform per process: each test that
// runs flows builds one (ctest runs every test in its own process).
#include "gputwin/sim/collective_executor.hpp"
#include "gputwin/sim/dag_executor.hpp"
#include "gputwin/sim/link_report.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>

namespace gputwin::sim {
namespace {

int link_named(const topo::ClusterGraph& graph, const std::string& name)
{
  for (size_t i = 0; i < graph.links().size(); ++i)
    if (graph.links()[i].name == name)
      return static_cast<int>(i);
  throw std::runtime_error("no link " + name);
}

const LinkUse* use_of(const LinkReport& report, int link)
{
  for (const LinkUse& use : report.links)
    if (use.link == link)
      return &use;
  return nullptr;
}

// The same links with the same bytes, busy time and flows (LinkUse or LinkTraffic), to rounding.
template <class Traffic>
void expect_same_links(const std::vector<Traffic>& a, const std::vector<Traffic>& b)
{
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].link, b[i].link);
    EXPECT_DOUBLE_EQ(a[i].bytes, b[i].bytes);
    EXPECT_DOUBLE_EQ(a[i].busy_s, b[i].busy_s);
    EXPECT_EQ(a[i].flows, b[i].flows);
  }
}

// Two nodes of DGX A100: GPU 0 sends to GPUs 1, 2 (overlapping in time) and 3 (later) over its NVLink, and to
// GPU 8 (the other node, NIC 0's rail: no NVLink).
FlowLog hand_made_log()
{
  FlowLog log;
  log.flows.push_back(FlowRecord{0, 1, 100, 1, 3, flow_tag(0, 0)});
  log.flows.push_back(FlowRecord{0, 2, 50, 2, 4, flow_tag(0, 0)});
  log.flows.push_back(FlowRecord{0, 3, 10, 6, 7, -1});
  log.flows.push_back(FlowRecord{0, 8, 30, 8, 9, -1});
  return log;
}

// Two GB200 NVL72 racks (36 trays of 4 GPUs): a flow between two trays of rack 0 stays on NVLink and is not
// counted between domains; one from rack 0 to rack 1 crosses the NICs and is.
TEST(LinkReport, BytesBetweenDomainsCountRackCrossingsNotTrayCrossings)
{
  const topo::ClusterGraph graph(topo::load_cluster("gb200-nvl72", 36, {}));
  FlowLog log;
  log.flows.push_back(FlowRecord{0, 4, 100, 0, 1, -1});  // tray 0 -> tray 1, rack 0
  log.flows.push_back(FlowRecord{5, 71, 40, 0, 1, -1});  // tray 1 -> tray 17, rack 0
  log.flows.push_back(FlowRecord{0, 72, 30, 1, 2, -1});  // rack 0 -> rack 1
  const LinkReport report = link_report(graph, log, 10);
  EXPECT_DOUBLE_EQ(report.flow_bytes, 170);
  EXPECT_DOUBLE_EQ(report.inter_domain_bytes, 30);
  std::map<std::string, double> bytes;
  for (const LinkClassTotal& k : report.kinds)
    bytes[to_string(k.kind)] = k.bytes;
  EXPECT_DOUBLE_EQ(bytes["nic_tx"], 30) << "only the rack-to-rack flow leaves NVLink";
}

TEST(LinkReport, BytesAndTheUnionOfBusyIntervalsPerDirectedLink)
{
  const topo::ClusterGraph graph(topo::load_cluster("dgx-a100", 2, {}));
  const LinkReport report = link_report(graph, hand_made_log(), 10);
  const LinkUse* up = use_of(report, link_named(graph, "n0.gpu0->n0.nvswitch"));
  ASSERT_NE(up, nullptr);
  EXPECT_DOUBLE_EQ(up->bytes, 160);
  EXPECT_EQ(up->flows, 3);
  EXPECT_DOUBLE_EQ(up->busy_s, 4); // [1, 4] and [6, 7]
  EXPECT_DOUBLE_EQ(up->busy_fraction, 0.4);
  EXPECT_DOUBLE_EQ(up->utilisation, 160 / (300e9 * 0.77 * 10));
  const LinkUse* down = use_of(report, link_named(graph, "n0.nvswitch->n0.gpu1"));
  ASSERT_NE(down, nullptr);
  EXPECT_DOUBLE_EQ(down->busy_fraction, 0.2);
  EXPECT_EQ(use_of(report, link_named(graph, "n0.gpu1->n0.nvswitch")), nullptr); // nothing crossed it

  // The inter-node flow: GPU 0 sits beside NIC 0 (no PXN), both NICs on rail 0's leaf.
  EXPECT_DOUBLE_EQ(report.inter_domain_bytes, 30);
  EXPECT_DOUBLE_EQ(report.flow_bytes, 190);
  std::map<std::string, const LinkClassTotal*> kinds;
  for (const LinkClassTotal& k : report.kinds)
    kinds[to_string(k.kind)] = &k;
  ASSERT_TRUE(kinds.count("nic_tx") && kinds.count("nic_rx") && kinds.count("nvswitch_port"));
  EXPECT_DOUBLE_EQ(kinds["nic_tx"]->bytes, 30);
  EXPECT_DOUBLE_EQ(kinds["nic_rx"]->bytes, 30);
  EXPECT_EQ(kinds["nic_tx"]->used, 1);
  EXPECT_EQ(kinds["nic_tx"]->links, 16); // 8 NICs per node, one direction each
  EXPECT_EQ(kinds["nvswitch_port"]->used, 3);
  EXPECT_DOUBLE_EQ(kinds["nvswitch_port"]->mean_busy_fraction, (0.2 + 0.2 + 0.1) / 3);
  ASSERT_TRUE(kinds.count("leaf_spine")); // built (2 levels), unused: both nodes sit on one leaf per rail
  EXPECT_EQ(kinds["leaf_spine"]->used, 0);
  ASSERT_TRUE(report.busiest_kind.has_value());
  EXPECT_EQ(to_string(*report.busiest_kind), std::string("nvlink")); // 0.4 mean over its one used link
  EXPECT_EQ(busiest_links(report, 1).front()->link, up->link);
}

// A log out of start order (flows timed in closed form are logged late) gives the report of the sorted log: the
// report orders flows by start itself, ties in log order.
TEST(LinkReport, AnUnsortedLogGivesTheSortedLogsReport)
{
  const topo::ClusterGraph graph(topo::load_cluster("dgx-a100", 2, {}));
  const FlowLog sorted = hand_made_log();
  FlowLog shuffled;
  for (const size_t i : {3, 1, 2, 0})
    shuffled.flows.push_back(sorted.flows[i]);
  shuffled.flows.push_back(FlowRecord{0, 1, 5, 1, 2, -1}); // starts with the first flow: a tie
  FlowLog reference = sorted;
  reference.flows.insert(reference.flows.begin() + 1, shuffled.flows.back());
  const LinkReport a = link_report(graph, shuffled, 10), b = link_report(graph, reference, 10);
  expect_same_links(a.links, b.links);
  EXPECT_DOUBLE_EQ(use_of(a, link_named(graph, "n0.gpu0->n0.nvswitch"))->busy_s, 4); // [1, 4] and [6, 7]
}

// A window [2.5, 6.5) of the hand-made log: flows are the window's where they start (GPU 0 -> 3 at 6: 10 bytes),
// busy time is clipped to it ([2.5, 4] and [6, 6.5] on GPU 0's NVLink: 2 s, though the flows to GPUs 1 and 2
// started before it), and links crossed only by such earlier flows are kept for their busy time.
TEST(LinkUsage, AWindowCountsTheFlowsStartingInItAndTheBusyTimeInsideIt)
{
  const topo::ClusterGraph graph(topo::load_cluster("dgx-a100", 2, {}));
  const LinkUsage window = link_usage(graph, hand_made_log(), 2.5, 6.5);
  EXPECT_EQ(window.flows, 1);
  EXPECT_DOUBLE_EQ(window.flow_bytes, 10);
  EXPECT_DOUBLE_EQ(window.inter_domain_bytes, 0); // GPU 0 -> 8 starts at 8
  const auto traffic = [&](const std::string& name) -> const LinkTraffic* {
    for (const LinkTraffic& t : window.links)
      if (t.link == link_named(graph, name))
        return &t;
    return nullptr;
  };
  const LinkTraffic* up = traffic("n0.gpu0->n0.nvswitch");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->flows, 1);
  EXPECT_DOUBLE_EQ(up->bytes, 10);
  EXPECT_DOUBLE_EQ(up->busy_s, 2);
  const LinkTraffic* to_gpu1 = traffic("n0.nvswitch->n0.gpu1"); // [1, 3]: 0.5 s inside, no flow counted
  ASSERT_NE(to_gpu1, nullptr);
  EXPECT_EQ(to_gpu1->flows, 0);
  EXPECT_DOUBLE_EQ(to_gpu1->busy_s, 0.5);
  for (const LinkTraffic& t : window.links) // the inter-node flow starts after the window
    EXPECT_NE(link_class(graph, t.link), LinkClass::NicTx);
  // The whole log is the window (-inf, inf); windows that tile it add up to it.
  const LinkUsage whole = link_usage(graph, hand_made_log());
  const LinkUsage sum = add_usage(add_usage(link_usage(graph, hand_made_log(), 0, 2.5), window, 1),
                                  link_usage(graph, hand_made_log(), 6.5, 100), 1);
  expect_same_links(sum.links, whole.links);
  EXPECT_EQ(sum.flows, 4);
  EXPECT_DOUBLE_EQ(sum.flow_bytes, 190);
}

TEST(LinkUsage, TextRoundTripIsExact)
{
  const topo::ClusterGraph graph(topo::load_cluster("dgx-a100", 2, {}));
  FlowLog log = hand_made_log();
  log.flows[0].end_s = 3.0 + 1.0 / 3.0; // not a short decimal
  const LinkUsage usage = link_usage(graph, log);
  std::istringstream in(to_text(usage));
  const LinkUsage back = link_usage_from_text(in);
  EXPECT_EQ(back.flows, usage.flows);
  EXPECT_EQ(back.flow_bytes, usage.flow_bytes);
  EXPECT_EQ(back.inter_domain_bytes, usage.inter_domain_bytes);
  ASSERT_EQ(back.links.size(), usage.links.size());
  for (size_t i = 0; i < usage.links.size(); ++i) {
    EXPECT_EQ(back.links[i].link, usage.links[i].link);
    EXPECT_EQ(back.links[i].flows, usage.links[i].flows);
    EXPECT_EQ(back.links[i].bytes, usage.links[i].bytes);
    EXPECT_EQ(back.links[i].busy_s, usage.links[i].busy_s);
  }
  std::istringstream bad("3 x");
  EXPECT_THROW(link_usage_from_text(bad), std::logic_error);
}

TEST(LinkReport, UtilisationStepsAreEachFlowsAverageRate)
{
  const topo::ClusterGraph graph(topo::load_cluster("dgx-a100", 2, {}));
  const double bw = 300e9 * 0.77;
  const auto steps = link_utilisation_steps(graph, hand_made_log(), link_named(graph, "n0.gpu0->n0.nvswitch"));
  const std::vector<std::pair<double, double>> expected{
      {1, 50 / bw}, {2, 50 / bw + 25 / bw}, {3, 25 / bw}, {4, 0}, {6, 10 / bw}, {7, 0}};
  ASSERT_EQ(steps.size(), expected.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_DOUBLE_EQ(steps[i].first, expected[i].first);
    EXPECT_NEAR(steps[i].second, expected[i].second, 1e-24);
  }
}

TEST(LinkReport, ExposedTimeGoesToTheMostLoadedLinkOfTheOpsFlows)
{
  // Program 0's op 0, a collective, held the compute stream over [0.5, 4.5]; its flows (0 -> 1, 0 -> 2) moved
  // over [1, 4]. GPU 0's NVLink carries both (150 bytes in the window), the ports to GPUs 1 and 2 one each: the
  // 3 s inside the window go to GPU 0's NVLink, the 1 s outside is latency.
  const topo::ClusterGraph graph(topo::load_cluster("dgx-a100", 2, {}));
  traces::RankProgram program;
  traces::Op op;
  op.kind = traces::OpKind::Collective;
  op.group = 0;
  op.sequence = 0;
  program.ops.push_back(op);
  const ExposedAttribution a =
      attribute_exposed(graph, hand_made_log(), {program}, 0, {ExposedSpan{0.5, 4.5, 0}});
  EXPECT_DOUBLE_EQ(a.exposed_s, 4);
  EXPECT_DOUBLE_EQ(a.unattributed_s, 1);
  ASSERT_EQ(a.links.size(), 1u);
  EXPECT_EQ(graph.links()[static_cast<size_t>(a.links.front().first)].name, "n0.gpu0->n0.nvswitch");
  EXPECT_DOUBLE_EQ(a.links.front().second, 3);
  ASSERT_EQ(a.kinds.size(), 1u);
  EXPECT_EQ(a.kinds.front().first, LinkClass::Nvlink);
}

// Two all-reduces of 8 GPUs on one node at once share every NVLink: the flows of the second merge with the first's
// in one flow set. Every flow must be in the log once, with its bytes and a transfer inside the run,
// and the log must be the same with the shortcut off (every flow a SimGrid flow).
FlowLog log_two_overlapping_all_reduces(bool shortcut)
{
  const topo::ClusterGraph graph(topo::load_cluster("dgx-a100", 1, {}));
  std::vector<int> gpus(8);
  std::iota(gpus.begin(), gpus.end(), 0);
  const CollectivePlan a = plan_collective(graph.spec(), CollectiveOp::AllReduce, gpus, 1e8);
  const CollectivePlan b = plan_collective(graph.spec(), CollectiveOp::AllReduce, gpus, 3e8);
  const SimgridPlatform platform(graph, flow_pairs({&a, &b}));
  FlowLog log;
  const auto timings = run_collective_streams(platform, graph, {{&a}, {&b}}, shortcut, &log);
  double plan_bytes = 0;
  for (const CollectivePlan* p : {&a, &b})
    for (const Flow& f : p->flows)
      plan_bytes += f.bytes;
  double logged = 0;
  const double end_s = std::max(timings[0][0].end_s, timings[1][0].end_s);
  for (const FlowRecord& f : log.flows) {
    logged += f.bytes;
    EXPECT_GT(f.end_s, f.start_s);
    EXPECT_LE(f.end_s, end_s);
  }
  EXPECT_EQ(log.flows.size(), a.flows.size() + b.flows.size());
  EXPECT_DOUBLE_EQ(logged, plan_bytes);
  return log;
}

TEST(FlowLog, RecordsEveryFlowWithTheShortcut)
{
  const FlowLog log = log_two_overlapping_all_reduces(true);
  // The two all-reduces start together on the same NVLinks, so the first one's flows shared their links: their
  // transfers took longer than bytes / bandwidth (what a flow alone takes), and their end is the shared one.
  size_t converted_or_shared = 0;
  for (const FlowRecord& f : log.flows)
    if (f.tag == 0 && f.end_s - f.start_s > 1.01 * f.bytes / (300e9 * 0.77))
      ++converted_or_shared;
  EXPECT_GT(converted_or_shared, 0u);
}

TEST(FlowLog, RecordsEveryFlowWithoutTheShortcut)
{
  log_two_overlapping_all_reduces(false);
}

} // namespace
} // namespace gputwin::sim
