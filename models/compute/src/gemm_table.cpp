#include "gputwin/models/gemm_table.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace gputwin {

namespace {

constexpr const char* header = "batch,m,n,k,flops_per_s";

// A positive integer field (a GEMM dimension or batch).
int64_t positive_integer(const std::string& where, const char* field, const std::string& text)
{
  int64_t value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || result.ec != std::errc() || result.ptr != text.data() + text.size() || value <= 0)
    throw InputError(where + ": " + field + ": expected a positive integer, got '" + text + "'");
  return value;
}

double positive_number(const std::string& where, const char* field, const std::string& text)
{
  double value = 0;
  std::istringstream in(text);
  in >> value;
  if (text.empty() || in.fail() || !in.eof() || !std::isfinite(value) || value <= 0)
    throw InputError(where + ": " + field + ": expected a finite number > 0, got '" + text + "'");
  return value;
}

// Index i of the grid cell [grid[i], grid[i+1]] holding x (clamped), and x's fraction in it along log2.
std::pair<size_t, double> cell(const std::vector<double>& grid, double x)
{
  if (grid.size() == 1)
    return {0, 0.0};
  const size_t upper = static_cast<size_t>(std::upper_bound(grid.begin(), grid.end(), x) - grid.begin());
  const size_t i = std::min(upper == 0 ? 0 : upper - 1, grid.size() - 2);
  const double t = (std::log2(x) - std::log2(grid[i])) / (std::log2(grid[i + 1]) - std::log2(grid[i]));
  return {i, std::clamp(t, 0.0, 1.0)};
}

} // namespace

GemmTable GemmTable::parse(std::istream& in, const std::string& source)
{
  GemmTable table;
  table.source_ = source;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, double> rows;
  std::string line_text;
  int line = 0;
  bool seen_header = false;
  while (std::getline(in, line_text)) {
    ++line;
    const std::string text = trim(line_text);
    if (text.empty() || text[0] == '#')
      continue;
    const std::string where = source + ":" + std::to_string(line);
    if (!seen_header) {
      if (text != header)
        throw InputError(where + ": expected the header '" + std::string(header) + "', got '" + text + "'");
      seen_header = true;
      continue;
    }
    std::vector<std::string> fields;
    std::stringstream row(text);
    for (std::string field; std::getline(row, field, ',');)
      fields.push_back(trim(field));
    if (text.back() == ',')
      fields.emplace_back();
    if (fields.size() != 5)
      throw InputError(where + ": expected 5 fields (" + header + "), got " + std::to_string(fields.size()));
    const auto key = std::make_tuple(positive_integer(where, "batch", fields[0]),
                                     positive_integer(where, "m", fields[1]), positive_integer(where, "n", fields[2]),
                                     positive_integer(where, "k", fields[3]));
    const double flops = positive_number(where, "flops_per_s", fields[4]);
    if (!rows.emplace(key, flops).second)
      throw InputError(where + ": batch " + fields[0] + ", m " + fields[1] + ", n " + fields[2] + ", k " +
                       fields[3] + ": duplicate row");
  }
  if (rows.empty())
    throw InputError(source + ": no rows (expected the header '" + std::string(header) + "' and rows)");

  std::set<int64_t> batches, ms, ns, ks;
  for (const auto& [key, flops] : rows) {
    batches.insert(std::get<0>(key));
    ms.insert(std::get<1>(key));
    ns.insert(std::get<2>(key));
    ks.insert(std::get<3>(key));
  }
  const auto as_doubles = [](const std::set<int64_t>& values) {
    return std::vector<double>(values.begin(), values.end());
  };
  table.batches_ = as_doubles(batches);
  table.ms_ = as_doubles(ms);
  table.ns_ = as_doubles(ns);
  table.ks_ = as_doubles(ks);
  for (const int64_t b : batches)
    for (const int64_t m : ms)
      for (const int64_t n : ns)
        for (const int64_t k : ks) {
          const auto it = rows.find({b, m, n, k});
          if (it == rows.end())
            throw InputError(source + ": no row for batch " + std::to_string(b) + ", m " + std::to_string(m) +
                             ", n " + std::to_string(n) + ", k " + std::to_string(k) +
                             " (every batch needs the full grid of the table's m, n and k values)");
          table.flops_per_s_.push_back(it->second);
          table.max_flops_per_s_ = std::max(table.max_flops_per_s_, it->second);
        }
  return table;
}

GemmTable GemmTable::load(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(path + ": cannot read the GEMM table");
  return parse(in, path);
}

GemmPoint GemmTable::edge(const traces::GemmShape& shape) const
{
  GemmPoint p{static_cast<double>(shape.m), static_cast<double>(shape.n), static_cast<double>(shape.k),
              static_cast<double>(std::max<int64_t>(shape.batch, 1))};
  if (p.batch > batches_.back()) { // b products as B products of m b / B rows
    p.m *= p.batch / batches_.back();
    p.batch = batches_.back();
  }
  p.batch = std::clamp(p.batch, batches_.front(), batches_.back());
  p.m = std::clamp(p.m, ms_.front(), ms_.back());
  p.n = std::clamp(p.n, ns_.front(), ns_.back());
  p.k = std::clamp(p.k, ks_.front(), ks_.back());
  return p;
}

double GemmTable::at(size_t b, size_t im, size_t in, size_t ik) const
{
  return flops_per_s_[((b * ms_.size() + im) * ns_.size() + in) * ks_.size() + ik];
}

double GemmTable::slice(size_t batch_index, const GemmPoint& p) const
{
  const auto [im, tm] = cell(ms_, p.m);
  const auto [in, tn] = cell(ns_, p.n);
  const auto [ik, tk] = cell(ks_, p.k);
  double sum = 0;
  for (int dm = 0; dm < 2; ++dm)
    for (int dn = 0; dn < 2; ++dn)
      for (int dk = 0; dk < 2; ++dk) {
        const double w = (dm ? tm : 1 - tm) * (dn ? tn : 1 - tn) * (dk ? tk : 1 - tk);
        if (w > 0)
          sum += w * at(batch_index, im + static_cast<size_t>(dm), in + static_cast<size_t>(dn),
                        ik + static_cast<size_t>(dk));
      }
  return sum;
}

double GemmTable::flops_per_s(const GemmPoint& p) const
{
  const auto [ib, tb] = cell(batches_, p.batch);
  const double lower = slice(ib, p);
  return tb > 0 ? (1 - tb) * lower + tb * slice(ib + 1, p) : lower;
}

std::string builtin_gemm_table_names()
{
  return "h100";
}

} // namespace gputwin
