#pragma once
// `gputwin calibrate TRACE...`: the GPU compute model fitted to the measured op durations of captured traces of
// one device (models/calibration.hpp) against that device's nominal model, and the fit's report as text.

#include "gputwin/models/calibration.hpp"
#include "gputwin/models/gpu_compute_model.hpp"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace gputwin::sim {

// The GPU kinds `gputwin calibrate --gpu` names, as its help and errors spell them.
inline constexpr const char* calibration_gpu_choices = "a100|h100|h200|cpu";

struct TraceCalibration {
  Calibration calibration; // the fitted model, its errors per op class and collective, its notes
  GpuComputeModel nominal; // the model the fit started from
  std::string device;      // the traces' metadata 'device' ("" when not recorded)
};

// Fits the compute model to the traces at `paths` (all of one device) against the nominal model of `gpu` (a100,
// h100, h200 or cpu; default: the traces' device). Throws InputError naming --gpu for another kind, for an
// unreadable trace, for traces of different devices, and for a device calibrate does not know.
TraceCalibration calibrate_traces(const std::vector<std::string>& paths, const std::optional<std::string>& gpu);

// The report: the nominal and fitted parameters, the effective throughputs, the kernel classes, the fit error per
// op class / op name and per collective, and the fit's notes.
void print_trace_calibration(std::ostream& out, const TraceCalibration& result);

} // namespace gputwin::sim
