// The optimiser's passes (internal to hub/graph/optimize; the order and what
// each does are in optimize.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hub/backend/backend.h"
#include "hub/graph/optimize/ir.h"
#include "hub/ops/variables.h"

namespace hub::optimize {

// A variable whose value the optimised graph was derived from.
struct FrozenVariable {
  std::string name;
  std::weak_ptr<Storage> storage;
  uint64_t generation;
};

// fold.cc
void freeze_variables(Ir& ir, const VariableStore& variables, std::vector<FrozenVariable>* frozen);
void bypass_identities(Ir& ir);
// Returns the number of nodes evaluated. With keep_quantized_weights a
// DequantizeLinear of an int8 tensor stays (fuse makes quantized
// convolutions of it).
int fold_constants(Ir& ir, bool keep_quantized_weights);

// fuse.cc
struct FuseCounts {
  int fused = 0, batch_norms = 0, absorbed = 0;
};
FuseCounts fuse(Ir& ir);

// layout.cc: returns the number of _Relayout nodes inserted.
int assign_layouts(Ir& ir, int64_t block, const Backend& backend);

}  // namespace hub::optimize
