// `hub nets`: the built-in networks with their input size, parameters and
// multiply-adds (built on the fly from the graph builders).
#include "modules/nets/nets.h"

#include <cstdio>

#include "cli/command.h"
#include "hub/ops/state.h"

namespace hub::cli {
namespace {
// Builds the net once: (trainable parameters, multiply-adds) for one image.
std::pair<int64_t, int64_t> net_stats(const nets::NetInfo& info) {
  Graph g;
  Scope s(g);
  Output images = ops::placeholder(s, DType::kFloat32, {1, info.image_size, info.image_size, info.channels}, "images");
  nets::NetOptions o;
  o.num_classes = info.default_classes;
  nets::build_net(info.name, s, images, o);
  return {nets::count_parameters(g, true), nets::count_macs(g)};
}

RunFn setup_nets(CLI::App& app) {
  auto stats = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  app.add_flag("--stats", *stats, "Also build each net and print parameters and multiply-adds");
  app.add_flag("--json", *json, "Print JSON: one object per net");
  return [stats, json] {
    if (*json) {
      nlohmann::json out = nlohmann::json::array();
      for (const std::string& name : nets::net_names()) {
        const nets::NetInfo& info = nets::find_net(name);
        nlohmann::json j = {{"name", name},
                            {"image_size", info.image_size},
                            {"channels", info.channels},
                            {"default_classes", info.default_classes},
                            {"preprocessing", info.preprocessing}};
        if (*stats) {
          auto [params, macs] = net_stats(info);
          j["parameters"] = params;
          j["macs"] = macs;
        }
        out.push_back(j);
      }
      print_json(out);
      return 0;
    }
    std::printf("%-24s %5s %3s %7s %-10s", "name", "size", "ch", "classes", "preproc");
    if (*stats) std::printf(" %14s %12s", "parameters", "MACs");
    std::printf("\n");
    for (const std::string& name : nets::net_names()) {
      const nets::NetInfo& info = nets::find_net(name);
      std::printf("%-24s %5lld %3lld %7lld %-10s", name.c_str(), static_cast<long long>(info.image_size),
                  static_cast<long long>(info.channels), static_cast<long long>(info.default_classes),
                  info.preprocessing.c_str());
      if (*stats) {
        auto [params, macs] = net_stats(info);
        std::printf(" %14lld %12lld", static_cast<long long>(params), static_cast<long long>(macs));
      }
      std::printf("\n");
    }
    return 0;
  };
}
}  // namespace
HUB_REGISTER_COMMAND(nets, "List the built-in networks", setup_nets);
}  // namespace hub::cli
