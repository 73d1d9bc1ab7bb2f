// Node and Output: what a graph is made of, below both the op registry and
// the graph. Op definitions, shape functions and kernels see nodes through
// this header only; building graphs (hub/ops/scope.h, hub/graph) sits above.
#pragma once

#include <string>
#include <vector>

#include "hub/ops/attr.h"
#include "hub/tensor/tensor.h"

namespace hub {

// A tensor produced in a graph: output `index` of node `node`.
struct Output {
  int node = -1;
  int index = 0;
  bool valid() const { return node >= 0; }
  bool operator==(const Output& o) const { return node == o.node && index == o.index; }
  bool operator<(const Output& o) const { return node != o.node ? node < o.node : index < o.index; }
};

struct Node {
  int id = -1;
  std::string name;
  std::string op;
  std::vector<Output> inputs;
  Attrs attrs;                      // complete: defaults filled in
  std::vector<TensorSpec> outputs;  // inferred dtypes and (partial) shapes
};

}  // namespace hub
