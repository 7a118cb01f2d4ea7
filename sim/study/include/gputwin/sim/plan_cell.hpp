#pragma once
// A parallel plan in one cell of the search and sweep tables: "tp 8 cp 2 ep 8 etp 1 pp 4 dp 2 mb 1 interleaved v2
// selective sp zero1 fp8" -- cp only above 1, ep and etp only for a plan that sets them, then pipeline, data
// parallelism, micro-batch, schedule (with its chunks), recompute (recompute_label), sequence parallelism, ZeRO stage
// or FSDP, and a quantized GEMM precision.

#include "gputwin/models/parallel_plan.hpp"

#include <string>

namespace gputwin::sim {

std::string plan_cell(const ParallelPlan& plan);

} // namespace gputwin::sim
