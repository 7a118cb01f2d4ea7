// PyTorch profiler (Kineto) Chrome traces -> one ProfilerStep as an op graph (traces/KINETO.md).
#include "gputwin/traces/kineto.hpp"

#include "gputwin/traces/json_value.hpp"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>

namespace gputwin::traces {

namespace {

std::string lower(std::string_view text)
{
  std::string out(text);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// A pid or tid: numbers and strings both occur ("Spans").
std::string id_text(const JsonValue* v)
{
  if (v == nullptr)
    return "";
  return (v->type == JsonValue::Type::String ? "s" : "n") + v->text;
}

std::optional<double> number(const JsonValue& event, std::string_view key)
{
  const JsonValue* v = event.find(key);
  return v ? v->as_double() : std::nullopt;
}

std::optional<int64_t> integer(const JsonValue* object, std::string_view key)
{
  const JsonValue* v = object ? object->find(key) : nullptr;
  if (v == nullptr)
    return std::nullopt;
  if (const auto i = v->as_int64())
    return i;
  if (const auto d = v->as_double(); d && std::floor(*d) == *d && std::fabs(*d) < 9e18)
    return static_cast<int64_t>(*d);
  return std::nullopt;
}

std::string string_arg(const JsonValue* args, std::string_view key)
{
  const JsonValue* v = args ? args->find(key) : nullptr;
  return v && v->type == JsonValue::Type::String ? v->text : "";
}

enum class GpuKind { Kernel, Memcpy, Memset };

struct GpuActivity {
  GpuKind kind = GpuKind::Kernel;
  std::string name;
  double ts = 0, dur = 0;
  int64_t device = 0;
  int64_t stream = 0;
  std::optional<int64_t> correlation;
  std::string pid, tid;
  const JsonValue* args = nullptr;
  size_t launch = SIZE_MAX; // index into runtime calls
};

struct RuntimeCall {
  std::string name;
  double ts = 0, dur = 0;
  std::string tid;
  std::optional<int64_t> correlation;
};

// Host calls that block until GPU work is done (the replay's host waits for everything issued).
bool is_synchronising(const std::string& name)
{
  static const std::set<std::string> names = {
      "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
      "cudaMemcpy2D",          "cudaMemcpyToSymbol",    "cudaMemcpyFromSymbol", "cuCtxSynchronize",
      "cuStreamSynchronize",   "cuEventSynchronize",    "cuMemcpyDtoH_v2",      "cuMemcpyHtoD_v2"};
  return names.count(name) != 0;
}

bool is_nccl_kernel(std::string_view name)
{
  return starts_with(name, "ncclKernel") || starts_with(name, "ncclDevKernel") || starts_with(name, "void ncclKernel") ||
         starts_with(name, "void ncclDevKernel");
}

// The collective of an NCCL kernel: the "Collective name" arg where present, else the kernel's name
// (ncclKernel_AllReduce_RING_LL_Sum_float, ncclDevKernel_SendRecv(...)). Reduce is replayed as all-reduce.
CollectiveOp nccl_collective(const GpuActivity& a)
{
  std::string key = lower(string_arg(a.args, "Collective name"));
  if (key.empty()) {
    const size_t underscore = a.name.find('_');
    if (underscore != std::string::npos) {
      const size_t end = a.name.find_first_of("_(", underscore + 1);
      key = lower(a.name.substr(underscore + 1, end == std::string::npos ? std::string::npos : end - underscore - 1));
    }
  }
  key.erase(std::remove(key.begin(), key.end(), '_'), key.end());
  if (key == "allgather" || key == "allgatherbase" || key == "allgatherintocoalesced")
    return CollectiveOp::AllGather;
  if (key == "reducescatter" || key == "reducescatterbase")
    return CollectiveOp::ReduceScatter;
  if (key == "broadcast")
    return CollectiveOp::Broadcast;
  if (key == "alltoall" || key == "alltoallv" || key == "alltoallbase")
    return CollectiveOp::AllToAll;
  if (key == "sendrecv" || key == "send" || key == "recv")
    return CollectiveOp::SendRecv;
  return CollectiveOp::AllReduce; // allreduce, reduce, and anything else
}

double dtype_bytes(const std::string& dtype)
{
  const std::string d = lower(dtype);
  if (d == "double" || d == "long" || d == "int64" || d == "float64" || d == "complexfloat")
    return 8;
  if (d == "float" || d == "int" || d == "int32" || d == "float32" || d == "uint32")
    return 4;
  if (d == "half" || d == "bfloat16" || d == "short" || d == "float16" || d == "int16")
    return 2;
  if (d == "byte" || d == "char" || d == "bool" || d == "int8" || d == "uint8" || starts_with(d, "float8"))
    return 1;
  return 0;
}

// The nccl-tests size of a collective (traces/FORMAT.md): elements x element size, 0 when the args lack them.
double nccl_bytes(const GpuActivity& a, CollectiveOp op)
{
  const auto in = integer(a.args, "In msg nelems");
  const auto out = integer(a.args, "Out msg nelems");
  double size = dtype_bytes(string_arg(a.args, "dtype"));
  if (size == 0)
    size = 1; // no dtype: count elements as bytes rather than drop the size
  const auto n = op == CollectiveOp::AllGather ? (out ? out : in) : (in ? in : out);
  return n && *n > 0 ? static_cast<double>(*n) * size : 0;
}

// Microseconds to nanoseconds. Kineto's timestamps are epoch microseconds (~1.7e15): convert differences only,
// an absolute timestamp in ns would lose precision in a double.
int64_t to_ns(double us) { return static_cast<int64_t>(std::llround(us * 1000.0)); }

JsonValue parse_trace_json(std::string_view json_text, const std::string& source)
{
  try {
    return parse_json(json_text, 256);
  } catch (const JsonParseError& e) {
    throw TraceError(source + ":" + e.what());
  }
}

using HostCallKey = std::tuple<std::string, std::string, double>;        // (pid, tid, ts) of a host event
using FlowEvent = std::tuple<int64_t, std::string, std::string, double>; // (id, pid, tid, ts)

// What the replay reads of the trace besides the ProfilerStep annotations: GPU activities, CUDA runtime calls and
// the ac2g flow events that link the calls to the activities they launched.
struct TraceEvents {
  std::vector<GpuActivity> gpu;
  std::vector<RuntimeCall> runtime;
  std::map<HostCallKey, size_t> runtime_at; // (pid, tid, ts) -> call
  std::vector<FlowEvent> flow_starts, flow_ends;
};

// A ProfilerStep#N annotation as a step; nullopt when N is not a number.
std::optional<KinetoStep> profiler_step(const std::string& name, double ts_us, double dur_us)
{
  KinetoStep step;
  step.name = name;
  try {
    step.number = std::stoll(name.substr(13));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  step.start_us = ts_us;
  step.duration_us = dur_us;
  return step;
}

bool is_gpu_activity_category(const std::string& cat)
{
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "memcpy" || cat == "memset";
}

bool is_runtime_category(const std::string& cat)
{
  return cat == "cuda_runtime" || cat == "runtime" || cat == "cuda_driver";
}

// A complete ("X") event of a GPU activity category as an activity; its launch is linked later.
GpuActivity gpu_activity(const JsonValue& e, const std::string& cat, const std::string& name, double ts_us,
                         double dur_us)
{
  const JsonValue* args = e.find("args");
  GpuActivity a;
  a.kind = cat == "kernel"                            ? GpuKind::Kernel
           : (cat == "gpu_memcpy" || cat == "memcpy") ? GpuKind::Memcpy
                                                      : GpuKind::Memset;
  a.name = name;
  a.ts = ts_us;
  a.dur = std::max(0.0, dur_us);
  a.pid = id_text(e.find("pid"));
  a.tid = id_text(e.find("tid"));
  a.device = integer(args, "device").value_or(integer(&e, "pid").value_or(0));
  a.stream = integer(args, "stream").value_or(integer(&e, "tid").value_or(0));
  a.correlation = integer(args, "correlation");
  a.args = args;
  return a;
}

// A complete ("X") event of a CUDA runtime or driver category, recorded with its (pid, tid, ts) for the flow events.
void add_runtime_call(TraceEvents& events, const JsonValue& e, const std::string& name, double ts_us, double dur_us)
{
  RuntimeCall r;
  r.name = name;
  r.ts = ts_us;
  r.dur = std::max(0.0, dur_us);
  r.tid = id_text(e.find("tid"));
  r.correlation = integer(e.find("args"), "correlation");
  events.runtime_at.emplace(std::make_tuple(id_text(e.find("pid")), r.tid, ts_us), events.runtime.size());
  events.runtime.push_back(std::move(r));
}

// A flow start ("s", on a launch) or end ("f", on its GPU activity) of the CPU-to-GPU categories, by its id.
void add_flow_event(TraceEvents& events, const JsonValue& e, const std::string& phase, const std::string& cat,
                    double ts_us)
{
  if (cat != "ac2g" && cat != "async_cpu_to_gpu")
    return;
  if (const auto id = integer(&e, "id"))
    (phase == "s" ? events.flow_starts : events.flow_ends)
        .emplace_back(*id, id_text(e.find("pid")), id_text(e.find("tid")), ts_us);
}

// The longest duration an event may have: one day, in microseconds. Longer ones (1e18 us) are damage, and past
// 9.2e12 us they would not even fit the nanosecond clock.
constexpr double max_event_dur_us = 86400e6;

// A complete event's `dur` in microseconds: absent is 0; anything but a number in [0, 1 day] is a TraceError
// naming the file and the event.
double event_duration(const JsonValue& e, const std::string& name, const std::string& source)
{
  const JsonValue* v = e.find("dur");
  if (v == nullptr)
    return 0;
  const auto us = v->as_double();
  if (!us || *us < 0 || *us > max_event_dur_us)
    throw TraceError(source + ":" + std::to_string(e.line) + ":" + std::to_string(e.column) + ": event '" + name +
                     "': dur: expected a number of microseconds in [0, 86400e6] (one day), got " +
                     (v->type == JsonValue::Type::Number   ? v->text
                      : v->type == JsonValue::Type::String ? "the string '" + v->text + "'"
                                                           : std::string("a non-number")));
  return *us;
}

// Reads the trace's events: ProfilerStep annotations into `steps` (in file order), the rest into the result.
TraceEvents collect_events(const JsonValue& trace_events, std::vector<KinetoStep>& steps, const std::string& source)
{
  TraceEvents events;
  for (const JsonValue& e : trace_events.items) {
    if (e.type != JsonValue::Type::Object)
      continue;
    const JsonValue* ph = e.find("ph");
    if (ph == nullptr || ph->type != JsonValue::Type::String)
      continue;
    const std::string cat = lower(string_arg(&e, "cat"));
    const std::string name = string_arg(&e, "name");
    const auto ts = number(e, "ts");
    if (!ts)
      continue;
    if (ph->text == "s" || ph->text == "f") {
      add_flow_event(events, e, ph->text, cat, *ts);
      continue;
    }
    if (ph->text != "X")
      continue;
    const double dur = event_duration(e, name, source);
    if (starts_with(name, "ProfilerStep#") && cat != "gpu_user_annotation") {
      if (const auto step = profiler_step(name, *ts, dur))
        steps.push_back(*step);
    } else if (is_gpu_activity_category(cat)) {
      events.gpu.push_back(gpu_activity(e, cat, name, *ts, dur));
    } else if (is_runtime_category(cat)) {
      add_runtime_call(events, e, name, *ts, dur);
    }
  }
  return events;
}

// Links each GPU activity to the runtime call that launched it: by the `correlation` arg, else by the flow events
// (s on the launch, f on the activity). Throws TraceError when no activity has a launch.
void link_launches(TraceEvents& events, const std::string& source)
{
  std::unordered_map<int64_t, size_t> runtime_by_correlation;
  for (size_t i = 0; i < events.runtime.size(); ++i)
    if (events.runtime[i].correlation)
      runtime_by_correlation.emplace(*events.runtime[i].correlation, i);
  std::unordered_map<int64_t, size_t> runtime_by_flow;
  for (const auto& [id, pid, tid, ts] : events.flow_starts)
    if (const auto it = events.runtime_at.find({pid, tid, ts}); it != events.runtime_at.end())
      runtime_by_flow.emplace(id, it->second);
  std::map<HostCallKey, int64_t> flow_at;
  for (const auto& [id, pid, tid, ts] : events.flow_ends)
    flow_at.emplace(std::make_tuple(pid, tid, ts), id);
  size_t linked = 0;
  for (GpuActivity& a : events.gpu) {
    if (a.correlation)
      if (const auto it = runtime_by_correlation.find(*a.correlation); it != runtime_by_correlation.end())
        a.launch = it->second;
    if (a.launch == SIZE_MAX)
      if (const auto f = flow_at.find({a.pid, a.tid, a.ts}); f != flow_at.end())
        if (const auto it = runtime_by_flow.find(f->second); it != runtime_by_flow.end())
          a.launch = it->second;
    linked += a.launch != SIZE_MAX;
  }
  if (linked == 0)
    throw TraceError(source + ": " + std::to_string(events.gpu.size()) +
                     " GPU kernels but no CUDA runtime launch linked to any of them (expected 'cuda_runtime' events "
                     "such as cudaLaunchKernel with the kernels' 'correlation' arg, or ac2g flow events)");
}

// The replayed GPU: the device with the most activities.
int64_t busiest_device(const std::vector<GpuActivity>& gpu)
{
  std::map<int64_t, size_t> per_device;
  for (const GpuActivity& a : gpu)
    ++per_device[a.device];
  return std::max_element(per_device.begin(), per_device.end(),
                          [](const auto& x, const auto& y) { return x.second < y.second; })
      ->first;
}

// Sorts trace.steps by start and selects step `step_number` (--step), or by default the step of median duration
// (the earlier one of two middle steps).
void select_step(KinetoTrace& trace, std::optional<int64_t> step_number, const std::string& source)
{
  std::stable_sort(trace.steps.begin(), trace.steps.end(),
                   [](const KinetoStep& a, const KinetoStep& b) { return a.start_us < b.start_us; });
  if (step_number) {
    const auto it = std::find_if(trace.steps.begin(), trace.steps.end(),
                                 [&](const KinetoStep& s) { return s.number == *step_number; });
    if (it == trace.steps.end())
      throw TraceError(source + ": no ProfilerStep#" + std::to_string(*step_number) + " (--step; the trace has " +
                       trace.steps.front().name + " to " + trace.steps.back().name + ")");
    trace.selected = static_cast<size_t>(it - trace.steps.begin());
  } else {
    std::vector<size_t> order(trace.steps.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return trace.steps[a].duration_us < trace.steps[b].duration_us; });
    trace.selected = order[(order.size() - 1) / 2];
  }
}

// The selected step's time range on the trace's clock, [start_us, end_us).
struct StepWindow {
  double start_us = 0, end_us = 0;

  bool contains(double ts_us) const { return ts_us >= start_us && ts_us < end_us; }
  int64_t since_start_ns(double ts_us) const { return to_ns(ts_us - start_us); }
};

using LaunchActivities = std::map<size_t, std::vector<size_t>>; // runtime call -> the GPU activities it launched

// The replayed device's activities launched inside the step, by launch call. Counts into `unlaunched` the step's
// activities that have no launch.
LaunchActivities activities_by_launch(const TraceEvents& events, int64_t device, const StepWindow& window,
                                      int64_t& unlaunched)
{
  LaunchActivities activities_of_launch;
  for (size_t i = 0; i < events.gpu.size(); ++i) {
    const GpuActivity& a = events.gpu[i];
    if (a.device != device)
      continue;
    if (a.launch != SIZE_MAX && window.contains(events.runtime[a.launch].ts))
      activities_of_launch[a.launch].push_back(i);
    else if (a.launch == SIZE_MAX && window.contains(a.ts))
      ++unlaunched;
  }
  return activities_of_launch;
}

struct HostEvent {
  int64_t ts_ns; // from the step's start
  size_t call;   // index into the runtime calls
};

// Host events of the step, all threads merged in time order: launches (with their activities) and syncs.
std::vector<HostEvent> step_host_events(const std::vector<RuntimeCall>& runtime,
                                        const LaunchActivities& activities_of_launch, const StepWindow& window)
{
  std::vector<HostEvent> host_events;
  for (size_t i = 0; i < runtime.size(); ++i)
    if (window.contains(runtime[i].ts) && (activities_of_launch.count(i) || is_synchronising(runtime[i].name)))
      host_events.push_back({window.since_start_ns(runtime[i].ts), i});
  std::stable_sort(host_events.begin(), host_events.end(),
                   [](const HostEvent& a, const HostEvent& b) { return a.ts_ns < b.ts_ns; });
  return host_events;
}

// Launch latency: the median of launch call to activity start, over the step's activities whose stream was idle at
// the launch; nullopt when there is none.
std::optional<int64_t> median_idle_launch_latency_ns(const TraceEvents& events, int64_t device,
                                                     const StepWindow& window)
{
  const std::vector<GpuActivity>& gpu = events.gpu;
  std::vector<size_t> by_start;
  for (size_t i = 0; i < gpu.size(); ++i)
    if (gpu[i].device == device)
      by_start.push_back(i);
  std::stable_sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) { return gpu[a].ts < gpu[b].ts; });
  std::map<int64_t, double> stream_end;
  std::vector<int64_t> idle_latency_ns;
  for (const size_t i : by_start) {
    const GpuActivity& a = gpu[i];
    const auto end = stream_end.find(a.stream);
    if (a.launch != SIZE_MAX && window.contains(events.runtime[a.launch].ts) &&
        (end == stream_end.end() || end->second < events.runtime[a.launch].ts))
      idle_latency_ns.push_back(std::max<int64_t>(0, to_ns(a.ts - events.runtime[a.launch].ts)));
    stream_end[a.stream] = std::max(end == stream_end.end() ? a.ts + a.dur : end->second, a.ts + a.dur);
  }
  if (idle_latency_ns.empty())
    return std::nullopt;
  std::sort(idle_latency_ns.begin(), idle_latency_ns.end());
  return idle_latency_ns[(idle_latency_ns.size() - 1) / 2];
}

// The stream of the host markers: one past the device's highest stream id.
int32_t host_stream_after(const std::vector<GpuActivity>& gpu, int64_t device)
{
  int64_t max_stream = 0;
  for (const GpuActivity& a : gpu)
    if (a.device == device)
      max_stream = std::max(max_stream, a.stream);
  return static_cast<int32_t>(max_stream + 1);
}

// A copy into pageable host memory returns only when it is done (the host waits for the GPU).
bool is_pageable_copy_to_host(const GpuActivity& a)
{
  return a.kind == GpuKind::Memcpy && a.name.find("DtoH") != std::string::npos &&
         a.name.find("Pageable") != std::string::npos;
}

// Builds the step's rank program (GPU activities in launch order, host markers on trace.host_stream) together with
// the host timeline trace.host (issue gaps, syncs) and the op counts of `trace`.
class StepProgramBuilder {
public:
  StepProgramBuilder(KinetoTrace& trace, const TraceEvents& events, const StepWindow& window)
      : trace_(trace), events_(events), window_(window), latency_ns_(trace.host.launch_latency_ns),
        issued_end_us_(window.start_us)
  {
    program_.rank = 0;
  }

