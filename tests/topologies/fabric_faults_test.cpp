// Degraded and failed fabric (ClusterSpec::faults applied by ClusterGraph): names resolved or rejected, a
// degraded cable's two directions slowed, routes that avoid failed links (another spine, another rail, PCIe inside
// a node) and an InputError when a failure disconnects two GPUs. The tiny cluster on 4 nodes is a 2-level tree
// whose leaf l holds both NICs of node l, with 2 spines.
#include "gputwin/common/input_error.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

namespace gputwin::topo {
namespace {

const std::string tiny = GPUTWIN_TEST_DATA_DIR "/clusters/tiny.yaml";

ClusterGraph tiny_with(FabricFaults faults, int nodes = 4)
{
  ClusterSpec spec = load_cluster(tiny, nodes, {});
  spec.faults = std::move(faults);
  return ClusterGraph(std::move(spec));
}

std::vector<std::string> names(const ClusterGraph& g, const std::vector<int>& route)
{
  std::vector<std::string> out;
  for (const int id : route)
    out.push_back(g.links()[static_cast<size_t>(id)].name);
  return out;
}

bool crosses(const ClusterGraph& g, const std::vector<int>& route, const std::string& name)
{
  const std::vector<std::string> n = names(g, route);
  return std::find(n.begin(), n.end(), name) != n.end();
}

std::string error_of(const std::function<void()>& f)
{
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(FabricFaults, HealthyRouteCrossesTheSpineTheDestinationPicks)
{
  const ClusterGraph g = tiny_with({});
  ASSERT_EQ(g.fabric().levels, 2);
  ASSERT_EQ(g.fabric().spines, 2);
  // GPU 1 (node 0) -> GPU 4 (node 1, local 0: NIC 0's rail): destination NIC 2, uplink 2 % 2 = 0.
  EXPECT_TRUE(crosses(g, g.route(1, 4), "leaf.0->spine.0"));
  EXPECT_TRUE(crosses(g, g.route(1, 4), "spine.0->leaf.1"));
}

TEST(FabricFaults, FailedLeafSpineLinkIsAvoidedThroughTheOtherSpine)
{
  const ClusterGraph g = tiny_with({{}, {"leaf.0->spine.0"}, {}});
  const std::vector<int> route = g.route(1, 4);
  EXPECT_TRUE(crosses(g, route, "leaf.0->spine.1"));
  EXPECT_TRUE(crosses(g, route, "spine.1->leaf.1"));
  for (const int id : route)
    EXPECT_FALSE(g.link_failed(id)) << g.links()[static_cast<size_t>(id)].name;
  // The reverse direction is the same cable: node 1 -> node 0 avoids spine.0 -> leaf.0 as well.
  EXPECT_FALSE(crosses(g, g.route(4, 1), "spine.0->leaf.0"));
  // Either direction's name fails the cable.
  const ClusterGraph h = tiny_with({{}, {"spine.0->leaf.0"}, {}});
  EXPECT_TRUE(h.link_failed(0 + static_cast<int>(std::find_if(h.links().begin(), h.links().end(),
                                                              [](const Link& l) { return l.name == "leaf.0->spine.0"; }) -
                                                 h.links().begin())));
}

TEST(FabricFaults, FailedNicMovesTheRouteToAnotherRailOnBothNodes)
{
  const ClusterGraph g = tiny_with({{}, {}, {{0, 0}}});
  const std::vector<int> route = g.route(1, 4);
  EXPECT_TRUE(crosses(g, route, "n0.nic1->leaf.0"));
  EXPECT_TRUE(crosses(g, route, "leaf.1->n1.nic1"));
  for (const int id : route)
    EXPECT_FALSE(g.link_failed(id));
  // A failed NIC cable named by --fail-link counts as a failed NIC (the collective planner reads the spec).
  const ClusterGraph h = tiny_with({{}, {"n2.nic1->leaf.2"}, {}});
  EXPECT_TRUE(h.spec().faults.nic_failed(2, 1));
  EXPECT_FALSE(h.spec().faults.nic_failed(2, 0));
}

TEST(FabricFaults, FailedNvlinkGoesThroughTheSharedPcieSwitchOrDisconnects)
{
  const ClusterGraph g = tiny_with({{}, {"n0.gpu0->n0.nvswitch"}, {}});
  EXPECT_EQ(names(g, g.route(0, 1)), (std::vector<std::string>{"n0.gpu0->n0.pcie0", "n0.pcie0->n0.gpu1"}));
  const std::string error = error_of([&] { g.route(0, 2); });
  EXPECT_NE(error.find("--fail-link: the failure disconnects the job: no path from n0.gpu0 to n0.gpu2"),
            std::string::npos)
      << error;
}

TEST(FabricFaults, FailingEveryUplinkOfALeafDisconnectsItsNode)
{
  const ClusterGraph g = tiny_with({{}, {"leaf.0->spine.0", "leaf.0->spine.1"}, {}});
  const std::string error = error_of([&] { g.route(0, 4); });
  EXPECT_NE(error.find("disconnects the job"), std::string::npos) << error;
  EXPECT_NE(error.find("leaf.0->spine.0, leaf.0->spine.1"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_NO_THROW(g.route(4, 8)); // nodes 1 and 2 still reach each other
}

TEST(FabricFaults, DegradedCableRunsBothDirectionsAtTheFactor)
{
  const ClusterGraph healthy = tiny_with({});
  const ClusterGraph g = tiny_with({{{"n1.nic0->leaf.1", 0.25}}, {}, {}});
  for (size_t i = 0; i < g.links().size(); ++i) {
    const std::string& name = g.links()[i].name;
    const double factor = name == "n1.nic0->leaf.1" || name == "leaf.1->n1.nic0" ? 0.25 : 1.0;
    EXPECT_DOUBLE_EQ(g.links()[i].bytes_per_s, healthy.links()[i].bytes_per_s * factor) << name;
  }
  EXPECT_EQ(g.route(1, 4), healthy.route(1, 4)); // degraded, not failed: routes unchanged
}

TEST(FabricFaults, UnknownNamesAndOutOfRangeNicsAreInputErrors)
{
  std::string error = error_of([] { tiny_with({{}, {"leaf.0->spine.9"}, {}}); });
  EXPECT_NE(error.find("--fail-link: no link 'leaf.0->spine.9' in cluster 'tiny' of 4 node(s)"), std::string::npos)
      << error;
  EXPECT_NE(error.find("n0.gpu0->n0.nvswitch"), std::string::npos) << error; // an example of the names
  error = error_of([] { tiny_with({{{"nope", 0.5}}, {}, {}}); });
  EXPECT_NE(error.find("--degrade-link: no link 'nope'"), std::string::npos) << error;
  error = error_of([] { tiny_with({{}, {}, {{4, 0}}}); });
  EXPECT_NE(error.find("--fail-nic: node 4 is not in cluster 'tiny' (expected 0..3)"), std::string::npos) << error;
  error = error_of([] { tiny_with({{}, {}, {{0, 2}}}); });
  EXPECT_NE(error.find("--fail-nic: NIC 2: a node of 'tiny' has 2 NIC(s)"), std::string::npos) << error;
}

TEST(FabricFaults, ACableNamedTwiceIsAnInputErrorNamingTheFlagAndTheCable)
{
  const std::string expected = "(expected each cable at most once across --degrade-link and --fail-link)";
  // Degraded and failed at once, either direction naming the cable.
  std::string error = error_of([] { tiny_with({{{"n1.nic0->leaf.1", 0.5}}, {"leaf.1->n1.nic0"}, {}}); });
  EXPECT_EQ(error, "--fail-link: cable n1.nic0<->leaf.1 is also in --degrade-link " + expected);
  // Degraded twice: the factors would multiply.
  error = error_of([] { tiny_with({{{"n1.nic0->leaf.1", 0.5}, {"leaf.1->n1.nic0", 0.5}}, {}, {}}); });
  EXPECT_EQ(error, "--degrade-link: cable n1.nic0<->leaf.1 is given twice " + expected);
  error = error_of([] { tiny_with({{}, {"leaf.0->spine.0", "leaf.0->spine.0"}, {}}); });
  EXPECT_EQ(error, "--fail-link: cable leaf.0<->spine.0 is given twice " + expected);
  error = error_of([] { tiny_with({{}, {}, {{1, 0}, {1, 0}}}); });
  EXPECT_EQ(error, "--fail-nic: NIC 1:0 is given twice (expected each NIC at most once)");
  // Two cables are no error, nor a degraded cable of a failed NIC (the failure wins).
  EXPECT_NO_THROW(tiny_with({{{"n1.nic0->leaf.1", 0.5}}, {"n1.nic1->leaf.1"}, {{1, 0}}}));
}

} // namespace
} // namespace gputwin::topo
