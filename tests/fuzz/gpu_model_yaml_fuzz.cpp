// GPU compute model files (models/config/gpu_model_yaml.hpp, what `gputwin calibrate` writes and --gpu-model reads):
// load_calibration_yaml either returns a calibration or throws InputError; one it returns writes and reads back to
// the same text ("loading the file gives back exactly the same model").
#include "fuzz_support.hpp"

#include "gputwin/config/gpu_model_yaml.hpp"
#include "gputwin/common/input_error.hpp"

#include <yaml-cpp/yaml.h>

#include <sstream>

namespace {

// `gemm_table: PATH` makes the reader open another file. Only files next to the input (relative names without
// "..") are allowed, so that the fuzzer does not read /dev/zero or the machine's files.
bool names_outside_file(std::string_view text)
{
  if (text.find("gemm_table") == std::string_view::npos && text.find('\\') == std::string_view::npos)
    return false;
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsMap())
      return false;
    const YAML::Node ref = root["gemm_table"];
    if (!ref || !ref.IsScalar())
      return false;
    const std::string value = ref.Scalar();
    return value.empty() || value.front() == '/' || value.find("..") != std::string::npos;
  } catch (...) {
    return false; // the reader rejects it before it looks at gemm_table
  }
}

// `gemm_table: "table.csv"` (corpus/gpu_model_yaml/csv-table.gpu-model.yaml) names this table next to the input.
const char* const small_table = "batch,m,n,k,flops_per_s\n"
                                "1,256,256,256,6e12\n1,256,256,512,9e12\n1,256,512,256,9e12\n1,256,512,512,1.2e13\n"
                                "1,512,256,256,9e12\n1,512,256,512,1.3e13\n1,512,512,256,1.4e13\n1,512,512,512,2e13\n";

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  using namespace gputwin::config;
  static const std::string table = gputwin::fuzz::input_file(small_table, "table.csv");
  const std::string_view text = gputwin::fuzz::as_text(data, size);
  if (names_outside_file(text))
    return -1;
  const std::string path = gputwin::fuzz::input_file(text, "fuzz.gpu-model.yaml");
  gputwin::Calibration calibration;
  try {
    calibration = load_calibration_yaml(path);
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::check_error_message(e);
    return 0;
  }
  ++gputwin::fuzz::accepted_inputs;
  std::ostringstream written;
  write_calibration_yaml(written, calibration, {});
  const std::string again = gputwin::fuzz::input_file(written.str(), "rewritten.gpu-model.yaml");
  std::ostringstream rewritten;
  try {
    write_calibration_yaml(rewritten, load_calibration_yaml(again), {});
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::fail(std::string("a GPU model the reader accepted does not read back after writing: ") + e.what());
  }
  if (rewritten.str() != written.str())
    gputwin::fuzz::fail("write -> read -> write of a GPU model file changes it:\n" + written.str() + "---\n" +
                        rewritten.str());
  return 0;
}
