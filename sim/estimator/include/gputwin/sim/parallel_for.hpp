#pragma once
// Independent work items on a few threads, with errors that reach the caller: the first exception any item throws
// (an InputError for a plan the cluster cannot route, say) stops the threads from taking further items and is
// rethrown on the calling thread once every thread has joined -- never std::terminate from a worker.

#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace gputwin::sim {

// Runs work(i) for i in [0, count) on max(1, threads) threads (the caller's one of them).
template <class Work> void parallel_for(size_t count, int threads, Work&& work)
{
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto loop = [&] {
    for (size_t i = next++; i < count; i = next++) {
      try {
        work(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure)
          failure = std::current_exception();
        next = count; // no further items
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back(loop);
  loop();
  for (std::thread& t : pool)
    t.join();
  if (failure)
    std::rethrow_exception(failure);
}

} // namespace gputwin::sim
