// The nodes of a PyTorch host execution trace: fields, tensor arguments, GEMM-like work (pytorch_et_node.hpp).
#include "pytorch_et_node.hpp"

#include "gputwin/common/text.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace gputwin::chakra::et {

using traces::JsonValue;
using traces::TraceError;

namespace {

[[noreturn]] void fail_at(const std::string& source, const std::string& what)
{
  throw TraceError(source + ": " + what);
}

std::string arg_type(const JsonValue* types, size_t i)
{
  if (types == nullptr || i >= types->items.size() || types->items[i].type != JsonValue::Type::String)
    return "";
  return types->items[i].text;
}

// Schema 1.0.2+: "inputs": {"values", "shapes", "types"}; 1.0.1: "inputs" (values), "input_shapes", "input_types".
std::vector<EtArg> read_args(const JsonValue& node, const EtNode& n, const char* key, const std::string& source)
{
  const JsonValue* io = node.find(key);
  if (io == nullptr)
    return {};
  const JsonValue *values = nullptr, *shapes = nullptr, *types = nullptr;
  if (io->type == JsonValue::Type::Object) {
    values = io->find("values");
    shapes = io->find("shapes");
    types = io->find("types");
  } else {
    const std::string singular = std::string(key) == "inputs" ? "input" : "output";
    values = io;
    shapes = node.find(singular + "_shapes");
    types = node.find(singular + "_types");
  }
  if (values == nullptr || values->type != JsonValue::Type::Array)
    fail_node(source, n, "field '" + std::string(key) + "': missing 'values' (an array)");
  for (const JsonValue* list : {shapes, types})
    if (list != nullptr && (list->type != JsonValue::Type::Array || list->items.size() != values->items.size()))
      fail_node(source, n, "field '" + std::string(key) + "': shapes and types must be arrays as long as its values");
  std::vector<EtArg> args(values->items.size());
  for (size_t i = 0; i < args.size(); ++i) {
    args[i].value = &values->items[i];
    args[i].shape = shapes ? &shapes->items[i] : nullptr;
    args[i].type = arg_type(types, i);
  }
  return args;
}

// A tensor value is [tensor_id, storage_id, offset, numel, itemsize(, device)] whose shape is a list of
// dimensions; a list of tensors is a list of those with a list of shapes (nested lists recurse).
void collect_tensors(const EtNode& n, const JsonValue& value, const JsonValue* shape, std::vector<EtTensor>& out,
                     int depth, const std::string& source)
{
  if (value.type != JsonValue::Type::Array || depth > 8)
    return;
  const auto& items = value.items;
  const bool shape_is_dims = shape != nullptr && shape->type == JsonValue::Type::Array &&
                             std::all_of(shape->items.begin(), shape->items.end(),
                                         [](const JsonValue& d) { return d.type == JsonValue::Type::Number; });
  const bool tensor_like =
      items.size() >= 5 && items.size() <= 6 &&
      std::all_of(items.begin(), items.begin() + 5, [](const JsonValue& x) { return integer(&x).has_value(); });
  if (tensor_like && (shape == nullptr || shape_is_dims)) {
    EtTensor t;
    const int64_t numel = *integer(&items[3]);
    const int64_t itemsize = *integer(&items[4]);
    if (numel < 0 || numel > max_extent || itemsize < 0 || itemsize > 64)
      fail_node(source, n,
                "a tensor with " + std::to_string(numel) + " elements of " + std::to_string(itemsize) +
                    " bytes (expected 0.." + std::to_string(max_extent) + " elements of at most 64 bytes)");
    t.numel = static_cast<double>(numel);
    t.itemsize = static_cast<double>(itemsize);
    if (items.size() == 6 && items[5].type == JsonValue::Type::String)
      t.cuda = starts_with(items[5].text, "cuda");
    if (shape != nullptr)
      for (const JsonValue& d : shape->items) {
        const std::optional<int64_t> dim = integer(&d);
        if (!dim || *dim < 0 || *dim > max_extent)
          fail_node(source, n,
                    "a tensor shape with dimension '" + d.text + "' (expected an integer 0.." +
                        std::to_string(max_extent) + ")");
        t.shape.push_back(*dim);
      }
    out.push_back(std::move(t));
    return;
  }
  // A list: its elements with the matching element of the shape list (when the shape is a list of lists).
  for (size_t i = 0; i < items.size(); ++i) {
    const JsonValue* sub = shape != nullptr && shape->type == JsonValue::Type::Array && i < shape->items.size() &&
                                   shape->items[i].type == JsonValue::Type::Array
                               ? &shape->items[i]
                               : nullptr;
    if (items[i].type == JsonValue::Type::Array)
      collect_tensors(n, items[i], sub, out, depth + 1, source);
  }
}

double product(const std::vector<int64_t>& dims, size_t begin, size_t end)
{
  double p = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i)
    p *= static_cast<double>(dims[i]);
  return p;
}

} // namespace