  void add_backlog(int64_t device);
  void add_host_event(const HostEvent& h, const LaunchActivities& activities_of_launch);
  void add_step_end() { add_marker("host.step_end", to_ns(window_.end_us - window_.start_us), false); }
  size_t stream_count() const { return streams_.size(); }
  RankProgram take_program() { return std::move(program_); }

private:
  void add_op(Op op, int64_t gap_ns, bool sync);
  void add_marker(const std::string& name, int64_t at_ns, bool sync);
  bool add_launched_activities(std::vector<size_t> activities, int64_t at_ns);
  Op activity_op(const GpuActivity& a);
  void wait_for_call(const RuntimeCall& call);

  KinetoTrace& trace_;
  const TraceEvents& events_;
  const StepWindow window_;
  const int64_t latency_ns_;
  RankProgram program_;
  int64_t previous_ns_ = 0; // host time (from the step's start) the next issue gap counts from
  int64_t sequence_ = 0;    // the next collective's sequence number
  std::set<int64_t> streams_;
  double issued_end_us_; // measured end of the GPU work issued so far
  int64_t tail_ns_ = 0;  // host time of the last sync call after the GPU work it waited for had ended
};

void StepProgramBuilder::add_op(Op op, int64_t gap_ns, bool sync)
{
  op.id = static_cast<int64_t>(program_.ops.size());
  program_.ops.push_back(std::move(op));
  trace_.host.issue_gap_ns.push_back(std::max<int64_t>(0, gap_ns) + tail_ns_);
  tail_ns_ = 0;
  trace_.host.syncs.push_back(sync);
}

// A zero-length host marker that starts at `at_ns` (from the step's start), issued one launch latency before.
void StepProgramBuilder::add_marker(const std::string& name, int64_t at_ns, bool sync)
{
  Op op;
  op.kind = OpKind::Compute;
  op.name = name;
  op.stream = trace_.host_stream;
  const int64_t issue_ns = std::max(previous_ns_, at_ns - latency_ns_);
  op.start_ns = issue_ns + latency_ns_;
  op.duration_ns = 0;
  add_op(std::move(op), issue_ns - previous_ns_, sync);
  previous_ns_ = issue_ns;
}

// The GPU as the step found it: work launched before the step still running on a stream keeps that stream busy
// until its measured end (one "gpu.backlog" op per such stream, issued at the step's start).
void StepProgramBuilder::add_backlog(int64_t device)
{
  const double t0_us = window_.start_us;
  std::map<int64_t, double> backlog_end_us;
  for (const GpuActivity& a : events_.gpu)
    if (a.device == device && a.ts + a.dur > t0_us &&
        (a.launch == SIZE_MAX ? a.ts < t0_us : events_.runtime[a.launch].ts < t0_us))
      backlog_end_us[a.stream] = std::max(backlog_end_us[a.stream], a.ts + a.dur);
  for (const auto& [stream, end_us] : backlog_end_us) {
    Op op;
    op.kind = OpKind::Compute;
    op.name = "gpu.backlog";
    op.stream = static_cast<int32_t>(stream);
    op.start_ns = 0;
    op.duration_ns = to_ns(end_us - t0_us);
    streams_.insert(stream);
    add_op(std::move(op), 0, false);
    issued_end_us_ = std::max(issued_end_us_, end_us);
    ++trace_.backlog_streams;
  }
}

// One host event: a launch call adds its activities (the first one issued after the gap since the previous issue);
// a synchronising call, or a launch of a copy the host waits for, makes the host wait.
void StepProgramBuilder::add_host_event(const HostEvent& h, const LaunchActivities& activities_of_launch)
{
  const RuntimeCall& call = events_.runtime[h.call];
  const bool sync = is_synchronising(call.name);
  if (const auto it = activities_of_launch.find(h.call); it != activities_of_launch.end()) {
    const bool blocks_host = add_launched_activities(it->second, h.ts_ns);
    previous_ns_ = std::max(previous_ns_, h.ts_ns);
    if (sync || blocks_host) {
      trace_.host.syncs.back() = true;
      wait_for_call(call);
    }
  } else if (sync) {
    add_marker("host.sync:" + call.name, h.ts_ns, true);
    wait_for_call(call);
  }
}

// The activities of one launch call issued at `at_ns`, in start order; true when one of them blocks the host.
bool StepProgramBuilder::add_launched_activities(std::vector<size_t> activities, int64_t at_ns)
{
  const std::vector<GpuActivity>& gpu = events_.gpu;
  std::stable_sort(activities.begin(), activities.end(), [&](size_t a, size_t b) { return gpu[a].ts < gpu[b].ts; });
  bool blocks_host = false;
  bool first = true;
  for (const size_t i : activities) {
    const GpuActivity& a = gpu[i];
    Op op = activity_op(a);
    blocks_host = blocks_host || is_pageable_copy_to_host(a);
    streams_.insert(a.stream);
    issued_end_us_ = std::max(issued_end_us_, a.ts + a.dur);
    add_op(std::move(op), first ? at_ns - previous_ns_ : 0, false);
    first = false;
  }
  return blocks_host;
}

// A GPU activity as an op at its measured start and duration: a memcpy, an NCCL collective (on the group of one
// rank, in launch order) or a compute kernel; counted into the trace's op counts.
Op StepProgramBuilder::activity_op(const GpuActivity& a)
{
  Op op;
  op.name = a.name;
  op.stream = static_cast<int32_t>(a.stream);
  op.start_ns = window_.since_start_ns(a.ts);
  op.duration_ns = std::max<int64_t>(0, to_ns(a.dur));
  if (const auto bytes = integer(a.args, "bytes"); bytes && *bytes > 0)
    op.bytes = static_cast<double>(*bytes);
  if (a.kind == GpuKind::Memcpy) {
    op.kind = OpKind::Memcpy;
    ++trace_.memcpys;
  } else if (a.kind == GpuKind::Kernel && is_nccl_kernel(a.name)) {
    op.kind = OpKind::Collective;
    op.collective = nccl_collective(a);
    op.bytes = nccl_bytes(a, op.collective);
    op.group = 0;
    op.sequence = sequence_++;
    ++trace_.collectives;
  } else {
    op.kind = OpKind::Compute;
    ++trace_.kernels;
  }
  return op;
}

// After a synchronising call the host issues nothing before the call returns; the part of the call after the GPU
// work it waited for had ended counts into the next issue gap.
void StepProgramBuilder::wait_for_call(const RuntimeCall& call)
{
  previous_ns_ = std::max(previous_ns_, window_.since_start_ns(call.ts) + to_ns(call.dur));
  tail_ns_ = std::max<int64_t>(0, to_ns(call.ts + call.dur - std::max(call.ts, issued_end_us_)));
  ++trace_.host_syncs;
}

// The name of the replayed device in the trace's deviceProperties, "gpu" when absent.
std::string replayed_device_name(const JsonValue& root, int64_t device)
{
  std::string name = "gpu";
  if (const JsonValue* props = root.find("deviceProperties"); props && props->type == JsonValue::Type::Array)
    for (const JsonValue& p : props->items)
      if (integer(&p, "id") == device && !string_arg(&p, "name").empty())
        name = string_arg(&p, "name");
  return name;
}

void write_graph_metadata(KinetoTrace& trace, const KinetoStep& step, size_t stream_count, const std::string& device)
{
  OpGraph& graph = trace.graph;
  graph.measured_iteration_s = {step.duration_us / 1e6};
  graph.metadata["producer"] = "pytorch-kineto";
  graph.metadata["traced_iteration"] = "0";
  graph.metadata["kineto_step"] = step.name;
  graph.metadata["kineto_rank"] = std::to_string(trace.trace_rank);
  graph.metadata["kineto_world_size"] = std::to_string(trace.world_size);
  graph.metadata["streams"] = std::to_string(stream_count);
  graph.metadata["device"] = device;
}

} // namespace

