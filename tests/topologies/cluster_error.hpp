#pragma once
// The one-line error of loading a cluster (built-in name or file) with `--set` overrides, for tests of cluster files.
#include "gputwin/common/input_error.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gputwin::topo::testing {

// What load_cluster throws (checked to be one line), or "(no error)".
inline std::string error_of(const std::string& cluster, int nodes, const std::vector<std::string>& sets)
{
  try {
    load_cluster(cluster, nodes, sets);
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  return "(no error)";
}

} // namespace gputwin::topo::testing
