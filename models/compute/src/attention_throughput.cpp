#include "gputwin/models/attention_throughput.hpp"

#include <cmath>
#include <stdexcept>

namespace gputwin {

namespace {

constexpr double tflops = 1e12;

// One head dim's curves from the paper's cuDNN bars: the causal forward, the non-causal forward and the
// non-causal backward; the causal backward is the non-causal one times the forward's causal / non-causal ratio
// at the same length (the causal backward skips the same tiles).
AttentionThroughput::HeadDimCurve curve(double head_dim, const std::vector<double>& causal_forward,
                                        const std::vector<double>& dense_forward,
                                        const std::vector<double>& dense_backward)
{
  AttentionThroughput::HeadDimCurve c;
  c.head_dim = head_dim;
  for (size_t i = 0; i < causal_forward.size(); ++i) {
    c.forward_flops_s.push_back(causal_forward[i] * tflops);
    c.backward_flops_s.push_back(dense_backward[i] * causal_forward[i] / dense_forward[i] * tflops);
  }
  return c;
}

AttentionThroughput h100_cudnn()
{
  AttentionThroughput a;
  a.name = "h100-cudnn";
  a.reference_peak_flops = 989e12; // H100 SXM5 dense bf16
  a.seq = {512, 1024, 2048, 4096, 8192, 16384};
  // FlashAttention-3 (arXiv:2407.08608) Figures 5 (forward, causal and not) and 6 (backward, not causal), the
  // cuDNN bars, BF16, H100 SXM5 80GB.
  a.head_dims.push_back(curve(64, {225, 288, 334, 363, 379, 388}, {335, 373, 395, 408, 412, 413},
                              {266, 348, 395, 417, 432, 433}));
  const std::vector<double> causal_128 = {315, 410, 484, 518, 529, 539}, backward_128 = {305, 408, 465, 499, 518, 516};
  a.head_dims.push_back(curve(128, causal_128, {497, 574, 617, 609, 600, 595}, backward_128));
  // Head dim 256: Figure 5's forward bars; the paper shows no cuDNN backward at 256, so the backward is head dim
  // 128's scaled by the forward's 256 / 128 ratio at each length (an assumption, not a measurement).
  const std::vector<double> causal_256 = {308, 391, 450, 483, 497, 509}, dense_256 = {470, 546, 580, 581, 580, 581};
  std::vector<double> backward_256;
  for (size_t i = 0; i < causal_256.size(); ++i)
    backward_256.push_back(backward_128[i] * causal_256[i] / causal_128[i]);
  a.head_dims.push_back(curve(256, causal_256, dense_256, backward_256));
  return a;
}

// Linear interpolation between (x0, y0) and (x1, y1) in log2(x), at `at`.
double log2_between(double x0, double y0, double x1, double y1, double at)
{
  const double w = (std::log2(at) - std::log2(x0)) / (std::log2(x1) - std::log2(x0));
  return y0 + w * (y1 - y0);
}

// Linear interpolation of y over x in log2(x), clamped to the end values.
double log2_interpolate(const std::vector<double>& x, const std::vector<double>& y, double at)
{
  if (at <= x.front())
    return y.front();
  if (at >= x.back())
    return y.back();
  size_t i = 1;
  while (x[i] < at)
    ++i;
  return log2_between(x[i - 1], y[i - 1], x[i], y[i], at);
}

} // namespace

double AttentionThroughput::flops_per_s(double keys, double head_dim, bool forward, double peak_flops) const
{
  if (seq.empty() || head_dims.empty() || !(keys > 0) || !(head_dim > 0))
    throw std::invalid_argument("AttentionThroughput::flops_per_s: empty curve, no keys or no head dim");
  // One head dim's throughput at `keys`; below the first length it falls in proportion to the keys (fewer tiles
  // than SMs fill).
  const auto at_keys = [&](const HeadDimCurve& c) {
    const std::vector<double>& y = forward ? c.forward_flops_s : c.backward_flops_s;
    return keys <= seq.front() ? y.front() * keys / seq.front() : log2_interpolate(seq, y, keys);
  };
  const double scale = reference_peak_flops > 0 ? peak_flops / reference_peak_flops : 1.0;
  if (head_dim <= head_dims.front().head_dim)
    return at_keys(head_dims.front()) * scale;
  if (head_dim >= head_dims.back().head_dim)
    return at_keys(head_dims.back()) * scale;
  size_t i = 1;
  while (head_dims[i].head_dim < head_dim)
    ++i;
  const HeadDimCurve &below = head_dims[i - 1], &above = head_dims[i];
  return log2_between(below.head_dim, at_keys(below), above.head_dim, at_keys(above), head_dim) * scale;
}

const AttentionThroughput* builtin_attention_throughput(const std::string& name)
{
  static const AttentionThroughput h100 = h100_cudnn();
  return name == h100.name ? &h100 : nullptr;
}

double causal_benchmark_flops(double m, double n, double k, double batch, bool forward)
{
  return 0.5 * 2.0 * m * n * k * batch * (forward ? 2.0 : 5.0);
}

} // namespace gputwin