bool is_chrome_trace(std::string_view text)
{
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '{')
    return false;
  // Kineto writes "schemaVersion" and "deviceProperties" (which can be long) before "traceEvents"; the member
  // can be anywhere in the object, so look through the whole text only if needed.
  return text.find("\"traceEvents\"") != std::string_view::npos;
}

namespace {

std::string inflate_limit_text(const std::string& path, int64_t limit)
{
  char size[32];
  std::snprintf(size, sizeof size, "%.3g GiB", static_cast<double>(limit) / (1 << 30));
  return path + ": the gzip stream inflates to more than " + size +
         ", the limit of a trace's text (expected a trace of a few profiler steps: record fewer with "
         "torch.profiler's schedule, or split it per rank)";
}

// Inflates the gzip file `path`, handing each piece to `sink`; returns the bytes inflated. Throws TraceError for a
// stream that passes `limit` bytes or is truncated or corrupt.
int64_t inflate_gzip(const std::string& path, int64_t limit, const std::function<void(const char*, size_t)>& sink)
{
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr)
    throw TraceError(path + ": cannot open the gzip file");
  gzbuffer(file, 1 << 17);
  int64_t inflated = 0;
  std::vector<char> buffer(1 << 16);
  for (;;) {
    const int n = gzread(file, buffer.data(), static_cast<unsigned>(buffer.size()));
    if (n <= 0)
      break;
    if (inflated + n > limit) {
      gzclose(file);
      throw TraceError(inflate_limit_text(path, limit));
    }
    inflated += n;
    sink(buffer.data(), static_cast<size_t>(n));
  }
  int code = Z_OK;
  const char* message = gzerror(file, &code);
  std::string what = message ? message : "";
  if (what.rfind(path + ": ", 0) == 0)
    what = what.substr(path.size() + 2);
  gzclose(file);
  if (code != Z_OK && code != Z_STREAM_END)
    throw TraceError(path + ": truncated or corrupt gzip stream (" + (what.empty() ? "zlib error" : what) + " after " +
                     std::to_string(inflated) + " bytes; expected a complete .json.gz)");
  return inflated;
}

} // namespace

