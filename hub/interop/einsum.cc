// Einsum as hub ops (hub/interop/einsum.h): any number of float32 operands,
// contracted left to right, each pair as one BatchMatMul of [batch, own,
// shared] by [batch, shared, own] (labels summed early where nothing else
// needs them); "..." and broadcast batch dims; the implicit output.
#include "hub/interop/einsum.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "hub/core/error.h"
#include "hub/ops/array.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/reduction.h"

namespace hub::interop {

namespace {

// One operand: its value and a label per dim.
struct Labelled {
  Output value;
  std::string labels;
};

[[noreturn]] void fail(Code code, const std::string& equation, const std::string& why) {
  throw_error(code, "equation '" + equation + "' " + why);
}

// The labels of each operand and of the output; "..." becomes one label per
// dim it stands for (right-aligned across operands, as broadcasting is), the
// implicit output is the labels used once, ellipsis dims first.
std::pair<std::vector<std::string>, std::string> parse(const std::string& equation, const std::vector<Shape>& shapes) {
  auto bad = [&](const std::string& why) { fail(Code::kInvalidArgument, equation, why); };
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t at = 0;;) {
    const size_t comma = lhs.find(',', at);
    terms.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (terms.size() != shapes.size())
    bad("names " + std::to_string(terms.size()) + " operands for " + std::to_string(shapes.size()) + " inputs");
  int ellipsis_dims = 0;
  auto letters_of = [&](const std::string& term) {
    const size_t dots = term.find("...");
    std::string letters = dots == std::string::npos ? term : term.substr(0, dots) + term.substr(dots + 3);
    for (char ch : letters)
      if (!std::isalpha(static_cast<unsigned char>(ch)))
        bad("has a character that is no letter: '" + std::string(1, ch) + "'");
    return letters;
  };
  for (size_t i = 0; i < terms.size(); ++i) {
    const int extra = shapes[i].rank() - static_cast<int>(letters_of(terms[i]).size());
    const bool dots = terms[i].find("...") != std::string::npos;
    if (extra < 0 || (!dots && extra != 0))
      bad("has term '" + terms[i] + "', which does not fit input " + std::to_string(i) + " " + shapes[i].to_string());
    ellipsis_dims = std::max(ellipsis_dims, extra);
  }
  if (ellipsis_dims > 10) fail(Code::kUnimplemented, equation, "stands for more than 10 dims with '...'");
  // Ellipsis dims are labelled '0', '1', ... from the left of the widest.
  auto expand = [&](const std::string& term, int dims) {
    const size_t dots = term.find("...");
    if (dots == std::string::npos) return term;
    std::string middle;
    for (int k = ellipsis_dims - dims; k < ellipsis_dims; ++k) middle += static_cast<char>('0' + k);
    return term.substr(0, dots) + middle + term.substr(dots + 3);
  };
  std::vector<std::string> labels;
  for (size_t i = 0; i < terms.size(); ++i)
    labels.push_back(expand(terms[i], shapes[i].rank() - static_cast<int>(letters_of(terms[i]).size())));
  std::string out;
  if (arrow != std::string::npos) {
    const std::string rhs = eq.substr(arrow + 2);
    letters_of(rhs);
    out = expand(rhs, ellipsis_dims);
  } else {
    std::map<char, int> count;
    for (const std::string& l : labels)
      for (char ch : l) ++count[ch];
    for (int k = 0; k < ellipsis_dims; ++k) out += static_cast<char>('0' + k);
    for (const auto& [ch, n] : count)
      if (n == 1 && std::isalpha(static_cast<unsigned char>(ch))) out += ch;
  }
  for (const std::string& l : labels)
    for (size_t a = 0; a < l.size(); ++a)
      if (l.find(l[a], a + 1) != std::string::npos)
        fail(Code::kUnimplemented, equation,
             "repeats label '" + std::string(1, l[a]) + "' within one operand (diagonals are not supported)");
  for (size_t a = 0; a < out.size(); ++a)
    if (out.find(out[a], a + 1) != std::string::npos ||
        std::none_of(labels.begin(), labels.end(),
                     [&](const std::string& l) { return l.find(out[a]) != std::string::npos; }))
      bad("has output label '" + std::string(1, out[a]) + "' repeated or in no operand");
  return {labels, out};
}

// x summed over its labels outside `keep`.
Labelled sum_out(const Scope& s, Labelled x, const std::string& keep) {
  std::vector<int64_t> axes;
  std::string left;
  for (size_t a = 0; a < x.labels.size(); ++a) {
    if (keep.find(x.labels[a]) == std::string::npos)
      axes.push_back(static_cast<int64_t>(a));
    else
      left += x.labels[a];
  }
  if (axes.empty()) return x;
  return {ops::sum(s, x.value, axes, false, "EinsumSum"), left};
}

// x with its dims in the order of `order` (a permutation of its labels).
Output arrange(const Scope& s, const Labelled& x, const std::string& order) {
  std::vector<int64_t> perm;
  for (char ch : order) perm.push_back(static_cast<int64_t>(x.labels.find(ch)));
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  return identity ? x.value : ops::transpose(s, x.value, perm, "EinsumTranspose");
}

// a and b contracted into the labels `keep` needs (in an order of their own):
// batch labels (in both, kept), then a's own, then b's own, as one
// BatchMatMul of [batch.., a's, shared] by [batch.., shared, b's].
Labelled contract(const Scope& s, const std::string& equation, Labelled a, Labelled b, const std::string& keep) {
  a = sum_out(s, a, keep + b.labels);
  b = sum_out(s, b, keep + a.labels);
  std::string batch, shared, own_a, own_b;
  for (char ch : a.labels) {
    if (b.labels.find(ch) == std::string::npos)
      own_a += ch;
    else if (keep.find(ch) != std::string::npos)
      batch += ch;
    else
      shared += ch;
  }
  for (char ch : b.labels)
    if (a.labels.find(ch) == std::string::npos) own_b += ch;
  const Shape sa = s.graph().spec(a.value).shape, sb = s.graph().spec(b.value).shape;
  auto dim = [&](char ch) {
    const size_t at = a.labels.find(ch);
    return at != std::string::npos ? sa[static_cast<int>(at)] : sb[static_cast<int>(b.labels.find(ch))];
  };
  // Batch dims stay as they are (broadcasting where one is 1); each group
  // after them becomes one dim (unknown where one of its sizes is). Each
  // reshape may leave one size unknown.
  auto product = [&](const std::string& group) {
    int64_t n = 1;
    bool unknown = false;
    for (char ch : group) {
      const int64_t d = dim(ch);
      unknown = unknown || d < 0;
      if (d >= 0 && __builtin_mul_overflow(n, d, &n))
        fail(Code::kInvalidArgument, equation, "has dims of '" + group + "' that multiply past 2^63");
    }
    return unknown ? kUnknownDim : n;
  };
  auto at_most_one_unknown = [&](const std::vector<int64_t>& dims) {
    if (std::count(dims.begin(), dims.end(), kUnknownDim) > 1)
      fail(Code::kUnimplemented, equation,
           "needs a reshape to " + Shape(dims).to_string() + ", with more than one dim of unknown size");
  };
  const int64_t m = product(own_a), k = product(shared), n = product(own_b);
  auto flat = [&](const Labelled& x, const Shape& shape, const std::string& order, int64_t rows, int64_t cols) {
    std::vector<int64_t> dims;
    for (char ch : batch) dims.push_back(shape[static_cast<int>(x.labels.find(ch))]);
    dims.push_back(rows);
    dims.push_back(cols);
    at_most_one_unknown(dims);
    return ops::reshape(s, arrange(s, x, order), dims, "EinsumFlat");
  };
  Output y = s.op("BatchMatMul", {flat(a, sa, batch + own_a + shared, m, k), flat(b, sb, batch + shared + own_b, k, n)},
                  {}, "EinsumMatMul");
  std::vector<int64_t> dims;
  for (char ch : batch) {  // broadcast: a 1 takes the other's size
    const int64_t x = sa[static_cast<int>(a.labels.find(ch))], z = sb[static_cast<int>(b.labels.find(ch))];
    dims.push_back(x == 1 ? z : z == 1 ? x : std::max(x, z));
  }
  for (char ch : own_a + own_b) dims.push_back(dim(ch));
  at_most_one_unknown(dims);
  return {ops::reshape(s, y, dims, "EinsumUnflat"), batch + own_a + own_b};
}

}  // namespace

Output einsum(const Scope& s, const std::string& equation, const std::vector<Output>& inputs) {
  std::vector<Shape> shapes;
  for (const Output& x : inputs) {
    const TensorSpec& spec = s.graph().spec(x);
    if (spec.dtype != DType::kFloat32)
      throw_error(Code::kUnimplemented, "Einsum of " + std::string(dtype_name(spec.dtype)) + " (float32 only)");
    shapes.push_back(spec.shape);
  }
  const auto [labels, out] = parse(equation, shapes);
  Labelled acc{inputs[0], labels[0]};
  for (size_t i = 1; i < labels.size(); ++i) {
    std::string later = out;  // the labels the rest still needs
    for (size_t j = i + 1; j < labels.size(); ++j) later += labels[j];
    acc = contract(s, equation, acc, {inputs[i], labels[i]}, later);
  }
  acc = sum_out(s, acc, out);
  return ops::identity(s, arrange(s, acc, out), "Einsum");
}

}  // namespace hub::interop
