#pragma once
// Actors of one SimGrid engine blocked until an event, without a mutex.
//
// SimGrid runs one actor at a time (this project never sets contexts/nthreads), so what actors read and write between
// two simcalls needs no lock -- the flow network relies on it too (flow_runner.hpp). An s4u::ConditionVariable
// insists on an s4u::Mutex all the same, and each lock() and unlock() of one is a simcall of its own, a round trip
// through maestro: an actor that slept between two ops unlocked and locked again around every sleep, and a woken
// one waited for the mutex until its waker blocked. Here each actor blocks on a semaphore of its own (ActorWake) and
// a WakeSignal releases the semaphores of the actors waiting on it: notify_all() costs nothing when none waits, and
// a woken actor runs in the next scheduling round at the same simulated time.
//
// Only SimGrid actors of the engine that exists when these are created may use them.

#include <simgrid/s4u/Semaphore.hpp>

#include <vector>

namespace gputwin::sim {

// What one actor blocks on. Its semaphore is only released for a wait the actor is in, so no token is left over to
// end a later wait early.
struct ActorWake {
  ActorWake();
  simgrid::s4u::SemaphorePtr semaphore;
  bool released = false; // notify_all() released the semaphore for the current wait
};

class WakeSignal {
public:
  // Blocks actor `self` (the caller) until notify_all().
  void wait(ActorWake& self);
  // Blocks actor `self` (the caller) until notify_all() (true) or until the clock reaches time_s (false). The timeout
  // is time_s - now, as s4u::ConditionVariable::wait_until and s4u::this_actor::sleep_until compute it, so a wait
  // that times out ends when they would.
  bool wait_until(ActorWake& self, double time_s);
  // Wakes every actor waiting now (none: no simcall).
  void notify_all();

private:
  std::vector<ActorWake*> waiting_;
};

} // namespace gputwin::sim
