#include "gputwin/common/byte_size.hpp"

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/common/input_error.hpp"

namespace gputwin::cli {

int64_t parse_byte_size(const std::string& flag, const std::string& text)
{
  const std::string expected = flag + ": expected a size in bytes such as 1048576, 512K, 64M or 8G, got '" + text + "'";
  if (text.empty())
    throw InputError(expected);
  int64_t multiplier = 1;
  std::string digits = text;
  switch (text.back()) {
  case 'K':
  case 'k': multiplier = int64_t{1} << 10; break;
  case 'M':
  case 'm': multiplier = int64_t{1} << 20; break;
  case 'G':
  case 'g': multiplier = int64_t{1} << 30; break;
  case 'T':
  case 't': multiplier = int64_t{1} << 40; break;
  default: break;
  }
  if (multiplier != 1)
    digits.pop_back();
  int64_t value = 0;
  try {
    value = parse_integer(flag, digits);
  } catch (const InputError&) {
    throw InputError(expected);
  }
  if (value <= 0)
    throw InputError(flag + ": expected a positive size, got '" + text + "'");
  if (value > (int64_t{1} << 50) / multiplier)
    throw InputError(flag + ": " + text + " is larger than the 1 PiB this tool accepts");
  return value * multiplier;
}

std::vector<int64_t> parse_size_sweep(const std::string& flag, const std::string& text)
{
  const size_t colon = text.find(':');
  if (colon == std::string::npos)
    throw InputError(flag + ": expected MIN:MAX[:FACTOR] such as 1M:8G, got '" + text + "'");
  const size_t colon2 = text.find(':', colon + 1);
  const int64_t min_bytes = parse_byte_size(flag, text.substr(0, colon));
  const int64_t max_bytes = parse_byte_size(
      flag, text.substr(colon + 1, colon2 == std::string::npos ? std::string::npos : colon2 - colon - 1));
  int64_t factor = 2;
  if (colon2 != std::string::npos) {
    factor = parse_integer(flag, text.substr(colon2 + 1));
    if (factor < 2)
      throw InputError(flag + ": expected a FACTOR of at least 2, got " + std::to_string(factor));
  }
  if (max_bytes < min_bytes)
    throw InputError(flag + ": MAX " + std::to_string(max_bytes) + " is smaller than MIN " + std::to_string(min_bytes));
  std::vector<int64_t> sizes;
  for (int64_t s = min_bytes;; s *= factor) {
    sizes.push_back(s);
    if (sizes.size() > 64)
      throw InputError(flag + ": more than 64 sizes (expected a larger FACTOR or a narrower range)");
    if (s > max_bytes / factor)
      break;
  }
  return sizes;
}

} // namespace gputwin::cli
