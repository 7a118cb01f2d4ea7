// The compute model fitted to captured traces, and its report (trace_calibration.hpp).
#include "gputwin/sim/trace_calibration.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <cstdio>

namespace gputwin::sim {

namespace {

// The nominal model of `kind` (a --gpu value, or a trace's device): a built-in cluster's GPU, or the CPU
// reference; nullopt for a kind it does not know.
std::optional<GpuComputeModel> nominal_model(const std::string& kind)
{
  if (kind == "cpu")
    return nominal_cpu_compute_model();
  for (const char* gpu : {"a100", "h100", "h200"})
    if (kind.rfind(gpu, 0) == 0) {
      const topo::ClusterSpec cluster = topo::load_cluster(std::string("dgx-") + gpu, 0, {});
      return builtin_compute_model(cluster.gpu.generation, cluster.gpu.kind, cluster.gpu.peak_bf16_flops,
                                   cluster.gpu.hbm_bytes_per_s);
    }
  return std::nullopt;
}

std::string device_of(const traces::OpGraph& graph)
{
  const auto it = graph.metadata.find("device");
  return it == graph.metadata.end() ? "" : it->second;
}

std::string fmt(const char* format, double value)
{
  char text[48];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

void print_fit(std::ostream& out, const OpClassFit& f)
{
  char line[200];
  std::snprintf(line, sizeof line, "  %-38s %6lld %12.4g %12.4g %10.3f %10.3f\n", f.op_class.c_str(),
                static_cast<long long>(f.ops), f.measured_s, f.modelled_s, f.mean_abs_relative_error,
                f.max_abs_relative_error);
  out << line;
}

// The fit errors per op class / op name and per collective.
void print_fit_errors(std::ostream& out, const Calibration& c)
{
  if (!c.fits.empty()) {
    out << "\n  op class / op name                          ops   measured_s   modelled_s  mean|err|   max|err|\n";
    for (const OpClassFit& f : c.fits)
      print_fit(out, f);
  }
  if (!c.collectives.empty()) {
    out << "\n  collective        ranks  samples    latency_s  bandwidth_GB/s  mean|err|\n";
    for (const CollectiveFit& f : c.collectives) {
      char line[160];
      std::snprintf(line, sizeof line, "  %-16s %6d %8lld %12.4g %15s %10.3f\n", to_string(f.op).c_str(), f.ranks,
                    static_cast<long long>(f.samples), f.latency_s,
                    f.bytes_per_s > 0 ? fmt("%.4g", f.bytes_per_s / 1e9).c_str() : "-", f.mean_abs_relative_error);
      out << line;
    }
  }
}

} // namespace

TraceCalibration calibrate_traces(const std::vector<std::string>& paths, const std::optional<std::string>& gpu)
{
  if (gpu && *gpu != "a100" && *gpu != "h100" && *gpu != "h200" && *gpu != "cpu")
    throw InputError("--gpu: expected " + std::string(calibration_gpu_choices) + ", got '" + *gpu + "'");
  std::vector<traces::OpGraph> graphs;
  for (const std::string& path : paths) {
    try {
      graphs.push_back(traces::read_op_graph_file(path));
    } catch (const traces::TraceError& e) {
      throw InputError(e.what());
    }
    if (device_of(graphs.back()) != device_of(graphs.front()))
      throw InputError(path + ": device '" + device_of(graphs.back()) + "' differs from device '" +
                       device_of(graphs.front()) + "' of " + paths.front() +
                       " (calibrate the traces of one device at a time)");
  }
  TraceCalibration result;
  result.device = device_of(graphs.front());
  const std::optional<GpuComputeModel> nominal = nominal_model(gpu.value_or(result.device));
  if (!nominal)
    throw InputError(paths.front() + ": " +
                     (result.device.empty() ? "records no device" : "device '" + result.device + "'") +
                     " is not a GPU kind calibrate knows (pass --gpu " + calibration_gpu_choices + ")");
  result.nominal = *nominal;
  result.calibration = calibrate(graphs, *nominal);
  result.calibration.gpu.source = "fit by gputwin calibrate to " + std::to_string(graphs.size()) + " trace" +
                                  (graphs.size() == 1 ? "" : "s") + " of device '" + result.device +
                                  "' against the nominal " + nominal->gpu_kind + " model";
  return result;
}

void print_trace_calibration(std::ostream& out, const TraceCalibration& result)
{
  const Calibration& c = result.calibration;
  const GpuComputeModel& nominal = result.nominal;
  const GpuComputeModel& g = c.gpu;
  out << "calibrated " << g.gpu_kind << " on " << c.traces << " trace" << (c.traces == 1 ? "" : "s") << " (device "
      << (result.device.empty() ? "not recorded" : result.device) << "); nominal peak " << fmt("%.4g", g.peak_flops)
      << " FLOP/s, bandwidth " << fmt("%.4g", g.hbm_bytes_per_s) << " B/s, multiprocessors " << g.multiprocessors
      << ", tiles " << fmt("%g", g.gemm_tile_m) << "x" << fmt("%g", g.gemm_tile_n) << "\n\n";
  out << "  parameter                   nominal        fitted\n";
  const auto row = [&](const char* name, double before, double after) {
    char line[120];
    std::snprintf(line, sizeof line, "  %-22s %12.4g  %12.4g\n", name, before, after);
    out << line;
  };
  row("gemm_efficiency", nominal.gemm_efficiency, g.gemm_efficiency);
  row("gemm_k_half", nominal.gemm_k_half, g.gemm_k_half);
  row("memory_efficiency", nominal.memory_efficiency, g.memory_efficiency);
  row("kernel_overhead_s", nominal.kernel_overhead_s, g.kernel_overhead_s);
  out << "  effective GEMM throughput " << fmt("%.4g", g.peak_flops * g.gemm_efficiency)
      << " FLOP/s (large k, full waves), memory-bound kernels " << fmt("%.4g", g.hbm_bytes_per_s * g.memory_efficiency)
      << " B/s\n";
  if (g.gemm_table)
    out << "  GEMM table " << g.gemm_table_ref << ": " << g.gemm_table->source() << " (its best "
        << fmt("%.4g", g.gemm_table->max_flops_per_s()) << " FLOP/s is the level gemm_efficiency sets)\n";
  for (const auto& [kernel_class, params] : g.memory_classes)
    out << "  class " << to_string(kernel_class) << ": relative_efficiency " << fmt("%.4g", params.relative_efficiency)
        << " (" << fmt("%.4g", memory_class_bytes_per_s(g, kernel_class)) << " B/s), overhead_s "
        << fmt("%.4g", params.overhead_s) << "\n";
  print_fit_errors(out, c);
  for (const std::string& note : c.notes)
    out << "note: " << note << "\n";
}

} // namespace gputwin::sim
