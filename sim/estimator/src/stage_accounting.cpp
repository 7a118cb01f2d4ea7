#include "gputwin/sim/stage_accounting.hpp"

#include <algorithm>
#include <cstddef>
#include <stdexcept>

namespace gputwin::sim {

std::vector<int32_t> period_micro_batches(const traces::RankProgram& program)
{
  std::vector<int32_t> micro_batches(program.ops.size(), -1);
  int32_t last = -1;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    if (program.ops[i].micro_batch >= 0)
      last = program.ops[i].micro_batch;
    micro_batches[i] = last;
  }
  return micro_batches;
}

StageAccounting::StageAccounting(StageTimes& times, bool record_spans, const traces::RankProgram* shares_of)
    : times_(times), record_spans_(record_spans), program_(shares_of)
{
  if (program_)
    period_micro_batch_ = period_micro_batches(*program_);
}

MicroBatchShare* StageAccounting::share(const traces::Op& op)
{
  if (!program_)
    return nullptr;
  // `op` is an element of the program's ops (both executors account the ops of the programs they were given).
  const std::ptrdiff_t index = &op - program_->ops.data();
  if (index < 0 || static_cast<size_t>(index) >= period_micro_batch_.size())
    throw std::logic_error("StageAccounting: an op outside the program whose shares are recorded");
  const int32_t micro_batch = period_micro_batch_[static_cast<size_t>(index)];
  if (micro_batch < 0)
    return nullptr;
  const size_t i = static_cast<size_t>(micro_batch);
  if (times_.by_micro_batch.size() <= i)
    times_.by_micro_batch.resize(i + 1);
  return &times_.by_micro_batch[i];
}

void StageAccounting::add(double StageTimes::*figure, double MicroBatchShare::*part, MicroBatchShare* share,
                          double seconds)
{
  times_.*figure += seconds;
  if (share)
    share->*part += seconds;
}

void StageAccounting::op(const traces::Op& op, double start, double end)
{
  MicroBatchShare* share = this->share(op);
  if (share)
    ++share->ops;
  if (op.stream != main_compute_stream)
    return;
  const bool in_pipeline = op.phase != traces::Phase::Optimizer && op.micro_batch >= 0;
  if (op.kind == traces::OpKind::Compute) {
    add(&StageTimes::compute_s, &MicroBatchShare::compute_s, share, end - start);
    if (in_pipeline)
      add(&StageTimes::pipeline_compute_s, &MicroBatchShare::pipeline_compute_s, share, end - start);
  } else if (op.is_communication()) {
    add(&StageTimes::exposed_comm_s, &MicroBatchShare::exposed_comm_s, share, end - start);
    if (op.name.compare(0, 4, "moe.") == 0)
      add(&StageTimes::moe_exchange_s, &MicroBatchShare::moe_exchange_s, share, end - start);
    if (record_spans_)
      times_.exposed_spans.push_back(ExposedSpan{start, end, op.id});
    if (in_pipeline && started_)
      add(&StageTimes::pipeline_comm_s, &MicroBatchShare::pipeline_comm_s, share, end - start);
  }
  if (in_pipeline) {
    if (!started_)
      times_.pipeline_start_s = start;
    started_ = true;
    times_.pipeline_end_s = end;
    if (share)
      ++share->pipeline_ops;
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
  MicroBatchShare* share = this->share(op);
  add(&StageTimes::exposed_comm_s, &MicroBatchShare::exposed_comm_s, share, start - wait_start);
  if (program.ops[static_cast<size_t>(*collective)].name.compare(0, 4, "moe.") == 0)
    add(&StageTimes::moe_exchange_s, &MicroBatchShare::moe_exchange_s, share, start - wait_start);
  if (record_spans_)
    times_.exposed_spans.push_back(ExposedSpan{wait_start, start, *collective});
  if (started_ && op.phase != traces::Phase::Optimizer)
    add(&StageTimes::pipeline_comm_s, &MicroBatchShare::pipeline_comm_s, share, start - wait_start);
}

void StageAccounting::flows(const traces::Op& op, int64_t count)
{
  if (MicroBatchShare* share = this->share(op))
    share->flows += count;
}

} // namespace gputwin::sim
