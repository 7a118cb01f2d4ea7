#pragma once
// Reading the JSON reports of the CLI in tests: a member that must exist, a number, and the report of a run that
// must succeed.

#include "run_cli.hpp"

#include "gputwin/traces/json_value.hpp"

#include <stdexcept>
#include <string>

namespace gputwin::testing {

// The member `key` of `object`; throws (failing the test) when it is missing.
inline const traces::JsonValue& member(const traces::JsonValue& object, const std::string& key)
{
  const traces::JsonValue* value = object.find(key);
  if (value == nullptr)
    throw std::runtime_error("no member '" + key + "'");
  return *value;
}

// The member `key` as a number, -1 when it is not one.
inline double number(const traces::JsonValue& object, const std::string& key)
{
  return member(object, key).as_double().value_or(-1);
}

#ifdef GPUTWIN_CLI
// The JSON report `gputwin <arguments>` (with --json) prints; the run must exit 0.
inline traces::JsonValue cli_json_report(const std::string& arguments)
{
  const CliResult result = run_gputwin(arguments, false);
  EXPECT_EQ(result.exit_code, 0) << arguments;
  return traces::parse_json(result.output);
}
#endif

} // namespace gputwin::testing
