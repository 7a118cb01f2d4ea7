// Validation against NVIDIA's published pre-training throughput of dense Llama 3 models (8B, 70B, 405B) on DGX H100,
// DGX B200 and GB200 / GB300 NVL72, in FP8 (per-tensor current scaling), MXFP8 and NVFP4: the LLAMA rows of
// Megatron-Bridge's performance summary, NeMo containers 25.09-26.06 (tests/data/megatron-bridge-perf/, Apache-2.0).
// Nothing is fitted to these rows: catalogue models, built-in compute models and the default framework; every row
// with the same assumed recipe (the page states the plan, not the flags): sequence parallelism and TE's TP overlap
// with tp > 1, the distributed optimizer with overlapped reduce-scatter and all-gather (Megatron-FSDP where the FSDP
// column is set), TE's fused cross entropy, flash attention, no recompute, no CUDA graphs; uneven stages where 126
// layers do not divide (ceil(L / pp) on the middle stages). `scripts/perf-summary-validation.py` prints these rows
// and the MoE ones (all rows, fully simulated with --full).
//
// Bounds (2026-11-29, what the model achieves, as a regression guard; issue 25's target for today's stack is a mean
// error <= 5 %, issue 28's for Blackwell <= 8 %): all 80 rows MAPE 5.83 % (bound 6.5 %; 5.78 % before TE's context-parallel copies), every row of H100, GB200
// and GB300 within 12.5 % but four. Not met: DGX B200 (4 rows) +17..+20 % slow -- B200's GEMM level is the one fitted
// on SimuMax's B200 node (0.50, issue 28's check), whose GEMMs ran ~20 % below NVIDIA's DGX B200; the 26.02.01 GB300
// Llama 3 70B MXFP8 row (PP 4 without virtual stages at micro-batch 2) +34 % while the same model's PP 4 x5 rows are
// within 6 %; GB200 NVFP4 Llama 3.1 405B at PP 16 x8 +15..+20 % (x4: +9 %). The PP 16 x8 rows put 7 layers on the
// first and the last stage's 8 chunks: the embedding's and the loss's chunks hold no layer, as Megatron-Bridge's
// pipeline layout does (validate_plan accepts exactly those two empty).
#include "csv_cells.hpp"
#include "json_report.hpp"
#include "run_cli.hpp"

