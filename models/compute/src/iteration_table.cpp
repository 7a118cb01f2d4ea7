#include "gputwin/models/iteration_table.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/text.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

namespace gputwin {

namespace {

enum class ColumnKind { Flag, NumberFlag, TimeSeconds, TimeMilliseconds, Gpus, Precision, VirtualStages, GradAccum };

struct ColumnRule {
  const char* name;
  ColumnKind kind;
  const char* flag; // the plan flag the column sets (Flag, NumberFlag, Precision, VirtualStages)
};

// gputwin's own names, vTrain's (ground_truth_single.csv) and NVIDIA dgxc-benchmarking's (step_times.csv).
constexpr ColumnRule rules[] = {
    {"iteration_time_s", ColumnKind::TimeSeconds, ""},
    {"step_time_s", ColumnKind::TimeSeconds, ""},
    {"iteration_time_ms", ColumnKind::TimeMilliseconds, ""},
    {"iteration time (ms)", ColumnKind::TimeMilliseconds, ""},
    {"gpus", ColumnKind::Gpus, ""},
    {"# gpus", ColumnKind::Gpus, ""},
    {"model", ColumnKind::Flag, "--model"},
    {"hidden", ColumnKind::NumberFlag, "--hidden"},
    {"hidden size", ColumnKind::NumberFlag, "--hidden"},
    {"heads", ColumnKind::NumberFlag, "--heads"},
    {"attention heads", ColumnKind::NumberFlag, "--heads"},
    {"layers", ColumnKind::NumberFlag, "--layers"},
    {"# layers", ColumnKind::NumberFlag, "--layers"},
    {"seq_len", ColumnKind::NumberFlag, "--seq-len"},
    {"sequence length", ColumnKind::NumberFlag, "--seq-len"},
    {"vocab", ColumnKind::NumberFlag, "--vocab"},
    {"tp", ColumnKind::NumberFlag, "--tp"},
    {"tensor parallelism", ColumnKind::NumberFlag, "--tp"},
    {"pp", ColumnKind::NumberFlag, "--pp"},
    {"pipeline parallelism", ColumnKind::NumberFlag, "--pp"},
    {"dp", ColumnKind::NumberFlag, "--dp"},
    {"data parallelism", ColumnKind::NumberFlag, "--dp"},
    {"micro_batch", ColumnKind::NumberFlag, "--micro-batch"},
    {"micro batch", ColumnKind::NumberFlag, "--micro-batch"},
    {"global_batch", ColumnKind::NumberFlag, "--global-batch"},
    {"global batch", ColumnKind::NumberFlag, "--global-batch"},
    {"sp", ColumnKind::Flag, "--sp"},
    {"recompute", ColumnKind::Flag, "--recompute"},
    {"attention", ColumnKind::Flag, "--attention"},
    {"schedule", ColumnKind::Flag, "--schedule"},
    {"chunks", ColumnKind::NumberFlag, "--chunks"},
    {"zero", ColumnKind::NumberFlag, "--zero"},
    {"cp", ColumnKind::NumberFlag, "--cp"},
    {"precision", ColumnKind::Precision, "--fp8"},
    {"vp", ColumnKind::VirtualStages, "--chunks"},
    {"grad_accum", ColumnKind::GradAccum, ""},
};

std::string lower(std::string text)
{
  for (char& c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Fields of one CSV line (no quoting: the tables hold names and numbers only), with their 1-based columns.
std::vector<std::pair<std::string, int>> split(const std::string& line)
{
  std::vector<std::pair<std::string, int>> fields;
  size_t begin = 0;
  for (;;) {
    const size_t comma = line.find(',', begin);
    fields.emplace_back(trim(line.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin)),
                        static_cast<int>(begin) + 1);
    if (comma == std::string::npos)
      break;
    begin = comma + 1;
  }
  return fields;
}

// Two columns that would give the same value twice.
bool same_quantity(const ColumnRule& a, const ColumnRule& b)
{
  const auto is_flag = [](const ColumnRule& r) { return *r.flag != '\0'; };
  const auto is_time = [](const ColumnRule& r) {
    return r.kind == ColumnKind::TimeSeconds || r.kind == ColumnKind::TimeMilliseconds;
  };
  if (is_flag(a) || is_flag(b))
    return is_flag(a) && is_flag(b) && std::string(a.flag) == b.flag;
  if (is_time(a) || is_time(b))
    return is_time(a) && is_time(b);
  return a.kind == b.kind;
}

std::optional<double> number(const std::string& text)
{
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

// The header's columns into `table` and `columns`. Throws InputError naming the file, line and column.
void read_header(const std::string& path, int line_number, const std::vector<std::pair<std::string, int>>& fields,
                 IterationTable& table, std::vector<const ColumnRule*>& columns)
{
  bool has_time = false;
  for (const auto& [raw, column] : fields) {
    std::string name = lower(raw);
    if (name.rfind('#', 0) == 0 && name != "# gpus" && name != "# layers")
      name = trim(name.substr(1));
    const auto rule =
        std::find_if(std::begin(rules), std::end(rules), [&](const ColumnRule& r) { return name == r.name; });
    if (rule == std::end(rules))
      throw InputError(path + ":" + std::to_string(line_number) + ":" + std::to_string(column) +
                       ": unknown column '" + raw +
                       "' (expected iteration_time_s|iteration_time_ms|step_time_s, model and plan flag names "
                       "such as hidden, layers, tp, pp, dp, cp, micro_batch, global_batch, precision, vp, "
                       "grad_accum, or vTrain's column names)");
    for (size_t c = 0; c < columns.size(); ++c)
      if (same_quantity(*columns[c], *rule))
        throw InputError(path + ":" + std::to_string(line_number) + ":" + std::to_string(column) + ": column '" +
                         raw + "' repeats column " + std::to_string(c + 1) + " ('" + table.columns[c] + "')");
    has_time = has_time || rule->kind == ColumnKind::TimeSeconds || rule->kind == ColumnKind::TimeMilliseconds;
    columns.push_back(&*rule);
    table.columns.push_back(raw);
  }
  if (!has_time)
    throw InputError(path + ":" + std::to_string(line_number) +
                     ": no iteration time column (expected iteration_time_s, iteration_time_ms, step_time_s "
                     "or 'iteration time (ms)')");
}

// Field `text` of a row under `rule` into `row`; `where` prefixes an error.
void read_field(const ColumnRule& rule, const std::string& text, int column, const std::string& where,
                MeasuredIteration& row)
{
  if (text.empty())
    throw InputError(where + "empty field");
  if (rule.kind == ColumnKind::Flag) {
    row.flags[rule.flag] = text;
    return;
  }
  if (rule.kind == ColumnKind::Precision) {
    const std::string precision = lower(text);
    if (precision != "bf16" && precision != "fp8")
      throw InputError(where + "expected bf16 or fp8, got '" + text + "'");
    row.flags[rule.flag] = precision == "fp8" ? "true" : "false";
    return;
  }
  const std::optional<double> value = number(text);
  if (!value)
    throw InputError(where + "expected a number, got '" + text + "'");
  switch (rule.kind) {
  case ColumnKind::TimeSeconds:
  case ColumnKind::TimeMilliseconds:
    row.iteration_time_s = rule.kind == ColumnKind::TimeSeconds ? *value : *value * 1e-3;
    if (!(row.iteration_time_s > 0)) // also a positive time in ms that underflows to 0 s
      throw InputError(where + "expected a time > 0, got '" + text + "'");
    break;
  case ColumnKind::Gpus:
  case ColumnKind::VirtualStages:
  case ColumnKind::GradAccum:
    // 2^53: above it the cast to int64 would be undefined (or the count inexact); no table has that many.
    if (*value < 1 || *value != std::floor(*value) || *value > 9007199254740992.0)
      throw InputError(where + "expected a positive integer, got '" + text + "'");
    if (rule.kind == ColumnKind::Gpus) {
      row.gpus = static_cast<int64_t>(*value);
    } else if (rule.kind == ColumnKind::GradAccum) {
      row.grad_accum = static_cast<int64_t>(*value);
      row.grad_accum_column = column;
    } else if (*value > 1) { // virtual pipeline stages: Megatron's interleaved schedule with vp model chunks
      row.flags["--schedule"] = "interleaved";
      row.flags[rule.flag] = text;
    }
    break;
  default:
    if (*value != std::floor(*value))
      throw InputError(where + "expected an integer, got '" + text + "'");
    row.flags[rule.flag] = text;
  }
}

// One data row. `where_line` names the row in errors ("12", or "byte 4096" for a sampled row).
MeasuredIteration read_row(const std::string& path, const std::string& where_line, int line_number,
                           const std::vector<std::pair<std::string, int>>& fields, const IterationTable& table,
                           const std::vector<const ColumnRule*>& columns)
{
  if (fields.size() != columns.size())
    throw InputError(path + ":" + where_line + ": expected " + std::to_string(columns.size()) +
                     " fields as in the header, got " + std::to_string(fields.size()));
  MeasuredIteration row;
  row.line = line_number;
  for (size_t c = 0; c < columns.size(); ++c) {
    const auto& [text, column] = fields[c];
    read_field(*columns[c], text, column,
               path + ":" + where_line + ":" + std::to_string(column) + ": " + table.columns[c] + ": ", row);
  }
  return row;
}

// The next line of `in` without its CR; false at the end. The first line loses a UTF-8 byte-order mark.
bool next_line(std::istream& in, std::string& line, int& line_number)
{
  if (!std::getline(in, line))
    return false;
  ++line_number;
  if (!line.empty() && line.back() == '\r')
    line.pop_back();
  if (line_number == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0)
    line.erase(0, 3);
  return true;
}

} // namespace

IterationTable read_iteration_table(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(path + ": cannot read the iteration table");
  IterationTable table;
  table.path = path;
  std::vector<const ColumnRule*> columns;
  std::string line;
  int line_number = 0;
  bool header_seen = false;
  while (next_line(in, line, line_number)) {
    if (trim(line).empty())
      continue;
    const auto fields = split(line);
    if (!header_seen) {
      header_seen = true;
      read_header(path, line_number, fields, table, columns);
      continue;
    }
    table.rows.push_back(read_row(path, std::to_string(line_number), line_number, fields, table, columns));
  }
  if (!header_seen)
    throw InputError(path + ": empty file (expected a header row and measured iterations)");
  if (table.rows.empty())
    throw InputError(path + ":" + std::to_string(line_number) + ": no data rows after the header");
  return table;
}

IterationTableSample sample_iteration_table(const std::string& path, int samples)
{
  constexpr size_t kMaxSampledLineBytes = size_t{1} << 16;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(path + ": cannot read the iteration table");
  IterationTableSample sample;
  sample.table.path = path;
  std::vector<const ColumnRule*> columns;
  std::string line;
  int line_number = 0;
  while (next_line(in, line, line_number)) // the header: the first line that is not blank
    if (!trim(line).empty())
      break;
  if (trim(line).empty())
    throw InputError(path + ": empty file (expected a header row and measured iterations)");
  read_header(path, line_number, split(line), sample.table, columns);
  const std::streamoff data_begin = in.tellg();
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (data_begin < 0 || size <= data_begin)
    return sample; // no rows: the whole reading says so
  // The first complete row after each of `samples` offsets spread over the data (a row at the offset itself when it
  // starts a line), and the bytes each takes with its line break.
  double sampled_bytes = 0;
  for (int k = 0; k < samples; ++k) {
    const std::streamoff offset = data_begin + (size - data_begin) * k / samples;
    in.clear();
    in.seekg(offset > data_begin ? offset - 1 : offset);
    if (offset > data_begin) { // the rest of the line the offset falls in, not stored
      in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
      if (!in)
        continue;
    }
    int past_first = 1; // (not the file's first line: no byte-order mark to strip)
    std::streamoff begin = in.tellg();
    bool found = false; // a non-blank line starts at `begin`
    while (begin >= 0 && !found && next_line(in, line, past_first))
      if (trim(line).empty())
        begin = in.tellg();
      else
        found = true;
    if (!found) // the offset fell in the last line, or only blank lines follow it
      continue;
    if (line.size() > kMaxSampledLineBytes) // no table's row: the whole reading names what is wrong with it
      return IterationTableSample{sample.table, 0};
    const std::streamoff end = in.tellg() < 0 ? size : static_cast<std::streamoff>(in.tellg());
    sample.table.rows.push_back(read_row(path, "byte " + std::to_string(begin), 0, split(line), sample.table, columns));
    sampled_bytes += static_cast<double>(end - begin); // with its line break, CR included
  }
  if (!sample.table.rows.empty())
    sample.estimated_rows = static_cast<int64_t>(std::llround(
        static_cast<double>(size - data_begin) / (sampled_bytes / static_cast<double>(sample.table.rows.size()))));
  return sample;
}

} // namespace gputwin
