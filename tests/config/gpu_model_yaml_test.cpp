// GPU compute model files: write -> load gives the same model, fits and collectives; every bad field is a
// one-line error naming FILE:LINE:COLUMN and the field.
#include "gputwin/config/gpu_model_yaml.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/traces/trace_io.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gputwin::config {
namespace {

const std::string trace_dir = GPUTWIN_TEST_DATA_DIR "/traces/";

std::string write_temp(const std::string& name, const std::string& text)
{
  const std::string path = test_temp_path(name);
  std::ofstream(path) << text;
  return path;
}

void expect_same_model(const GpuComputeModel& a, const GpuComputeModel& b)
{
  EXPECT_EQ(a.gpu_kind, b.gpu_kind);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.peak_flops, b.peak_flops);
  EXPECT_EQ(a.hbm_bytes_per_s, b.hbm_bytes_per_s);
  EXPECT_EQ(a.multiprocessors, b.multiprocessors);
  EXPECT_EQ(a.gemm_tile_m, b.gemm_tile_m);
  EXPECT_EQ(a.gemm_tile_n, b.gemm_tile_n);
  EXPECT_EQ(a.gemm_efficiency, b.gemm_efficiency);
  EXPECT_EQ(a.gemm_k_half, b.gemm_k_half);
  EXPECT_EQ(a.memory_efficiency, b.memory_efficiency);
  EXPECT_EQ(a.kernel_overhead_s, b.kernel_overhead_s);
  EXPECT_EQ(a.grouped_gemm_kernel_s, b.grouped_gemm_kernel_s);
  EXPECT_EQ(a.gemm_table_ref, b.gemm_table_ref);
  EXPECT_EQ(a.gemm_table == nullptr, b.gemm_table == nullptr);
  ASSERT_EQ(a.memory_classes.size(), b.memory_classes.size());
  for (const auto& [c, params] : a.memory_classes) {
    ASSERT_TRUE(b.memory_classes.count(c)) << to_string(c);
    EXPECT_EQ(params.relative_efficiency, b.memory_classes.at(c).relative_efficiency);
    EXPECT_EQ(params.overhead_s, b.memory_classes.at(c).overhead_s);
  }
}

TEST(GpuModelYaml, RoundTripOfACalibrationIsExact)
{
  const traces::OpGraph graph = traces::read_op_graph_file(trace_dir + "cpu-tp2-pp2.json");
  Calibration c = calibrate({graph}, nominal_cpu_compute_model());
  c.gpu.source = "fit \"quoted\" \\ with\ta tab";
  c.notes.push_back("a note\nover two lines");
  ASSERT_FALSE(c.collectives.empty());
  std::ostringstream text;
  write_calibration_yaml(text, c, {trace_dir + "cpu-tp2-pp2.json", "odd\npath.json"});
  const std::string path = write_temp("calibrated.yaml", text.str());
  const Calibration loaded = load_calibration_yaml(path);
  expect_same_model(loaded.gpu, c.gpu);
  expect_same_model(load_gpu_model_yaml(path), c.gpu);
  ASSERT_EQ(loaded.fits.size(), c.fits.size());
  for (size_t i = 0; i < c.fits.size(); ++i) {
    EXPECT_EQ(loaded.fits[i].op_class, c.fits[i].op_class);
    EXPECT_EQ(loaded.fits[i].ops, c.fits[i].ops);
    EXPECT_EQ(loaded.fits[i].mean_abs_relative_error, c.fits[i].mean_abs_relative_error);
    EXPECT_EQ(loaded.fits[i].max_abs_relative_error, c.fits[i].max_abs_relative_error);
    EXPECT_EQ(loaded.fits[i].measured_s, c.fits[i].measured_s);
    EXPECT_EQ(loaded.fits[i].modelled_s, c.fits[i].modelled_s);
  }
  ASSERT_EQ(loaded.collectives.size(), c.collectives.size());
  for (size_t i = 0; i < c.collectives.size(); ++i) {
    EXPECT_EQ(loaded.collectives[i].op, c.collectives[i].op);
    EXPECT_EQ(loaded.collectives[i].ranks, c.collectives[i].ranks);
    EXPECT_EQ(loaded.collectives[i].samples, c.collectives[i].samples);
    EXPECT_EQ(loaded.collectives[i].latency_s, c.collectives[i].latency_s);
    EXPECT_EQ(loaded.collectives[i].bytes_per_s, c.collectives[i].bytes_per_s);
    EXPECT_EQ(loaded.collectives[i].mean_abs_relative_error, c.collectives[i].mean_abs_relative_error);
  }
  // Comments say what the file was fitted to; write -> load -> write is byte-identical.
  EXPECT_NE(text.str().find("#   " + trace_dir + "cpu-tp2-pp2.json\n"), std::string::npos);
  EXPECT_NE(text.str().find("# note: a note over two lines\n"), std::string::npos);
  Calibration again = loaded;
  again.notes = c.notes;
  std::ostringstream rewritten;
  write_calibration_yaml(rewritten, again, {trace_dir + "cpu-tp2-pp2.json", "odd\npath.json"});
  EXPECT_EQ(rewritten.str(), text.str());
}

