// WakeSignal (sim/executor/src/wake_signal.hpp): actors blocked until an event without a mutex. What the program
// executor relies on: notify_all() wakes exactly the actors waiting when it is called, at that simulated time; a
// timed wait ends at its time unless woken first; and no wake is left over to end a later wait early -- not even
// when a timeout and a notify_all() fall on the same instant.

#include "dgx_spec.hpp"
#include "wake_signal.hpp"

#include "gputwin/sim/simgrid_platform.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <gtest/gtest.h>
#include <simgrid/s4u.hpp>

#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace gputwin::sim {
namespace {

// Runs `actors` (each a function of its index) on one GPU host of a one-node platform until all have ended.
template <class Body>
void run_actors(int actors, Body body)
{
  const topo::ClusterGraph graph(testing::dgx_like_spec(1, true));
  const SimgridPlatform platform(graph, {});
  for (int a = 0; a < actors; ++a)
    sg4::Actor::create("actor" + std::to_string(a), platform.host(0), [a, &body] { body(a); });
  platform.engine().run();
}

TEST(WakeSignal, NotifyWakesEveryWaiterAtItsTimeAndNotOneThatWaitsAfterIt)
{
  WakeSignal signal;
  std::vector<ActorWake> wakes(4);
  std::vector<double> woken_s(4, -1), second_s(4, -1);
  run_actors(5, [&](int a) {
    if (a < 4) {
      signal.wait(wakes[static_cast<size_t>(a)]);
      woken_s[static_cast<size_t>(a)] = sg4::Engine::get_clock();
      if (a == 0) { // waits again at once, while the notifier may still be releasing the others
        signal.wait(wakes[0]);
        second_s[0] = sg4::Engine::get_clock();
      }
      return;
    }
    sg4::this_actor::sleep_until(1.5);
    signal.notify_all();
    sg4::this_actor::sleep_until(4.0);
    signal.notify_all(); // only actor 0 waits now
    signal.notify_all(); // nobody: no effect
  });
  for (const double t : woken_s)
    EXPECT_EQ(t, 1.5);
  EXPECT_EQ(second_s[0], 4.0);
}

TEST(WakeSignal, TimedWaitEndsAtItsTimeOrWhenWoken)
{
  WakeSignal signal;
  std::vector<ActorWake> wakes(2);
  bool first_woken = true, second_woken = false;
  double first_s = -1, second_s = -1;
  run_actors(3, [&](int a) {
    if (a == 0) {
      first_woken = signal.wait_until(wakes[0], 2.25);
      first_s = sg4::Engine::get_clock();
    } else if (a == 1) {
      second_woken = signal.wait_until(wakes[1], 10.0);
      second_s = sg4::Engine::get_clock();
    } else {
      sg4::this_actor::sleep_until(3.0);
      signal.notify_all();
    }
  });
  EXPECT_FALSE(first_woken);
  EXPECT_EQ(first_s, 2.25); // as sleep_until(2.25) would end
  EXPECT_TRUE(second_woken);
  EXPECT_EQ(second_s, 3.0);
}

TEST(WakeSignal, NoWakeIsLeftOverWhenATimeoutAndANotifyFallOnOneInstant)
{
  // A waiter's timeout and its notifier's wake-up both end at t = 2; whichever SimGrid handles first, the waiter's
  // next untimed wait must last until the notify of t = 5. Two such pairs on signals of their own, the second
  // notifier calling notify_all() twice at t = 2 (the second time with nobody waiting: it leaves nothing behind).
  std::vector<WakeSignal> signals(2);
  std::vector<ActorWake> wakes(2);
  std::vector<double> next_s(2, -1), timed_out_s(2, -1);
  run_actors(4, [&](int a) {
    const size_t pair = static_cast<size_t>(a / 2);
    WakeSignal& signal = signals[pair];
    if (a % 2 == 0) {
      signal.wait_until(wakes[pair], 2.0);
      timed_out_s[pair] = sg4::Engine::get_clock();
      signal.wait(wakes[pair]);
      next_s[pair] = sg4::Engine::get_clock();
      return;
    }
    sg4::this_actor::sleep_until(2.0);
    signal.notify_all();
    if (pair == 1)
      signal.notify_all();
    sg4::this_actor::sleep_until(5.0);
    signal.notify_all();
  });
  for (size_t pair = 0; pair < 2; ++pair) {
    EXPECT_EQ(timed_out_s[pair], 2.0) << "pair " << pair;
    EXPECT_EQ(next_s[pair], 5.0) << "pair " << pair;
  }
}

} // namespace
} // namespace gputwin::sim
