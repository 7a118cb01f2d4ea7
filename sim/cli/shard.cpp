#include "shard.hpp"

#include "gputwin/common/input_error.hpp"

#include <charconv>
#include <cstdint>

namespace gputwin::cli {

namespace {

constexpr int64_t max_shards = 1000000;

// The whole of `text` as a decimal integer in [low, high], or nullopt.
std::optional<int64_t> whole_integer(const std::string& text, int64_t low, int64_t high)
{
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < low || value > high)
    return std::nullopt;
  return value;
}

} // namespace

std::string to_string(const Shard& shard)
{
  return std::to_string(shard.index + 1) + "/" + std::to_string(shard.count);
}

Shard parse_shard(const std::string& text)
{
  const std::string expected = "--shard: expected K/N, the K-th of N slices of the sweep counted from 1 "
                               "(1/3, 2/3, 3/3), got '" +
                               text + "'";
  const size_t slash = text.find('/');
  if (slash == std::string::npos)
    throw InputError(expected);
  const std::optional<int64_t> k = whole_integer(text.substr(0, slash), 0, max_shards);
  const std::optional<int64_t> n = whole_integer(text.substr(slash + 1), 0, max_shards);
  if (!k || !n)
    throw InputError(expected);
  if (*n < 1)
    throw InputError("--shard: N must be at least 1 (slices of the sweep), got '" + text + "'");
  if (*k < 1 || *k > *n)
    throw InputError("--shard: K must be between 1 and N (slices are counted from 1: 1/" + std::to_string(*n) +
                     " ... " + std::to_string(*n) + "/" + std::to_string(*n) + "), got '" + text + "'");
  return Shard{static_cast<size_t>(*k - 1), static_cast<size_t>(*n)};
}

std::optional<Shard> shard_from_slurm(const std::function<const char*(const char*)>& getenv)
{
  const char* id_text = getenv("SLURM_ARRAY_TASK_ID");
  if (id_text == nullptr)
    return std::nullopt;
  const auto variable = [&](const char* name, int64_t low, std::optional<int64_t> fallback) -> int64_t {
    const char* text = getenv(name);
    if (text == nullptr) {
      if (fallback)
        return *fallback;
      throw InputError(std::string(name) + ": not set, but SLURM_ARRAY_TASK_ID is (" + id_text +
                       "): expected a Slurm job array, or give --shard K/N");
    }
    const std::optional<int64_t> value = whole_integer(text, low, INT32_MAX);
    if (!value)
      throw InputError(std::string(name) + ": expected an integer of at least " + std::to_string(low) + ", got '" +
                       text + "'");
    return *value;
  };
  const int64_t id = variable("SLURM_ARRAY_TASK_ID", 0, std::nullopt);
  const int64_t count = variable("SLURM_ARRAY_TASK_COUNT", 1, std::nullopt);
  const int64_t min = variable("SLURM_ARRAY_TASK_MIN", 0, int64_t{0});
  const int64_t step = variable("SLURM_ARRAY_TASK_STEP", 1, int64_t{1});
  if (count > max_shards)
    throw InputError("SLURM_ARRAY_TASK_COUNT: expected at most " + std::to_string(max_shards) + " tasks, got " +
                     std::to_string(count));
  if (const char* max_text = getenv("SLURM_ARRAY_TASK_MAX")) {
    const std::optional<int64_t> max = whole_integer(max_text, 0, INT32_MAX);
    if (!max || *max < min || (*max - min) % step != 0 || (*max - min) / step + 1 != count)
      throw InputError("SLURM_ARRAY_TASK_COUNT: " + std::to_string(count) +
                       " tasks do not make an evenly spaced array from " + "SLURM_ARRAY_TASK_MIN " +
                       std::to_string(min) + " to SLURM_ARRAY_TASK_MAX " + max_text + " in steps of " +
                       std::to_string(step) + " (use --array=1-N or --array=0-(N-1), or --shard K/N)");
  }
  const int64_t offset = id - min;
  if (offset < 0 || offset % step != 0 || offset / step >= count)
    throw InputError("SLURM_ARRAY_TASK_ID: " + std::to_string(id) + " is not one of the " + std::to_string(count) +
                     " tasks from SLURM_ARRAY_TASK_MIN " + std::to_string(min) + " in steps of " +
                     std::to_string(step) + " (use --array=1-N or --array=0-(N-1), or --shard K/N)");
  return Shard{static_cast<size_t>(offset / step), static_cast<size_t>(count)};
}

} // namespace gputwin::cli
