#pragma once
// Published figures the models are validated against, copied here so the project stands on its own.
//
// Source: V. Korthikanti, J. Casper, S. Lym, L. McAfee, M. Andersch, M. Shoeybi, B. Catanzaro,
// "Reducing Activation Recomputation in Large Transformer Models", arXiv 2205.05198 (MLSys 2023).
// Figure 7 and Figure 1 values as transcribed from the paper's bar charts by the Calculon authors
// (Isaev et al., SC'23). Measured on Selene, DGX A100 80GB; peak 312 TFLOP/s bf16 per A100.

#include <cstdint>

namespace gputwin::reference {

struct Table3Model {
  const char* name;
  int64_t gpus;
  int64_t global_batch;
};

inline constexpr Table3Model table3[] = {
    {"gpt-22b", 8, 4},
    {"gpt3-175b", 64, 64},
    {"mt-nlg-530b", 280, 280},
    {"gpt-1t", 512, 512},
};

// Table 2, bytes per layer, evaluated for each Table 3 model (s = 2048, its micro-batch b, t = 8 except the
// first row, t = 1). Exact integers of the formulas:
//   no parallelism  s b h (34 + 5 a s / h)          TP       s b h (10 + 24/t + 5 a s / (h t))
//   TP + SP         s b h (34/t + 5 a s / (h t))    TP + sel s b h (10 + 24/t)
//   TP + SP + sel   s b h 34/t                      full     2 s b h
struct Table2Row {
  const char* name;
  int64_t no_parallelism, tensor_parallel, tensor_sequence_parallel, tensor_parallel_selective,
      tensor_sequence_parallel_selective, full_recompute;
};

inline constexpr Table2Row table2[] = {
    {"gpt-22b", 7079985152, 1325400064, 884998144, 654311424, 213909504, 100663296},
    {"gpt3-175b", 2868903936, 578813952, 358612992, 327155712, 106954752, 50331648},
    {"mt-nlg-530b", 4110417920, 880803840, 513802240, 545259520, 178257920, 83886080},
    {"gpt-1t", 5138022400, 1101004800, 642252800, 681574400, 222822400, 104857600},
};

// Figure 7: activation memory relative to the tensor-parallel-only baseline, percent.
struct Figure7Row {
  const char* name;
  double sequence_parallel, selective, sequence_parallel_selective, full;
};

inline constexpr Figure7Row figure7[] = {
    {"gpt-22b", 66.84, 49.42, 16.18, 7.64},
    {"gpt3-175b", 62.04, 56.53, 18.49, 8.71},
    {"mt-nlg-530b", 58.31, 62.04, 20.27, 9.42},
    {"gpt-1t", 58.31, 62.04, 20.27, 9.42},
};

// Figure 1: memory per GPU, GiB, with each model's Table 3 plan.
struct Figure1Row {
  const char* name;
  double params_and_optimizer_gib, activations_tp_only_gib, activations_sp_selective_gib;
};

inline constexpr Figure1Row figure1[] = {
    {"gpt-22b", 45.5625, 59.25, 9.5625},
    {"gpt3-175b", 45.5625, 66.84375, 12.3515625},
    {"mt-nlg-530b", 31.640625, 114.0234375, 23.076171875},
    {"gpt-1t", 32.958984375, 131.25, 26.5625},
};

// Table 5: end-to-end iteration time, seconds, and the MFU / HFU of the selective + SP runs, percent.
struct Table5Row {
  const char* name;
  double full_recompute_seconds, selective_sp_seconds, mfu_percent, hfu_percent;
};

inline constexpr Table5Row table5[] = {
    {"gpt-22b", 1.42, 1.10, 41.5, 43.7},
    {"gpt3-175b", 18.13, 13.75, 51.4, 52.8},
    {"mt-nlg-530b", 49.05, 37.83, 56.0, 57.0},
    {"gpt-1t", 94.42, 71.49, 56.3, 57.0},
};

// Table 4: one 22B transformer layer on 8 A100s (t = 8, b = 4), forward and backward, milliseconds.
struct Table4Row {
  const char* experiment;
  bool sequence_parallel;
  const char* recompute; // none | selective | full
  double forward_ms, backward_ms;
};

inline constexpr Table4Row table4[] = {
    {"baseline, no recompute", false, "none", 7.7, 11.9},
    {"sequence parallel", true, "none", 7.2, 11.8},
    {"full recompute", false, "full", 7.7, 19.5},
    {"selective recompute", false, "selective", 7.7, 13.2},
    {"selective + sequence parallel", true, "selective", 7.2, 13.1},
};

inline constexpr double a100_peak_bf16_flops = 312e12;

} // namespace gputwin::reference