void fail_node(const std::string& source, const EtNode& n, const std::string& what)
{
  fail_at(source, "node " + std::to_string(n.id) + " '" + printable_excerpt(n.name) + "': " + what);
}

bool starts_with(std::string_view text, std::string_view prefix)
{
  return text.substr(0, prefix.size()) == prefix;
}

std::optional<int64_t> integer(const JsonValue* v)
{
  if (v == nullptr || v->type != JsonValue::Type::Number)
    return std::nullopt;
  if (const auto i = v->as_int64())
    return i;
  if (const auto d = v->as_double(); d && std::floor(*d) == *d && std::fabs(*d) < 9e18)
    return static_cast<int64_t>(*d);
  return std::nullopt;
}

EtNode read_node(const JsonValue& v, size_t index, const std::string& source)
{
  const std::string where = "nodes[" + std::to_string(index) + "]";
  if (v.type != JsonValue::Type::Object)
    fail_at(source, where + ": expected an object, got " + traces::type_name(v.type));
  EtNode n;
  const std::optional<int64_t> id = integer(v.find("id"));
  if (!id || *id < 0)
    fail_at(source, where + ": missing field 'id' (a non-negative integer)");
  n.id = *id;
  const JsonValue* name = v.find("name");
  if (name == nullptr || name->type != JsonValue::Type::String)
    fail_at(source, "node " + std::to_string(n.id) + ": missing field 'name' (a string)");
  n.name = name->text;
  // ctrl_deps: the parent's id (an integer in schema 1.0.x; a one-element array in some converters' output).
  const JsonValue* ctrl = v.find("ctrl_deps");
  std::optional<int64_t> parent = integer(ctrl);
  if (!parent && ctrl != nullptr && ctrl->type == JsonValue::Type::Array && ctrl->items.size() <= 1)
    parent = ctrl->items.empty() ? std::optional<int64_t>(-1) : integer(&ctrl->items[0]);
  if (!parent)
    fail_node(source, n, "missing field 'ctrl_deps' (the parent node's id)");
  n.parent = *parent;
  if (const JsonValue* dur = v.find("dur")) {
    const std::optional<double> us = dur->as_double();
    if (!us || *us < 0 || *us > 1e12)
      fail_node(source, n, "field 'dur': expected microseconds 0..1e12");
    n.dur_us = *us;
  }
  if (const JsonValue* attrs = v.find("attrs"); attrs != nullptr && attrs->type == JsonValue::Type::Array)
    for (const JsonValue& a : attrs->items) {
      const JsonValue* an = a.find("name");
      if (an != nullptr && an->type == JsonValue::Type::String && an->text == "rf_id")
        if (const std::optional<int64_t> rf = integer(a.find("value")); rf && *rf >= 0)
          n.rf_id = *rf;
    }
  n.inputs = read_args(v, n, "inputs", source);
  n.outputs = read_args(v, n, "outputs", source);
  return n;
}

