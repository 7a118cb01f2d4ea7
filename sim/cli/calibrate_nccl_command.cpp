// `gputwin calibrate --nccl-tests LOG...`: the cluster's NCCL parameters (`nccl:` section) fitted to nccl-tests
// logs (sim/collectives/nccl_fit.hpp), the fit error per log, and the cluster written back as a complete cluster
// file with the fitted section, which `--cluster FILE` accepts everywhere.
#include "commands.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/nccl_fit.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/common/output_file.hpp"

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

namespace gputwin::cli {

namespace {

// The nccl-tests binaries whose logs the fit reads as their collective (the reader's names).
const std::pair<const char*, CollectiveOp> fitted_binaries[] = {
    {"all_reduce", CollectiveOp::AllReduce},         {"all_gather", CollectiveOp::AllGather},
    {"reduce_scatter", CollectiveOp::ReduceScatter}, {"broadcast", CollectiveOp::Broadcast},
    {"sendrecv", CollectiveOp::SendRecv},            {"alltoall", CollectiveOp::AllToAll}};

// Refuses a log that names an nccl-tests binary (`reduce_perf`, `gather_perf`, ...) other than the collective the
// reader took it for: the reader knows six binaries and reads any other log as all-reduce, which would fit the
// all-reduce model to another collective's times. A log that names no binary is read as all_reduce_perf's.
void check_log_collective(const std::string& path, const sim::NcclTestsLog& log)
{
  std::ifstream file(path, std::ios::binary);
  static const std::regex binary(R"(\b([a-z0-9_]+?)_perf(_mpi)?\b)");
  for (std::string line; std::getline(file, line);) {
    if (line.find("_perf") == std::string::npos)
      continue;
    for (std::sregex_iterator it(line.begin(), line.end(), binary), end; it != end; ++it) {
      const std::string name = (*it)[1];
      bool matches = false;
      for (const auto& [known, op] : fitted_binaries)
        matches = matches || (name == known && op == log.op);
      if (!matches)
        throw InputError("--nccl-tests: " + path + ": a log of " + name +
                         "_perf, which the fit does not model (it reads all_reduce_perf, all_gather_perf, "
                         "reduce_scatter_perf, broadcast_perf, sendrecv_perf and alltoall_perf logs)");
    }
  }
}

std::string num(double value)
{
  char text[48];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

void write_protocol(std::ostream& y, const char* name, const topo::NcclProtocolSpec& p)
{
  y << "  " << name << ":\n"
    << "    base_us: " << num(p.base_latency_s * 1e6) << "\n"
    << "    nvlink_step_us: " << num(p.nvlink_step_s * 1e6) << "\n"
    << "    net_step_us: " << num(p.net_step_s * 1e6) << "\n"
    << "    channel_gbytes_per_s: " << num(p.channel_bytes_per_s / 1e9) << "\n";
}

// The whole cluster file: `c`'s fields as given, the fitted `nccl:` section, and where it came from.
void write_cluster_yaml(std::ostream& y, const topo::ClusterSpec& c, const sim::NcclFit& fit,
                        const std::vector<std::string>& logs)
{
  y << "# Cluster " << c.name << " (from " << c.source << ") with its nccl section fitted by\n"
    << "# `gputwin calibrate --nccl-tests` to the nccl-tests logs:\n";
  for (const std::string& log : logs)
    y << "#   " << log << "\n";
  y << "# Fit: mean |log(predicted / measured)| " << num(fit.objective)
    << " over every log's rows, each log's worst 10% dropped.\n"
    << "# Units are in the key names: gbytes = 1e9 bytes, gbits = 1e9 bits, us = microseconds, tflops = 1e12 FLOP/s.\n"
    << "name: " << c.name << "\n"
    << "nodes: " << c.nodes << "\n"
    << "gpu:\n  kind: " << c.gpu.kind << "\n  generation: " << to_string(c.gpu.generation) << "\n  peak_bf16_tflops: " << num(c.gpu.peak_bf16_flops / 1e12)
    << (c.gpu.peak_fp8_flops > 0 ? "\n  peak_fp8_tflops: " + num(c.gpu.peak_fp8_flops / 1e12) : "") // absent: none
    << (c.gpu.peak_fp4_flops > 0 ? "\n  peak_fp4_tflops: " + num(c.gpu.peak_fp4_flops / 1e12) : "") // likewise
    << "\n  hbm_gbytes: " << num(static_cast<double>(c.gpu.hbm_bytes) / 1e9)
    << "\n  hbm_gbytes_per_s: " << num(c.gpu.hbm_bytes_per_s / 1e9) << "\n"
    << "node:\n  gpus: " << c.gpus_per_node
    << (c.host_cores > 0 ? "\n  host_cores: " + std::to_string(c.host_cores) : "") // absent: GPUs of their own
    << "\n  nvlink:\n    gbytes_per_s: " << num(c.nvlink.bytes_per_s / 1e9)
    << "\n    latency_us: " << num(c.nvlink.latency_s * 1e6) << "\n    nvswitch_chips: " << c.nvlink.switch_chips
    << (c.nvlink.domain_gpus > 0 ? "\n    domain_gpus: " + std::to_string(c.nvlink.domain_gpus) : "") // absent: node
    << "\n  pcie:\n    gbytes_per_s: " << num(c.pcie.bytes_per_s / 1e9) << "\n    latency_us: "
    << num(c.pcie.latency_s * 1e6) << "\n    switches: " << c.pcie.switches_per_node << "\n  nics:\n    count: "
    << c.nic.count << "\n    gbits_per_s: " << num(c.nic.bytes_per_s * 8 / 1e9) << "\n    latency_us: "
    << num(c.nic.latency_s * 1e6) << "\n    gpus: [";
  for (size_t n = 0; n < c.nic.gpus.size(); ++n) {
    y << (n ? ", " : "") << "[";
    for (size_t g = 0; g < c.nic.gpus[n].size(); ++g)
      y << (g ? ", " : "") << c.nic.gpus[n][g];
    y << "]";
  }
  y << "]\n"
    << "fabric:\n  levels: " << c.fabric.levels << "\n  switch_radix: " << c.fabric.switch_radix
    << "\n  oversubscription: "
    << (c.fabric.spine_oversubscription != 1
            ? "[" + num(c.fabric.oversubscription) + ", " + num(c.fabric.spine_oversubscription) + "]"
            : num(c.fabric.oversubscription))
    << "\n  rail_optimized: " << (c.fabric.rail_optimized ? "true" : "false")
    << "\n  link_gbits_per_s: " << num(c.fabric.link_bytes_per_s * 8 / 1e9)
    << "\n  switch_latency_us: " << num(c.fabric.switch_latency_s * 1e6) << "\n";
  const topo::NcclSpec& n = fit.nccl;
  y << "nccl:                         # fitted (see the header); channels kept from " << c.source << "\n"
    << "  nvlink_efficiency: " << num(n.nvlink_efficiency) << "\n"
    << "  pcie_efficiency: " << num(n.pcie_efficiency) << "\n"
    << "  net_efficiency: " << num(n.net_efficiency) << "\n"
    << "  channels_intra_node: " << n.channels_intra_node << "\n"
    << "  channels_inter_node: " << n.channels_inter_node << "\n"
    << "  host_call_us: " << num(n.host_call_s * 1e6) << "\n"
    << "  host_launch_us_per_gpu: " << num(n.host_launch_s_per_gpu * 1e6) << "\n"
    << "  kernel_us: " << num(n.kernel_s * 1e6) << "\n"
    << "  channel_us: " << num(n.channel_s * 1e6) << "\n"
    << "  channel_net_step_us: " << num(n.channel_net_step_s * 1e6) << "\n"
    << "  tree_correction: " << (n.tree_correction ? "true" : "false") << "\n"
    << "  userbuffers_latency_us: " << num(n.userbuffers_latency_s * 1e6)
    << "  # kept: nccl-tests logs have no userbuffers transfers\n";
  write_protocol(y, "ll", n.ll);
  write_protocol(y, "ll128", n.ll128);
  write_protocol(y, "simple", n.simple);
}

void print_report(std::ostream& out, const sim::NcclFit& fit, bool json)
{
  if (json) {
    JsonWriter w(out);
    w.begin_object();
    w.field("objective", fit.objective);
    w.key("logs");
    w.begin_array();
    for (const sim::NcclLogFit& f : fit.logs) {
      w.begin_object();
      w.field("path", f.path);
      w.field("ranks", static_cast<int64_t>(f.ranks));
      w.field("rows", static_cast<int64_t>(f.rows));
      w.field("within_15_percent", static_cast<int64_t>(f.within_15_percent));
      w.field("median_abs_error", f.median_abs_error);
      w.field("max_abs_error", f.max_abs_error);
      w.end_object();
    }
    w.end_array();
    w.end_object();
    out << "\n";
    return;
  }
  out << "fitted the nccl section to " << fit.logs.size() << " log(s); mean |log error| " << num(fit.objective)
      << " (each log's worst 10% of rows dropped)\n\n  log                                          ranks  rows  "
         "within 15%  median |err|  max |err|\n";
  for (const sim::NcclLogFit& f : fit.logs) {
    char line[300];
    std::snprintf(line, sizeof line, "  %-44s %5d %5d %7d/%-3d %11.1f%% %9.1f%%\n", f.path.c_str(), f.ranks, f.rows,
                  f.within_15_percent, f.rows, 100 * f.median_abs_error, 100 * f.max_abs_error);
    out << line;
  }
}

} // namespace

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

  std::vector<sim::NcclTestsLog> logs;
  for (const std::string& path : paths) {
    logs.push_back(sim::read_nccl_tests_log(path));
    check_log_collective(path, logs.back());
  }
  const sim::NcclFit fit = sim::fit_nccl(cluster, logs);

  std::ostringstream yaml;
  write_cluster_yaml(yaml, cluster, fit, paths);
  write_file_atomically(*output, yaml.str(), "--output");
  print_report(out, fit, parsed.has("--json"));
  if (!parsed.has("--json"))
    out << "wrote " << *output << "\n";
  return 0;
}

} // namespace gputwin::cli
