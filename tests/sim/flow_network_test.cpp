// The flow runner's network (sim/executor/flow_network.hpp): components of flows that share links, merged when a
// flow joins several and rebuilt (split) when their ended flows outnumber the active ones. Its answer must be the
// max-min solution of all flows together, which one FlowSet holding every flow gives (flow_set_test.cpp holds
// FlowSet to SimGrid's max-min).
#include "gputwin/sim/flow_network.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <vector>

namespace gputwin::sim {
namespace {

struct FlowSpec {
  double start_s;
  std::vector<int> links;
  double bytes;
};

// Every flow's end, by its position in `flows` (sorted by start), from one FlowSet holding them all.
std::vector<double> ends_in_one_set(const std::vector<double>& capacity, const std::vector<FlowSpec>& flows)
{
  FlowSet set(capacity);
  std::vector<double> end(flows.size(), -1);
  const auto record = [&](int32_t f, double t) { end[static_cast<size_t>(f)] = t; };
  for (const FlowSpec& f : flows) {
    set.advance(f.start_s, record, [](int) {});
    set.add(f.links.data(), f.links.size(), f.bytes, f.start_s);
  }
  while (!set.active_flows().empty())
    set.advance(set.next_end_s(), record, [](int) {});
  return end;
}

// The same from a FlowNetwork, driven as the flow runner drives it: adds at their start, advances to the next end.
std::vector<double> ends_in_network(FlowNetwork& net, const std::vector<FlowSpec>& flows)
{
  std::vector<double> end(flows.size(), -1);
  std::map<int32_t, size_t> flow_of_id; // live ids only: an id is reused once its end was handled
  std::vector<EndedFlow> ended;
  const auto handle = [&] {
    for (const EndedFlow& e : ended) {
      const auto it = flow_of_id.find(e.flow);
      ASSERT_NE(it, flow_of_id.end()) << "id " << e.flow << " ended twice or never started";
      end[it->second] = e.end_s;
      flow_of_id.erase(it);
    }
    ended.clear();
  };
  for (size_t i = 0; i < flows.size(); ++i) {
    while (net.next_end_s() <= flows[i].start_s) {
      net.advance(net.next_end_s(), ended);
      handle();
    }
    net.advance(flows[i].start_s, ended);
    handle();
    const int32_t id = net.add(flows[i].links.data(), flows[i].links.size(), flows[i].bytes, flows[i].start_s, ended);
    handle();
    EXPECT_EQ(flow_of_id.count(id), 0u) << "id " << id << " given to two live flows";
    flow_of_id[id] = i;
  }
  while (net.active_flows() > 0) {
    net.advance(net.next_end_s(), ended);
    handle();
  }
  EXPECT_TRUE(flow_of_id.empty());
  EXPECT_EQ(net.next_end_s(), std::numeric_limits<double>::infinity());
  return end;
}

void expect_same_ends(const std::vector<double>& a, const std::vector<double>& b)
{
  ASSERT_EQ(a.size(), b.size());
  const double horizon = *std::max_element(b.begin(), b.end());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_GE(b[i], 0) << i;
    EXPECT_NEAR(a[i], b[i], 1e-9 * horizon) << "flow " << i;
  }
}

TEST(FlowNetwork, ABridgingFlowMergesTwoComponentsAndTheyFallApartAgain)
{
  // Links 0 and 1 each carry a long flow (two components); a flow on both merges them; once it and enough short
  // flows have ended, the component is rebuilt from its active flows: two again.
  const std::vector<double> capacity{100.0, 100.0};
  FlowNetwork net(capacity);
  std::vector<EndedFlow> ended;
  const int l0[] = {0};
  const int l1[] = {1};
  const int both[] = {0, 1};
  net.add(l0, 1, 1e6, 0, ended);
  net.add(l1, 1, 1e6, 0, ended);
  EXPECT_EQ(net.components(), 2u);
  net.add(both, 2, 100, 0, ended);
  EXPECT_EQ(net.components(), 1u);
  EXPECT_EQ(net.merges(), 1);
  // Every flow at 50 B/s: the bridge ends at 2 s.
  EXPECT_DOUBLE_EQ(net.next_end_s(), 2.0);
  net.advance(2.0, ended);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_DOUBLE_EQ(ended[0].end_s, 2.0);
  ended.clear();
  // Short flows on link 0 until the ended ones outnumber twice the active ones by enough to rebuild.
  double t = 2.0;
  for (int k = 0; k < 40 && net.rebuilds() == 0; ++k) {
    net.add(l0, 1, 1, t, ended);
    t = net.next_end_s();
    net.advance(t, ended);
    ended.clear();
  }
  EXPECT_GE(net.rebuilds(), 1);
  EXPECT_EQ(net.components(), 2u);
  EXPECT_EQ(net.active_flows(), 2u);
}

TEST(FlowNetwork, EndedIdsAreReusedOnlyFromTheNextCall)
{
  const std::vector<double> capacity{10.0};
  FlowNetwork net(capacity);
  std::vector<EndedFlow> ended;
  const int link = 0;
  const int32_t first = net.add(&link, 1, 10, 0, ended); // ends at 1 s
  const int32_t second = net.add(&link, 1, 0, 1.5, ended); // brings the first to its end in the same call
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].flow, first);
  EXPECT_NE(second, first); // the caller has not handled `ended` yet
  ended.clear();
  net.advance(1.5, ended); // the empty flow ends at once
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].flow, second);
  ended.clear();
  const int32_t third = net.add(&link, 1, 5, 2, ended);
  EXPECT_TRUE(third == first || third == second);
}

TEST(FlowNetwork, RandomTrafficEqualsOneMaxMinOverAllFlows)
{
  // Flows on random routes over a small fabric, starting at random times: components form, merge, split and
  // empty many times. Each seed checks every flow's end against the one-set solution.
  for (const uint32_t seed : {1u, 2u, 3u, 4u, 5u}) {
    std::mt19937 rng(seed);
    const int links = 24;
    std::vector<double> capacity;
    for (int l = 0; l < links; ++l)
      capacity.push_back(std::uniform_real_distribution<double>(50, 400)(rng));
    std::vector<FlowSpec> flows;
    double t = 0;
    for (int i = 0; i < 3000; ++i) {
      t += std::exponential_distribution<double>(20.0)(rng);
      FlowSpec f{t, {}, std::uniform_real_distribution<double>(0, 300)(rng)};
      if (i % 97 == 0)
        f.bytes = 0; // empty flows end where they start
      const int hops = std::uniform_int_distribution<int>(1, 4)(rng);
      while (static_cast<int>(f.links.size()) < hops) {
        const int l = std::uniform_int_distribution<int>(0, links - 1)(rng);
        if (std::find(f.links.begin(), f.links.end(), l) == f.links.end())
          f.links.push_back(l);
      }
      flows.push_back(f);
    }
    FlowNetwork net(capacity);
    SCOPED_TRACE(seed);
    expect_same_ends(ends_in_network(net, flows), ends_in_one_set(capacity, flows));
    EXPECT_GT(net.merges(), 0);
    EXPECT_GT(net.rebuilds(), 0);
  }
}

} // namespace
} // namespace gputwin::sim