std::vector<EtTensor> arg_tensors(const EtNode& n, const EtArg& arg, const std::string& source)
{
  std::vector<EtTensor> out;
  if (arg.type.find("Tensor") != std::string::npos || arg.type.empty())
    collect_tensors(n, *arg.value, arg.shape, out, 0, source);
  return out;
}

std::vector<EtTensor> tensors(const EtNode& n, const std::vector<EtArg>& args, const std::string& source)
{
  std::vector<EtTensor> out;
  for (const EtArg& a : args) {
    std::vector<EtTensor> t = arg_tensors(n, a, source);
    out.insert(out.end(), t.begin(), t.end());
  }
  return out;
}

double total_bytes(const std::vector<EtTensor>& ts)
{
  double b = 0;
  for (const EtTensor& t : ts)
    b += t.bytes();
  return b;
}

// Ops that launch no GPU work: allocations, views, metadata queries, autograd bookkeeping.
bool launches_no_kernel(std::string_view name)
{
  static const std::set<std::string, std::less<>> names = {"empty",
                                                           "empty_strided",
                                                           "empty_like",
                                                           "as_strided",
                                                           "view",
                                                           "_unsafe_view",
                                                           "reshape",
                                                           "_reshape_alias",
                                                           "select",
                                                           "slice",
                                                           "narrow",
                                                           "detach",
                                                           "detach_",
                                                           "lift_fresh",
                                                           "is_same_size",
                                                           "t",
                                                           "transpose",
                                                           "permute",
                                                           "expand",
                                                           "expand_as",
                                                           "unsqueeze",
                                                           "squeeze",
                                                           "alias",
                                                           "resize_",
                                                           "set_",
                                                           "size",
                                                           "stride",
                                                           "numel",
                                                           "dim",
                                                           "contiguous",
                                                           "split",
                                                           "chunk",
                                                           "unbind",
                                                           "view_as",
                                                           "as_strided_",
                                                           "record_stream",
                                                           "split_with_sizes",
                                                           "_has_compatible_shallow_copy_type",
                                                           "to",
                                                           "is_nonzero",
                                                           "result_type",
                                                           "flatten",
                                                           "unflatten",
                                                           "values",
                                                           "indices",
                                                           "_nested_tensor_from_mask_left_aligned",
                                                           "storage_offset",
                                                           "is_contiguous"};
  if (starts_with(name, "aten::"))
    name.remove_prefix(6);
  return names.count(name) != 0;
}

