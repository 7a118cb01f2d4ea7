// The host issue state machine both executors run (sim/host_issue.hpp), against framework_profile.hpp's issue
// model worked by hand.
#include "gputwin/sim/host_issue.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gputwin::sim {
namespace {

HostProgram program(std::vector<double> costs_s, std::vector<bool> syncs, double launch_latency_s = 0)
{
  HostProgram host;
  host.issue_cost_s = std::move(costs_s);
  host.syncs = std::move(syncs);
  host.launch_latency_s = launch_latency_s;
  return host;
}

TEST(HostIssue, NoHostIssuesEveryOpAtZero)
{
  HostIssue host(nullptr, 3);
  EXPECT_EQ(host.issued(), 3u);
  EXPECT_TRUE(host.done());
  EXPECT_FALSE(host.waits());
  host.issue_to_sync();
  EXPECT_EQ(host.issued(), 3u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(host.earliest_start_s(i), 0.0);
}

TEST(HostIssue, WithoutSyncsIssueTimesAreTheCostsSummed)
{
  const HostProgram h = program({1, 2, 3, 4}, {false, false, false, false}, 0.5);
  HostIssue host(&h, 4);
  EXPECT_EQ(host.issued(), 0u);
  host.issue_to_sync();
  EXPECT_TRUE(host.done());
  EXPECT_FALSE(host.waits());
  EXPECT_EQ(host.issue_s(0), 1.0);
  EXPECT_EQ(host.issue_s(1), 3.0);
  EXPECT_EQ(host.issue_s(2), 6.0);
  EXPECT_EQ(host.issue_s(3), 10.0);
  EXPECT_EQ(host.earliest_start_s(3), 10.5);
}

// issue(i) = free(i-1) + cost(i); after a sync at op 1 free(1) = max(issue(1), end of ops 0..1).
TEST(HostIssue, ASyncWaitsForTheGpuAndResumesFromTheLatestEnd)
{
  const HostProgram h = program({1, 2, 3, 4}, {false, true, false, false});
  HostIssue host(&h, 4);
  host.issue_to_sync();
  EXPECT_EQ(host.issued(), 2u); // up to and including the synchronising op
  EXPECT_TRUE(host.waits());
  EXPECT_EQ(host.issue_s(1), 3.0);
  host.issue_to_sync(); // still waiting: nothing more is issued
  EXPECT_EQ(host.issued(), 2u);
  host.resume(10); // ops 0 and 1 ended, the last at 10
  EXPECT_FALSE(host.waits());
  host.issue_to_sync();
  EXPECT_TRUE(host.done());
  EXPECT_EQ(host.issue_s(2), 13.0);
  EXPECT_EQ(host.issue_s(3), 17.0);
}

TEST(HostIssue, AGpuAheadOfTheHostCostsNoTime)
{
  const HostProgram h = program({1, 2, 3}, {false, true, false});
  HostIssue host(&h, 3);
  host.issue_to_sync();
  host.resume(2.5); // ended before the host was free (3)
  host.issue_to_sync();
  EXPECT_EQ(host.issue_s(2), 6.0);
}

TEST(HostIssue, SuccessiveSyncsWaitOnceEach)
{
  const HostProgram h = program({1, 1, 1}, {true, true, false});
  HostIssue host(&h, 3);
  host.issue_to_sync();
  EXPECT_EQ(host.issued(), 1u);
  host.resume(5);
  host.issue_to_sync();
  EXPECT_EQ(host.issued(), 2u);
  EXPECT_TRUE(host.waits());
  EXPECT_EQ(host.issue_s(1), 6.0);
  host.resume(7);
  host.issue_to_sync();
  EXPECT_EQ(host.issue_s(2), 8.0);
  EXPECT_TRUE(host.done());
}

TEST(HostIssue, ASyncAtTheLastOpDoesNotWait)
{
  const HostProgram h = program({1, 1}, {false, true});
  HostIssue host(&h, 2);
  host.issue_to_sync();
  EXPECT_TRUE(host.done());
  EXPECT_FALSE(host.waits());
}

TEST(HostIssue, OneCostAndOneSyncFlagPerOp)
{
  const HostProgram h = program({1, 1}, {false, false});
  EXPECT_THROW(HostIssue(&h, 3), std::logic_error);
}

} // namespace
} // namespace gputwin::sim