std::string read_trace_text(const std::string& path, int64_t max_inflated_bytes)
{
  std::ifstream probe(path, std::ios::binary);
  if (!probe)
    throw TraceError(path + ": cannot open the trace file (expected a readable file)");
  unsigned char magic[2] = {0, 0};
  probe.read(reinterpret_cast<char*>(magic), 2);
  const bool gzip = probe.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (!gzip) {
    probe.clear();
    probe.seekg(0);
    std::ostringstream text;
    text << probe.rdbuf();
    return text.str();
  }
  probe.close();
  // Twice: counted first, holding nothing (a gzip bomb is refused in the time it takes to inflate the limit,
  // never held), then kept, in one allocation.
  const int64_t inflated = inflate_gzip(path, max_inflated_bytes, [](const char*, size_t) {});
  std::string text;
  text.reserve(static_cast<size_t>(inflated));
  inflate_gzip(path, max_inflated_bytes, [&](const char* data, size_t n) { text.append(data, n); });
  return text;
}

KinetoTrace parse_kineto(std::string_view json_text, const std::string& source, std::optional<int64_t> step_number)
{
  const JsonValue root = parse_trace_json(json_text, source);
  const JsonValue* trace_events = root.find("traceEvents");
  if (trace_events == nullptr || trace_events->type != JsonValue::Type::Array)
    throw TraceError(source + ": not a Chrome trace (expected a top-level object with a 'traceEvents' array)");

  KinetoTrace trace;
  trace.source = source;
  const JsonValue* dist = root.find("distributedInfo");
  trace.trace_rank = static_cast<int32_t>(integer(dist, "rank").value_or(0));
  trace.world_size = static_cast<int32_t>(std::max<int64_t>(1, integer(dist, "world_size").value_or(1)));

  TraceEvents events = collect_events(*trace_events, trace.steps, source);
  if (trace.steps.empty())
    throw TraceError(source + ": no ProfilerStep#N annotation (expected a torch.profiler trace recorded with a "
                              "schedule, whose ProfilerStep events mark the iterations)");
  if (events.gpu.empty())
    throw TraceError(source + ": no GPU activity (expected events of category 'kernel', 'gpu_memcpy' or "
                              "'gpu_memset' from a trace recorded with ProfilerActivity.CUDA)");
  link_launches(events, source);

  const int64_t device = busiest_device(events.gpu);
  select_step(trace, step_number, source);
  const KinetoStep& step = trace.steps[trace.selected];
  const StepWindow window{step.start_us, step.start_us + step.duration_us};

  const LaunchActivities activities_of_launch = activities_by_launch(events, device, window, trace.unlaunched);
  const std::vector<HostEvent> host_events = step_host_events(events.runtime, activities_of_launch, window);
  if (const auto latency_ns = median_idle_launch_latency_ns(events, device, window))
    trace.host.launch_latency_ns = *latency_ns;
  trace.host_stream = host_stream_after(events.gpu, device);

  trace.graph.groups.push_back(CommGroup{"world", {0}});
  StepProgramBuilder builder(trace, events, window);
  builder.add_backlog(device);
  for (const HostEvent& h : host_events)
    builder.add_host_event(h, activities_of_launch);
  if (trace.kernels + trace.collectives + trace.memcpys == 0)
    throw TraceError(source + ": " + step.name +
                     " launches no GPU work (expected cudaLaunchKernel/cudaMemcpyAsync "
                     "calls inside the step, linked to kernels by 'correlation')");
  builder.add_step_end();
  const size_t stream_count = builder.stream_count();
  trace.graph.ranks.push_back(builder.take_program());

  write_graph_metadata(trace, step, stream_count, replayed_device_name(root, device));
  validate_op_graph(trace.graph);
  return trace;
}

KinetoTrace read_kineto_file(const std::string& path, std::optional<int64_t> step)
{
  const std::string text = read_trace_text(path);
  return parse_kineto(text, path, step);
}

} // namespace gputwin::traces
