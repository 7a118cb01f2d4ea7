#pragma once
// GPU compute model files, as `gputwin calibrate` writes them (comments say what they were fitted to):
//
//   gpu_kind: "cpu"
//   source: "fit to 1 trace by gputwin calibrate"
//   peak_flops_per_s: 1e+11       # nominal: what the efficiencies are relative to (not fitted)
//   hbm_bytes_per_s: 1e+10        # nominal
//   multiprocessors: 1            # nominal: GEMM tiles are scheduled in waves of this many
//   gemm_tile_m: 1                # nominal output tile (elements)
//   gemm_tile_n: 1
//   gemm_efficiency: 0.203        # fitted; relative to the nominal peak, may exceed 1
//   gemm_k_half: 3.79             # fitted; inner-dimension elements
//   memory_efficiency: 0.236      # fitted; relative to the nominal bandwidth, may exceed 1
//   kernel_overhead_s: 0          # fitted
//   fit:                          # optional: the fit's errors (informational)
//     - {op_class: "gemm", ops: 67, mean_abs_relative_error: 0.19, max_abs_relative_error: 0.49,
//        measured_s: 0.017, modelled_s: 0.017}
//   collectives:                  # optional: time = latency_s + bytes / bytes_per_s (0: latency only)
//     - {op: "all-reduce", ranks: 2, samples: 52, latency_s: 2e-4, bytes_per_s: 0, mean_abs_relative_error: 3}
//
// Every field is validated; unknown fields are errors (FILE:LINE:COLUMN: field: ...).

#include "gputwin/models/calibration.hpp"
#include "gputwin/models/gpu_compute_model.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace gputwin::config {

// Writes `calibration` as a GPU compute model file; `trace_paths` (the traces it was fitted to) and the
// calibration's notes go into comments. Numbers are written in their shortest round-trip form, so loading the
// file gives back exactly the same model.
void write_calibration_yaml(std::ostream& out, const Calibration& calibration,
                            const std::vector<std::string>& trace_paths);

// Loads and validates a GPU compute model file. Throws InputError "FILE:LINE:COLUMN: field: ...".
GpuComputeModel load_gpu_model_yaml(const std::string& path);

// The whole file: the model, its fit errors and collective fits (notes and the trace count are comments in
// the file, so `notes` is empty and `traces` 0).
Calibration load_calibration_yaml(const std::string& path);

} // namespace gputwin::config