TEST(GpuModelYaml, BuiltinModelWithoutFitSectionsRoundTrips)
{
  Calibration c;
  c.gpu = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3350e9);
  std::ostringstream text;
  write_calibration_yaml(text, c, {});
  EXPECT_EQ(text.str().find("fit:"), std::string::npos);
  expect_same_model(load_gpu_model_yaml(write_temp("h100.yaml", text.str())), c.gpu);
}

const std::string valid = "gpu_kind: cpu\n"
                          "peak_flops_per_s: 1e11\n"
                          "hbm_bytes_per_s: 1e10\n"
                          "multiprocessors: 1\n"
                          "gemm_tile_m: 1\n"
                          "gemm_tile_n: 1\n"
                          "gemm_efficiency: 0.2\n"
                          "gemm_k_half: 0\n"
                          "memory_efficiency: 0.25\n"
                          "kernel_overhead_s: 0\n";

std::string error_of(const std::string& text)
{
  try {
    load_gpu_model_yaml(write_temp("bad.yaml", text));
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    const std::string directory = test_temp_path("bad.yaml");  // the message from "bad.yaml" on
    return std::string(e.what()).substr(directory.size() - std::string("bad.yaml").size());
  }
  return "";
}

std::string replaced(const std::string& key, const std::string& value)
{
  std::string text = valid;
  const size_t at = text.find(key + ":");
  const size_t end = text.find('\n', at);
  return text.replace(at, end - at, key + ": " + value);
}

TEST(GpuModelYaml, MinimalFileLoadsWithoutSource)
{
  const GpuComputeModel m = load_gpu_model_yaml(write_temp("minimal.yaml", valid));
  EXPECT_EQ(m.gpu_kind, "cpu");
  EXPECT_EQ(m.source, "");
  EXPECT_EQ(m.memory_efficiency, 0.25);
}

