#include "gputwin/sim/iteration_executor.hpp"

#include "gputwin/sim/comm_expansion.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

namespace gputwin::sim {

namespace {

// Runs f(0) ... f(n - 1) on up to the machine's cores. Each call writes only its own result slot, so the
// outcome does not depend on the interleaving; the first exception is rethrown here.
template <class F>
void for_each_index_in_parallel(size_t n, F f)
{
  const size_t threads = std::min<size_t>(n, std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8));
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (size_t i = next++; i < n && !failed; i = next++) {
      try {
        f(i);
      } catch (...) {
        if (!failed.exchange(true))
          error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread& t : pool)
    t.join();
  if (error)
    std::rethrow_exception(error);
}

} // namespace

IterationResult simulate_iteration(const topo::ClusterGraph& graph, const Workload& workload,
                                   const GpuComputeModel& gpu, const IterationOptions& options,
                                   const FrameworkProfile& framework)
{
  // The stage programs are independent (each generated from the workload alone): built on every core, as a
  // thousand-stage plan has millions of ops.
  std::vector<traces::RankProgram> programs(static_cast<size_t>(workload.plan.pp));
  std::vector<HostProgram> hosts(programs.size());
  for_each_index_in_parallel(programs.size(), [&](size_t stage) {
    programs[stage] = stage_program(workload, static_cast<int64_t>(stage));
    hosts[stage] = host_program(framework, programs[stage]);
  });
  CommExpander comm(graph.spec(), workload);
  const ComputeDuration compute_s = [&gpu](size_t, const traces::Op& op) {
    return op.duration_ns >= 0 ? static_cast<double>(op.duration_ns) * 1e-9 : compute_duration_s(gpu, op);
  };
  return execute_programs(graph, std::move(programs), workload.groups, comm, compute_s, options, hosts);
}

} // namespace gputwin::sim