#include "gputwin/traces/json_value.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace gputwin::testing {
namespace {

// release,system,model,gpus,precision,gbs,mbs,seq_len,fsdp,tp,pp,cp,vp,ep,tokens_per_s_per_gpu,model_tflops_per_gpu
enum Column { Release, System, Model, Gpus, Precision, Gbs, Mbs, Seq, Fsdp, Tp, Pp, Cp, Vp, Ep, TokensPerGpu };

struct Catalogue {
  const char* model;
  int64_t layers;
};

const std::map<std::string, Catalogue>& llamas()
{
  static const std::map<std::string, Catalogue> m = {
      {"LLAMA3_8B", {"llama3-8b", 32}}, {"LLAMA3_70B", {"llama3-70b", 80}}, {"LLAMA3.1_405B", {"llama3-405b", 126}}};
  return m;
}

std::string cluster_of(const std::string& system, int64_t* gpus_per_node)
{
  *gpus_per_node = system.find("DGX-GB") == 0 ? 4 : 8;
  if (system == "DGX-H100")
    return "dgx-h100";
  if (system == "DGX-B200")
    return "dgx-b200";
  if (system == "DGX-B300")
    return "dgx-b300";
  return system == "DGX-GB200" ? "gb200-nvl72" : "gb300-nvl72";
}

std::string precision_flags(const std::string& p)
{
  if (p == "FP8" || p == "FP8-CS")
    return " --fp8 --fp8-recipe tensorwise"; // the page: "per-tensor FP8 quantization ... current step"
  if (p == "MXFP8" || p == "FP8-MX")
    return " --precision mxfp8";
  if (p == "NVFP4")
    return " --precision nvfp4";
  return "";
}

std::string flags(const std::vector<std::string>& f, const Catalogue& c)
{
  int64_t per_node = 0;
  const std::string cluster = cluster_of(f[System], &per_node);
  const int64_t gpus = std::stoll(f[Gpus]), tp = std::stoll(f[Tp]), pp = std::stoll(f[Pp]), cp = std::stoll(f[Cp]);
  const int64_t vp = f[Vp] == "n/a" ? 1 : std::stoll(f[Vp]);
  std::string a = "simulate --estimate --json --allow-oom --model " + std::string(c.model) + " --cluster " + cluster +
                  " --nodes " + std::to_string((gpus + per_node - 1) / per_node) + " --tp " + f[Tp] + " --pp " +
                  f[Pp] + " --cp " + f[Cp] + " --dp " + std::to_string(gpus / (tp * pp * cp)) + " --micro-batch " +
                  f[Mbs] + " --global-batch " + f[Gbs] + " --seq-len " + f[Seq] + " --attention flash --cross-entropy-fusion";
  a += std::stoll(f[Fsdp]) > 0 ? " --zero 3" : " --zero 1 --overlap-grad-reduce --overlap-param-gather";
  if (tp > 1)
    a += " --sp --tp-comm-overlap";
  if (vp > 1)
    a += " --schedule interleaved --chunks " + std::to_string(vp);
  if (pp > 1 && c.layers % pp != 0) {
    const int64_t middle = (c.layers + pp - 1) / pp, rest = c.layers - middle * (pp - 2);
    a += " --pp-first-stage-layers " + std::to_string((rest + 1) / 2) + " --pp-last-stage-layers " +
         std::to_string(rest / 2);
  }
  return a + precision_flags(f[Precision]);
}

TEST(MegatronBridgeDenseValidation, LlamaThroughputOnHopperAndBlackwell)
{
  double sum = 0;
  int rows = 0, beyond = 0;
  std::map<std::string, double> simulated_s; // arguments -> iteration time
  for (const std::vector<std::string>& f :
       csv_data_rows(GPUTWIN_TEST_DATA_DIR "/megatron-bridge-perf/pretrain.csv", 16)) {
    const auto model = llamas().find(f[Model]);
    if (model == llamas().end())
      continue;
    const std::string name = f[Release] + " " + f[System] + " " + f[Model] + " " + f[Gpus] + " GPUs " + f[Precision];
    SCOPED_TRACE(name);
    const std::string arguments = flags(f, model->second);
    auto known = simulated_s.find(arguments); // releases repeat plans: each distinct one simulated once
    if (known == simulated_s.end()) {
      const CliResult result = run_gputwin(arguments, false);
      EXPECT_EQ(result.exit_code, 0) << arguments;
      if (result.exit_code != 0)
        continue;
      known = simulated_s.emplace(arguments, number(traces::parse_json(result.output), "iteration_time_s")).first;
    }
    const double measured_s = std::stod(f[Gbs]) * std::stod(f[Seq]) / (std::stod(f[TokensPerGpu]) * std::stod(f[Gpus]));
    const double error = known->second / measured_s - 1;
    std::printf("%-52s measured %7.3f s, error %+6.1f %%\n", name.c_str(), measured_s, 100 * error);
    sum += std::abs(error);
    ++rows;
    if (f[System] == "DGX-B200")
      EXPECT_LE(std::abs(error), 0.25); // not met: SimuMax's B200 level, see above
    else if (std::abs(error) > 0.125)
      ++beyond;
  }
  const double mape = sum / rows;
  std::printf("%d rows: MAPE %.2f %%, %d H100/GB200/GB300 rows beyond 12.5 %%\n", rows, 100 * mape, beyond);
  EXPECT_EQ(rows, 80);
  EXPECT_LE(mape, 0.065);
  EXPECT_LE(beyond, 4);
}

} // namespace
} // namespace gputwin::testing
