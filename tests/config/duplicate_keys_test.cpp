// Duplicate keys in YAML files: yaml-cpp 0.7 keeps both and looks up the first, so a repeated key would otherwise be
// ignored in silence. The one loader (yaml_fields) rejects it for every kind of file, naming file, line and key.
#include "gputwin/config/framework_yaml.hpp"
#include "gputwin/config/gpu_model_yaml.hpp"
#include "gputwin/config/model_yaml.hpp"
#include "gputwin/common/yaml_fields.hpp"
#include "gputwin/common/input_error.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>

namespace gputwin::config {
namespace {

std::string write(const std::string& name, const std::string& text)
{
  const std::string path = test_temp_path(name);
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::function<void()>& load)
{
  try {
    load();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  return "";
}

TEST(DuplicateKeys, TopLevelKeyNamesFileLineAndFirstLine)
{
  const std::string path = write("dup-model.yaml", "hidden: 5120\nheads: 40\nlayers: 40\nseq_len: 2048\n"
                                                   "vocab: 51200\nheads: 48\n");
  EXPECT_EQ(error_of([&] { load_model_yaml(path); }),
            path + ":6:1: heads: duplicate key (expected each key once in a mapping; first at line 2)");
}

TEST(DuplicateKeys, NestedAndFlowMappings)
{
  const std::string nested = write("dup-nested.yaml", "a:\n  b: 1\n  c:\n    d: 2\n    d: 3\n");
  EXPECT_NE(error_of([&] { load_yaml_file(nested); }).find(nested + ":5:5: d: duplicate key"), std::string::npos);
  const std::string flow = write("dup-flow.yaml", "list:\n  - {x: 1, y: 2, x: 3}\n");
  EXPECT_NE(error_of([&] { load_yaml_file(flow); }).find(flow + ":2:18: x: duplicate key"), std::string::npos);
  // Embedded files (the built-in clusters) go through the same check.
  EXPECT_NE(
      error_of([] { parse_yaml_text("k: 1\nk: 2\n", "builtin.yaml"); }).find("builtin.yaml:2:1: k: duplicate key"),
      std::string::npos);
}

TEST(DuplicateKeys, DistinctKeysAndAliasesAreFine)
{
  EXPECT_EQ(error_of([] { parse_yaml_text("a: 1\nb: {a: 2}\nc: [{a: 3}, {a: 4}]\n", "ok.yaml"); }), "");
  // An alias is the node it names: visited once, so even a cycle or an alias fan-out costs nothing.
  EXPECT_EQ(error_of([] { parse_yaml_text("a: &x {k: 1, m: *x}\nb: *x\nc: [*x, *x, *x]\n", "alias.yaml"); }), "");
  EXPECT_NE(error_of([] {
              parse_yaml_text("a: &x {k: 1, k: 2}\nb: *x\n", "alias-dup.yaml");
            }).find("alias-dup.yaml:1:14: k: duplicate key"),
            std::string::npos);
}

TEST(DuplicateKeys, GpuModelAndFrameworkFiles)
{
  const std::string gpu = write("dup.gpu-model.yaml", "gpu_kind: cpu\nsource: test\npeak_flops_per_s: 1e11\n"
                                                      "hbm_bytes_per_s: 1e10\nmultiprocessors: 1\ngemm_tile_m: 1\n"
                                                      "gemm_tile_n: 1\ngemm_efficiency: 0.2\ngemm_k_half: 4\n"
                                                      "memory_efficiency: 0.2\nkernel_overhead_s: 0\n"
                                                      "gemm_efficiency: 0.9\n");
  EXPECT_NE(error_of([&] { load_gpu_model_yaml(gpu); }).find(gpu + ":12:1: gemm_efficiency: duplicate key"),
            std::string::npos);
  const std::string framework = write("dup.framework.yaml", "kernel_issue_s: 1e-6\ngemm_issue_s: 1e-6\n"
                                                            "kernel_issue_s: 2e-6\n");
  EXPECT_NE(
      error_of([&] { load_framework_profile(framework); }).find(framework + ":3:1: kernel_issue_s: duplicate key"),
      std::string::npos);
}

} // namespace
} // namespace gputwin::config
