#pragma once
// PyTorch profiler (Kineto) Chrome traces: one ProfilerStep of one rank's trace as an op graph that replays
// "as measured" (traces/KINETO.md). Read: GPU activities (kernels, memcpys, memsets) with their stream,
// measured start and duration; the CUDA runtime calls that launched them (linked by the `correlation` arg,
// else by the flow events); the host's synchronising calls; NCCL kernels as collectives (name, element count,
// dtype, group size from their args where present); the `ProfilerStep#N` annotations. Everything else (CPU
// ops, Python events, other annotations, counters) is ignored.
//
// The op graph has one rank program (rank 0, whatever the trace's rank was): the step's GPU activities in
// launch order, each on its CUDA stream (stream ids kept), plus zero-length host markers on one extra stream
// (`host.sync` where the host waited for the GPU, `host.step_end` where the step ended). Collectives are on
// one group {0}: with one rank's file the peers' side of a collective is its own measured duration.
// Lives in the gputwin_kineto library (zlib), apart from the dependency-free trace format.

#include "gputwin/traces/op_graph.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gputwin::traces {

struct KinetoStep {
  std::string name;     // "ProfilerStep#552"
  int64_t number = 0;   // 552
  double start_us = 0;  // the annotation's ts, microseconds on the trace's clock
  double duration_us = 0;
};

// The host side of the step, one entry per op of the rank program (same index): what the replay's host
// issues, when, and where it waits. Issue times follow the measured CPU timeline of all host threads merged.
struct KinetoHostTimeline {
  std::vector<int64_t> issue_gap_ns; // host time before issuing op i: since the previous op's issue, or since
                                     // the end of the previous synchronising call, or since the step's start
  std::vector<bool> syncs;           // op i is a host.sync marker: the host waits for all issued work
  int64_t launch_latency_ns = 0;     // launch call to kernel start on an idle stream (median measured)
};

struct KinetoTrace {
  std::string source;
  std::vector<KinetoStep> steps; // every ProfilerStep of the file, in time order
  size_t selected = 0;           // the replayed step (index into steps)
  OpGraph graph;                 // the selected step; measured_iteration_s = {its duration}
  KinetoHostTimeline host;
  int32_t trace_rank = 0;        // distributedInfo.rank (0 when absent)
  int32_t world_size = 1;        // distributedInfo.world_size (1 when absent)
  int32_t host_stream = 0;       // the stream of the host markers
  int64_t kernels = 0, collectives = 0, memcpys = 0, host_syncs = 0;
  int64_t unlaunched = 0;        // GPU activities in the step's time range without a launch in the step
  int64_t backlog_streams = 0;   // streams still busy with earlier work at the step's start (gpu.backlog ops)

  double measured_step_s() const { return steps[selected].duration_us / 1e6; }
};

// True when `text` looks like a Chrome trace-event JSON object (has a "traceEvents" member near the start).
bool is_chrome_trace(std::string_view text);

// What a gzip'd trace may inflate to (1 GiB): the parsed events take several times the text, and a trace of a
// few profiler steps is far smaller; a stream that inflates past it (a gzip bomb) is refused.
constexpr int64_t max_inflated_trace_bytes = int64_t{1} << 30;

// The whole content of `path`, gunzipped when it starts with the gzip magic. Throws TraceError
// "PATH: cannot read ..." / "PATH: truncated or corrupt gzip stream (...)" / "PATH: the gzip stream inflates to
// more than ..." (past `max_inflated_bytes`: refused from the stream's size field when it says so, else as soon as
// the inflated text passes it, holding no more than that).
std::string read_trace_text(const std::string& path, int64_t max_inflated_bytes = max_inflated_trace_bytes);

// Parses a Kineto trace and builds the op graph of step `step` (the N of ProfilerStep#N; default: the step of
// median duration, the earlier one of two middle steps). Throws TraceError naming `source` and what is missing
// (no ProfilerStep, no GPU activity, kernels but no launches, an unknown --step).
KinetoTrace parse_kineto(std::string_view json_text, const std::string& source, std::optional<int64_t> step = {});
KinetoTrace read_kineto_file(const std::string& path, std::optional<int64_t> step = {});

} // namespace gputwin::traces
