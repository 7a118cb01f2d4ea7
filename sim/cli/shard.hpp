#pragma once
// Slices of a sweep for several machines: `--shard K/N` (K counted from 1) runs the points i with i mod N = K - 1,
// round-robin, so that the expensive points (a sweep's smallest GPU counts) spread over the slices. Without
// --shard, a Slurm job array gives the slice: SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN (over
// SLURM_ARRAY_TASK_STEP) is the 0-based slice and SLURM_ARRAY_TASK_COUNT the number of slices, so
// `--array=0-(N-1)` and `--array=1-N` both work.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace gputwin::cli {

struct Shard {
  size_t index = 0; // 0-based
  size_t count = 1;

  bool contains(size_t point) const { return point % count == index; }
  bool sliced() const { return count > 1; }
};

// "K/N" as the user writes it, K from 1.
std::string to_string(const Shard& shard);

// Parses --shard's "K/N" (1 <= K <= N <= 1000000). Throws InputError naming --shard.
Shard parse_shard(const std::string& text);

// The slice of a Slurm job array from its environment (`getenv` returns nullptr for an unset variable), or nullopt
// when SLURM_ARRAY_TASK_ID is unset. Throws InputError naming the variable when it does not describe one
// task of an evenly spaced array.
std::optional<Shard> shard_from_slurm(const std::function<const char*(const char*)>& getenv);

} // namespace gputwin::cli
