// `hub nets`: the built-in networks with their input size, parameters and
// multiply-adds (built on the fly from the graph builders).
#include <cstdio>

#include "cli/command.h"
#include "hub/ops/state.h"
#include "modules/nets/nets.h"

namespace hub::cli {
namespace {
RunFn setup_nets(CLI::App& app) {
  auto stats = std::make_shared<bool>(false);
  app.add_flag("--stats", *stats, "Also build each net and print parameters and multiply-adds");
  return [stats] {
    std::printf("%-24s %5s %3s %7s %-10s", "name", "size", "ch", "classes", "preproc");
    if (*stats) std::printf(" %14s %12s", "parameters", "MACs");
    std::printf("\n");
    for (const std::string& name : nets::net_names()) {
      const nets::NetInfo& info = nets::find_net(name);
      std::printf("%-24s %5lld %3lld %7lld %-10s", name.c_str(), static_cast<long long>(info.image_size),
                  static_cast<long long>(info.channels), static_cast<long long>(info.default_classes),
                  info.preprocessing.c_str());
      if (*stats) {
        Graph g;
        Scope s(g);
        Output images = ops::placeholder(s, DType::kFloat32, {1, info.image_size, info.image_size, info.channels}, "images");
        nets::NetOptions o;
        o.num_classes = info.default_classes;
        nets::build_net(name, s, images, o);
        std::printf(" %14lld %12lld", static_cast<long long>(nets::count_parameters(g, true)),
                    static_cast<long long>(nets::count_macs(g)));
      }
      std::printf("\n");
    }
    return 0;
  };
}
}  // namespace
HUB_REGISTER_COMMAND(nets, "List the built-in networks", setup_nets);
}  // namespace hub::cli
