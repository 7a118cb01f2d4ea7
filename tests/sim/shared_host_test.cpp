// Shared hosts: a node whose "GPUs" are threads sharing its CPU cores (ClusterSpec::host_cores,
// localhost). The as-measured durations of a trace (sim/replay/as_measured.hpp: issue gaps, a core's share of
// each op) by hand, and the SimGrid executor's sharing of the cores (each test is its own process under ctest:
// one SimGrid platform per process).
#include "gputwin/sim/as_measured.hpp"
#include "gputwin/sim/program_executor.hpp"
#include "gputwin/sim/trace_replay.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

namespace gputwin::sim {
namespace {

traces::Op compute(int64_t id, int64_t start_ns, int64_t duration_ns, std::vector<int64_t> deps = {})
{
  traces::Op op;
  op.id = id;
  op.kind = traces::OpKind::Compute;
  op.name = "op" + std::to_string(id);
  op.stream = 0;
  op.start_ns = start_ns;
  op.duration_ns = duration_ns;
  op.deps = std::move(deps);
  return op;
}

// `ranks` ranks, each one compute op per (start, duration) given, no communication.
traces::OpGraph trace_of(const std::vector<std::vector<std::pair<int64_t, int64_t>>>& ranks)
{
  traces::OpGraph g;
  for (size_t r = 0; r < ranks.size(); ++r) {
    traces::RankProgram program{static_cast<int32_t>(r), {}};
    for (const auto& [start, duration] : ranks[r])
      program.ops.push_back(compute(static_cast<int64_t>(program.ops.size()), start, duration));
    g.ranks.push_back(std::move(program));
  }
  return g;
}

TEST(AsMeasured, IssueGapIsTheTimeBetweenReadyAndStart)
{
  // One rank: op 0 [0, 100), op 1 starts at 130 (gap 30), op 2 at 230 right after op 1 ends (gap 0).
  const traces::OpGraph g = trace_of({{{0, 100}, {130, 100}, {230, 50}}});
  const AsMeasuredDurations measured(g, 0);
  EXPECT_EQ(measured.issue_gap_ns(0, 0), 0); // the rank's first op has none
  EXPECT_EQ(measured.issue_gap_ns(0, 1), 30);
  EXPECT_EQ(measured.issue_gap_ns(0, 2), 0);
  // Each op: its duration (/ compute scale) plus its gap, exactly as `replay` computed them before.
  EXPECT_EQ(measured.seconds(0, g.ranks[0].ops[1]), (100.0 + 30.0) * 1e-9);
  EXPECT_EQ(measured.seconds(0, g.ranks[0].ops[1], 2), (50.0 + 30.0) * 1e-9);
}

TEST(AsMeasured, SharedCoresCountOnlyTheShareOfACore)
{
  // Three ranks compute over [0, 3000) at once on 2 cores: each had a core 2/3 of the time, so 2000 ns of work.
  const traces::OpGraph g = trace_of({{{0, 3000}}, {{0, 3000}}, {{0, 3000}}});
  const AsMeasuredDurations on_two(g, 2);
  for (size_t r = 0; r < 3; ++r)
    EXPECT_NEAR(on_two.seconds(r, g.ranks[r].ops[0]), 2000e-9, 1e-18);
  // With as many cores as ranks (or no sharing), the measured time is the work.
  EXPECT_NEAR(AsMeasuredDurations(g, 3).seconds(0, g.ranks[0].ops[0]), 3000e-9, 1e-18);
  EXPECT_NEAR(AsMeasuredDurations(g, 0).seconds(0, g.ranks[0].ops[0]), 3000e-9, 1e-18);
}

TEST(AsMeasured, SharedCoresPiecewise)
{
  // One core. Rank 0 computes over [0, 4000); rank 1 over [1000, 3000): two threads share the core in between.
  // Rank 0: 1000 alone + 2000 at 1/2 + 1000 alone = 3000 ns of work; rank 1: 2000 at 1/2 = 1000 ns.
  const traces::OpGraph g = trace_of({{{0, 4000}}, {{1000, 2000}}});
  const AsMeasuredDurations measured(g, 1);
  EXPECT_NEAR(measured.seconds(0, g.ranks[0].ops[0]), 3000e-9, 1e-18);
  EXPECT_NEAR(measured.seconds(1, g.ranks[1].ops[0]), 1000e-9, 1e-18);
}

TEST(AsMeasured, SharedCoresWeighTheGapAndTheOpApart)
{
  // One core. Rank 0: op 0 [0, 100), then a 30 ns gap, op 1 [130, 230). Rank 1 computes over [100, 130), inside
  // rank 0's gap: the gap was shared (15 ns of work), op 1 was not (100 ns, halved by a compute scale of 2).
  const traces::OpGraph g = trace_of({{{0, 100}, {130, 100}}, {{100, 30}}});
  const AsMeasuredDurations measured(g, 1);
  EXPECT_EQ(measured.issue_gap_ns(0, 1), 30);
  EXPECT_NEAR(measured.seconds(0, g.ranks[0].ops[1]), (100.0 + 15.0) * 1e-9, 1e-18);
  EXPECT_NEAR(measured.seconds(0, g.ranks[0].ops[1], 2), (50.0 + 15.0) * 1e-9, 1e-18);
  EXPECT_NEAR(measured.seconds(1, g.ranks[1].ops[0]), 15e-9, 1e-18);
}

// Two ranks meet in an all-reduce; rank 0 arrived first (at 100) and returned only at 500, 200 ns after rank 1,
// the last, arrived (at 300): that wait for a core after the wake-up is runnable time, so on a shared host it
// becomes gap before rank 0's next op, weighted like any gap. Rank 1 returned at 350.
traces::OpGraph all_reduce_trace(double bytes)
{
  traces::OpGraph g = trace_of({{{0, 100}}, {{0, 300}}});
  g.groups.push_back(traces::CommGroup{});
  g.groups.back().ranks = {0, 1};
  const std::pair<int64_t, int64_t> collective_span[2] = {{100, 400}, {300, 50}}; // (start, duration) per rank
  const int64_t next_start[2] = {500, 350};
  for (size_t r = 0; r < 2; ++r) {
    traces::Op c;
    c.id = 1;
    c.kind = traces::OpKind::Collective;
    c.name = "tp.all_reduce";
    c.stream = 1;
    c.group = 0;
    c.sequence = 0;
    c.bytes = bytes;
    c.start_ns = collective_span[r].first;
    c.duration_ns = collective_span[r].second;
    c.deps = {0};
    g.ranks[r].ops.push_back(c);
    g.ranks[r].ops.push_back(compute(2, next_start[r], 100, {1}));
  }
  return g;
}

TEST(AsMeasured, SharedCoresCountTheWaitAfterACollectiveAsGap)
{
  const traces::OpGraph g = all_reduce_trace(0);
  // A device per rank: the collective's measured end is when the rank could go on; no gap.
  EXPECT_EQ(AsMeasuredDurations(g, 0).issue_gap_ns(0, 2), 0);
  // One shared core: rank 0 could go on from 300. Runnable: rank 0 over [0, 100) and [300, 600) (gap then op 2),
  // rank 1 over [0, 300) and [300, 450) (gap 50, op 2). Rank 0's gap [300, 500): [300, 450) at 1/2 and
  // [450, 500) alone = 125 ns of work, op 2 alone 100 ns; rank 1's gap [300, 350) and op [350, 450) at 1/2.
  const AsMeasuredDurations one_core(g, 1);
  EXPECT_EQ(one_core.issue_gap_ns(0, 2), 200);
  EXPECT_EQ(one_core.issue_gap_ns(1, 2), 50);
  EXPECT_NEAR(one_core.seconds(0, g.ranks[0].ops[2]), 225e-9, 1e-18);
  EXPECT_NEAR(one_core.seconds(1, g.ranks[1].ops[2]), 75e-9, 1e-18);
  // The copy the replay models itself is not gap: 1000 bytes at 1e10 B/s end the collective at 400 for rank 0,
  // and at its own measured end (350, earlier) for rank 1.
  const traces::OpGraph with_bytes = all_reduce_trace(1000);
  const AsMeasuredDurations copying(with_bytes, 1, 1e10);
  EXPECT_EQ(copying.issue_gap_ns(0, 2), 100);
  EXPECT_EQ(copying.issue_gap_ns(1, 2), 0);
}

TEST(AsMeasured, TraceMetadata)
{
  traces::OpGraph g = trace_of({{{0, 10}}});
  EXPECT_FALSE(trace_host_cores(g).has_value());
  g.metadata["host_cores"] = "16";
  EXPECT_EQ(trace_host_cores(g), 16);
  g.metadata["host_cores"] = "two";
  EXPECT_THROW(trace_host_cores(g), traces::TraceError);
  g.measured_iteration_s = {3, 1, 2};
  EXPECT_EQ(measured_iteration_s(g), 2); // the median without traced_iteration
  g.metadata["traced_iteration"] = "0";
  EXPECT_EQ(measured_iteration_s(g), 3);
}

TEST(SharedHost, LocalhostTakesTheTracesCoreCount)
{
  traces::OpGraph g = trace_of({{{0, 10}}});
  const topo::ClusterSpec localhost = topo::load_cluster("localhost", 0, {});
  EXPECT_EQ(localhost.host_cores, 2); // the cluster file's own count
  g.metadata["host_cores"] = "8";
  EXPECT_EQ(cluster_for_trace(localhost, g).host_cores, 8);
  EXPECT_EQ(cluster_for_trace(localhost, g, /*keep_cores=*/true).host_cores, 2);
  // A cluster of GPUs shares nothing, whatever the trace says.
  EXPECT_EQ(cluster_for_trace(topo::load_cluster("dgx-a100", 0, {}), g).host_cores, 0);
}

// No communication: the programs below only compute.
class NoComm : public CommSource {
public:
  const CommWork& collective(const traces::Op&) override { throw std::logic_error("no collectives"); }
  const CommWork& message(int32_t, const traces::Op&) override { throw std::logic_error("no messages"); }
  bool may_run_alone(const traces::Op&) const override { return false; }
};

// `programs` programs of one compute op each, 1 s alone, all ready at once, on localhost with `host_cores` cores,
// each program standing for `ranks_per_program` ranks.
IterationResult one_second_each(size_t programs, int host_cores, int ranks_per_program = 1)
{
  const traces::OpGraph g = trace_of(std::vector<std::vector<std::pair<int64_t, int64_t>>>(programs, {{0, 1}}));
  topo::ClusterSpec cluster = topo::load_cluster("localhost", 0, {});
  cluster.host_cores = host_cores;
  const topo::ClusterGraph graph(cluster);
  NoComm comm;
  IterationOptions options;
  options.record_timeline = true;
  options.ranks_per_program = ranks_per_program;
  const ComputeDuration one_second = [](size_t, const traces::Op&) { return 1.0; };
  return execute_programs(graph, g.ranks, g.groups, comm, one_second, options);
}

TEST(SharedHost, ThreeThreadsOnTwoCoresTakeOneAndAHalfTimesLonger)
{
  // Max-min sharing of 2 cores among 3 threads, each bounded by one core: 2/3 of a core each, 1.5 s.
  const IterationResult r = one_second_each(3, 2);
  EXPECT_NEAR(r.iteration_time_s, 1.5, 1e-9);
  ASSERT_EQ(r.timeline.size(), 3U);
  for (const OpSlice& s : r.timeline)
    EXPECT_NEAR(s.end_s - s.start_s, 1.5, 1e-9);
}

TEST(SharedHost, OneCoreSerialisesTheWork)
{
  EXPECT_NEAR(one_second_each(3, 1).iteration_time_s, 3.0, 1e-9);
}

TEST(SharedHost, EnoughCoresChangeNothing)
{
  EXPECT_NEAR(one_second_each(3, 4).iteration_time_s, 1.0, 1e-9);
}

TEST(SharedHost, FoldedProgramsCountTheirRanksAsThreads)
{
  // Two programs standing for 4 identical ranks each (a folded workload) on 2 cores: 8 threads of 1 s, 4 s.
  EXPECT_NEAR(one_second_each(2, 2, 4).iteration_time_s, 4.0, 1e-9);
}

TEST(SharedHost, ReplayAsMeasuredReproducesSharedMeasurements)
{
  // Three ranks measured computing 1.5 s at once on 2 cores (1 s of work each): the replay on the same 2 cores
  // gives the 1.5 s again; on 3 cores only the work, 1 s.
  const traces::OpGraph g = trace_of({{{0, 1500000000}}, {{0, 1500000000}}, {{0, 1500000000}}});
  topo::ClusterSpec cluster = topo::load_cluster("localhost", 0, {});
  cluster.host_cores = 2;
  EXPECT_NEAR(replay_trace(g, cluster).iteration_time_s, 1.5, 1e-9);
}

} // namespace
} // namespace gputwin::sim
