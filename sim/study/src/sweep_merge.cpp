#include "gputwin/sim/sweep_merge.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/text.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <tuple>
#include <utility>

namespace gputwin::sim {

namespace {

// The identity lines (line 1) of sweep CSVs, checked to be every shard of one sweep once (check_one_sweep).
SweepIdentity read_sweep_identities(const std::vector<std::string>& files)
{
  std::vector<std::pair<std::string, SweepIdentity>> identities;
  for (const std::string& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
      throw InputError("--merge: cannot read '" + file + "': " + std::strerror(errno));
    identities.emplace_back(file, read_sweep_csv_identity(in, file));
  }
  check_one_sweep(identities);
  SweepIdentity whole = identities.front().second;
  whole.shard = Shard{};
  return whole;
}

// The rows of sweep CSVs, in point order, with the scaling efficiency recomputed over all of them. Throws
// InputError naming `file:line` when a file is not a sweep CSV, the headers differ, or two files hold the same
// point (shards overlap). The identity lines are read_sweep_identities'.
std::vector<SweepRow> read_sweep_csvs(const std::vector<std::string>& files)
{
  std::string first_file;
  std::vector<SweepRow> rows;
  std::map<size_t, std::string> where_point;
  std::map<std::tuple<std::string, std::string, int64_t>, std::string> where_key;
  std::string where_pattern;
  std::pair<bool, bool> pattern{};
  const auto add_row = [&](const SweepRow& r, const std::string& where) {
    const std::string name =
        sweep_point_name(printable_excerpt(r.model), r.gpus, printable_excerpt(r.cluster)); // one line
    if (const auto it = where_point.find(r.point); it != where_point.end())
      throw InputError("--merge: " + where + ": point " + std::to_string(r.point) + " (" + name + ") is also in " +
                       it->second + ": the files overlap (the shards of one sweep are disjoint)");
    if (const auto it = where_key.find({r.model, r.cluster, r.gpus}); it != where_key.end())
      throw InputError("--merge: " + where + ": " + name + " is also in " + it->second +
                       ": the files overlap (the shards of one sweep are disjoint)");
    where_point[r.point] = where;
    where_key[{r.model, r.cluster, r.gpus}] = where;
    const std::pair<bool, bool> have{std::isfinite(r.time_to_train_s), std::isfinite(r.cost)};
    if (where_pattern.empty()) {
      where_pattern = where;
      pattern = have;
    } else if (have != pattern) {
      throw InputError("--merge: " + where + ": time_to_train_s and cost are " + (have.first ? "given" : "empty") +
                       "/" + (have.second ? "given" : "empty") + " but " + (pattern.first ? "given" : "empty") + "/" +
                       (pattern.second ? "given" : "empty") + " in " + where_pattern +
                       " (shards of sweeps with different --tokens/--price-per-gpu-hour)");
    }
    rows.push_back(r);
  };
  for (const std::string& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
      throw InputError("--merge: cannot read '" + file + "': " + std::strerror(errno));
    read_sweep_csv(in, file, first_file, add_row);
    if (first_file.empty())
      first_file = file;
  }
  std::sort(rows.begin(), rows.end(), [](const SweepRow& a, const SweepRow& b) { return a.point < b.point; });
  if (!rows.empty())
    compute_scaling_efficiency(rows);
  return rows;
}

} // namespace

MergedSweep merge_sweep_csvs(const std::vector<std::string>& files)
{
  MergedSweep merged;
  merged.identity = read_sweep_identities(files);
  merged.rows = read_sweep_csvs(files);
  if (merged.rows.empty())
    throw InputError("--merge: the files hold no rows (no point of the sweep has a plan that fits)");
  return merged;
}

} // namespace gputwin::sim
