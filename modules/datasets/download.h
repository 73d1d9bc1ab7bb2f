// `hub data download_and_convert`: TF-Slim's download_and_convert_data.py.
// Downloads a data set's original archives from the URLs slim's
// download_and_convert_{mnist,cifar10,flowers}.py use, through the
// resolver's cache (Resolver::fetch_file: SHA-256 pinned, cached, resumed
// with Range when a connection drops, in the same run or the next one,
// offline mode), then converts them
// with convert_dataset (convert.h). imagenet is not downloaded (the archives
// need an account): it converts the ILSVRC folder given as `imagenet_dir`.
//
// Pinned digests: slim_sources() holds every URL with its SHA-256, the one
// place they are written down. They are the digests TensorFlow Datasets
// records for the same files (tensorflow_datasets/url_checksums/: mnist.txt
// for the four MNIST files, which it fetches from a mirror of the same bytes,
// cifar10.txt and cifar10.csv, tf_flowers.txt); they were not recomputed here
// (this project's build has no network).
//
// Overrides: each of `source_urls` ("URL" or "URL#sha256=HEX") replaces the
// source file with the same file name (the URL's last path segment), so a
// mirror or a local server can stand in for the original. Without a
// fragment, the pinned digest of that file applies (a mirror must serve the
// same bytes); with one, that digest does. A name that is none of the data
// set's files is refused, listing them. cifar10 takes cifar-10-binary.tar.gz
// (also pinned) in place of slim's cifar-10-python.tar.gz.
//
// Errors: kInvalidArgument (unknown data set, bad override), the resolver's
// codes for the download, prefixed "dataset <name>: " (offline and not
// cached: kUnavailable saying how to provide the file; digest mismatch:
// kDataLoss), convert_dataset's for the conversion. A failed download or
// conversion leaves nothing in dataset_dir (and nothing in the cache).
#pragma once

#include <string>
#include <vector>

#include "hub/resolver/resolver.h"
#include "modules/datasets/convert.h"

namespace hub::data {

struct SourceFile {
  std::string dataset;  // mnist | cifar10 | flowers
  std::string url;      // as in slim's download_and_convert_<dataset>.py
  std::string sha256;
  // A data set needs one file of each role; the first listed is the default.
  std::string role;
};

// Every source file of every data set, in the order above.
const std::vector<SourceFile>& slim_sources();

struct DownloadOptions {
  // dataset_name, dataset_dir and the conversion settings; `source` and
  // `source_files` are filled in here.
  ConvertOptions convert;
  std::vector<std::string> source_urls;  // overrides, see above
  std::string imagenet_dir;              // imagenet: the ILSVRC folder
};

struct DownloadResult {
  ConvertResult converted;
  std::vector<resolver::FileResolution> sources;  // what was fetched (or found cached)
};

DownloadResult download_and_convert(const DownloadOptions& options, const resolver::Resolver& resolver);

}  // namespace hub::data
