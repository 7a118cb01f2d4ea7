// The sweep CSV reader of `gputwin sweep --merge` (sim/study sweep_csv.hpp): read_sweep_csv either reads one shard
// file -- its identity line `# gputwin sweep HASH shard K/N of P points: FLAGS`, the header, the rows with quoted
// cells over several lines -- or throws InputError (one line). What it reads, it must read back from what the sweep
// writes (the merge's promise: a merged file is the bytes of the unsharded run, model names with commas, quotes and
// line breaks included):
//   - the identity's line parses back to the same hash, shard, points and flags;
//   - the rows written by write_sweep_csv read back without an error, as many, in the same order, and written
//     again are the same bytes (write -> read -> write identical; the first write may normalise numbers: "1e3" is
//     written 1000, an mfu of more than 6 digits is rounded to %.6g as the sweep writes it);
//   - each row comes with FILE:LINE, lines increasing from 3 (after the identity and the header).
#include "fuzz_support.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/sweep_shard.hpp"
#include "gputwin/sim/sweep_csv.hpp"

#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

struct ReadCsv {
  gputwin::sim::SweepIdentity identity;
  std::vector<gputwin::sim::SweepRow> rows;
  std::vector<size_t> lines; // the line each row starts on
};

ReadCsv read(const std::string& text, const std::string& file)
{
  ReadCsv csv;
  std::istringstream in(text);
  csv.identity =
      gputwin::sim::read_sweep_csv(in, file, "", [&](const gputwin::sim::SweepRow& row, const std::string& where) {
        const std::string prefix = file + ":";
        if (where.rfind(prefix, 0) != 0)
          gputwin::fuzz::fail("a row's place '" + where + "' does not name the file " + file);
        const size_t line = std::stoul(where.substr(prefix.size()));
        if (line < 3 || (!csv.lines.empty() && line <= csv.lines.back()))
          gputwin::fuzz::fail("row lines not increasing from 3: " + where);
        csv.rows.push_back(row);
        csv.lines.push_back(line);
      });
  return csv;
}

std::string written(const ReadCsv& csv)
{
  std::ostringstream out;
  gputwin::sim::write_sweep_csv(out, csv.identity, csv.rows);
  return out.str();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  using gputwin::fuzz::fail;
  ReadCsv first;
  try {
    first = read(std::string(gputwin::fuzz::as_text(data, size)), "shard.csv");
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::check_error_message(e);
    return 0;
  }
  ++gputwin::fuzz::accepted_inputs;

  const gputwin::sim::SweepIdentity& id = first.identity;
  try {
    const gputwin::sim::SweepIdentity again = gputwin::sim::parse_sweep_identity(id.line(), "line");
    if (!again.same_sweep(id) || again.shard.index != id.shard.index || again.shard.count != id.shard.count)
      fail("the identity line does not parse back to the same identity: " + id.line());
  } catch (const gputwin::InputError& e) {
    fail(std::string("the identity line of an accepted file does not parse back: ") + e.what());
  }

  const std::string once = written(first);
  ReadCsv second;
  try {
    second = read(once, "written.csv");
  } catch (const gputwin::InputError& e) {
    fail(std::string("a CSV written from an accepted file does not read back: ") + e.what() + "\n" + once);
  }
  if (second.rows.size() != first.rows.size())
    fail("written and read back: " + std::to_string(second.rows.size()) + " rows, not " +
         std::to_string(first.rows.size()));
  for (size_t i = 0; i < first.rows.size(); ++i) {
    const gputwin::sim::SweepRow &a = first.rows[i], &b = second.rows[i];
    if (a.point != b.point || a.model != b.model || a.cluster != b.cluster || a.gpus != b.gpus)
      fail("row " + std::to_string(i) + " reads back as another point (model, cluster, GPUs or point differ)");
  }
  const std::string twice = written(second);
  if (twice != once)
    fail("write -> read -> write is not byte-identical:\n" + once + "---\n" + twice);
  return 0;
}
