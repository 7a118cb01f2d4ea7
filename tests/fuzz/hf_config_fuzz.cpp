// HuggingFace config.json files (models/config/hf_config.hpp): load_hf_config either returns a model or throws
// InputError, and a model it returns passes validate_model (the rules every other way of naming a model checks).
#include "fuzz_support.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/config/hf_config.hpp"
#include "gputwin/models/gpt_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  const std::string path = gputwin::fuzz::input_file(gputwin::fuzz::as_text(data, size), "config.json");
  gputwin::config::HfModel hf;
  try {
    hf = gputwin::config::load_hf_config(path);
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::check_error_message(e);
    return 0;
  }
  ++gputwin::fuzz::accepted_inputs;
  try {
    gputwin::validate_model(hf.model);
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::fail(std::string("load_hf_config accepted a model that validate_model rejects: ") + e.what());
  }
  return 0;
}
