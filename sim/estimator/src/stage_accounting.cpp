#include "gputwin/sim/stage_accounting.hpp"

#include <algorithm>

namespace gputwin::sim {

void StageAccounting::op(const traces::Op& op, double start, double end)
{
  if (op.stream != main_compute_stream)
    return;
  const bool in_pipeline = op.phase != traces::Phase::Optimizer && op.micro_batch >= 0;
  if (op.kind == traces::OpKind::Compute) {
    times_.compute_s += end - start;
    if (in_pipeline)
      times_.pipeline_compute_s += end - start;
  } else if (op.is_communication()) {
    times_.exposed_comm_s += end - start;
    if (op.name.compare(0, 4, "moe.") == 0)
      times_.moe_exchange_s += end - start;
    if (record_spans_)
      times_.exposed_spans.push_back(ExposedSpan{start, end, op.id});
    if (in_pipeline && started_)
      times_.pipeline_comm_s += end - start;
  }
  if (in_pipeline) {
    if (!started_)
      times_.pipeline_start_s = start;
    started_ = true;
    times_.pipeline_end_s = end;
  }
}

void StageAccounting::wait(const traces::RankProgram& program, const traces::Op& op, double wait_start,
                           double start)
{
  if (op.stream != main_compute_stream || start <= wait_start)
    return;
  const auto collective = std::find_if(op.deps.begin(), op.deps.end(), [&](int64_t d) {
    return program.ops[static_cast<size_t>(d)].kind == traces::OpKind::Collective;
  });
  if (collective == op.deps.end())
    return;
  times_.exposed_comm_s += start - wait_start;
  if (program.ops[static_cast<size_t>(*collective)].name.compare(0, 4, "moe.") == 0)
    times_.moe_exchange_s += start - wait_start;
  if (record_spans_)
    times_.exposed_spans.push_back(ExposedSpan{wait_start, start, *collective});
  if (started_ && op.phase != traces::Phase::Optimizer)
    times_.pipeline_comm_s += start - wait_start;
}

} // namespace gputwin::sim
