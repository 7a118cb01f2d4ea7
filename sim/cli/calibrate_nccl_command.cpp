// `gputwin calibrate --nccl-tests LOG...`: the flags read, the cluster's nccl section fitted to the logs
// (sim/calibration/nccl_calibration.hpp), the fitted cluster file written and the fit printed.
#include "commands.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/output_file.hpp"
#include "gputwin/sim/nccl_calibration.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <sstream>

namespace gputwin::cli {

int run_calibrate_nccl(const std::vector<std::string>& args, std::ostream& out)
{
  ArgParser parser("gputwin calibrate --nccl-tests",
                   "Fits a cluster's NCCL parameters (the nccl: section: efficiencies, host and kernel cost per call,\n"
                   "each protocol's base and per-step latencies and per-channel bandwidth) to nccl-tests logs (plain\n"
                   "or with mpirun's [r,c]<stdout>: prefixes; out-of-place times; op from the binary name, else\n"
                   "all-reduce; ranks from the Rank lines), prints the error per log and writes the cluster file.\n\n"
                   "example: gputwin calibrate --nccl-tests nccl_8.log nccl_16.log --cluster nd-a100-v4 -o fit.yaml");
  parser.allow_positional("LOG...", 1 << 20);
  parser.add_switch("--nccl-tests", "the inputs are nccl-tests logs");
  parser.add_option("--cluster", "NAME|FILE", "the cluster to start from (default dgx-a100)");
  parser.add_option("--output", "FILE", "where to write the fitted cluster file; also -o FILE");
  parser.add_switch("--json", "the report as JSON");
  const ParsedArgs parsed = parser.parse(with_long_output_flag(args));
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  const std::vector<std::string>& paths = parsed.positional();
  if (paths.empty())
    throw InputError("--nccl-tests: expected at least one nccl-tests LOG");
  const std::optional<std::string> output = parsed.value("--output");
  if (!output || output->empty())
    throw InputError("--output: missing: where to write the fitted cluster file (-o FILE)");
  check_output_flags(parsed, {"--output"}); // before the fit
  const topo::ClusterSpec cluster = topo::load_cluster(parsed.value("--cluster").value_or("dgx-a100"), 0, {});

  const sim::NcclFit fit = sim::calibrate_nccl(cluster, paths);
  std::ostringstream yaml;
  sim::write_fitted_cluster_yaml(yaml, cluster, fit, paths);
  write_file_atomically(*output, yaml.str(), "--output");
  if (parsed.has("--json")) {
    sim::write_nccl_fit_json(out, fit);
  } else {
    sim::print_nccl_fit(out, fit);
    out << "wrote " << *output << "\n";
  }
  return 0;
}

} // namespace gputwin::cli
