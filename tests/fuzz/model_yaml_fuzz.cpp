// Model files (models/config/model_yaml.hpp): load_model_yaml either returns a model or throws InputError, and a model
// it returns passes validate_model (the rules every other way of naming a model checks).
#include "fuzz_support.hpp"

#include "gputwin/config/model_yaml.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/common/input_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  const std::string path = gputwin::fuzz::input_file(gputwin::fuzz::as_text(data, size), "fuzz-model.yaml");
  gputwin::GptConfig model;
  try {
    model = gputwin::config::load_model_yaml(path);
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::check_error_message(e);
    return 0;
  }
  ++gputwin::fuzz::accepted_inputs;
  try {
    gputwin::validate_model(model);
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::fail(std::string("load_model_yaml accepted a model that validate_model rejects: ") + e.what());
  }
  return 0;
}
