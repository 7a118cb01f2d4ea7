#include "gputwin/sim/plan_cell.hpp"

#include <cstdint>

namespace gputwin::sim {

std::string plan_cell(const ParallelPlan& p)
{
  std::string cell;
  const auto add = [&cell](const char* text, int64_t value) {
    cell += text;
    cell += std::to_string(value);
  };
  add("tp ", p.tp);
  if (p.cp > 1)
    add(" cp ", p.cp);
  if (p.ep > 1 || p.etp > 0) {
    add(" ep ", p.ep);
    add(" etp ", p.expert_tp());
  }
  add(" pp ", p.pp);
  add(" dp ", p.dp);
  add(" mb ", p.micro_batch);
  cell += ' ';
  cell += to_string(p.schedule);
  if (p.schedule == Schedule::Interleaved)
    add(" v", p.chunks);
  cell += ' ';
  cell += recompute_label(p);
  if (p.sequence_parallel())
    cell += " sp";
  if (p.fsdp)
    cell += " fsdp";
  else if (p.zero_stage > 0)
    add(" zero", p.zero_stage);
  if (p.quantized()) {
    cell += ' ';
    cell += to_string(p.precision);
  }
  return cell;
}

} // namespace gputwin::sim
