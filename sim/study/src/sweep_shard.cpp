#include "gputwin/sim/sweep_shard.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/text.hpp"

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <map>

namespace gputwin::sim {

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

std::string SweepIdentity::line() const
{
  return "# gputwin sweep " + hash + " shard " + to_string(shard) + " of " + std::to_string(points) +
         " points: " + flags;
}

bool SweepIdentity::same_sweep(const SweepIdentity& other) const
{
  return hash == other.hash && flags == other.flags && points == other.points;
}

SweepIdentity sweep_identity(const std::string& flags, size_t points, const Shard& shard)
{
  SweepIdentity id;
  for (const char c : flags)
    id.flags += c == '\n' ? std::string("\\n") : c == '\r' ? std::string("\\r") : std::string(1, c);
  uint64_t hash = 14695981039346656037ull; // FNV-1a, 64 bits
  for (const char c : id.flags) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  id.hash = text;
  id.points = points;
  id.shard = shard;
  return id;
}

SweepIdentity parse_sweep_identity(const std::string& line, const std::string& where)
{
  const std::string prefix = "# gputwin sweep ";
  const auto bad = [&](const std::string& why) {
    const std::string shown = printable_excerpt(line); // on one line: control characters as '?'
    return InputError("--merge: " + where + ": " + why + " (expected the first line gputwin sweep --csv writes, '" +
                      prefix + "HASH shard K/N of P points: FLAGS', got '" + shown + "')");
  };
  if (line.rfind(prefix, 0) != 0)
    throw bad("not the identity line of a sweep CSV");
  // The flags' line breaks are written as \n and \r (sweep_identity): a CR left in the line (one before the CR LF
  // line end, found by the sweep_csv fuzz harness) is no sweep's, and would not be written back as read.
  if (line.find_first_of("\r\n") != std::string::npos)
    throw bad("a CR or line break in the line (a sweep writes its flags' as \\r, \\n)");
  SweepIdentity id;
  size_t at = prefix.size();
  const auto word = [&]() {
    const size_t end = std::min(line.find(' ', at), line.size());
    std::string w = line.substr(at, end - at);
    at = std::min(end + 1, line.size());
    return w;
  };
  id.hash = word();
  if (id.hash.size() != 16 || id.hash.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw bad("the hash '" + id.hash + "' is not 16 hex digits");
  const std::string shard_word = word(), shard_text = word(), of_word = word(), points_text = word();
  if (shard_word != "shard" || of_word != "of")
    throw bad("no 'shard K/N of P points'");
  try {
    id.shard = parse_shard(shard_text);
  } catch (const InputError&) {
    throw bad("the shard '" + shard_text + "' is not K/N");
  }
  const std::optional<int64_t> points = whole_integer(points_text, 0, INT64_MAX);
  if (!points || line.compare(at, 8, "points: ") != 0)
    throw bad("no 'of P points: '");
  id.points = static_cast<size_t>(*points);
  id.flags = line.substr(at + 8);
  return id;
}

void check_one_sweep(const std::vector<std::pair<std::string, SweepIdentity>>& files)
{
  if (files.empty())
    return;
  const auto& [first_file, first] = files.front();
  std::map<size_t, std::string> file_of_shard;
  for (const auto& [file, id] : files) {
    if (!id.same_sweep(first))
      throw InputError("--merge: " + file + ":1: a shard of another sweep than " + first_file + "'s (sweep " + id.hash +
                       " of " + std::to_string(id.points) + " points, '" + id.flags + "'; expected sweep " +
                       first.hash + " of " + std::to_string(first.points) + " points, '" + first.flags + "')");
    if (id.shard.count != first.shard.count)
      throw InputError("--merge: " + file + ":1: shard " + to_string(id.shard) + " but " + first_file + " is shard " +
                       to_string(first.shard) + " (expected the " + std::to_string(first.shard.count) +
                       " shards of one slicing)");
    const auto [it, inserted] = file_of_shard.emplace(id.shard.index, file);
    if (!inserted)
      throw InputError("--merge: " + file + ":1: shard " + to_string(id.shard) + " is also " + it->second +
                       " (expected each shard once)");
  }
  for (size_t k = 0; k < first.shard.count; ++k)
    if (file_of_shard.count(k) == 0) {
      std::string given;
      for (const auto& [index, file] : file_of_shard)
        given += (given.empty() ? "" : ", ") + to_string(Shard{index, first.shard.count});
      throw InputError("--merge: shard " + to_string(Shard{k, first.shard.count}) + " of sweep " + first.hash +
                       " is missing (expected " + std::to_string(first.shard.count) + " files, one per shard; got " +
                       given + ")");
    }
}

} // namespace gputwin::sim
