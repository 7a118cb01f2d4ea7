// The pieces of `gputwin sweep`'s scale-out: --shard K/N and a Slurm job array's environment (sweep_shard.hpp),
// and tasks in forked children collected in order (sim/isolated_run.hpp).
#include "gputwin/sim/isolated_run.hpp"
#include "gputwin/sim/sweep_shard.hpp"

#include "gputwin/common/input_error.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace gputwin::sim {
namespace {

TEST(Shard, ParsesKOfNCountedFromOne)
{
  const Shard first = parse_shard("1/3");
  EXPECT_EQ(first.index, 0u);
  EXPECT_EQ(first.count, 3u);
  EXPECT_EQ(to_string(first), "1/3");
  EXPECT_EQ(parse_shard("3/3").index, 2u);
  EXPECT_FALSE(parse_shard("1/1").sliced());
  EXPECT_TRUE(parse_shard("2/3").sliced());
}

TEST(Shard, RejectsMalformedSlicesNamingTheFlag)
{
  for (const char* text : {"4/3", "0/3", "a/b", "1/0", "3", "/3", "1/", "-1/3", "1/3x", "1.5/3", "", "1/3/4"}) {
    SCOPED_TRACE(text);
    try {
      parse_shard(text);
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind("--shard: ", 0), 0u) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

TEST(Shard, SlicesAreDisjointAndCoverEveryPoint)
{
  for (size_t n = 1; n <= 5; ++n) {
    std::multiset<size_t> seen;
    for (size_t k = 1; k <= n; ++k) {
      const Shard shard = parse_shard(std::to_string(k) + "/" + std::to_string(n));
      for (size_t point = 0; point < 17; ++point)
        if (shard.contains(point))
          seen.insert(point);
    }
    EXPECT_EQ(seen.size(), 17u);
    for (size_t point = 0; point < 17; ++point)
      EXPECT_EQ(seen.count(point), 1u);
  }
}

// A Slurm environment: `getenv` over a map.
std::optional<Shard> from_env(const std::map<std::string, std::string>& env)
{
  return shard_from_slurm([&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(Shard, FromASlurmArrayCountedFromZeroOrOne)
{
  EXPECT_FALSE(from_env({}).has_value()) << "not an array job";
  // --array=0-2
  for (int id = 0; id < 3; ++id) {
    const auto s = from_env({{"SLURM_ARRAY_TASK_ID", std::to_string(id)},
                             {"SLURM_ARRAY_TASK_COUNT", "3"},
                             {"SLURM_ARRAY_TASK_MIN", "0"},
                             {"SLURM_ARRAY_TASK_MAX", "2"}});
    ASSERT_TRUE(s);
    EXPECT_EQ(s->index, static_cast<size_t>(id));
    EXPECT_EQ(s->count, 3u);
  }
  // --array=1-3: task 1 is the first slice.
  for (int id = 1; id <= 3; ++id) {
    const auto s = from_env({{"SLURM_ARRAY_TASK_ID", std::to_string(id)},
                             {"SLURM_ARRAY_TASK_COUNT", "3"},
                             {"SLURM_ARRAY_TASK_MIN", "1"},
                             {"SLURM_ARRAY_TASK_MAX", "3"}});
    ASSERT_TRUE(s);
    EXPECT_EQ(s->index, static_cast<size_t>(id - 1));
  }
  // --array=10-30:10
  const auto stepped = from_env({{"SLURM_ARRAY_TASK_ID", "20"},
                                 {"SLURM_ARRAY_TASK_COUNT", "3"},
                                 {"SLURM_ARRAY_TASK_MIN", "10"},
                                 {"SLURM_ARRAY_TASK_MAX", "30"},
                                 {"SLURM_ARRAY_TASK_STEP", "10"}});
  ASSERT_TRUE(stepped);
  EXPECT_EQ(stepped->index, 1u);
  // Without SLURM_ARRAY_TASK_MIN the id counts from 0.
  const auto no_min = from_env({{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "3"}});
  ASSERT_TRUE(no_min);
  EXPECT_EQ(no_min->index, 2u);
}

TEST(Shard, RejectsASlurmEnvironmentThatIsNotAnEvenArray)
{
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"SLURM_ARRAY_TASK_ID", "1"}}, "SLURM_ARRAY_TASK_COUNT: not set"},
      {{{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "3"}}, "SLURM_ARRAY_TASK_ID: expected"},
      {{{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_COUNT", "0"}}, "SLURM_ARRAY_TASK_COUNT: expected"},
      // 1-based array without SLURM_ARRAY_TASK_MIN: the last task is out of range
      {{{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "3"}}, "SLURM_ARRAY_TASK_ID: 3 is not one of"},
      // --array=1,2,7: not evenly spaced
      {{{"SLURM_ARRAY_TASK_ID", "2"},
        {"SLURM_ARRAY_TASK_COUNT", "3"},
        {"SLURM_ARRAY_TASK_MIN", "1"},
        {"SLURM_ARRAY_TASK_MAX", "7"}},
       "evenly spaced"},
  };
  for (const auto& [env, expected] : cases) {
    SCOPED_TRACE(expected);
    try {
      from_env(env);
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

TEST(IsolatedRun, ResultsComeBackInIndexOrderWhateverTheJobs)
{
  // Each task sleeps longer the smaller its index, so they finish out of order with several jobs.
  const auto task = [](size_t i) {
    usleep(static_cast<useconds_t>((8 - i) * 3000));
    return "task " + std::to_string(i) + " " + std::string(70000, 'x');
  };
  std::vector<size_t> completion;
  const std::vector<std::string> one = sim::run_isolated(8, 1, task);
  const std::vector<std::string> four = sim::run_isolated(
      8, 4, task, sim::IsolatedRunCallbacks{[&](size_t i, const std::string&) { completion.push_back(i); }, {}, {}});
  ASSERT_EQ(one.size(), 8u);
  EXPECT_EQ(one, four);
  for (size_t i = 0; i < 8; ++i)
    EXPECT_EQ(one[i].rfind("task " + std::to_string(i) + " ", 0), 0u)
        << "results larger than a pipe's buffer arrive whole";
  EXPECT_EQ(completion.size(), 8u);
  EXPECT_TRUE(sim::run_isolated(0, 3, task).empty());
}

TEST(IsolatedRun, TasksRunInChildProcesses)
{
  const pid_t parent = getpid();
  const std::vector<std::string> pids = sim::run_isolated(3, 2, [](size_t) { return std::to_string(getpid()); });
  std::set<std::string> distinct(pids.begin(), pids.end());
  EXPECT_EQ(distinct.size(), 3u);
  EXPECT_EQ(distinct.count(std::to_string(parent)), 0u);
}

TEST(IsolatedRun, AnExceptionInATaskIsRethrownWithItsKind)
{
  const auto failing = [](size_t i) -> std::string {
    if (i == 2)
      throw InputError("--gpus: bad point");
    return "ok";
  };
  try {
    sim::run_isolated(5, 2, failing);
    ADD_FAILURE() << "no exception";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--gpus: bad point");
  }
  EXPECT_THROW(sim::run_isolated(2, 2, [](size_t) -> std::string { throw std::logic_error("bug"); }), std::logic_error);
  EXPECT_THROW(sim::run_isolated(2, 1, [](size_t) -> std::string { throw std::runtime_error("disk"); }),
               std::runtime_error);
}

TEST(IsolatedRun, AChildThatDiesIsNamed)
{
  try {
    sim::run_isolated(
        3, 3,
        [](size_t i) -> std::string {
          if (i == 1)
            raise(SIGKILL);
          return "ok";
        },
        sim::IsolatedRunCallbacks{{}, {}, [](size_t i) { return "the point " + std::to_string(i); }});
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("the point 1 was killed by signal 9"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace gputwin::sim
