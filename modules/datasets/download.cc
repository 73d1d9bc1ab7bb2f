#include "modules/datasets/download.h"

#include <algorithm>
#include <map>

#include "hub/core/error.h"
#include "hub/resolver/cache.h"

namespace hub::data {

const std::vector<SourceFile>& slim_sources() {
  static const std::vector<SourceFile> sources = {
      {"mnist", "http://yann.lecun.com/exdb/mnist/train-images-idx3-ubyte.gz",
       "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", "train-images-idx3-ubyte.gz"},
      {"mnist", "http://yann.lecun.com/exdb/mnist/train-labels-idx1-ubyte.gz",
       "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", "train-labels-idx1-ubyte.gz"},
      {"mnist", "http://yann.lecun.com/exdb/mnist/t10k-images-idx3-ubyte.gz",
       "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", "t10k-images-idx3-ubyte.gz"},
      {"mnist", "http://yann.lecun.com/exdb/mnist/t10k-labels-idx1-ubyte.gz",
       "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", "t10k-labels-idx1-ubyte.gz"},
      {"cifar10", "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
       "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce", "archive"},
      {"cifar10", "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz",
       "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd", "archive"},
      {"flowers", "http://download.tensorflow.org/example_images/flower_photos.tgz",
       "4c54ace7911aaffe13a365c34f650e71dd5bf1be0a58b464e5a7183e3e595d9c", "photos"},
  };
  return sources;
}

namespace {

std::string file_name_of(const std::string& url) {
  const std::string path = resolver::strip_digest_fragment(url).substr(0, url.find('?'));
  return path.substr(path.find_last_of('/') + 1);
}

// The URL (with its "#sha256=" fragment) to fetch for each role.
std::map<std::string, std::string> plan(const std::string& dataset, const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> by_role;
  std::string names;
  for (const SourceFile& f : slim_sources()) {
    if (f.dataset != dataset) continue;
    by_role.emplace(f.role, f.url + "#sha256=" + f.sha256);  // the first of a role is the default
    names += (names.empty() ? "" : ", ") + file_name_of(f.url);
  }
  for (const std::string& url : overrides) {
    const std::string name = file_name_of(url);
    auto known = std::find_if(slim_sources().begin(), slim_sources().end(),
                              [&](const SourceFile& f) { return f.dataset == dataset && file_name_of(f.url) == name; });
    if (known == slim_sources().end())
      throw_error(Code::kInvalidArgument, "--source_url " + url + ": '" + name + "' is not a source file of " +
                                              dataset + " (its files: " + names + ")");
    const bool pinned_here = resolver::strip_digest_fragment(url).size() != url.size();
    by_role[known->role] = pinned_here ? url : url + "#sha256=" + known->sha256;
  }
  return by_role;
}

}  // namespace

DownloadResult download_and_convert(const DownloadOptions& options, const resolver::Resolver& resolver) {
  const std::string& name = options.convert.dataset_name;
  DownloadResult out;
  ConvertOptions convert = options.convert;
  if (name == "imagenet") {
    if (!options.source_urls.empty())
      throw_error(Code::kInvalidArgument, "--source_url: imagenet is not downloaded (give --imagenet_dir)");
    if (options.imagenet_dir.empty())
      throw_error(Code::kInvalidArgument,
                  "--imagenet_dir is required for imagenet: the ILSVRC folder with train/ and validation/ (its "
                  "archives need an account at image-net.org, so they are not downloaded)");
    convert.source = options.imagenet_dir;
    out.converted = convert_dataset(convert);
    return out;
  }
  if (name != "mnist" && name != "cifar10" && name != "flowers")
    throw_error(Code::kInvalidArgument,
                "unknown --dataset_name '" + name + "' (download_and_convert: mnist, cifar10, flowers, imagenet)");
  if (!options.imagenet_dir.empty()) throw_error(Code::kInvalidArgument, "--imagenet_dir applies to imagenet only");
  for (const auto& [role, url] : plan(name, options.source_urls)) {
    try {
      out.sources.push_back(resolver.fetch_file(url));
    } catch (const Error& e) {
      std::string how;
      if (e.code() == Code::kUnavailable && e.message().find("offline mode") != std::string::npos)
        how = " (to convert without the network, download " + resolver::strip_digest_fragment(url) +
              " elsewhere and run `hub data convert --dataset_name " + name + " --source PATH`, or serve it and give " +
              "--source_url URL#sha256=HEX; or go online)";
      throw Error(e.code(), "dataset " + name + ": " + e.message() + how);
    }
    const std::string path = out.sources.back().path.string();
    if (name == "mnist")
      convert.source_files[file_name_of(url)] = path;
    else
      convert.source = path;
  }
  out.converted = convert_dataset(convert);
  return out;
}

}  // namespace hub::data
