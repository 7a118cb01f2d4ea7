// Measured GEMM tables (models/gemm_table.hpp, CSV): GemmTable::parse either returns a table or throws InputError.
// A table it returns interpolates to finite, positive FLOP/s no higher than its maximum, anywhere (edge() then
// flops_per_s(), as the GPU compute model uses it), and reproduces its own grid points.
#include "fuzz_support.hpp"

#include "gputwin/models/gemm_table.hpp"
#include "gputwin/common/input_error.hpp"

#include <cmath>
#include <sstream>

namespace {

void check(const gputwin::GemmTable& table, const gputwin::traces::GemmShape& shape)
{
  const double f = table.flops_per_s(table.edge(shape));
  if (!std::isfinite(f) || !(f > 0) || f > table.max_flops_per_s() * (1 + 1e-9))
    gputwin::fuzz::fail("GEMM table interpolation out of range: " + std::to_string(f) + " FLOP/s at m " +
                        std::to_string(shape.m) + " n " + std::to_string(shape.n) + " k " + std::to_string(shape.k) +
                        " batch " + std::to_string(shape.batch) + " (max " +
                        std::to_string(table.max_flops_per_s()) + ")");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  std::istringstream in{std::string(gputwin::fuzz::as_text(data, size))};
  std::optional<gputwin::GemmTable> table;
  try {
    table = gputwin::GemmTable::parse(in, "fuzz.csv");
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::check_error_message(e);
    return 0;
  }
  ++gputwin::fuzz::accepted_inputs;
  for (const int64_t v : {int64_t{1}, int64_t{3}, int64_t{1000}, int64_t{1} << 20, int64_t{1} << 40})
    check(*table, {v, v + 1, 2 * v + 1, v});
  // Grid corners and points between them (only a few: a fuzzed grid can be large).
  const auto& b = table->batches();
  const auto& m = table->ms();
  const auto& n = table->ns();
  const auto& k = table->ks();
  for (size_t i = 0; i < 4; ++i) {
    auto pick = [i](const std::vector<double>& axis) { return axis[i * (axis.size() - 1) / 3]; };
    const gputwin::GemmPoint p{pick(m), pick(n), pick(k), pick(b)};
    const double f = table->flops_per_s(p);
    if (!std::isfinite(f) || !(f > 0) || f > table->max_flops_per_s() * (1 + 1e-9))
      gputwin::fuzz::fail("GEMM table value out of range at a grid point: " + std::to_string(f));
    const gputwin::GemmPoint mid{(pick(m) + m.back()) / 2, (pick(n) + n.front()) / 2, (pick(k) + k.back()) / 2,
                                 (pick(b) + b.back()) / 2};
    const double g = table->flops_per_s(mid);
    if (!std::isfinite(g) || !(g > 0) || g > table->max_flops_per_s() * (1 + 1e-9))
      gputwin::fuzz::fail("GEMM table interpolation out of range between grid points: " + std::to_string(g));
  }
  return 0;
}
