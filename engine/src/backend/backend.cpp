#include "gputwin/engine/backend/backend.hpp"

#include <cstring>
#include <stdexcept>

namespace gputwin::engine {

namespace {
void check_host(const char* what, const Tensor& t, int64_t bytes)
{
  if (bytes < 0 || bytes > t.bytes())
    throw std::logic_error(std::string(what) + ": " + std::to_string(bytes) + " bytes of " + t.describe());
  if (t.device() != Device::Cpu)
    throw std::logic_error(std::string(what) + ": " + t.describe() + " is on " + to_string(t.device()) +
                           ", which this backend cannot reach");
}
} // namespace

namespace {
[[noreturn]] void no_moe_kernels(const std::string& backend)
{
  throw std::logic_error(backend + " backend: no mixture-of-experts kernels");
}
} // namespace

void Backend::router_topk_forward(Tensor&, Tensor&, Tensor&, const Tensor&, int64_t, int64_t, int64_t)
{
  no_moe_kernels(name());
}
void Backend::router_topk_backward(Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t,
                                   int64_t, int64_t)
{
  no_moe_kernels(name());
}
void Backend::moe_permute_forward(Tensor&, const Tensor&, const Tensor&, int64_t, int64_t, int64_t)
{
  no_moe_kernels(name());
}
void Backend::moe_permute_backward(Tensor&, const Tensor&, const Tensor&, int64_t, int64_t, int64_t)
{
  no_moe_kernels(name());
}
void Backend::moe_unpermute_forward(Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t, int64_t, int64_t)
{
  no_moe_kernels(name());
}
void Backend::moe_unpermute_backward(Tensor&, Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                     int64_t, int64_t, int64_t)
{
  no_moe_kernels(name());
}

void Backend::flash_attention_forward(Tensor&, Tensor&, Tensor&, const Tensor&, const AttentionDims&,
                                      const DropoutSite&)
{
  throw std::logic_error(name() + " backend: no fused attention kernel (--attention flash)");
}

void Backend::flash_attention_backward(Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                       const Tensor&, const AttentionDims&, const DropoutSite&)
{
  throw std::logic_error(name() + " backend: no fused attention kernel (--attention flash)");
}

void Backend::upload(const Tensor& dst, const void* host, int64_t bytes)
{
  check_host("upload", dst, bytes);
  if (bytes > 0)
    std::memcpy(dst.raw(), host, static_cast<size_t>(bytes));
}

void Backend::download(void* host, const Tensor& src, int64_t bytes)
{
  check_host("download", src, bytes);
  if (bytes > 0)
    std::memcpy(host, src.raw(), static_cast<size_t>(bytes));
}

void Backend::copy_bytes(const Tensor& dst, const Tensor& src, int64_t bytes)
{
  check_host("copy_bytes", dst, bytes);
  check_host("copy_bytes", src, bytes);
  if (bytes > 0 && dst.raw() != src.raw())
    std::memmove(dst.raw(), src.raw(), static_cast<size_t>(bytes));
}

} // namespace gputwin::engine
