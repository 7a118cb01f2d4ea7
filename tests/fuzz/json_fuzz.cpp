// The dependency-free JSON parser under the trace and Kineto readers (traces/json_value.hpp): every input either
// parses or throws JsonParseError; a parsed value's numbers convert without surprises.
#include "fuzz_support.hpp"

#include "gputwin/traces/json_value.hpp"

#include <cmath>

namespace {

void walk(const gputwin::traces::JsonValue& v, int depth)
{
  using gputwin::traces::JsonValue;
  if (depth > 64)
    gputwin::fuzz::fail("parse_json returned a value nested deeper than its max_depth 64");
  if (v.type == JsonValue::Type::Number) {
    if (const auto d = v.as_double(); d && !std::isfinite(*d))
      gputwin::fuzz::fail("as_double returned a non-finite value for " + v.text);
    if (const auto i = v.as_int64(); i && v.as_double() && std::fabs(static_cast<double>(*i) - *v.as_double()) >
                                                                 1e-9 * std::fabs(*v.as_double()) + 1)
      gputwin::fuzz::fail("as_int64 and as_double disagree on " + v.text);
  }
  if (v.type == JsonValue::Type::Object) {
    if (v.keys.size() != v.items.size())
      gputwin::fuzz::fail("object with different numbers of keys and values");
    for (size_t i = 0; i < v.keys.size(); ++i)
      if (v.find(v.keys[i]) != &v.items[i])
        gputwin::fuzz::fail("find() does not return the member of its key (duplicate key accepted?)");
  }
  for (const JsonValue& item : v.items)
    walk(item, depth + 1);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  try {
    const gputwin::traces::JsonValue value = gputwin::traces::parse_json(gputwin::fuzz::as_text(data, size));
    walk(value, 1);
    ++gputwin::fuzz::accepted_inputs;
  } catch (const gputwin::traces::JsonParseError& e) {
    gputwin::fuzz::check_error_message(e);
  }
  return 0;
}
