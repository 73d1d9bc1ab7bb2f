// half_plus_two EXPORT_PATH: builds the seed's example module (y = a*x + b,
// variables a and b, signature default: x -> y), sets a = 0.5, b = 2 and
// exports it. `hub run EXPORT_PATH --input x=x.npy` then computes x/2 + 2.
#include <cstdio>

#include "hub/module/module.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/state.h"

namespace {

void half_plus_two(hub::ModuleBuilder& b) {
  hub::Scope s = b.scope();
  hub::Output a = hub::ops::variable(s, "a", {});
  hub::Output c = hub::ops::variable(s, "b", {});
  hub::Output x = hub::ops::placeholder(s, hub::DType::kFloat32, {hub::kUnknownDim}, "x");
  hub::Output y = hub::ops::add(s, hub::ops::mul(s, a, x), c, "y");
  b.add_signature("default", {{"x", x}}, {{"y", y}});
  b.set_metadata({"half_plus_two", "y = a*x + b with a = 0.5, b = 2", "1", "Apache-2.0", "hub examples"});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s EXPORT_PATH\n", argv[0]);
    return 2;
  }
  try {
    hub::Module m(hub::create_module_spec(half_plus_two));
    m.variable_map().at("a").assign(0.5f);
    m.variable_map().at("b").assign(2.0f);
    m.export_to(argv[1]);
    std::printf("exported half_plus_two to %s\n", argv[1]);
    return 0;
  } catch (const hub::Error& e) {
    std::fprintf(stderr, "half_plus_two: %s\n", e.what());
    return hub::exit_code(e.code());
  }
}
