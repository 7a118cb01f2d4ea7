#include "wake_signal.hpp"

#include <simgrid/s4u/Engine.hpp>

#include <algorithm>

namespace gputwin::sim {

ActorWake::ActorWake() : semaphore(simgrid::s4u::Semaphore::create(0)) {}

void WakeSignal::wait(ActorWake& self)
{
  waiting_.push_back(&self);
  self.semaphore->acquire();
  self.released = false;
}

bool WakeSignal::wait_until(ActorWake& self, double time_s)
{
  const double now_s = simgrid::s4u::Engine::get_clock();
  if (time_s <= now_s)
    return false;
  waiting_.push_back(&self);
  if (!self.semaphore->acquire_timeout(time_s - now_s)) { // released in time
    self.released = false;
    return true;
  }
  if (self.released) {
    // The timeout ended the wait, and a notify_all() between then and now released the semaphore all the same: take
    // that token back (at once), as a condition variable's waiter that had timed out would not have been woken.
    self.semaphore->acquire();
    self.released = false;
  } else {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &self));
  }
  return false;
}

void WakeSignal::notify_all()
{
  // The actors waiting now. Each release is a simcall, during which an actor woken by an earlier one may wait here
  // again: it is not woken again by this call.
  std::vector<ActorWake*> waking;
  waking.swap(waiting_);
  for (ActorWake* actor : waking) {
    actor->released = true;
    actor->semaphore->release();
  }
}

} // namespace gputwin::sim
