#pragma once
// A DGX-A100-shaped cluster written out in C++ (no YAML), for tests of the plain-C++ collective logic.

#include "gputwin/topologies/cluster_spec.hpp"

#include <numeric>
#include <vector>

namespace gputwin::testing {

inline topo::ClusterSpec dgx_like_spec(int nodes, bool ideal)
{
  topo::ClusterSpec c;
  c.name = "test-dgx";
  c.source = "tests/sim/dgx_spec.hpp";
  c.gpu = {"a100-sxm4-80gb", 312e12, 80LL << 30, 2039e9};
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.nvlink = {300e9, 0.35e-6, 6};
  c.pcie = {31.5e9, 0.5e-6, 4};
  c.nic.count = 8;
  c.nic.bytes_per_s = 25e9;
  c.nic.latency_s = 1e-6;
  for (int n = 0; n < 8; ++n)
    c.nic.gpus.push_back({n});
  c.fabric = {.levels = 3,
              .switch_radix = 40,
              .oversubscription = 1.0,
              .rail_optimized = true,
              .link_bytes_per_s = 25e9,
              .switch_latency_s = 0.13e-6};
  c.nccl = ideal ? topo::NcclSpec{1.0, 1.0, 1.0} : topo::NcclSpec{0.77, 0.8, 0.96};
  return c;
}

// GPUs 0 .. n-1: the ranks of a communicator filling nodes in order.
inline std::vector<int> first_gpus(int n)
{
  std::vector<int> g(static_cast<size_t>(n));
  std::iota(g.begin(), g.end(), 0);
  return g;
}

} // namespace gputwin::testing
