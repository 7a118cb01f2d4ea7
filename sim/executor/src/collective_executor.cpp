#include "gputwin/sim/collective_executor.hpp"

#include "gputwin/sim/flow_runner.hpp"
#include "gputwin/sim/steady_state.hpp" // shortcuts_enabled

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cmath>

namespace sg4 = simgrid::s4u;

namespace gputwin::sim {

std::vector<std::pair<int, int>> flow_pairs(const std::vector<const CollectivePlan*>& plans)
{
  std::vector<std::pair<int, int>> pairs;
  for (const CollectivePlan* plan : plans)
    for (const Flow& f : plan->flows)
      pairs.emplace_back(f.src_gpu, f.dst_gpu);
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  return pairs;
}

std::vector<std::vector<PlanTiming>>
run_collective_streams(const SimgridPlatform& platform, const topo::ClusterGraph& graph,
                       const std::vector<std::vector<const CollectivePlan*>>& streams, bool flow_shortcut,
                       FlowLog* flow_log)
{
  FlowRunner runner(platform, graph);
  runner.set_shortcut(flow_shortcut && shortcuts_enabled());
  runner.set_flow_log(flow_log);
  std::vector<std::vector<PlanTiming>> timings(streams.size());
  const double run_start_s = sg4::Engine::get_clock();
  for (size_t s = 0; s < streams.size(); ++s) {
    timings[s].resize(streams[s].size());
    const int host_gpu =
        streams[s].empty() || streams[s].front()->flows.empty() ? 0 : streams[s].front()->flows.front().src_gpu;
    sg4::Actor::create("stream" + std::to_string(s), platform.host(host_gpu),
                       [&runner, &streams, &timings, s, run_start_s] {
                         for (size_t p = 0; p < streams[s].size(); ++p) {
                           timings[s][p].start_s = sg4::Engine::get_clock() - run_start_s;
                           runner.run(streams[s][p]->flows, streams[s][p]->choice.latency_s, static_cast<int64_t>(s));
                           timings[s][p].end_s = sg4::Engine::get_clock() - run_start_s;
                         }
                       });
  }
  platform.engine().run();
  return timings;
}

} // namespace gputwin::sim
