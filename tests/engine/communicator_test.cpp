// The in-process communicator: collectives give the member-order result on every member whatever the thread
// timing, point-to-point messages match by tag, and a failing rank makes the others throw instead of hang.
#include "gputwin/engine/comm/in_process_world.hpp"
#include "gputwin/engine/parallel/rank_grid.hpp"
#include "gputwin/models/rank_layout.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>
#include <tuple>
#include <vector>

namespace gputwin::engine {
namespace {

void run_ranks(int n, const std::function<void(int)>& body)
{
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back(body, r);
  for (std::thread& t : threads)
    t.join();
}

TEST(InProcessCommunicator, CollectivesReduceInMemberOrder)
{
  constexpr int n = 4;
  InProcessWorld world(n);
  std::vector<std::vector<float>> reduced(n), gathered(n), scattered(n);
  std::vector<std::vector<uint16_t>> bf16(n);
  run_ranks(n, [&](int r) {
    auto comm = world.communicator({0, 1, 2, 3}, r);
    // Values whose fp32 sum depends on the order: 1e8, 1, -1e8, 1 in member order.
    const float values[n] = {1e8f, 1.0f, -1e8f, 1.0f};
    std::this_thread::sleep_for(std::chrono::milliseconds(3 * (n - r))); // arrive in reverse order
    std::vector<float> x(5, values[r]);
    comm->all_reduce(x.data(), 5, DType::F32, ReduceOp::Sum);
    reduced[static_cast<size_t>(r)] = x;
    std::vector<float> mine{static_cast<float>(r), static_cast<float>(10 * r)};
    gathered[static_cast<size_t>(r)].resize(2 * n);
    comm->all_gather(mine.data(), gathered[static_cast<size_t>(r)].data(), 2, DType::F32);
    std::vector<float> in(n);
    for (int i = 0; i < n; ++i)
      in[static_cast<size_t>(i)] = static_cast<float>(100 * r + i);
    scattered[static_cast<size_t>(r)].resize(1);
    comm->reduce_scatter(in.data(), scattered[static_cast<size_t>(r)].data(), 1, DType::F32);
    std::vector<uint16_t> h{float_to_bf16(1.0f + static_cast<float>(r) / 256.0f)};
    comm->all_reduce(h.data(), 1, DType::BF16, ReduceOp::Max);
    bf16[static_cast<size_t>(r)] = h;
  });
  const float expected_sum = ((1e8f + 1.0f) + -1e8f) + 1.0f; // member order, fp32
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(reduced[static_cast<size_t>(r)], std::vector<float>(5, expected_sum));
    EXPECT_EQ(gathered[static_cast<size_t>(r)], (std::vector<float>{0, 0, 1, 10, 2, 20, 3, 30}));
    EXPECT_EQ(scattered[static_cast<size_t>(r)][0], static_cast<float>(600 + 4 * r));
    EXPECT_EQ(bf16[static_cast<size_t>(r)][0], float_to_bf16(1.0f + 3.0f / 256.0f));
  }
}

TEST(InProcessCommunicator, MessagesMatchByTagAndCarryTheirSequence)
{
  InProcessWorld world(2);
  std::vector<int64_t> sequences;
  std::vector<float> first(1), second(1);
  run_ranks(2, [&](int r) {
    auto comm = world.communicator({0, 1}, r);
    if (r == 0) {
      const float a = 1.5f, b = 2.5f;
      comm->send(&a, 4, 1, /*tag*/ 10, /*sequence*/ 0);
      comm->send(&b, 4, 1, /*tag*/ 20, /*sequence*/ 1);
    } else {
      sequences.push_back(comm->recv(second.data(), 4, 0, 20)); // asks for the later message first
      sequences.push_back(comm->recv(first.data(), 4, 0, 10));
      float wrong = 0;
      EXPECT_THROW(
          {
            comm->send(&wrong, 4, 1, 30, 0); // to itself, then a recv of the wrong size
            comm->recv(&wrong, 8, 1, 30);
          },
          CommError);
    }
  });
  EXPECT_EQ(first[0], 1.5f);
  EXPECT_EQ(second[0], 2.5f);
  EXPECT_EQ(sequences, (std::vector<int64_t>{1, 0}));
}

TEST(InProcessCommunicator, AbortWakesWaitingRanks)
{
  InProcessWorld world(3);
  std::vector<std::string> errors(3);
  const auto start = std::chrono::steady_clock::now();
  run_ranks(3, [&](int r) {
    try {
      auto comm = world.communicator({0, 1, 2}, r);
      if (r == 2)
        throw std::runtime_error("rank 2 failed before the collective");
      comm->barrier();
    } catch (const std::exception& e) {
      errors[static_cast<size_t>(r)] = e.what();
      world.abort(e.what());
    }
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(errors[0].find("aborted"), std::string::npos);
  EXPECT_NE(errors[1].find("aborted"), std::string::npos);
}

TEST(RankGrid, TensorParallelIsInnermostAndGroupsAreComplete)
{
  // The models' layout: rank = tp + TP (dp + DP stage).
  const RankGrid grid(2, 2, 2);
  EXPECT_EQ(grid.rank_of(1, 1, 0), 6);
  EXPECT_EQ(grid.coords(5).dp, 0);
  EXPECT_EQ(grid.coords(5).pp, 1);
  EXPECT_EQ(grid.coords(5).tp, 1);
  EXPECT_EQ(grid.groups()[static_cast<size_t>(grid.tp_group(5))].ranks, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(grid.groups()[static_cast<size_t>(grid.dp_group(5))].ranks, (std::vector<int32_t>{5, 7}));
  EXPECT_EQ(grid.groups()[static_cast<size_t>(grid.pp_group(5))].ranks, (std::vector<int32_t>{1, 5}));
  EXPECT_EQ(grid.groups()[static_cast<size_t>(grid.embedding_group(5))].ranks, (std::vector<int32_t>{1, 5}));
  EXPECT_EQ(grid.groups()[static_cast<size_t>(grid.groups().size() - 1)].kind, "embedding");
}

TEST(RankGrid, IsTheModelsRankLayout)
{
  // The engine's ranks and groups are the simulator's (models/rank_layout.hpp): compare's replayed and
  // simulated columns put every TP, DP and PP transfer on the same GPUs.
  for (const auto& [dp, pp, tp] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 1, 1}, {2, 2, 2}, {3, 2, 2}, {2, 4, 1}, {4, 1, 2}, {1, 3, 4}, {2, 3, 2}}) {
    const RankGrid grid(dp, pp, tp);
    ParallelPlan plan;
    plan.dp = dp;
    plan.pp = pp;
    plan.tp = tp;
    for (int rank = 0; rank < grid.world_size(); ++rank) {
      const RankCoords c = grid.coords(rank);
      EXPECT_EQ(global_rank(plan, RankCoord{c.pp, c.dp, c.tp}), rank);
      EXPECT_EQ(grid.rank_of(c.dp, c.pp, c.tp), rank);
      EXPECT_EQ(grid.groups()[static_cast<size_t>(grid.tp_group(rank))].ranks, tp_group_ranks(plan, c.pp, c.dp));
      EXPECT_EQ(grid.groups()[static_cast<size_t>(grid.dp_group(rank))].ranks, dp_group_ranks(plan, c.pp, c.tp));
    }
  }
}

} // namespace
} // namespace gputwin::engine
