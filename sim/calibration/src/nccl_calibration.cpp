// The nccl section fitted to nccl-tests logs, the fitted cluster file and the fit's report (nccl_calibration.hpp).
#include "gputwin/sim/nccl_calibration.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/json_writer.hpp"

#include <cstdio>
#include <fstream>
#include <regex>

namespace gputwin::sim {

namespace {

// The nccl-tests binaries whose logs the fit reads as their collective (the reader's names).
const std::pair<const char*, CollectiveOp> fitted_binaries[] = {{"all_reduce", CollectiveOp::AllReduce},
                                                                {"all_gather", CollectiveOp::AllGather},
                                                                {"reduce_scatter", CollectiveOp::ReduceScatter},
                                                                {"broadcast", CollectiveOp::Broadcast},
                                                                {"sendrecv", CollectiveOp::SendRecv},
                                                                {"alltoall", CollectiveOp::AllToAll}};

// Refuses a log that names an nccl-tests binary (`reduce_perf`, `gather_perf`, ...) other than the collective the
// reader took it for: the reader knows six binaries and reads any other log as all-reduce, which would fit the
// all-reduce model to another collective's times. A log that names no binary is read as all_reduce_perf's.
void check_log_collective(const std::string& path, const NcclTestsLog& log)
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

// The cluster file's fields up to its fabric: the name, the GPU, the node (NVLink, PCIe, NICs).
void write_cluster_fields(std::ostream& y, const topo::ClusterSpec& c)
{
  y << "name: " << c.name << "\n"
    << "nodes: " << c.nodes << "\n"
    << "gpu:\n  kind: " << c.gpu.kind << "\n  generation: " << to_string(c.gpu.generation)
    << "\n  peak_bf16_tflops: " << num(c.gpu.peak_bf16_flops / 1e12)
    << (c.gpu.peak_fp8_flops > 0 ? "\n  peak_fp8_tflops: " + num(c.gpu.peak_fp8_flops / 1e12) : "") // absent: none
    << (c.gpu.peak_fp4_flops > 0 ? "\n  peak_fp4_tflops: " + num(c.gpu.peak_fp4_flops / 1e12) : "") // likewise
    << "\n  hbm_gbytes: " << num(static_cast<double>(c.gpu.hbm_bytes) / 1e9)
    << "\n  hbm_gbytes_per_s: " << num(c.gpu.hbm_bytes_per_s / 1e9) << "\n"
    << "node:\n  gpus: " << c.gpus_per_node
    << (c.host_cores > 0 ? "\n  host_cores: " + std::to_string(c.host_cores) : "") // absent: GPUs of their own
    << "\n  nvlink:\n    gbytes_per_s: " << num(c.nvlink.bytes_per_s / 1e9)
    << "\n    latency_us: " << num(c.nvlink.latency_s * 1e6) << "\n    nvswitch_chips: " << c.nvlink.switch_chips
    << (c.nvlink.domain_gpus > 0 ? "\n    domain_gpus: " + std::to_string(c.nvlink.domain_gpus) : "") // absent: node
    << "\n  pcie:\n    gbytes_per_s: " << num(c.pcie.bytes_per_s / 1e9)
    << "\n    latency_us: " << num(c.pcie.latency_s * 1e6) << "\n    switches: " << c.pcie.switches_per_node
    << "\n  nics:\n    count: " << c.nic.count << "\n    gbits_per_s: " << num(c.nic.bytes_per_s * 8 / 1e9)
    << "\n    latency_us: " << num(c.nic.latency_s * 1e6) << "\n    gpus: [";
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
}

} // namespace

NcclFit calibrate_nccl(const topo::ClusterSpec& cluster, const std::vector<std::string>& paths)
{
  std::vector<NcclTestsLog> logs;
  for (const std::string& path : paths) {
    logs.push_back(read_nccl_tests_log(path));
    check_log_collective(path, logs.back());
  }
  return fit_nccl(cluster, logs);
}

void write_fitted_cluster_yaml(std::ostream& y, const topo::ClusterSpec& c, const NcclFit& fit,
                               const std::vector<std::string>& logs)
{
  y << "# Cluster " << c.name << " (from " << c.source << ") with its nccl section fitted by\n"
    << "# `gputwin calibrate --nccl-tests` to the nccl-tests logs:\n";
  for (const std::string& log : logs)
    y << "#   " << log << "\n";
  y << "# Fit: mean |log(predicted / measured)| " << num(fit.objective)
    << " over every log's rows, each log's worst 10% dropped.\n"
    << "# Units are in the key names: gbytes = 1e9 bytes, gbits = 1e9 bits, us = microseconds, tflops = 1e12 FLOP/s.\n";
  write_cluster_fields(y, c);
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

void write_nccl_fit_json(std::ostream& out, const NcclFit& fit)
{
  JsonWriter w(out);
  w.begin_object();
  w.field("objective", fit.objective);
  w.key("logs");
  w.begin_array();
  for (const NcclLogFit& f : fit.logs) {
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
}

void print_nccl_fit(std::ostream& out, const NcclFit& fit)
{
  out << "fitted the nccl section to " << fit.logs.size() << " log(s); mean |log error| " << num(fit.objective)
      << " (each log's worst 10% of rows dropped)\n\n  log                                          ranks  rows  "
         "within 15%  median |err|  max |err|\n";
  for (const NcclLogFit& f : fit.logs) {
    char line[300];
    std::snprintf(line, sizeof line, "  %-44s %5d %5d %7d/%-3d %11.1f%% %9.1f%%\n", f.path.c_str(), f.ranks, f.rows,
                  f.within_15_percent, f.rows, 100 * f.median_abs_error, 100 * f.max_abs_error);
    out << line;
  }
}

} // namespace gputwin::sim
