#include "gputwin/models/combined_step.hpp"

#include "gputwin/models/op_emitter.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gputwin {

namespace {

bool is_exchange(const traces::Op& op)
{
  return op.name == op_name(OpName::MoeDispatch) || op.name == op_name(OpName::MoeCombine) ||
         op.name == op_name(OpName::MoeCombineBwd) || op.name == op_name(OpName::MoeDispatchBwd);
}

// A half-open index range of the program.
struct Span {
  size_t begin = 0, end = 0;
};

// One layer of a step, cut at its token exchanges (combined_step.hpp). Forward: pre-dispatch (attention, router,
// permute), dispatch, mlp (experts), combine, the rest (unpermute, shared experts, residual). Backward: the part
// before the combine's backward (residual, shared experts, unpermute), combine backward, mlp backward, dispatch
// backward, pre-dispatch backward (permute, router, attention). A layer without exchanges is one part.
struct LayerParts {
  Span before, first_exchange, middle, second_exchange, after;
};

// The layers of `step` in emission order: runs of ops whose layer lies in the step's chunk (other ops between
// them join the run they interrupt); `pre` and `post` are what comes before the first and after the last.
struct StepLayout {
  Span pre, post;
  std::vector<Span> layers;
};

bool in_chunk(const traces::Op& op, const EmittedStep& step)
{
  return op.layer >= step.first_layer && op.layer < step.first_layer + step.layers;
}

StepLayout layout(const std::vector<traces::Op>& ops, const EmittedStep& step)
{
  StepLayout l;
  size_t first = step.end, last = step.end;
  for (size_t i = step.begin; i < step.end; ++i)
    if (in_chunk(ops[i], step)) {
      if (first == step.end)
        first = i;
      last = i;
    }
  if (first == step.end) {
    l.pre = {step.begin, step.end};
    l.post = {step.end, step.end};
    return l;
  }
  l.pre = {step.begin, first};
  l.post = {last + 1, step.end};
  size_t run = first;
  for (size_t i = first + 1; i <= last; ++i)
    if (in_chunk(ops[i], step) && ops[i].layer != ops[run].layer) {
      l.layers.push_back({run, i});
      run = i;
    }
  l.layers.push_back({run, last + 1});
  return l;
}

LayerParts cut(const std::vector<traces::Op>& ops, Span layer, bool forward)
{
  const char* first_name = op_name(forward ? OpName::MoeDispatch : OpName::MoeCombineBwd);
  const char* second_name = op_name(forward ? OpName::MoeCombine : OpName::MoeDispatchBwd);
  size_t first = layer.end, second = layer.end;
  for (size_t i = layer.begin; i < layer.end; ++i) {
    if (first == layer.end && ops[i].name == first_name)
      first = i;
    else if (first != layer.end && second == layer.end && ops[i].name == second_name)
      second = i;
  }
  LayerParts p;
  if (first == layer.end || second == layer.end) { // no token exchange: the layer is one part
    (forward ? p.before : p.after) = layer;
    return p;
  }
  p.before = {layer.begin, first};
  p.first_exchange = {first, first + 1};
  p.middle = {first + 1, second};
  p.second_exchange = {second, second + 1};
  p.after = {second + 1, layer.end};
  return p;
}

void append(std::vector<size_t>& order, Span s)
{
  for (size_t i = s.begin; i < s.end; ++i)
    order.push_back(i);
}

bool is_weight_gradient(const traces::Op& op)
{
  return op.name.size() >= 6 && op.name.compare(op.name.size() - 6, 6, ".wgrad") == 0;
}

// The token exchanges of [begin, end) leave the compute stream: each waits for the compute op before it and the
// next compute op waits for it (what their place on the compute stream implied). With `delay_wgrad` an exchange
// waits for the last compute op before it that is not a weight gradient: the data it sends is ready before them.
void move_exchanges_to_ep_stream(std::vector<traces::Op>& ops, Span step, bool delay_wgrad)
{
  int64_t last_compute = -1, last_data = -1;
  std::vector<size_t> pending; // exchanges the next compute op waits for
  for (size_t i = step.begin; i < step.end; ++i) {
    traces::Op& op = ops[i];
    if (op.stream != compute_stream)
      continue;
    if (is_exchange(op)) {
      op.stream = ep_stream;
      const int64_t producer = delay_wgrad ? last_data : last_compute;
      if (producer >= 0)
        op.deps.push_back(producer);
      pending.push_back(i);
      continue;
    }
    for (const size_t x : pending)
      op.deps.push_back(ops[x].id);
    pending.clear();
    last_compute = op.id;
    if (!is_weight_gradient(op))
      last_data = op.id;
  }
}

} // namespace

