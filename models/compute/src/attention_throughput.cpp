#include "gputwin/models/attention_throughput.hpp"

#include <cmath>
#include <stdexcept>

namespace gputwin {

namespace {

AttentionThroughput h100_cudnn()
{
  AttentionThroughput a;
  a.name = "h100-cudnn";
  a.reference_peak_flops = 989e12; // H100 SXM5 dense bf16
  a.seq = {512, 1024, 2048, 4096, 8192, 16384};
  // FlashAttention-3 (arXiv:2407.08608) Figure 5, cuDNN, head dim 128: causal and non-causal forward.
  const std::vector<double> causal_forward = {315, 410, 484, 518, 529, 539};
  const std::vector<double> dense_forward = {497, 574, 617, 609, 600, 595};
  // Figure 6, cuDNN, head dim 128, backward without causal mask.
  const std::vector<double> dense_backward = {305, 408, 465, 499, 518, 516};
  for (size_t i = 0; i < a.seq.size(); ++i) {
    a.forward_flops_s.push_back(causal_forward[i] * 1e12);
    a.backward_flops_s.push_back(dense_backward[i] * causal_forward[i] / dense_forward[i] * 1e12);
  }
  return a;
}

} // namespace

double AttentionThroughput::flops_per_s(double keys, bool forward, double peak_flops) const
{
  if (seq.empty() || !(keys > 0))
    throw std::invalid_argument("AttentionThroughput::flops_per_s: empty curve or no keys");
  const std::vector<double>& y = forward ? forward_flops_s : backward_flops_s;
  const double scale = reference_peak_flops > 0 ? peak_flops / reference_peak_flops : 1.0;
  if (keys <= seq.front())
    return y.front() * keys / seq.front() * scale;
  if (keys >= seq.back())
    return y.back() * scale;
  size_t i = 1;
  while (seq[i] < keys)
    ++i;
  const double w = (std::log2(keys) - std::log2(seq[i - 1])) / (std::log2(seq[i]) - std::log2(seq[i - 1]));
  return (y[i - 1] + w * (y[i] - y[i - 1])) * scale;
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
