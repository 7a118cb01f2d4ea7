#pragma once
// 64-bit integer arithmetic that reports overflow as an InputError instead of wrapping silently.

#include "gputwin/common/input_error.hpp"

#include <cstdint>
#include <initializer_list>
#include <string>

namespace gputwin {

// Product of `factors`; throws InputError naming `what` if it does not fit in int64_t.
inline int64_t checked_product(std::initializer_list<int64_t> factors, const char* what)
{
  int64_t product = 1;
  for (const int64_t f : factors)
    if (__builtin_mul_overflow(product, f, &product))
      throw InputError(std::string(what) + ": the sizes given overflow 64-bit arithmetic (expected smaller values)");
  return product;
}

// a + b; throws InputError naming `what` on overflow.
inline int64_t checked_sum(int64_t a, int64_t b, const char* what)
{
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum))
    throw InputError(std::string(what) + ": the sizes given overflow 64-bit arithmetic (expected smaller values)");
  return sum;
}

} // namespace gputwin
