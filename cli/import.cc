// `hub import SRC --output_dir DIR`: a TensorFlow SavedModel, TF Hub module,
// TF.js graph model or ONNX model (format detected from the content) -> a
// hub module (hub/interop/import.h, docs/import.md). SRC is a local folder
// or file, or any handle the resolver takes (an archive path, file:// or
// http(s):// URL with an optional #sha256=, a registry name): those are
// resolved first, and the resolver converts them on install into the cache.
#include "hub/interop/import.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>

#include "cli/command.h"
#include "hub/core/digest.h"
#include "hub/core/fileio.h"

namespace fs = std::filesystem;

namespace hub::cli {
namespace {

// "a,b" -> {a, b}; "" -> {} (the inference tag set).
TagSet import_tag_set(const std::string& text) {
  TagSet tags;
  std::stringstream ss(text);
  for (std::string tag; std::getline(ss, tag, ',');)
    if (!tag.empty()) tags.insert(tag);
  return tags;
}

struct ImportArgs {
  std::string src, output_dir, feature_output, labels, sha256;
  ModuleArgs resolve;  // --registry, --offline (the handle is src)
  std::vector<std::string> tag_sets;
  std::vector<int64_t> image_size;
  std::vector<double> mean, std, input_range;
  bool image_signatures = false, overwrite = false, quiet = false, json = false;
};

// Imported here, without the cache: a folder, or a file that is not an
// archive; also what names no file but is recognised (a checkpoint prefix).
bool import_locally(const std::string& src) {
  if (interop::recognize_format(src)) return true;
  struct stat st;
  if (::stat(src.c_str(), &st) != 0) return false;
  return S_ISDIR(st.st_mode) || !resolver::is_archive_file(src);
}

// Copies the module folder `from` to `to` (StagingDir: complete or nothing).
void copy_module(const fs::path& from, const std::string& to, ExistingTarget existing) {
  StagingDir staging(to, existing);
  try {
    fs::copy(from, staging.path(), fs::copy_options::recursive);
  } catch (const fs::filesystem_error& e) {
    throw_error(Code::kIOError, "copying the module to '" + to + "': " + e.what());
  }
  staging.commit();
}

RunFn setup_import(CLI::App& app) {
  auto o = std::make_shared<ImportArgs>();
  app.add_option("SRC", o->src,
                 "A SavedModel or TF Hub module folder, a TF.js model.json (or its folder), an ONNX "
                 "file; or an archive of one (path, file://, http(s):// with optional #sha256=HEX, "
                 "or a registry name publisher/name@version)")
      ->required();
  app.add_option("--output_dir", o->output_dir,
                 "The module folder to write (new, or an empty folder; written under a temporary "
                 "name and renamed into place)")
      ->required();
  app.add_flag("--overwrite", o->overwrite, "Replace --output_dir even if it is not empty");
  app.add_option("--tag_set", o->tag_sets,
                 "SavedModel / TF Hub: import only this tag set, comma-separated ('' = the inference set {}; "
                 "repeatable; default all)");
  app.add_option("--image_size", o->image_size, "ONNX: image height and width, H,W")->delimiter(',')->expected(2);
  app.add_option("--mean", o->mean, "ONNX: per-channel mean subtracted from the scaled image")->delimiter(',');
  app.add_option("--std", o->std, "ONNX: per-channel standard deviation the image is divided by")->delimiter(',');
  app.add_option("--input_range", o->input_range, "ONNX: the range LO,HI images in [0, 1] are scaled to")
      ->delimiter(',')
      ->expected(2);
  app.add_flag("--image_signatures", o->image_signatures,
               "ONNX: add image_feature_vector and image_classification signatures with the defaults");
  app.add_option("--feature_output", o->feature_output, "ONNX: the value the feature vector is read from");
  app.add_option("--labels", o->labels, "ONNX: class names, one per line (written as assets/labels.txt)");
  app.add_option("--sha256", o->sha256, "Expected SHA-256 of SRC when it is a file, archive or URL");
  add_registry_flag(app, o->resolve.registry);
  app.add_flag("--offline", o->resolve.offline, "Use only the module cache, never the network (as HUB_OFFLINE=1)");
  app.add_flag("-q,--quiet", o->quiet, "No progress display and no note of the resolved version");
  app.add_flag("--json", o->json,
               "Print JSON: source, resolved, source_format, output_dir, tag_sets (tags and "
               "signatures), variables");
  return [o] {
    interop::ImportOptions io;
    for (const std::string& t : o->tag_sets) io.tag_sets.push_back(import_tag_set(t));
    io.onnx.image_size = o->image_size;
    io.onnx.mean = o->mean;
    io.onnx.std = o->std;
    io.onnx.input_range = o->input_range;
    io.onnx.image_signatures = o->image_signatures;
    io.onnx.feature_output = o->feature_output;
    if (!o->labels.empty()) {
      try {
        io.onnx.labels = read_file_bytes(o->labels, int64_t{64} << 20);
      } catch (const Error& e) {
        throw e.with_context("--labels");
      }
    }
    const ExistingTarget existing = o->overwrite ? ExistingTarget::kReplace : ExistingTarget::kReplaceEmptyDir;
    try {
      check_target(o->output_dir, existing);
    } catch (const Error& e) {
      throw e.code() == Code::kAlreadyExists
          ? Error(e.code(), "--output_dir " + e.message() + " (--overwrite replaces it)")
          : e.with_context("--output_dir");
    }
    ModuleSpec spec;
    std::string resolved = o->src;
    if (import_locally(o->src)) {
      if (!o->sha256.empty()) {
        if (!is_sha256_hex(o->sha256))
          throw_error(Code::kInvalidArgument, "--sha256 must be 64 hex digits, got '" + o->sha256 + "'");
        if (fs::is_directory(o->src))
          throw_error(Code::kInvalidArgument, "--sha256: '" + o->src + "' is a folder (digests apply to files)");
        const std::string got = sha256_file(o->src);
        if (got != to_lower(o->sha256))
          throw_error(Code::kDataLoss, "'" + o->src + "': sha256 " + got + ", but --sha256 is " + to_lower(o->sha256));
      }
      spec = interop::import_to_directory(o->src, o->output_dir, io, existing);
    } else {
      o->resolve.module = o->src;
      resolver::ResolverOptions ro = make_resolver(o->resolve, o->quiet || o->json).options();
      ro.import = io;
      resolver::Resolution r = resolver::Resolver(ro).resolve(o->src, o->sha256);
      if (!o->quiet && !o->json) note_resolution(r);
      if (r.source_format.empty())
        throw_error(Code::kInvalidArgument,
                    "'" + o->src + "' is a hub module already: nothing to import (hub fetch prints its folder)");
      spec = load_module_spec(r.dir.string());
      copy_module(r.dir, o->output_dir, existing);
      resolved = r.resolved;
    }
    auto format = spec.attached().find("source_format");
    const std::string source_format = format != spec.attached().end() ? std::get<std::string>(format->second) : "";
    if (o->json) {
      nlohmann::json sets = nlohmann::json::array();
      for (const TagSet& tags : spec.tag_sets())
        sets.push_back(
            {{"tags", std::vector<std::string>(tags.begin(), tags.end())}, {"signatures", spec.signature_names(tags)}});
      print_json({{"source", o->src},
                  {"resolved", resolved},
                  {"source_format", source_format},
                  {"output_dir", o->output_dir},
                  {"tag_sets", sets},
                  {"variables", spec.variables().size()}});
      return 0;
    }
    std::printf("imported %s (%s) -> %s\n", o->src.c_str(), source_format.c_str(), o->output_dir.c_str());
    for (const TagSet& tags : spec.tag_sets()) {
      std::printf("  tag set %s: signatures", tag_set_string(tags).c_str());
      for (const std::string& s : spec.signature_names(tags)) std::printf(" %s", s.c_str());
      std::printf("\n");
    }
    std::printf("  %zu variables\n", spec.variables().size());
    return 0;
  };
}

}  // namespace

HUB_REGISTER_COMMAND(import,
                     "Import a SavedModel, TF Hub module, TF.js graph model or ONNX model (path, URL or archive) "
                     "as a module",
                     setup_import);

}  // namespace hub::cli