// GEMM-like aten ops: FLOPs and a GEMM shape from the tensor shapes.
std::optional<GemmWork> gemm_like_work(const EtNode& n, const std::string& source)
{
  std::string_view name = n.name;
  if (!starts_with(name, "aten::"))
    return std::nullopt;
  name.remove_prefix(6);
  const auto in = [&](size_t i) {
    std::vector<EtTensor> t = i < n.inputs.size() ? arg_tensors(n, n.inputs[i], source) : std::vector<EtTensor>{};
    return t.size() == 1 ? std::optional<EtTensor>(t[0]) : std::nullopt;
  };
  traces::GemmShape g;
  double flops = 0;
  const auto gemm = [&](double m, double nn, double k, double batch) {
    flops = 2 * m * nn * k * batch;
    if (m >= 1 && nn >= 1 && k >= 1 && batch >= 1 && m * nn * k * batch < 9e18)
      g = {static_cast<int64_t>(m), static_cast<int64_t>(nn), static_cast<int64_t>(k), static_cast<int64_t>(batch)};
  };
  if (name == "mm" || name == "addmm" || name == "bmm" || name == "baddbmm" || name == "addbmm") {
    const size_t first = name == "mm" || name == "bmm" ? 0 : 1;
    const auto a = in(first), b = in(first + 1);
    const size_t rank = name == "mm" || name == "addmm" ? 2 : 3;
    if (!a || !b || a->shape.size() != rank || b->shape.size() != rank)
      return std::nullopt;
    gemm(static_cast<double>(a->shape[rank - 2]), static_cast<double>(b->shape[rank - 1]),
         static_cast<double>(a->shape[rank - 1]), rank == 3 ? static_cast<double>(a->shape[0]) : 1);
  } else if (name == "matmul") {
    const auto a = in(0), b = in(1);
    if (!a || !b || a->shape.empty() || b->shape.empty())
      return std::nullopt;
    const auto& as = a->shape;
    const auto& bs = b->shape;
    const double k = static_cast<double>(as.back());
    const double m = as.size() >= 2 ? static_cast<double>(as[as.size() - 2]) : 1;
    const double nn = bs.size() >= 2 ? static_cast<double>(bs.back()) : 1;
    const double a_batch = as.size() > 2 ? product(as, 0, as.size() - 2) : 1;
    const double b_batch = bs.size() > 2 ? product(bs, 0, bs.size() - 2) : 1;
    if (bs.size() <= 2) // (..., m, k) x (k, n): the batch folds into m
      gemm(m * a_batch, nn, k, 1);
    else
      gemm(m, nn, k, std::max(a_batch, b_batch));
  } else if (name == "linear") {
    const auto x = in(0), w = in(1);
    if (!x || !w || x->shape.empty() || w->shape.size() != 2)
      return std::nullopt;
    gemm(product(x->shape, 0, x->shape.size() - 1), static_cast<double>(w->shape[0]),
         static_cast<double>(x->shape.back()), 1);
  } else if (starts_with(name, "_scaled_dot_product") || name == "scaled_dot_product_attention") {
    // q (b, h, s_q, d), k (b, h, s_k, d), v (b, h, s_k, d_v): Q K^T and P V.
    const auto q = in(0), k = in(1), v = in(2);
    if (!q || !k || !v || q->shape.size() != 4 || k->shape.size() != 4 || v->shape.size() != 4)
      return std::nullopt;
    const double batch = static_cast<double>(q->shape[0]) * static_cast<double>(q->shape[1]);
    const double sq = static_cast<double>(q->shape[2]), sk = static_cast<double>(k->shape[2]);
    gemm(sq, sk, static_cast<double>(q->shape[3]), batch);
    flops += 2 * sq * sk * static_cast<double>(v->shape[3]) * batch;
    if (name.find("backward") != std::string_view::npos)
      flops *= 2.5; // dQ, dK, dV and the recomputed scores: 5 products instead of 2
  } else if (name == "convolution" || name == "_convolution" || name == "conv1d" || name == "conv2d" ||
             name == "conv3d" || name == "cudnn_convolution" || name == "convolution_backward") {
    // Implicit GEMM: m = output positions, n = output channels, k = input channels per group x kernel size.
    const bool backward = name == "convolution_backward";
    const auto out = backward ? in(0) : [&] {
      std::vector<EtTensor> t = n.outputs.empty() ? std::vector<EtTensor>{} : arg_tensors(n, n.outputs[0], source);
      return t.size() == 1 ? std::optional<EtTensor>(t[0]) : std::nullopt;
    }();
    const auto w = in(backward ? 2 : 1);
    if (!out || !w || w->shape.empty() || w->shape[0] == 0)
      return std::nullopt;
    const double channels = static_cast<double>(w->shape[0]);
    gemm(out->numel / channels, channels, product(w->shape, 1, w->shape.size()), 1);
    if (backward)
      flops *= 2; // the input gradient and the weight gradient
  } else {
    return std::nullopt;
  }
  if (!std::isfinite(flops))
    fail_node(source, n, "FLOPs out of range (tensor shapes too large)");
  return GemmWork{flops, g, total_bytes(tensors(n, n.inputs, source)) + total_bytes(tensors(n, n.outputs, source))};
}

} // namespace gputwin::chakra::et
