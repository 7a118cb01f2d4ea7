#pragma once
// `gputwin calibrate --nccl-tests LOG...`: a cluster's NCCL parameters (its `nccl:` section) fitted to nccl-tests
// logs (sim/collectives/nccl_fit.hpp), the cluster written back as a complete cluster file with the fitted section
// (which `--cluster FILE` accepts everywhere), and the fit error per log as JSON and text.

#include "gputwin/sim/nccl_fit.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace gputwin::sim {

// Reads the nccl-tests logs at `paths` and fits `cluster`'s nccl section to them. Throws InputError naming
// --nccl-tests for an unreadable log and for a log of an nccl-tests binary the fit does not model (the reader takes
// any log it does not know for all-reduce's).
NcclFit calibrate_nccl(const topo::ClusterSpec& cluster, const std::vector<std::string>& paths);

// The whole cluster file: `cluster`'s fields as given, the fitted `nccl:` section, and the logs it came from.
void write_fitted_cluster_yaml(std::ostream& out, const topo::ClusterSpec& cluster, const NcclFit& fit,
                               const std::vector<std::string>& logs);

// The fit's objective and each log's error, as JSON (one line) and as a table.
void write_nccl_fit_json(std::ostream& out, const NcclFit& fit);
void print_nccl_fit(std::ostream& out, const NcclFit& fit);

} // namespace gputwin::sim
