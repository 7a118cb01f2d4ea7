// Megatron-LM launch lines (models/flags/megatron_args.hpp, launch_line.hpp): `--megatron-args FILE` through the
// real flag parser either gives a model and a plan or throws InputError; the expansion never holds anything the
// parser cannot read as flags (that would be a std::logic_error).
#include "fuzz_support.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/plan_flags.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  const std::string path = gputwin::fuzz::input_file(gputwin::fuzz::as_text(data, size), "launch.args");
  gputwin::cli::ArgParser parser("gputwin fuzz", "");
  gputwin::cli::add_model_flags(parser);
  gputwin::cli::add_plan_flags(parser);
  try {
    const gputwin::cli::ParsedArgs args = parser.parse({"--megatron-args", path});
    const gputwin::GptConfig model = gputwin::cli::read_model(args, {});
    gputwin::cli::read_plan(args, model);
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::check_error_message(e);
    return 0;
  }
  ++gputwin::fuzz::accepted_inputs;
  return 0;
}
