#include "rank_report.hpp"

#include "gputwin/engine/comm/communicator.hpp"

#include <cstring>
#include <type_traits>

namespace gputwin::engine {

namespace {

constexpr int64_t report_magic = 0x31747270656b6e72; // "rnkeprt1"

// Little fixed-size fields in host byte order (the processes of one run share the binary and the CPU kind).
class Writer {
public:
  template <typename T>
  void put(T value)
  {
    static_assert(std::is_trivially_copyable_v<T>);
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &value, sizeof(T));
  }
  void put_string(const std::string& s)
  {
    put<int64_t>(static_cast<int64_t>(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  std::vector<char> bytes;
};

class Reader {
public:
  Reader(const std::vector<char>& bytes, const std::string& source) : bytes_(bytes), source_(source) {}
  template <typename T>
  T get()
  {
    need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  // A count of elements of at least `element_bytes` each that the rest of the bytes can hold.
  size_t count(size_t element_bytes)
  {
    const int64_t n = get<int64_t>();
    if (n < 0 || static_cast<size_t>(n) * element_bytes > bytes_.size() - at_)
      fail();
    return static_cast<size_t>(n);
  }
  std::string get_string()
  {
    const size_t n = count(1);
    std::string s(bytes_.data() + at_, n);
    at_ += n;
    return s;
  }
  bool done() const { return at_ == bytes_.size(); }
  [[noreturn]] void fail() const
  {
    throw CommError("rank report " + source_ + ": truncated or corrupt (" + std::to_string(bytes_.size()) +
                    " bytes; expected what encode_rank_report writes)");
  }

private:
  void need(size_t n) const
  {
    if (bytes_.size() - at_ < n)
      fail();
  }
  const std::vector<char>& bytes_;
  const std::string& source_;
  size_t at_ = 0;
};

void put_op(Writer& w, const traces::Op& op)
{
  w.put(op.id);
  w.put(static_cast<int32_t>(op.kind));
  w.put_string(op.name);
  w.put(static_cast<int32_t>(op.phase));
  w.put(op.layer);
  w.put(op.micro_batch);
  w.put(op.chunk);
  w.put(op.stream);
  w.put(op.flops);
  w.put(op.bytes);
  w.put(op.gemm.m);
  w.put(op.gemm.n);
  w.put(op.gemm.k);
  w.put(op.gemm.batch);
  w.put<uint8_t>(static_cast<uint8_t>(op.gemm.precision));
  w.put(static_cast<int32_t>(op.collective));
  w.put(op.group);
  w.put(op.peer);
  w.put(op.sequence);
  w.put<int64_t>(static_cast<int64_t>(op.deps.size()));
  for (const int64_t d : op.deps)
    w.put(d);
  w.put(op.start_ns);
  w.put(op.duration_ns);
}

traces::Op get_op(Reader& r)
{
  traces::Op op;
  op.id = r.get<int64_t>();
  op.kind = static_cast<traces::OpKind>(r.get<int32_t>());
  op.name = r.get_string();
  op.phase = static_cast<traces::Phase>(r.get<int32_t>());
  op.layer = r.get<int32_t>();
  op.micro_batch = r.get<int32_t>();
  op.chunk = r.get<int32_t>();
  op.stream = r.get<int32_t>();
  op.flops = r.get<double>();
  op.bytes = r.get<double>();
  op.gemm.m = r.get<int64_t>();
  op.gemm.n = r.get<int64_t>();
  op.gemm.k = r.get<int64_t>();
  op.gemm.batch = r.get<int64_t>();
  const uint8_t precision = r.get<uint8_t>();
  if (precision > static_cast<uint8_t>(traces::GemmPrecision::Nvfp4)) // anything else: the bytes are out of step
    r.fail();
  op.gemm.precision = static_cast<traces::GemmPrecision>(precision);
  op.collective = static_cast<CollectiveOp>(r.get<int32_t>());
  op.group = r.get<int32_t>();
  op.peer = r.get<int32_t>();
  op.sequence = r.get<int64_t>();
  op.deps.resize(r.count(sizeof(int64_t)));
  for (int64_t& d : op.deps)
    d = r.get<int64_t>();
  op.start_ns = r.get<int64_t>();
  op.duration_ns = r.get<int64_t>();
  return op;
}

void put_doubles(Writer& w, const std::vector<double>& values)
{
  w.put<int64_t>(static_cast<int64_t>(values.size()));
  for (const double v : values)
    w.put(v);
}

std::vector<double> get_doubles(Reader& r)
{
  std::vector<double> values(r.count(sizeof(double)));
  for (double& v : values)
    v = r.get<double>();
  return values;
}

} // namespace

std::vector<char> encode_rank_report(const RankReport& report)
{
  Writer w;
  w.put(report_magic);
  w.put<int32_t>(report.rank);
  put_doubles(w, report.weighted_loss);
  put_doubles(w, report.iteration_seconds);
  const RankMemory& m = report.memory;
  w.put<int32_t>(m.rank);
  w.put(m.coords.dp);
  w.put(m.coords.pp);
  w.put(m.coords.tp);
  for (const int64_t b : m.peak_bytes)
    w.put(b);
  w.put(m.peak_total_bytes);
  w.put(m.saved_bytes_per_layer_min);
  w.put(m.saved_bytes_per_layer_max);
  w.put(report.started_ns);
  w.put(report.program.rank);
  w.put<int64_t>(static_cast<int64_t>(report.program.ops.size()));
  for (const traces::Op& op : report.program.ops)
    put_op(w, op);
  w.put(report_magic);
  return std::move(w.bytes);
}

RankReport decode_rank_report(const std::vector<char>& bytes, const std::string& source)
{
  Reader r(bytes, source);
  if (r.get<int64_t>() != report_magic)
    r.fail();
  RankReport report;
  report.rank = r.get<int32_t>();
  report.weighted_loss = get_doubles(r);
  report.iteration_seconds = get_doubles(r);
  RankMemory& m = report.memory;
  m.rank = r.get<int32_t>();
  m.coords.dp = r.get<int64_t>();
  m.coords.pp = r.get<int64_t>();
  m.coords.tp = r.get<int64_t>();
  for (int64_t& b : m.peak_bytes)
    b = r.get<int64_t>();
  m.peak_total_bytes = r.get<int64_t>();
  m.saved_bytes_per_layer_min = r.get<int64_t>();
  m.saved_bytes_per_layer_max = r.get<int64_t>();
  report.started_ns = r.get<int64_t>();
  report.program.rank = r.get<int32_t>();
  report.program.ops.resize(r.count(1));
  for (traces::Op& op : report.program.ops)
    op = get_op(r);
  if (r.get<int64_t>() != report_magic || !r.done())
    r.fail();
  return report;
}

} // namespace gputwin::engine
