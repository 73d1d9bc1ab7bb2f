// A program that uses hub as an outside user would: built against the
// *installed* library, headers and pkg-config file only:
//
//   c++ -std=c++20 embed.cc $(pkg-config --cflags --libs hub) -o embed
//   ./embed [EXPORT_DIR]
//
// Builds y = a*x + b, runs it, and (given a directory) exports the module
// and runs the copy reloaded through a Resolver. Exits 0 when both give [7, 3.5, 4] for [10, 3, 4].
#include <hub/module/module.h>
#include <hub/ops/elementwise.h>
#include <hub/ops/state.h>
#include <hub/resolver/resolver.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  try {
    hub::ModuleSpec spec = hub::create_module_spec([](hub::ModuleBuilder& b) {
      hub::Scope s = b.scope();
      auto x = hub::ops::placeholder(s, hub::DType::kFloat32, {hub::kUnknownDim}, "x");
      auto y = hub::ops::add(s, hub::ops::mul(s, hub::ops::variable(s, "a", {}), x), hub::ops::variable(s, "b", {}));
      b.add_signature("default", x, y, "x", "y");
    });
    hub::Module m(spec);
    m.variable_map().at("a").assign(0.5f);
    m.variable_map().at("b").assign(2.0f);
    std::vector<float> want = {7.0f, 3.5f, 4.0f};
    if (m({10, 3, 4}).to_vector<float>() != want) {
      std::fprintf(stderr, "embed: wrong result\n");
      return 1;
    }
    if (argc > 1) {
      m.export_to(argv[1]);
      // A Resolver loads any handle (a directory here; also archives, URLs and,
      // given a registry, registry names); load_module_spec reads directories.
      hub::Module loaded(hub::resolver::Resolver().load(argv[1]));
      if (loaded({10, 3, 4}).to_vector<float>() != want) {
        std::fprintf(stderr, "embed: wrong result after reload\n");
        return 1;
      }
    }
    std::printf("embed: ok\n");
    return 0;
  } catch (const hub::Error& e) {
    std::fprintf(stderr, "embed: %s\n", e.what());
    return 1;
  }
}