std::vector<int64_t> combine_steps(std::vector<traces::Op>& ops, const EmittedStep& first, const EmittedStep& second,
                                   bool delay_wgrad)
{
  if (first.end != second.begin || first.forward == second.forward || second.end > ops.size())
    throw std::invalid_argument("combine_steps: expected two adjacent steps, one forward and one backward");
  const size_t begin = first.begin, end = second.end;
  for (size_t i = begin; i < end; ++i)
    if (ops[i].id != static_cast<int64_t>(i))
      throw std::invalid_argument("combine_steps: op ids are not the program's indices");
  const EmittedStep& f = first.forward ? first : second;
  const EmittedStep& b = first.forward ? second : first;
  move_exchanges_to_ep_stream(ops, {f.begin, f.end}, false);
  move_exchanges_to_ep_stream(ops, {b.begin, b.end}, delay_wgrad);

  const StepLayout fl = layout(ops, f), bl = layout(ops, b);
  std::vector<size_t> order;
  order.reserve(end - begin);
  append(order, fl.pre);
  append(order, bl.pre);
  for (size_t k = 0; k < std::max(fl.layers.size(), bl.layers.size()); ++k) {
    const LayerParts fp = k < fl.layers.size() ? cut(ops, fl.layers[k], true) : LayerParts{};
    const LayerParts bp = k < bl.layers.size() ? cut(ops, bl.layers[k], false) : LayerParts{};
    append(order, bp.before);          // the backward's residual, shared experts, unpermute
    append(order, bp.first_exchange);  // comm: combine backward
    append(order, fp.before);          // compute: pre-dispatch forward
    append(order, bp.middle);          // compute: mlp backward and its weight gradients
    append(order, fp.first_exchange);  // comm: dispatch forward
    append(order, bp.second_exchange); // comm: dispatch backward
    append(order, fp.middle);          // compute: mlp forward
    append(order, fp.second_exchange); // comm: combine forward
    append(order, bp.after);           // compute: pre-dispatch backward
    append(order, fp.after);           // compute: unpermute, shared experts, residual
  }
  append(order, fl.post);
  append(order, bl.post);
  if (order.size() != end - begin)
    throw std::logic_error("combine_steps: the combined order lost or repeated ops");

  std::vector<int64_t> new_id(end - begin);
  for (size_t pos = 0; pos < order.size(); ++pos)
    new_id[order[pos] - begin] = static_cast<int64_t>(begin + pos);
  // The two steps are independent (another micro-batch or chunk): a dependency of one on the other is only what
  // emitting them one after the other implied (an op waiting for "the last compute op", which was the other step's)
  // and is dropped; the compute stream's new order says what runs first.
  const auto second_step = [&](int64_t index) { return index >= static_cast<int64_t>(second.begin); };
  std::vector<traces::Op> reordered;
  reordered.reserve(order.size());
  for (const size_t old : order) {
    traces::Op op = std::move(ops[old]);
    op.id = new_id[old - begin];
    std::erase_if(op.deps, [&](int64_t dep) {
      return dep >= static_cast<int64_t>(begin) && dep < static_cast<int64_t>(end) &&
             second_step(dep) != second_step(static_cast<int64_t>(old));
    });
    for (int64_t& dep : op.deps)
      if (dep >= static_cast<int64_t>(begin) && dep < static_cast<int64_t>(end))
        dep = new_id[static_cast<size_t>(dep) - begin];
    reordered.push_back(std::move(op));
  }
  std::move(reordered.begin(), reordered.end(), ops.begin() + static_cast<std::ptrdiff_t>(begin));
  return new_id;
}

} // namespace gputwin
