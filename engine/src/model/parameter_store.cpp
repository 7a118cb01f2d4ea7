#include "gputwin/engine/model/parameter_store.hpp"

#include "gputwin/engine/backend/counter_rng.hpp"
#include "gputwin/engine/backend/host_access.hpp"

#include <cmath>
#include <stdexcept>

namespace gputwin::engine {

namespace {

uint64_t name_hash(const std::string& name)
{
  uint64_t h = 1469598103934665603ull; // FNV-1a
  for (const char c : name)
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

// Local extent of a split dimension of `logical` elements (`padded` with padding, 0: none) over `tp` ranks
// in `blocks` blocks.
int64_t split_extent(int64_t logical, int64_t padded, int64_t blocks, int64_t tp, const std::string& name)
{
  if (padded > 0) {
    if (blocks != 1 || padded < logical || padded % tp != 0)
      throw std::logic_error("parameter " + name + ": padding " + std::to_string(padded) + " of " +
                             std::to_string(logical) + " rows does not split over " + std::to_string(tp) + " ranks");
    return padded / tp;
  }
  if (blocks == 1)
    return (logical + tp - 1) / tp; // the last shard is padded
  if (logical % (blocks * tp) != 0)
    throw std::logic_error("parameter " + name + ": " + std::to_string(logical) + " does not split into " +
                           std::to_string(blocks) + " blocks over " + std::to_string(tp) + " ranks");
  return logical / tp;
}

} // namespace

ParameterSpec word_embedding_spec(const RankContext& ctx)
{
  ParameterSpec spec{"embedding.word", ctx.model.vocab, ctx.hidden(), Sharding{0, 1}, ParameterInit::Normal, false};
  spec.padded_rows = ctx.vocab_local() * ctx.tp_size();
  return spec;
}

ParameterSpec output_weight_spec(const RankContext& ctx)
{
  ParameterSpec spec = word_embedding_spec(ctx);
  spec.name = "output.weight";
  return spec;
}

Parameter& ParameterStore::add(const RankContext& ctx, ParameterSpec spec)
{
  if (weights_.defined())
    throw std::logic_error("ParameterStore::add after finalize");
  Parameter p;
  p.local_rows = spec.rows;
  p.local_cols = spec.cols;
  if (spec.sharding.dim == 0)
    p.local_rows = split_extent(spec.rows, spec.padded_rows, spec.sharding.blocks, ctx.tp_size(), spec.name);
  if (spec.sharding.dim == 1 && !spec.sharding.block_extents.empty()) {
    int64_t total = 0;
    for (const int64_t extent : spec.sharding.block_extents) {
      if (extent % ctx.tp_size() != 0)
        throw std::logic_error("parameter " + spec.name + ": a block of " + std::to_string(extent) +
                               " columns does not split over " + std::to_string(ctx.tp_size()) + " ranks");
      total += extent;
    }
    if (total != spec.cols)
      throw std::logic_error("parameter " + spec.name + ": blocks of " + std::to_string(total) + " columns, not " +
                             std::to_string(spec.cols));
    p.local_cols = spec.cols / ctx.tp_size();
  } else if (spec.sharding.dim == 1) {
    p.local_cols = split_extent(spec.cols, 0, spec.sharding.blocks, ctx.tp_size(), spec.name);
  }
  p.offset = total_;
  p.spec = std::move(spec);
  total_ += p.numel();
  parameters_.push_back(std::move(p));
  return parameters_.back();
}

std::vector<float> ParameterStore::finalize(RankContext& ctx, int64_t padded_elements)
{
  // Dense parameters first, then the experts', each group in declaration order.
  int64_t offset = 0;
  for (const bool expert : {false, true})
    for (Parameter& p : parameters_)
      if (p.spec.expert == expert) {
        p.offset = offset;
        offset += p.numel();
      }
  weights_ = ctx.tensor(MemoryPurpose::Weights, DType::BF16, {padded_elements});
  grads_ = ctx.tensor(MemoryPurpose::Gradients, DType::F32, {padded_elements});
  std::vector<float> master(static_cast<size_t>(padded_elements), 0.0f);
  std::vector<uint16_t> weights(static_cast<size_t>(padded_elements), 0); // bf16 bits, uploaded at the end
  for (Parameter& p : parameters_) {
    p.weight = weights_.view(p.offset, {p.local_rows, p.local_cols});
    p.grad = grads_.view(p.offset, {p.local_rows, p.local_cols});
    for (int64_t i = 0; i < p.numel(); ++i) {
      const int64_t logical = logical_index(p, i, ctx.coords.tp, ctx.tp_size());
      const float value = logical < 0 ? 0.0f : initial_value(p.spec, logical, ctx.options, ctx.model.layers);
      master[static_cast<size_t>(p.offset + i)] = value;
      weights[static_cast<size_t>(p.offset + i)] = float_to_bf16(value);
    }
  }
  upload(ctx.backend, weights_, weights);
  return master;
}

int64_t ParameterStore::dense_elements() const
{
  int64_t n = 0;
  for (const Parameter& p : parameters_)
    if (!p.spec.expert)
      n += p.numel();
  return n;
}

Parameter* ParameterStore::find(const std::string& name)
{
  for (Parameter& p : parameters_)
    if (p.spec.name == name)
      return &p;
  return nullptr;
}

int64_t logical_index(const Parameter& p, int64_t local, int64_t tp_rank, int64_t tp)
{
  int64_t row = local / p.local_cols, col = local % p.local_cols;
  const Sharding& s = p.spec.sharding;
  if (s.dim == 0) {
    const int64_t per_part = p.local_rows / s.blocks, block = row / per_part;
    row = block * (p.spec.rows / s.blocks) + tp_rank * per_part + row % per_part;
    if (row >= p.spec.rows)
      return -1;
  } else if (s.dim == 1 && !s.block_extents.empty()) {
    int64_t local_start = 0, logical_start = 0; // of the block holding `col`
    for (const int64_t extent : s.block_extents) {
      const int64_t share = extent / tp;
      if (col < local_start + share) {
        col = logical_start + tp_rank * share + (col - local_start);
        break;
      }
      local_start += share;
      logical_start += extent;
    }
  } else if (s.dim == 1) {
    const int64_t per_part = p.local_cols / s.blocks, block = col / per_part;
    col = block * (p.spec.cols / s.blocks) + tp_rank * per_part + col % per_part;
    if (col >= p.spec.cols)
      return -1;
  }
  return row * p.spec.cols + col;
}

float initial_value(const ParameterSpec& spec, int64_t index, const EngineOptions& options, int64_t layers)
{
  switch (spec.init) {
  case ParameterInit::Ones: return 1.0f;
  case ParameterInit::Zeros: return 0.0f;
  case ParameterInit::Normal:
  case ParameterInit::ScaledNormal: break;
  }
  // Box-Muller from two counter-based uniforms keyed by (seed, name, element).
  const uint64_t key = mix64(options.seed ^ name_hash(spec.name));
  const double u1 = static_cast<double>(counter_uniform(key, static_cast<uint64_t>(2 * index))) + 0.5 / 16777216.0;
  const double u2 = static_cast<double>(counter_uniform(key, static_cast<uint64_t>(2 * index + 1)));
  const double normal = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  double std_dev = options.init_std;
  if (spec.init == ParameterInit::ScaledNormal) // GPT-2: residual projections scaled by 1/sqrt(2L)
    std_dev /= std::sqrt(2.0 * static_cast<double>(layers));
  return static_cast<float>(normal * std_dev);
}

} // namespace gputwin::engine
