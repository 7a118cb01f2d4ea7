// Framework profiles (models/config/framework_yaml.hpp): a .yaml file, or a model file's `framework:` section.
// load_framework_profile either returns a profile or throws InputError; a profile it returns writes and reads
// back to the same text.
#include "fuzz_support.hpp"

#include "gputwin/config/framework_yaml.hpp"
#include "gputwin/common/input_error.hpp"

#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  using namespace gputwin::config;
  const std::string path = gputwin::fuzz::input_file(gputwin::fuzz::as_text(data, size), "fuzz-framework.yaml");
  gputwin::FrameworkProfile profile;
  try {
    profile = load_framework_profile(path);
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::check_error_message(e);
    return 0;
  }
  ++gputwin::fuzz::accepted_inputs;
  std::ostringstream written;
  write_framework_profile(written, profile);
  const std::string again = gputwin::fuzz::input_file(written.str(), "rewritten-framework.yaml");
  std::ostringstream rewritten;
  try {
    write_framework_profile(rewritten, load_framework_profile(again));
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::fail(std::string("a profile the reader accepted does not read back after writing: ") + e.what());
  }
  if (rewritten.str() != written.str())
    gputwin::fuzz::fail("write -> read -> write of a framework profile changes it");
  return 0;
}
