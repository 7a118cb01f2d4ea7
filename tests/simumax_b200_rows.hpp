#pragma once
// SimuMax's measured DGX B200 rows (tests/data/simumax-b200-one-node/: measurements.csv, 31 dense Llama rows, and
// moe_measurements.csv, 12 DeepSeek rows; the same 14 columns) and the `gputwin simulate` arguments each runs with,
// as a user would (tests/cli/simumax_b200_dense_test.cpp and simumax_b200_moe_test.cpp say why each flag; the
// memory test, tests/models/simumax_memory_test.cpp, builds the same plans through the model API).
#include "csv_cells.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gputwin::testing {

struct SimuMaxRow {
  std::string name, model;
  int64_t layers = 0, tp = 0, cp = 0, ep = 0, pp = 0, dp = 0, seq_len = 0, micro_batches = 0;
  double measured_ms = 0, measured_gib = 0, simumax_ms = 0;
  bool moe() const { return model.rfind("deepseek", 0) == 0; }
};

// The rows of `file` under tests/data/simumax-b200-one-node/.
inline std::vector<SimuMaxRow> simumax_rows(const std::string& file)
{
  // case,model,layers,tp,cp,ep,pp,dp,seq_len,micro_batches,measured_ms,measured_peak_alloc_gib,simumax_ms,...
  std::vector<SimuMaxRow> out;
  for (const std::vector<std::string>& f :
       csv_data_rows(std::string(GPUTWIN_TEST_DATA_DIR "/simumax-b200-one-node/") + file, 14)) {
    SimuMaxRow r;
    r.name = f[0];
    r.model = f[1];
    r.layers = std::stoll(f[2]);
    r.tp = std::stoll(f[3]);
    r.cp = std::stoll(f[4]);
    r.ep = std::stoll(f[5]);
    r.pp = std::stoll(f[6]);
    r.dp = std::stoll(f[7]);
    r.seq_len = std::stoll(f[8]);
    r.micro_batches = std::stoll(f[9]);
    r.measured_ms = std::stod(f[10]);
    r.measured_gib = std::stod(f[11]);
    r.simumax_ms = std::stod(f[12]);
    out.push_back(r);
  }
  return out;
}

// The simulate arguments of a row: Llama 3 70B / 405B (launched with 16 query groups), or DeepSeek-V2 / V3 cut to
// its layers with the first dense (no MTP module in SimuMax's V3 config); one DGX B200, micro-batch 1, ZeRO-1, TE's
// fused cross entropy; SP with TP.
inline std::string simumax_flags(const SimuMaxRow& r)
{
  std::string model;
  if (r.model == "llama3_405b")
    model = "llama3-405b --num-query-groups 16";
  else if (r.model == "llama3_70b")
    model = "llama3-70b";
  else
    model = std::string(r.model == "deepseekv3" ? "deepseek-v3 --mtp-layers 0" : "deepseek-v2") +
            " --moe-dense-first-layers 1";
  std::string f = "simulate --model " + model + " --layers " + std::to_string(r.layers) + " --seq-len " +
                  std::to_string(r.seq_len) + " --cluster dgx-b200 --nodes 1 --tp " + std::to_string(r.tp) + " --pp " +
                  std::to_string(r.pp) + " --cp " + std::to_string(r.cp) + " --dp " + std::to_string(r.dp) +
                  " --ep " + std::to_string(r.ep) + " --micro-batch 1 --global-batch " +
                  std::to_string(r.dp * r.micro_batches) + " --zero 1 --cross-entropy-fusion --json";
  if (r.tp > 1)
    f += " --sp";
  return f;
}

} // namespace gputwin::testing
