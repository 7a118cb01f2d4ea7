// The ASTRA-sim configurations of scripts/astra-sim-interop.sh (topologies/astra-sim/) are derived from
// topologies/clusters/dgx-a100.yaml; these tests hold them to it, so a change of the cluster file that the
// ASTRA-sim files do not follow fails here instead of skewing the interop table. ASTRA-sim's analytical network
// (astra-network-analytical, congestion_unaware): per dimension a topology, its NPU count, the bandwidth of each
// NPU's link in GB/s per direction and each link's latency in ns; a Switch dimension crosses two links.
#include "gputwin/topologies/cluster_graph.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/traces/json_value.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace gputwin::testing {
namespace {

const std::string config_dir = std::string(GPUTWIN_SOURCE_DIR) + "/topologies/astra-sim/";

// The latency of the route between two GPUs, ns.
double route_latency_ns(const topo::ClusterGraph& graph, int src, int dst)
{
  return graph.path_latency_s(graph.route(src, dst)) * 1e9;
}

struct Network {
  std::vector<std::string> topology;
  std::vector<int> npus;
  std::vector<double> gbytes_per_s, latency_ns;
};

Network read_network(const std::string& name)
{
  const YAML::Node yaml = YAML::LoadFile(config_dir + name + ".network.yml");
  Network n;
  n.topology = yaml["topology"].as<std::vector<std::string>>();
  n.npus = yaml["npus_count"].as<std::vector<int>>();
  n.gbytes_per_s = yaml["bandwidth"].as<std::vector<double>>();
  n.latency_ns = yaml["latency"].as<std::vector<double>>();
  return n;
}

traces::JsonValue read_json(const std::string& file)
{
  std::ifstream in(config_dir + file);
  std::stringstream text;
  text << in.rdbuf();
  return traces::parse_json(text.str());
}

void expect_node_dimension(const Network& n, const topo::ClusterSpec& spec, const topo::ClusterGraph& graph)
{
  ASSERT_FALSE(n.topology.empty());
  EXPECT_EQ(n.topology[0], "Switch"); // NVSwitch
  EXPECT_EQ(n.npus[0], spec.gpus_per_node);
  // What NCCL's Simple protocol reaches on NVLink in gputwin's collective model: line rate x nvlink_efficiency.
  EXPECT_DOUBLE_EQ(n.gbytes_per_s[0], spec.nvlink.bytes_per_s * spec.nccl.nvlink_efficiency / 1e9);
  EXPECT_NEAR(2 * n.latency_ns[0], route_latency_ns(graph, 0, 1), 0.5);
}

// The system file: one collective implementation per network dimension, the GPU's HBM bandwidth and bf16 peak.
void expect_system(const std::string& file, size_t dimensions, const topo::ClusterSpec& spec)
{
  const traces::JsonValue system = read_json(file);
  for (const char* key : {"all-reduce-implementation", "all-gather-implementation", "reduce-scatter-implementation",
                          "all-to-all-implementation"}) {
    ASSERT_NE(system.find(key), nullptr) << file << ": " << key;
    EXPECT_EQ(system.find(key)->items.size(), dimensions) << file << ": " << key;
  }
  EXPECT_DOUBLE_EQ(*system.find("local-mem-bw")->as_double(), spec.gpu.hbm_bytes_per_s / 1e9);
  EXPECT_DOUBLE_EQ(*system.find("peak-perf")->as_double(), spec.gpu.peak_bf16_flops / 1e12);
  // Compute nodes run for their exported duration_micros (the roofline would re-time them from num_ops).
  EXPECT_EQ(*system.find("roofline-enabled")->as_int64(), 0);
}

// The files `name`.network.yml and `name`.system.json against dgx-a100 at `nodes` nodes: as many dimensions as
// `dimensions`, the first the node's NVSwitch, the system file's; `more` checks the dimensions after the first.
void check_files(const std::string& name, int nodes, size_t dimensions,
                 const std::function<void(const Network&, const topo::ClusterSpec&, const topo::ClusterGraph&)>& more)
{
  const topo::ClusterSpec spec = topo::load_cluster("dgx-a100", nodes, {});
  const topo::ClusterGraph graph(spec);
  const Network n = read_network(name);
  ASSERT_EQ(n.topology.size(), dimensions);
  ASSERT_EQ(n.npus.size(), dimensions);
  ASSERT_EQ(n.gbytes_per_s.size(), dimensions);
  ASSERT_EQ(n.latency_ns.size(), dimensions);
  expect_node_dimension(n, spec, graph);
  more(n, spec, graph);
  expect_system(name + ".system.json", dimensions, spec);
}

TEST(AstraSimConfigs, OneDgxA100NodeFollowsTheClusterFile)
{
  check_files("dgx-a100-1node", 1, 1, [](const Network&, const topo::ClusterSpec&, const topo::ClusterGraph&) {});
}

TEST(AstraSimConfigs, FourDgxA100NodesFollowTheClusterFile)
{
  check_files("dgx-a100-4node", 4, 2, [](const Network& n, const topo::ClusterSpec& spec, const topo::ClusterGraph& graph) {
    // Second dimension: GPU g of every node on rail g (one NIC per GPU, rail-optimized leaves), ASTRA-sim's NPU id
    // GPU + 8 x node being gputwin's rank order.
    ASSERT_TRUE(spec.fabric.rail_optimized);
    ASSERT_EQ(spec.nic.count, spec.gpus_per_node);
    EXPECT_EQ(n.topology[1], "Switch");
    EXPECT_EQ(n.npus[1], spec.nodes);
    EXPECT_DOUBLE_EQ(n.gbytes_per_s[1], spec.nic.bytes_per_s * spec.nccl.net_efficiency / 1e9);
    // GPU 0 of node 0 to GPU 0 of node 1: the route's latency, two ASTRA-sim links.
    EXPECT_NEAR(2 * n.latency_ns[1], route_latency_ns(graph, 0, spec.gpus_per_node), 0.5);
  });
}

TEST(AstraSimConfigs, RemoteMemoryIsNone)
{
  EXPECT_EQ(read_json("no-remote-memory.json").find("memory-type")->text, "NO_MEMORY_EXPANSION");
}

} // namespace
} // namespace gputwin::testing
