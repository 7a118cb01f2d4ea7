#pragma once
// The nodes of a PyTorch host execution trace (JSON), as the Chakra import reads them (traces/chakra/README.md,
// "Import"): a node's id, name, parent, rf_id, dur and its tensor arguments, and what a GEMM-like aten op computes
// from its tensor shapes. Internal to gputwin_chakra (src/pytorch_et_reader.cpp walks the tree).

#include "gputwin/traces/json_value.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gputwin::chakra::et {

// Dimensions and element counts beyond this are not a real tensor (and would overflow the FLOP products).
constexpr int64_t max_extent = int64_t{1} << 40;

// One tensor argument: [tensor_id, storage_id, offset, numel, itemsize, device] with its shape.
struct EtTensor {
  std::vector<int64_t> shape;
  double numel = 0;
  double itemsize = 0;
  bool cuda = true; // no device recorded: taken as the GPU (the trace is of a GPU job)
  double bytes() const { return numel * itemsize; }
};

// One argument of a node's inputs or outputs: its value, shape and type as recorded.
struct EtArg {
  const traces::JsonValue* value = nullptr;
  const traces::JsonValue* shape = nullptr;
  std::string type;
};

struct EtNode {
  int64_t id = 0;
  std::string name;
  int64_t parent = -1;
  int64_t rf_id = -1;
  std::optional<double> dur_us;
  std::vector<EtArg> inputs, outputs;
  std::vector<size_t> children; // indices, in program order
};

bool starts_with(std::string_view text, std::string_view prefix);


// An integral JSON number; nullopt for anything else.
std::optional<int64_t> integer(const traces::JsonValue* v);

// Throws traces::TraceError "SOURCE: node ID 'NAME': WHAT".
[[noreturn]] void fail_node(const std::string& source, const EtNode& n, const std::string& what);

// Node `index` of the "nodes" array (children empty). Throws traces::TraceError naming the missing field.
EtNode read_node(const traces::JsonValue& v, size_t index, const std::string& source);

// The tensors of one argument (a tensor, or nested lists of tensors) / of all arguments. Throws
// traces::TraceError for sizes out of range.
std::vector<EtTensor> arg_tensors(const EtNode& n, const EtArg& arg, const std::string& source);
std::vector<EtTensor> tensors(const EtNode& n, const std::vector<EtArg>& args, const std::string& source);
double total_bytes(const std::vector<EtTensor>& ts);

// Ops that launch no GPU work: allocations, views, metadata queries, autograd bookkeeping.
bool launches_no_kernel(std::string_view name);

// What a GEMM-like aten op computes.
struct GemmWork {
  double flops = 0;
  traces::GemmShape gemm; // m, n, k = 0 when the shape does not fit one GEMM
  double bytes = 0;       // all tensor arguments, inputs and outputs
};

// The work of `n` when it is a GEMM-like aten op whose tensor shapes are readable (aten::mm, addmm, bmm, baddbmm,
// addbmm, matmul, linear, scaled-dot-product attention, convolution and its backward); nullopt otherwise.
// C(m, n) = A(m, k) B(k, n): 2 m n k FLOPs per product. Throws traces::TraceError when the FLOPs overflow.
std::optional<GemmWork> gemm_like_work(const EtNode& n, const std::string& source);

} // namespace gputwin::chakra::et
