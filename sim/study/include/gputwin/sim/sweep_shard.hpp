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
#include <vector>

namespace gputwin::sim {

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

// The identity a sweep's CSV carries on its first line, so that --merge joins only the shards of one sweep:
//   # gputwin sweep HASH shard K/N of P points: FLAGS
// FLAGS are the flags that decide the sweep's points and their rows (not --csv, --jobs, --shard, ...), HASH is
// their 64-bit FNV-1a in hex, P the points of the whole sweep. A whole sweep, and a merge, are shard 1/1.
struct SweepIdentity {
  std::string hash;  // 16 hex digits
  std::string flags; // one line: line breaks written as \n
  size_t points = 0;
  Shard shard;

  // The comment line, without its line break.
  std::string line() const;
  // Same sweep: the same hash, flags and points (whatever the slice).
  bool same_sweep(const SweepIdentity& other) const;
};

// The identity of a sweep of `points` points decided by `flags`, for `shard`.
SweepIdentity sweep_identity(const std::string& flags, size_t points, const Shard& shard);

// Parses the first line of a sweep CSV; throws InputError "--merge: WHERE: ..." saying what was expected.
SweepIdentity parse_sweep_identity(const std::string& line, const std::string& where);

// Checks that `files` (one identity each, in the order given) are every shard of one sweep exactly once: throws
// InputError "--merge: FILE:1: ..." for a shard of another sweep or slicing, or given twice, and
// "--merge: shard K/N ... is missing" naming what was expected.
void check_one_sweep(const std::vector<std::pair<std::string, SweepIdentity>>& files);

} // namespace gputwin::sim
