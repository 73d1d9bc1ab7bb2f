// `hub run MODULE --signature NAME --input name=FILE ... [--output_dir DIR]`:
// runs one signature on .npy inputs; writes outputs as NAME.npy into
// output_dir, or prints them.
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "hub/module/module.h"
#include "hub/tensor/npy.h"

namespace hub::cli {
namespace {

std::string values_text(const Tensor& t, int64_t limit = 64) {
  std::ostringstream os;
  os << "[";
  dispatch_dtype(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.num_elements() && i < limit; ++i) {
      if (i) os << ", ";
      if constexpr (std::is_same_v<T, float>)
        os << p[i];
      else if constexpr (std::is_same_v<T, bool>)
        os << (p[i] ? "true" : "false");
      else
        os << static_cast<long long>(p[i]);
    }
  });
  if (t.num_elements() > limit) os << ", ... (" << t.num_elements() << " values)";
  os << "]";
  return os.str();
}

TagSet parse_tags(const std::string& text) {
  TagSet tags;
  std::stringstream ss(text);
  std::string tag;
  while (std::getline(ss, tag, ','))
    if (!tag.empty()) tags.insert(tag);
  return tags;
}

RunFn setup_run(CLI::App& app) {
  struct Opts {
    ModuleArgs module;
    std::string signature = kDefaultSignature;
    std::vector<std::string> inputs;
    std::string output_dir;
    std::string tags;
    std::string backend;
  };
  auto o = std::make_shared<Opts>();
  add_module_args(app, o->module, "The module to run");
  add_backend_flag(app, o->backend);
  app.add_option("--signature", o->signature, "Signature to run")->capture_default_str();
  app.add_option("--input", o->inputs, "name=FILE.npy (repeatable); FILE.npy alone for a single-input signature")
      ->required()
      ->allow_extra_args(false);
  app.add_option("--output_dir", o->output_dir, "Write each output as NAME.npy here (default: print)");
  app.add_option("--tags", o->tags, "Tag set, comma-separated (default: the inference tag set {})");
  return [o] {
    use_backend(o->backend);
    ModuleSpec spec = load_module(o->module);
    TagSet tags = parse_tags(o->tags);
    const SignatureInfo& si = spec.signature(o->signature, tags);
    TensorMap inputs;
    for (const std::string& arg : o->inputs) {
      std::string name, file;
      auto eq = arg.find('=');
      if (eq == std::string::npos) {
        if (si.inputs.size() != 1)
          throw_error(Code::kInvalidArgument,
                      "--input '" + arg + "': signature '" + o->signature + "' has several inputs; use name=FILE");
        name = si.inputs.begin()->first;
        file = arg;
      } else {
        name = arg.substr(0, eq);
        file = arg.substr(eq + 1);
      }
      if (inputs.count(name)) throw_error(Code::kInvalidArgument, "--input: '" + name + "' given twice");
      try {
        inputs[name] = read_npy(file);
      } catch (const Error& e) {
        throw e.with_context("--input " + name);
      }
    }
    Module m(spec, tags);
    TensorMap outputs = m(o->signature, inputs);
    if (!o->output_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(o->output_dir, ec);
      if (ec) throw_error(Code::kIOError, "--output_dir '" + o->output_dir + "': " + ec.message());
      for (const auto& [name, t] : outputs) {
        std::string path = (std::filesystem::path(o->output_dir) / (name + ".npy")).string();
        write_npy(path, t);
        std::printf("%s: %s -> %s\n", name.c_str(), t.spec_string().c_str(), path.c_str());
      }
    } else {
      for (const auto& [name, t] : outputs)
        std::printf("%s: %s %s\n", name.c_str(), t.spec_string().c_str(), values_text(t).c_str());
    }
    return 0;
  };
}

}  // namespace
HUB_REGISTER_COMMAND(run, "Run a module's signature on .npy inputs", setup_run);
}  // namespace hub::cli