TEST(GpuModelYaml, EveryBadFieldIsAOneLineErrorWithItsPosition)
{
  const std::vector<std::pair<std::string, std::string>> cases = {
      {valid + "gemm_effciency: 1\n",
       "bad.yaml:11:1: gemm_effciency: unknown field (expected one of gpu_kind, source, peak_flops_per_s, "
       "peak_fp8_flops_per_s, peak_fp4_flops_per_s, hbm_bytes_per_s, multiprocessors, gemm_tile_m, gemm_tile_n, "
       "gemm_efficiency, gemm_k_half, memory_efficiency, kernel_overhead_s, grouped_gemm_kernel_s, "
       "fp8_split_accumulator_slowdown, gemm_table, attention_throughput, memory_classes, comm_interference, "
       "fit, collectives, framework)"},
      {valid + "attention_throughput: builtin:a100\n",
       "bad.yaml:11:23: attention_throughput: expected builtin:h100-cudnn, got 'builtin:a100'"},
      {valid.substr(valid.find('\n') + 1), "bad.yaml:1:1: missing field 'gpu_kind' (expected a string)"},
      {replaced("gpu_kind", "\"\""), "bad.yaml:1:11: gpu_kind: expected a non-empty string"},
      {replaced("peak_flops_per_s", "fast"), "bad.yaml:2:19: peak_flops_per_s: expected a number > 0, got 'fast'"},
      {replaced("hbm_bytes_per_s", "0"), "bad.yaml:3:18: hbm_bytes_per_s: expected a number > 0, got '0'"},
      {replaced("multiprocessors", "1.5"), "bad.yaml:4:18: multiprocessors: expected a positive integer, got '1.5'"},
      {replaced("gemm_efficiency", "-0.2"), "bad.yaml:7:18: gemm_efficiency: expected a number > 0, got '-0.2'"},
      {replaced("gemm_k_half", ".nan"), "bad.yaml:8:14: gemm_k_half: expected a number >= 0, got '.nan'"},
      {replaced("memory_efficiency", "[1]"), "bad.yaml:9:20: memory_efficiency: expected a number > 0, got a list"},
      {replaced("kernel_overhead_s", "-1e-6"),
       "bad.yaml:10:20: kernel_overhead_s: expected a number >= 0, got '-1e-6'"},
      {valid + "fit: {}\n", "bad.yaml:11:6: fit: expected a list, got a mapping"},
      {valid + "fit:\n  - 3\n", "bad.yaml:12:5: fit: expected each item to be a mapping, got a scalar"},
      {valid + "fit:\n  - {op_class: gemm, ops: 0}\n", "bad.yaml:12:27: ops: expected a positive integer, got 0"},
      {valid + "fit:\n  - {op_class: gemm, ops: 3, mean_abs_relative_error: 0}\n",
       "bad.yaml:12:5: missing field 'max_abs_relative_error' (expected a number >= 0)"},
      {valid + "collectives:\n  - {op: all-reducee}\n",
       "bad.yaml:12:10: op: expected all-reduce|all-gather|reduce-scatter|broadcast|send-recv|all-to-all, got "
       "'all-reducee'"},
      {valid + "collectives:\n  - {op: all-reduce, rank: 2}\n",
       "bad.yaml:12:22: rank: unknown field (expected one of op, ranks, samples, latency_s, bytes_per_s, "
       "mean_abs_relative_error)"},
      {valid + "gemm_table: builtin:a100\n",
       "bad.yaml:11:13: gemm_table: expected builtin:h100 or a CSV path, got 'builtin:a100'"},
      {valid + "gemm_table: \"\"\n",
       "bad.yaml:11:13: gemm_table: expected builtin:h100 or a CSV path, got an empty string"},
      {valid + "memory_classes:\n  - {class: layernrom, relative_efficiency: 1, overhead_s: 0}\n",
       "bad.yaml:12:13: class: expected a memory-bound class (gemm|layernorm|softmax|gelu|dropout|elementwise|"
       "embedding|cross_entropy|optimizer|other but gemm), got 'layernrom'"},
      {valid + "memory_classes:\n  - {class: gemm, relative_efficiency: 1, overhead_s: 0}\n",
       "bad.yaml:12:13: class: expected a memory-bound class (gemm|layernorm|softmax|gelu|dropout|elementwise|"
       "embedding|cross_entropy|optimizer|other but gemm), got 'gemm'"},
      {valid + "memory_classes:\n  - {class: gelu, relative_efficiency: 0, overhead_s: 0}\n",
       "bad.yaml:12:40: relative_efficiency: expected a number > 0, got '0'"},
      {valid + "memory_classes:\n  - {class: gelu, relative_efficiency: 1}\n",
       "bad.yaml:12:5: missing field 'overhead_s' (expected a number >= 0)"},
      {valid + "memory_classes:\n  - {class: gelu, relative_efficiency: 1, overhead: 0}\n",
       "bad.yaml:12:43: overhead: unknown field (expected one of class, relative_efficiency, overhead_s)"},
      {valid + "memory_classes:\n  - {class: gelu, relative_efficiency: 1, overhead_s: 0}\n"
               "  - {class: gelu, relative_efficiency: 2, overhead_s: 0}\n",
       "bad.yaml:13:13: class: 'gelu' listed twice"},
      {"gpu_kind: [", "bad.yaml:1:1: malformed YAML: end of sequence flow not found"},
      {"- 1\n", "bad.yaml:1: expected a mapping of fields (key: value) at the top level"},
  };
  for (const auto& [text, expected] : cases)
    EXPECT_EQ(error_of(text), expected) << text;
}

