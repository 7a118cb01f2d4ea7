// Cluster files (topologies/cluster_spec.hpp, topologies/README.md): load_cluster either returns a validated spec
// or throws InputError. Leading lines "#set KEY=VALUE" of the input are passed as `--set` overrides (they are YAML
// comments, so the file itself is unchanged). A spec it returns must build its graph (ClusterGraph: a validated
// spec is connected, or InputError), summarise it and route between its first and last GPU; specs above 2048 GPUs
// skip the graph (its size, not its reading, is what they would test).
#include "fuzz_support.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/topologies/cluster_graph.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  using namespace gputwin::topo;
  const std::string_view text = gputwin::fuzz::as_text(data, size);
  std::vector<std::string> overrides;
  for (size_t at = 0; text.substr(at, 5) == "#set ";) {
    const size_t end = std::min(text.find('\n', at), text.size());
    overrides.emplace_back(text.substr(at + 5, end - at - 5));
    at = end + 1;
    if (at >= text.size())
      break;
  }
  const std::string path = gputwin::fuzz::input_file(text, "fuzz-cluster.yaml");
  ClusterSpec spec;
  try {
    spec = load_cluster(path, 0, overrides);
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::check_error_message(e);
    return 0;
  }
  ++gputwin::fuzz::accepted_inputs;
  if (spec.nodes <= 0 || spec.gpus_per_node <= 0)
    gputwin::fuzz::fail("load_cluster accepted a cluster without GPUs");
  if (static_cast<int64_t>(spec.nodes) * spec.gpus_per_node > 2048)
    return 0;
  try {
    const ClusterGraph graph(spec);
    (void)graph.summary();
    if (graph.gpu_count() > 1)
      (void)graph.route(0, graph.gpu_count() - 1);
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::check_error_message(e); // documented: a disconnected or invalid topology
  }
  return 0;
}
