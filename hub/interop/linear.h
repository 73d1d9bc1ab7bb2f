// Shape values the importers keep while they are known only at run time but
// linear in run-time dims: value + the sum of coefficient x dim over the
// terms (GPT-2's key_length - query_length, a transformer's batch x heads
// for a constant heads). Dim identifies one dim of one tensor, each
// importer its own way. Shared by the ONNX and TensorFlow importers.
// Internal to hub/interop; not installed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "hub/ops/scope.h"

namespace hub::interop {

template <class Dim>
struct Linear {
  int64_t value = 0;
  std::vector<std::pair<Dim, int64_t>> terms;  // (dim, coefficient), no zero coefficients
  // One dim as it is (no constant, coefficient 1).
  bool is_dim() const { return value == 0 && terms.size() == 1 && terms[0].second == 1; }
};

// x + k * y: terms of one dim merged, zero ones dropped; nullopt past int64.
template <class Dim>
std::optional<Linear<Dim>> linear_sum(Linear<Dim> x, const Linear<Dim>& y, int64_t k) {
  int64_t scaled = 0;
  if (__builtin_mul_overflow(y.value, k, &scaled) || __builtin_add_overflow(x.value, scaled, &x.value))
    return std::nullopt;
  for (const auto& term : y.terms) {
    int64_t c = 0;
    if (__builtin_mul_overflow(term.second, k, &c)) return std::nullopt;
    auto same = std::find_if(x.terms.begin(), x.terms.end(), [&](const auto& t) { return t.first == term.first; });
    if (same == x.terms.end())
      x.terms.emplace_back(term.first, c);
    else if (__builtin_add_overflow(same->second, c, &same->second))
      return std::nullopt;
  }
  x.terms.erase(std::remove_if(x.terms.begin(), x.terms.end(), [](const auto& t) { return t.second == 0; }),
                x.terms.end());
  return x;
}

// Linear values over dims of tensors in the graph being built, as one
// tensor computed at run time (hub/interop/linear.cc): each element's dims
// read from their tensors' Shape, times their coefficients, summed with its
// constant; an int64 vector of them, or the one as a scalar, in `dtype`.
Output run_time_tensor(const Scope& s, const std::vector<Linear<std::pair<Output, int>>>& elements, bool scalar,
                       DType dtype);
// Dim `dim` of `x` at run time plus `offset`, as an int64 scalar (a loop's
// number of steps, a list's length).
Output run_time_dim(const Scope& s, Output x, int dim, int64_t offset = 0);

}  // namespace hub::interop