TEST(GpuModelYaml, H100CalibrationWithTableAndClassesRoundTripsExactly)
{
  const std::string trace = GPUTWIN_SOURCE_DIR "/traces/captured/NVIDIA-H100-80GB-HBM3/kernels.trace.json";
  const Calibration c =
      calibrate({traces::read_op_graph_file(trace)}, builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3.35e12));
  ASSERT_EQ(c.gpu.gemm_table_ref, "builtin:h100");
  ASSERT_EQ(c.gpu.memory_classes.size(), 4U);
  std::ostringstream text;
  write_calibration_yaml(text, c, {trace});
  EXPECT_NE(text.str().find("gemm_table: \"builtin:h100\""), std::string::npos);
  EXPECT_NE(text.str().find("memory_classes:\n  - {class: \"layernorm\", relative_efficiency: "), std::string::npos);
  const std::string path = write_temp("h100-calibrated.yaml", text.str());
  const Calibration loaded = load_calibration_yaml(path);
  expect_same_model(loaded.gpu, c.gpu);
  EXPECT_EQ(loaded.gpu.gemm_table, builtin_gemm_table("h100"));
  Calibration again = loaded;
  again.notes = c.notes;
  std::ostringstream rewritten;
  write_calibration_yaml(rewritten, again, {trace});
  EXPECT_EQ(rewritten.str(), text.str());
  // The loaded model times every op as the fitted one does.
  const traces::OpGraph graph = traces::read_op_graph_file(trace); // named: a range-for over a temporary's member dangles
  for (const traces::Op& op : graph.ranks[0].ops)
    EXPECT_EQ(compute_duration_s(loaded.gpu, op), compute_duration_s(c.gpu, op)) << op.name;
}

TEST(GpuModelYaml, GemmTablePathIsRelativeToTheModelFileAndItsErrorsNameTheTableLine)
{
  const std::string dir = test_temp_path("gemm_table_dir");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/small.csv") << "# two points\nbatch,m,n,k,flops_per_s\n1,256,256,256,1e13\n1,256,256,512,2e13\n";
  std::ofstream(dir + "/model.yaml") << valid << "gemm_table: small.csv\n";
  const GpuComputeModel m = load_gpu_model_yaml(dir + "/model.yaml");
  ASSERT_TRUE(m.gemm_table);
  EXPECT_EQ(m.gemm_table_ref, "small.csv");
  EXPECT_EQ(m.gemm_table->flops_per_s({256, 256, 512, 1}), 2e13);
  std::ofstream(dir + "/broken.csv") << "batch,m,n,k,flops_per_s\n1,256,wide,256,1e13\n";
  std::ofstream(dir + "/broken.yaml") << valid << "gemm_table: broken.csv\n";
  try {
    load_gpu_model_yaml(dir + "/broken.yaml");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), dir + "/broken.yaml:11:13: gemm_table: " + dir +
                                         "/broken.csv:2: n: expected a positive integer, got 'wide'");
  }
}

TEST(GpuModelYaml, MissingFileIsAnInputError)
{
  EXPECT_THROW(load_gpu_model_yaml("/nonexistent/gpu.yaml"), InputError);
}

} // namespace
} // namespace gputwin::config
