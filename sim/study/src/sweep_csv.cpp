#include "gputwin/sim/sweep_csv.hpp"

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/common/text.hpp"

#include <charconv>
#include <cstdio>
#include <istream>
#include <map>
#include <optional>
#include <ostream>

namespace gputwin::sim {

namespace {

// A text cell, quoted as RFC 4180 when it holds a comma, a quote or a line break (a model file's `name:`).
std::string csv_text(const std::string& text)
{
  if (text.find_first_of(",\"\r\n") == std::string::npos)
    return text;
  std::string quoted = "\"";
  for (const char c : text)
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// The cells of one CSV record (RFC 4180 quoting), or nullopt when a quote is not closed.
std::optional<std::vector<std::string>> csv_cells(const std::string& record)
{
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < record.size(); ++i) {
    const char c = record[i];
    if (quoted) {
      if (c == '"' && i + 1 < record.size() && record[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"' && cells.back().empty()) {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  if (quoted)
    return std::nullopt;
  return cells;
}

// Whether a record is inside a quoted cell at its end, as csv_cells reads it, scanned once as it grows line by
// line: rescanning the whole record after each line would be quadratic in a long unclosed quote.
class QuoteScan {
public:
  // Reads the characters of `record` not seen yet; true while a quoted cell is open at its end.
  bool open_after(const std::string& record)
  {
    for (; scanned_ < record.size(); ++scanned_) {
      const char c = record[scanned_];
      if (quoted_) {
        if (c == '"' && scanned_ + 1 < record.size() && record[scanned_ + 1] == '"') {
          ++scanned_; // an escaped quote: one '"' in the cell
          cell_empty_ = false;
        } else if (c == '"') {
          quoted_ = false;
        } else {
          cell_empty_ = false;
        }
      } else if (c == '"' && cell_empty_) {
        quoted_ = true;
      } else {
        cell_empty_ = c == ','; // a comma starts the next cell; anything else is part of this one
      }
    }
    return quoted_;
  }

private:
  size_t scanned_ = 0;
  bool quoted_ = false;
  bool cell_empty_ = true; // a quote opens a cell only at its start
};

// One row of a sweep CSV (`where` is its file:line for the messages).
SweepRow parse_csv_row(const std::string& record, const std::string& where, const std::vector<std::string>& columns)
{
  const std::optional<std::vector<std::string>> cells = csv_cells(record);
  if (!cells || cells->size() != columns.size())
    throw InputError("--merge: " + where + ": expected " + std::to_string(columns.size()) +
                     " comma-separated cells as in the header, got " +
                     (cells ? std::to_string(cells->size()) : std::string("an unclosed quote")));
  const auto cell = [&](size_t i) -> const std::string& { return (*cells)[i]; };
  const auto integer = [&](size_t i, int64_t low) {
    int64_t v = 0;
    const std::string& text = cell(i);
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || v < low)
      throw InputError("--merge: " + where + ": " + columns[i] + ": expected an integer of at least " +
                       std::to_string(low) + ", got '" + printable_excerpt(text) + "'");
    return v;
  };
  const auto number = [&](size_t i, bool may_be_empty) {
    const std::string& text = cell(i);
    if (text.empty() && may_be_empty)
      return static_cast<double>(NAN);
    double v = -1;
    try {
      v = cli::parse_number("--merge", text); // decimal only, as the CSV was written
    } catch (const InputError&) {
      v = -1;
    }
    if (v < 0)
      throw InputError("--merge: " + where + ": " + columns[i] + ": expected a non-negative number" +
                       (may_be_empty ? " or nothing" : "") + ", got '" + printable_excerpt(text) + "'");
    return v;
  };
  SweepRow r;
  r.cluster = cell(0);
  r.gpus = integer(1, 1);
  r.plan.tp = integer(2, 1);
  r.plan.pp = integer(3, 1);
  r.plan.dp = integer(4, 1);
  r.plan.micro_batch = integer(5, 1);
  r.iteration_time_s = number(6, false);
  r.tokens_per_s = number(7, false);
  r.mfu = number(8, false);
  r.time_to_train_s = number(9, true);
  r.gpu_hours = number(10, true);
  r.cost = number(11, true);
  r.model = cell(12);
  const std::optional<Schedule> schedule = parse_schedule(cell(13));
  if (!schedule)
    throw InputError("--merge: " + where + ": schedule: expected 1f1b|interleaved|gpipe, got '" +
                     printable_excerpt(cell(13)) + "'");
  r.plan.schedule = *schedule;
  r.plan.chunks = integer(14, 1);
  if (!parse_recompute_label(cell(15), r.plan))
    throw InputError("--merge: " + where + ": recompute: expected none|selective|full (selective:MODULE+MODULE...), "
                     "got '" + printable_excerpt(cell(15)) + "'");
  r.peak_memory_bytes = integer(16, 0);
  number(17, true); // scaling_efficiency: recomputed over every file by the merge
  r.point = static_cast<size_t>(integer(18, 0));
  const std::optional<AttentionKernel> attention = parse_attention(cell(19));
  if (!attention)
    throw InputError("--merge: " + where + ": attention: expected unfused|flash, got '" + printable_excerpt(cell(19)) +
                     "'");
  r.plan.attention = *attention;
  r.plan.cp = integer(20, 1);
  const auto flag = [&](size_t i) {
    const std::string& text = cell(i);
    if (text != "0" && text != "1")
      throw InputError("--merge: " + where + ": " + columns[i] + ": expected 0 or 1, got '" + printable_excerpt(text) +
                       "'");
    return text == "1";
  };
  if (const std::optional<GemmPrecision> block = parse_gemm_precision(cell(21));
      block && (*block == GemmPrecision::Mxfp8 || *block == GemmPrecision::Nvfp4)) {
    r.plan.precision = *block;
  } else if (cell(21) == "tensorwise") { // FP8 with current scaling (precision_csv_cell)
    r.plan.precision = GemmPrecision::Fp8;
    r.plan.fp8_recipe = Fp8Recipe::Tensorwise;
  } else if (flag(21))
    r.plan.precision = GemmPrecision::Fp8;
  r.options.tp_comm_overlap = flag(22);
  r.options.overlap_grad_reduce = flag(23);
  r.options.overlap_param_gather = flag(24);
  r.plan.ep = integer(25, 1);
  const int64_t expert_tp = integer(26, 1);
  r.plan.etp = expert_tp == r.plan.tp ? 0 : expert_tp; // 0: Megatron's default, the tensor parallelism
  if (flag(27))
    r.plan.tp_comm = TpComm::SequenceParallel;
  r.plan.zero_stage = static_cast<int>(integer(28, 0));
  if (r.plan.zero_stage > 3)
    throw InputError("--merge: " + where + ": zero: expected 0, 1, 2 or 3, got '" + printable_excerpt(cell(28)) + "'");
  if (r.cluster.empty() || r.model.empty())
    throw InputError("--merge: " + where + ": cluster and model must not be empty");
  if (r.tokens_per_s <= 0)
    throw InputError("--merge: " + where + ": tokens_per_s: expected a positive number, got '" +
                     printable_excerpt(cell(7)) + "'");
  return r;
}

// `line` without the CR of a CR LF line ending.
void drop_carriage_return(std::string& line)
{
  if (!line.empty() && line.back() == '\r')
    line.pop_back();
}

} // namespace

std::string sweep_point_name(const std::string& model, int64_t gpus, const std::string& cluster)
{
  return model + " on " + std::to_string(gpus) + " GPUs of " + cluster;
}

void compute_scaling_efficiency(std::vector<SweepRow>& rows)
{
  std::map<std::pair<std::string, std::string>, const SweepRow*> smallest;
  for (const SweepRow& r : rows) {
    const SweepRow*& s = smallest[{r.model, r.cluster}];
    if (s == nullptr || r.gpus < s->gpus)
      s = &r;
  }
  for (SweepRow& r : rows) {
    const SweepRow* s = smallest[{r.model, r.cluster}];
    r.scaling_efficiency =
        (r.tokens_per_s / static_cast<double>(r.gpus)) / (s->tokens_per_s / static_cast<double>(s->gpus));
  }
}

std::string precision_csv_cell(const ParallelPlan& plan)
{
  if (plan.current_scaling())
    return "tensorwise";
  return plan.precision == GemmPrecision::Bf16  ? "0"
         : plan.precision == GemmPrecision::Fp8 ? "1"
                                                : to_string(plan.precision);
}

const char* const sweep_csv_header =
    "cluster,gpus,tp,pp,dp,micro_batch,iteration_time_s,tokens_per_s,mfu,time_to_train_s,"
    "gpu_hours,cost,model,schedule,chunks,recompute,peak_memory_bytes,scaling_efficiency,point,attention,cp,fp8,"
    "tp_comm_overlap,overlap_grad_reduce,overlap_param_gather,ep,etp,sp,zero";

std::string csv_number(const char* format, double v)
{
  if (!std::isfinite(v))
    return "";
  char text[64];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

void write_sweep_csv(std::ostream& out, const SweepIdentity& identity, const std::vector<SweepRow>& rows)
{
  out << identity.line() << '\n' << sweep_csv_header << '\n';
  for (const SweepRow& r : rows) {
    const ParallelPlan& p = r.plan;
    out << csv_text(r.cluster) << ',' << r.gpus << ',' << p.tp << ',' << p.pp << ',' << p.dp << ',' << p.micro_batch
        << ',' << csv_number("%.17g", r.iteration_time_s) << ',' << csv_number("%.17g", r.tokens_per_s) << ','
        << csv_number("%.6g", r.mfu) << ',' << csv_number("%.17g", r.time_to_train_s) << ','
        << csv_number("%.17g", r.gpu_hours) << ',' << csv_number("%.17g", r.cost) << ',' << csv_text(r.model) << ','
        << to_string(p.schedule) << ',' << p.chunks << ',' << recompute_label(p) << ',' << r.peak_memory_bytes
        << ',' << csv_number("%.6g", r.scaling_efficiency) << ',' << r.point << ',' << to_string(p.attention) << ','
        << p.cp << ',' << precision_csv_cell(p) << ',' << (r.options.tp_comm_overlap ? 1 : 0) << ','
        << (r.options.overlap_grad_reduce ? 1 : 0) << ',' << (r.options.overlap_param_gather ? 1 : 0) << ','
        << p.ep << ',' << p.expert_tp() << ',' << (p.sequence_parallel() ? 1 : 0) << ',' << p.zero_stage << '\n';
  }
}

SweepIdentity read_sweep_csv_identity(std::istream& in, const std::string& file)
{
  std::string line;
  if (!std::getline(in, line))
    throw InputError("--merge: " + file + ": empty, expected a CSV written by gputwin sweep --csv");
  drop_carriage_return(line);
  return parse_sweep_identity(line, file + ":1");
}

SweepIdentity read_sweep_csv(std::istream& in, const std::string& file, const std::string& first_file,
                             const std::function<void(const SweepRow& row, const std::string& where)>& row)
{
  const SweepIdentity identity = read_sweep_csv_identity(in, file);
  std::string header;
  if (!std::getline(in, header))
    throw InputError("--merge: " + file + ":2: missing, expected the header of a CSV written by gputwin sweep --csv");
  drop_carriage_return(header);
  if (header != sweep_csv_header) {
    // In a merge the first file's header is this gputwin's (the merge stops at a first file without it).
    if (!first_file.empty())
      throw InputError("--merge: " + file + ":2: the header differs from " + first_file +
                       "'s (files of different commands or gputwin versions cannot be merged)");
    throw InputError("--merge: " + file +
                     ":2: not the header of a CSV written by this gputwin sweep --csv (expected '" + sweep_csv_header +
                     "')");
  }
  const std::vector<std::string> columns = *csv_cells(sweep_csv_header);
  size_t line_number = 2;
  for (std::string record; std::getline(in, record);) {
    const std::string where = file + ":" + std::to_string(++line_number);
    // A quoted cell with a line break (a model file's `name:`, quoted by csv_text) goes on over the next lines, its
    // CRs included: only the CR of a CR LF record end is dropped (RFC 4180), so that a name holding CR LF reads back.
    QuoteScan quotes;
    for (std::string more; quotes.open_after(record) && std::getline(in, more); ++line_number)
      record += "\n" + more;
    drop_carriage_return(record);
    if (record.empty())
      continue;
    row(parse_csv_row(record, where, columns), where);
  }
  return identity;
}

} // namespace gputwin::sim
