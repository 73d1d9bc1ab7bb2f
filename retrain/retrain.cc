#include "retrain/retrain.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <random>

#include "hub/core/digest.h"
#include "hub/core/logging.h"
#include "hub/core/parallel.h"
#include "hub/core/random.h"
#include "hub/core/text.h"
#include "hub/graph/optimizer.h"
#include "hub/graph/session.h"
#include "hub/image/image.h"
#include "hub/image/resize.h"
#include "hub/interop/tf/display_graph.h"
#include "hub/module/module.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/matmul.h"
#include "hub/ops/softmax.h"
#include "hub/ops/state.h"
#include "modules/train/distributed.h"
#include "modules/train/summary.h"
#include "retrain/bottleneck_cache.h"
#include "retrain/distort.h"
#include "retrain/fine_tune.h"
#include "retrain/head.h"
#include "retrain/image_lists.h"

namespace fs = std::filesystem;

namespace hub::retrain {

namespace {

std::string module_fingerprint(const ModuleSpec& spec, const std::string& handle) {
  std::string fp = handle;
  for (const char* file : {"module.pb", "variables.safetensors"}) {
    fs::path p = fs::path(spec.source()) / file;
    std::error_code ec;
    if (fs::exists(p, ec)) fp += ":" + sha256_file(p);
  }
  return fp;
}

// One image of the lists: class index and file, plus its bottleneck once known.
struct Item {
  int cls;
  std::string file;
  std::vector<float> bottleneck;
  bool ok = true;
};

struct Sets {
  // items[category][class] -> images of that class in that category
  std::vector<std::vector<Item>> by_cat[3];
};

int cat_index(Category c) { return static_cast<int>(c); }

Tensor load_image(const fs::path& path, const FeatureModule& f) {
  image::DecodeOptions d;
  d.channels = static_cast<int>(f.channels);
  d.min_height = f.height;
  d.min_width = f.width;
  return image::read_image(path.string(), d);
}

// [H, W, C] images of the module's size -> one batch [n, H, W, C].
Tensor stack_images(const FeatureModule& f, const std::vector<Tensor>& images) {
  int64_t n = static_cast<int64_t>(images.size());
  Tensor batch(DType::kFloat32, {n, f.height, f.width, f.channels});
  int64_t per = f.height * f.width * f.channels;
  for (int64_t i = 0; i < n; ++i)
    std::copy(images[i].data<float>(), images[i].data<float>() + per, batch.data<float>() + i * per);
  return batch;
}

// Runs the module on a batch of [H, W, C] images.
std::vector<std::vector<float>> run_module(Module& m, const FeatureModule& f, const std::vector<Tensor>& images) {
  int64_t n = static_cast<int64_t>(images.size());
  Tensor out = m(f.signature, {{f.input, stack_images(f, images)}}).at(f.output);
  std::vector<std::vector<float>> rows(n);
  for (int64_t i = 0; i < n; ++i) rows[i].assign(out.data<float>() + i * f.dim, out.data<float>() + (i + 1) * f.dim);
  return rows;
}

// Drops the images that could not be read (ok == false).
void drop_unreadable(Sets& sets) {
  for (auto& cat : sets.by_cat)
    for (auto& cls : cat)
      cls.erase(std::remove_if(cls.begin(), cls.end(), [](const Item& it) { return !it.ok; }), cls.end());
}

// Rank 0's ids (positions in `all`) of the images its cache lacks, on every rank.
std::vector<int64_t> missing_ids(train::Job& job, const std::vector<Item*>& all, const ImageLists& lists,
                                 const FeatureModule& f, const BottleneckCache& cache, RetrainResult& r) {
  std::vector<int64_t> ids;
  std::string bytes;
  if (job.chief()) {
    for (size_t i = 0; i < all.size(); ++i) {
      Item& it = *all[i];
      if (auto v = cache.load(lists.classes[it.cls].dir, it.file, static_cast<size_t>(f.dim))) {
        it.bottleneck = std::move(*v);
        ++r.bottlenecks_cached;
      } else {
        ids.push_back(static_cast<int64_t>(i));
      }
    }
    bytes.assign(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int64_t));
  }
  job.broadcast(&bytes, "broadcast of the missing bottlenecks");
  ids.resize(bytes.size() / sizeof(int64_t));
  if (!ids.empty()) std::memcpy(ids.data(), bytes.data(), ids.size() * sizeof(int64_t));
  return ids;
}

// The bottlenecks `ids` (of `all`) computed on other ranks, as gathered on
// rank 0: per image its id, its dimension (0: unreadable, skipped) and values.
std::string pack_bottlenecks(const std::vector<Item*>& all, const std::vector<int64_t>& ids) {
  std::string out;
  for (int64_t id : ids) {
    const Item& it = *all[static_cast<size_t>(id)];
    const int64_t dim = it.ok ? static_cast<int64_t>(it.bottleneck.size()) : 0;
    out.append(reinterpret_cast<const char*>(&id), sizeof id);
    out.append(reinterpret_cast<const char*>(&dim), sizeof dim);
    if (dim > 0)
      out.append(reinterpret_cast<const char*>(it.bottleneck.data()), static_cast<size_t>(dim) * sizeof(float));
  }
  return out;
}

// Bottleneck creation, sharded over the job's ranks: rank 0 finds what its
// cache lacks, rank r computes every N-th of those (from the r-th on) and
// writes their cache files, and rank 0 gathers the vectors (writing the cache
// files it does not see, when the ranks do not share --bottleneck_dir).
void compute_bottlenecks(train::Job& job, Sets& sets, const ImageLists& lists, Module& m, const FeatureModule& f,
                         const BottleneckCache& cache, const RetrainConfig& c, RetrainResult& r) {
  std::vector<Item*> all;  // the same order on every rank
  for (auto& cat : sets.by_cat)
    for (auto& cls : cat)
      for (Item& it : cls) all.push_back(&it);
  const std::vector<int64_t> ids = missing_ids(job, all, lists, f, cache, r);
  if (ids.empty()) return;
  std::vector<int64_t> my_ids;
  for (size_t k = static_cast<size_t>(job.rank()); k < ids.size(); k += static_cast<size_t>(job.size()))
    my_ids.push_back(ids[k]);
  std::vector<Item*> missing;
  for (int64_t id : my_ids) missing.push_back(all[static_cast<size_t>(id)]);
  if (job.chief())
    std::fprintf(stderr, "Creating %zu bottlenecks (%lld cached) with batches of %lld%s\n", ids.size(),
                 static_cast<long long>(r.bottlenecks_cached), static_cast<long long>(c.bottleneck_batch_size),
                 job.size() > 1 ? (" on " + std::to_string(job.size()) + " ranks").c_str() : "");
  // Decode + resize of batch k+1 runs on a second thread while the module
  // runs batch k: kept to one core when the module runs on the host's pool,
  // on the whole pool when it runs on a device (the host is idle then).
  struct Decoded {
    std::vector<Tensor> images;
    std::vector<std::string> errors;
  };
  const size_t batch = static_cast<size_t>(c.bottleneck_batch_size);
  const bool module_on_device = default_backend().device() != Device::kCPU;
  auto decode = [&](size_t b) {
    std::optional<SerialScope> one_core;
    if (!module_on_device) one_core.emplace();
    const size_t end = std::min(missing.size(), b + batch);
    Decoded d;
    d.images.resize(end - b);
    d.errors.resize(end - b);
    parallel_for(static_cast<int64_t>(end - b), 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const Item& it = *missing[b + static_cast<size_t>(i)];
        try {
          d.images[i] =
              image::read_resized(lists.path(lists.classes[it.cls], it.file).string(), f.height, f.width, f.channels);
        } catch (const Error& err) {
          d.errors[i] = err.what();
        }
      }
    });
    return d;
  };
  auto start = std::chrono::steady_clock::now();
  int64_t done = 0, next_report = 0;
  std::future<Decoded> next = std::async(std::launch::async, decode, size_t{0});
  for (size_t b = 0; b < missing.size(); b += batch) {
    Decoded d = next.get();
    if (b + batch < missing.size()) next = std::async(std::launch::async, decode, b + batch);
    std::vector<Tensor> good;
    std::vector<Item*> good_items;
    for (size_t i = 0; i < d.images.size(); ++i) {
      Item& it = *missing[b + i];
      if (!d.errors[i].empty()) {
        HUB_LOG(Warning) << "skipping " << lists.path(lists.classes[it.cls], it.file).string() << ": " << d.errors[i];
        it.ok = false;
        ++r.images_skipped;
        continue;
      }
      good.push_back(std::move(d.images[i]));
      good_items.push_back(&it);
    }
    if (!good.empty()) {
      // On a device, a short batch (the last, or one with unreadable images)
      // is filled up with copies of its first image: a batch of a new size
      // would have the device choose (and time) its convolution plans again.
      const size_t computed = good.size();
      if (module_on_device && computed < batch) good.resize(batch, Tensor(good.front()));
      auto rows = run_module(m, f, good);
      for (size_t i = 0; i < computed; ++i) {
        good_items[i]->bottleneck = std::move(rows[i]);
        cache.store(lists.classes[good_items[i]->cls].dir, good_items[i]->file, good_items[i]->bottleneck);
        ++r.bottlenecks_computed;
      }
    }
    done += static_cast<int64_t>(d.images.size());
    if (job.chief() && (done >= next_report || b + batch >= missing.size())) {
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "  %lld/%zu bottlenecks%s (%.1f images/s)\n", static_cast<long long>(done), missing.size(),
                   job.size() > 1 ? " of rank 0" : "", static_cast<double>(done) / std::max(secs, 1e-9));
      next_report = done + std::max<int64_t>(1, static_cast<int64_t>(missing.size()) / 10);
    }
  }
  if (job.size() > 1) {
    std::vector<std::string> parts;
    job.gather(pack_bottlenecks(all, my_ids), &parts, "gather of the bottlenecks");
    for (size_t rank = 1; rank < parts.size(); ++rank) {
      const std::string& p = parts[rank];
      for (size_t at = 0; at < p.size();) {
        int64_t id = 0, dim = 0;
        HUB_CHECK(at + 2 * sizeof(int64_t) <= p.size(), "short bottleneck record from rank " + std::to_string(rank));
        std::memcpy(&id, p.data() + at, sizeof id);
        std::memcpy(&dim, p.data() + at + sizeof id, sizeof dim);
        at += 2 * sizeof(int64_t);
        HUB_CHECK(id >= 0 && static_cast<size_t>(id) < all.size() && (dim == 0 || dim == f.dim) &&
                      at + static_cast<size_t>(dim) * sizeof(float) <= p.size(),
                  "bad bottleneck record from rank " + std::to_string(rank));
        Item& it = *all[static_cast<size_t>(id)];
        if (dim == 0) {
          it.ok = false;
          ++r.images_skipped;
          continue;
        }
        it.bottleneck.resize(static_cast<size_t>(dim));
        std::memcpy(it.bottleneck.data(), p.data() + at, static_cast<size_t>(dim) * sizeof(float));
        at += static_cast<size_t>(dim) * sizeof(float);
        ++r.bottlenecks_computed;
        const ClassImages& ci = lists.classes[it.cls];
        std::error_code ec;
        if (!fs::exists(cache.path(ci.dir, it.file), ec)) cache.store(ci.dir, it.file, it.bottleneck);
      }
    }
  }
  drop_unreadable(sets);
}

// Fine-tuning caches no bottleneck, but still finds the images that cannot be
// decoded before training (decoding each once, in parallel) and skips them
// with the same warning.
void find_unreadable(Sets& sets, const ImageLists& lists, const FeatureModule& f, RetrainResult& r) {
  std::vector<Item*> all;
  for (auto& cat : sets.by_cat)
    for (auto& cls : cat)
      for (Item& it : cls) all.push_back(&it);
  std::vector<std::string> errors(all.size());
  parallel_for(static_cast<int64_t>(all.size()), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      try {
        load_image(lists.path(lists.classes[all[i]->cls], all[i]->file), f);
      } catch (const Error& err) {
        errors[i] = err.what();
      }
    }
  });
  for (size_t i = 0; i < all.size(); ++i) {
    if (errors[i].empty()) continue;
    HUB_LOG(Warning) << "skipping " << lists.path(lists.classes[all[i]->cls], all[i]->file).string() << ": "
                     << errors[i];
    all[i]->ok = false;
    ++r.images_skipped;
  }
  drop_unreadable(sets);
}

// retrain.py's head on bottlenecks fed to input/BottleneckInputPlaceholder:
// the frozen path trains it, and both paths evaluate with it.
struct BottleneckHead {
  Graph graph;
  Output input;
  TrainingHead head;
  GradientOps grads;
};

// The fake quantization of the head with --quantize (training: with the
// activation ranges' updates).
slim::QuantizeOptions head_quantization(const RetrainConfig& c, bool training) {
  slim::QuantizeOptions q;
  q.mode = c.quantize ? slim::QuantizeMode::kFakeQuant : slim::QuantizeMode::kOff;
  q.is_training = training;
  return q;
}

void build_head(BottleneckHead& h, int64_t dim, int64_t classes, const RetrainConfig& c) {
  h.graph.set_seed(c.seed);
  Scope s(h.graph);
  h.input = ops::placeholder(s.sub("input"), DType::kFloat32, {kUnknownDim, dim}, "BottleneckInputPlaceholder");
  h.head = add_training_head(s, h.input, dim, classes, c.final_tensor_name, head_quantization(c, true));
  h.grads = build_gradients(s, h.head.loss, {h.graph.node(h.head.weights).name, h.graph.node(h.head.biases).name});
}

// The images of `items`, decoded and resized to the module's input size, or
// with distortions distorted to it (the i-th with seed mix(seed, counter + i)).
std::vector<Tensor> load_images(const std::vector<const Item*>& items, const ImageLists& lists, const FeatureModule& f,
                                const DistortionOptions& distortions, uint64_t seed, uint64_t counter) {
  std::vector<Tensor> images(items.size());
  parallel_for(static_cast<int64_t>(items.size()), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const Item& it = *items[i];
      Tensor img = load_image(lists.path(lists.classes[it.cls], it.file), f);
      images[i] = distortions.any() ? distort(img, f.height, f.width, distortions, mix_seed(seed, counter + i))
                                    : image::resize_bilinear(img, f.height, f.width);
    }
  });
  return images;
}

// Items with bottlenecks computed now by `m` (in batches of batch_size):
// distorted training images, or with fine-tuning every image (the cache
// holds none and the weights change).
std::vector<Item> fresh_bottlenecks(const std::vector<const Item*>& items, const ImageLists& lists, Module& m,
                                    const FeatureModule& f, const DistortionOptions& distortions, uint64_t seed,
                                    uint64_t counter, int64_t batch_size) {
  std::vector<Item> fresh;
  fresh.reserve(items.size());
  for (size_t b = 0; b < items.size(); b += static_cast<size_t>(batch_size)) {
    std::vector<const Item*> part(
        items.begin() + static_cast<std::ptrdiff_t>(b),
        items.begin() + static_cast<std::ptrdiff_t>(std::min(items.size(), b + static_cast<size_t>(batch_size))));
    auto rows = run_module(m, f, load_images(part, lists, f, distortions, seed, counter + b));
    for (size_t i = 0; i < part.size(); ++i) fresh.push_back({part[i]->cls, part[i]->file, std::move(rows[i]), true});
  }
  return fresh;
}

struct Batch {
  Tensor x, y;
};

// The class indices of `items`, int64 [n].
Tensor labels_of(const std::vector<const Item*>& items) {
  Tensor y(DType::kInt64, {static_cast<int64_t>(items.size())});
  for (size_t i = 0; i < items.size(); ++i) y.data<int64_t>()[i] = items[i]->cls;
  return y;
}

Batch make_batch(const std::vector<const Item*>& items, int64_t dim) {
  Batch b;
  int64_t n = static_cast<int64_t>(items.size());
  b.x = Tensor(DType::kFloat32, {n, dim});
  for (int64_t i = 0; i < n; ++i)
    std::copy(items[i]->bottleneck.begin(), items[i]->bottleneck.end(), b.x.data<float>() + i * dim);
  b.y = labels_of(items);
  return b;
}

// retrain.py's get_random_cached_bottlenecks: how_many < 0 takes every image.
std::vector<const Item*> pick(const std::vector<std::vector<Item>>& by_class, int64_t how_many, std::mt19937_64& rng) {
  std::vector<const Item*> out;
  if (how_many < 0) {
    for (const auto& cls : by_class)
      for (const Item& it : cls) out.push_back(&it);
    return out;
  }
  std::vector<int> nonempty;
  for (int k = 0; k < static_cast<int>(by_class.size()); ++k)
    if (!by_class[k].empty()) nonempty.push_back(k);
  if (nonempty.empty()) return out;
  for (int64_t i = 0; i < how_many; ++i) {
    int k = nonempty[rng() % nonempty.size()];
    uint64_t index = rng() % static_cast<uint64_t>(kMaxImagesPerClass + 1);
    out.push_back(&by_class[k][index % by_class[k].size()]);
  }
  return out;
}

double accuracy(const Tensor& probabilities, const Tensor& labels, std::vector<int64_t>* predictions = nullptr) {
  int64_t n = probabilities.dim(0), k = probabilities.dim(1);
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = probabilities.data<float>() + i * k;
    int64_t best = std::max_element(row, row + k) - row;
    if (predictions) predictions->push_back(best);
    if (best == labels.data<int64_t>()[i]) ++correct;
  }
  return n ? static_cast<double>(correct) / static_cast<double>(n) : 0.0;
}

// retrain.py's variable_summaries(var) under name scope `scope`: the mean,
// the (population) standard deviation, max and min of the values as scalars
// and their histogram.
void add_variable_summaries(tensorboard::Summary* s, const std::string& scope, const Tensor& var) {
  const float* p = var.data<float>();
  const int64_t n = var.num_elements();
  double sum = 0, squares = 0;
  for (int64_t i = 0; i < n; ++i) sum += p[i];
  const double mean = n ? sum / static_cast<double>(n) : 0.0;
  for (int64_t i = 0; i < n; ++i) squares += (p[i] - mean) * (p[i] - mean);
  const std::string prefix = scope + "/summaries/";
  train::add_scalar(s, prefix + "mean", mean);
  train::add_scalar(s, prefix + "stddev", n ? std::sqrt(squares / static_cast<double>(n)) : 0.0);
  train::add_scalar(s, prefix + "max", n ? *std::max_element(p, p + n) : 0.0);
  train::add_scalar(s, prefix + "min", n ? *std::min_element(p, p + n) : 0.0);
  train::add_histogram(s, prefix + "histogram", var);
}

// The summaries retrain.py merges, for one batch: the head's variables
// (head_summary), then the logits ("pre_activations") and the softmax
// ("activations") as histograms, and the accuracy (add_output_summaries).
// cross_entropy is added by the caller.
tensorboard::Summary head_summary(const BottleneckHead& head, const VariableStore& vars) {
  tensorboard::Summary s;
  add_variable_summaries(&s, "final_retrain_ops/weights", to_host(vars.at(head.graph.node(head.head.weights).name)));
  add_variable_summaries(&s, "final_retrain_ops/biases", to_host(vars.at(head.graph.node(head.head.biases).name)));
  return s;
}

void add_output_summaries(tensorboard::Summary* s, const Tensor& logits, const Tensor& probabilities,
                          const Tensor& labels) {
  train::add_histogram(s, "final_retrain_ops/Wx_plus_b/pre_activations", logits);
  train::add_histogram(s, "activations", probabilities);
  train::add_scalar(s, "accuracy", accuracy(probabilities, labels));
}

// retrain.py deletes --summaries_dir and creates it again before it writes
// there. Checked before anything else is done, the folder to delete is
// refused when it is a filesystem root, not a folder, or holds the working
// folder or an existing input or output of the run.
fs::path summaries_dir_to_wipe(const RetrainConfig& c) {
  auto refuse = [&](const std::string& why) {
    throw_error(Code::kInvalidArgument, "--summaries_dir '" + c.summaries_dir + "' " + why +
                                            "; it is deleted before training, so it must be a folder of its own");
  };
  if (c.summaries_dir.empty()) refuse("is empty");
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(fs::absolute(c.summaries_dir), ec);
  if (ec || dir == dir.root_path()) refuse("is a filesystem root or cannot be resolved");
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) refuse("is not a folder");
  auto holds = [&](const fs::path& p) {
    return std::mismatch(dir.begin(), dir.end(), p.begin(), p.end()).first == dir.end();
  };
  const fs::path cwd = fs::current_path(ec);
  if (!ec && holds(cwd)) refuse("holds the working folder");
  const std::pair<const char*, const std::string*> others[] = {
      {"--image_dir", &c.image_dir},
      {"--bottleneck_dir", &c.bottleneck_dir},
      {"--output_graph", &c.output_graph},
      {"--output_labels", &c.output_labels},
      {"--saved_model_dir", &c.saved_model_dir},
      {"--intermediate_output_graphs_dir", &c.intermediate_output_graphs_dir},
      {"--module", &c.module}};
  for (const auto& [flag, value] : others) {
    if (value->empty() || !fs::exists(*value, ec)) continue;
    const fs::path other = fs::weakly_canonical(fs::absolute(*value), ec);
    if (!ec && holds(other)) refuse(std::string("holds ") + flag + " " + *value);
  }
  return dir;
}

void write_labels(const std::string& path, const ImageLists& lists) {
  if (path.empty()) return;
  fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  fs::path tmp = p;
  tmp += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const ClassImages& c : lists.classes) out << c.label << "\n";
    if (!out) {
      fs::remove(tmp, ec);
      throw_error(Code::kIOError, "cannot write --output_labels " + path);
    }
  }
  fs::rename(tmp, p, ec);
  if (ec) throw_error(Code::kIOError, "cannot write --output_labels " + path + ": " + ec.message());
}

void export_retrained(const std::string& dir, const Module& features, const FeatureModule& f,
                      const VariableStore& head_vars, const ImageLists& lists, const RetrainConfig& c) {
  int64_t classes = static_cast<int64_t>(lists.classes.size());
  auto fn = [&](ModuleBuilder& b, const Attrs&) {
    Scope s = b.scope();
    Output images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, f.height, f.width, f.channels}, "images");
    Output x = features.apply(b, s, {{f.input, images}}, f.signature).at(f.output);
    Head head = add_head(s, x, f.dim, classes, c.final_tensor_name, head_quantization(c, false));
    b.add_signature(kDefaultSignature, {{"images", images}}, {{"default", head.probabilities}});
    b.add_signature("logits", {{"images", images}}, {{"default", head.logits}});
    b.add_signature("feature_vector", {{"images", images}}, {{"default", x}});
    b.set_image_info(f.height, f.width, f.channels);
    ModuleMetadata meta;
    meta.name = "retrained";
    meta.description = "Classifier retrained by hub retrain from " + redact_credentials(c.module) + " on " +
                       c.image_dir + " (" + std::to_string(classes) + " classes)";
    meta.version = HUB_VERSION;
    b.set_metadata(meta);
    std::string labels;
    for (const ClassImages& ci : lists.classes) labels += ci.label + "\n";
    b.add_asset("labels.txt", labels);
  };
  Module out(create_module_spec(fn));
  // The head's variables: weights, biases and, with --quantize, its ranges.
  for (const std::string& name : out.variable_map().names())
    if (name.rfind("final_retrain_ops/", 0) == 0) out.variable_map().at(name).assign(head_vars.at(name));
  out.export_to(dir);
}

RetrainResult retrain_on(train::Job& job, const RetrainConfig& c, const resolver::Resolver& resolver) {
  if (c.image_dir.empty()) throw_error(Code::kInvalidArgument, "--image_dir is required");
  if (c.module.empty()) throw_error(Code::kInvalidArgument, "--module (--tfhub_module) is required");
  if (c.how_many_training_steps < 1) throw_error(Code::kInvalidArgument, "--how_many_training_steps must be >= 1");
  if (c.train_batch_size < 1) throw_error(Code::kInvalidArgument, "--train_batch_size must be >= 1");
  if (c.eval_step_interval < 1) throw_error(Code::kInvalidArgument, "--eval_step_interval must be >= 1");
  if (c.learning_rate <= 0) throw_error(Code::kInvalidArgument, "--learning_rate must be positive");
  if (!c.fine_tune && !c.fine_tune_scopes.empty())
    throw_error(Code::kInvalidArgument, "--fine_tune_scopes needs --fine_tune");
  if (!c.fine_tune && c.fine_tune_learning_rate)
    throw_error(Code::kInvalidArgument, "--fine_tune_learning_rate needs --fine_tune");
  if (c.fine_tune && c.quantize)
    throw_error(Code::kInvalidArgument,
                "--quantize trains a quantized head on bottlenecks and cannot be combined with --fine_tune");
  const double module_learning_rate = c.fine_tune_learning_rate.value_or(c.learning_rate / 10);
  if (c.fine_tune && !(module_learning_rate > 0))
    throw_error(Code::kInvalidArgument,
                "--fine_tune_learning_rate must be positive, got " + std::to_string(module_learning_rate));
  DistortionOptions distortions{c.flip_left_right, c.random_crop, c.random_scale, c.random_brightness};
  validate(distortions);
  std::error_code ec;
  for (const std::string& out : {c.output_graph, c.saved_model_dir})
    if (!out.empty() && fs::exists(out, ec))
      throw_error(Code::kAlreadyExists, "output path " + out + " already exists; remove it or choose another");
  const fs::path summaries_dir = summaries_dir_to_wipe(c);
  RetrainResult result;
  // Fine-tuning trains on rank 0 alone: there are no bottlenecks to share out.
  if (c.fine_tune && !job.chief()) return result;
  ImageLists lists = create_image_lists(c.image_dir, c.testing_percentage, c.validation_percentage);
  ModuleSpec spec = resolver.load(c.module);
  // The handle as it may be printed or stored (bottleneck file names, the
  // new module's description): credentials in a URL never are.
  const std::string module_name = redact_credentials(c.module);
  FeatureModule f = check_feature_module(spec, module_name);
  // The inference instance: bottlenecks, evaluation and export (with
  // fine-tuning, given the trained module weights before each use).
  Module features(spec);
  const int64_t classes = static_cast<int64_t>(lists.classes.size());
  std::unique_ptr<FineTuner> tuner;
  if (c.fine_tune) {
    FineTuneOptions o;
    o.scopes = c.fine_tune_scopes;
    o.learning_rate = module_learning_rate;
    o.head_learning_rate = c.learning_rate;
    o.final_tensor_name = c.final_tensor_name;
    o.seed = c.seed;
    tuner = std::make_unique<FineTuner>(spec, f, classes, o);
    result.fine_tuned_variables = tuner->trained_variables();
    result.used_train_tags = tuner->uses_train_tags();
    std::fprintf(stderr,
                 "Fine-tuning %zu module variables at learning rate %g with the head at %g; the bottleneck cache "
                 "(--bottleneck_dir %s) is not used: every step runs the module on freshly decoded%s images\n",
                 tuner->trained_variables().size(), module_learning_rate, c.learning_rate, c.bottleneck_dir.c_str(),
                 distortions.any() ? " and distorted" : "");
    if (!tuner->uses_train_tags())
      std::fprintf(stderr,
                   "Note: the module has no {train} tag set; fine-tuning its inference graph {} (batch norm, if any, "
                   "keeps its moving statistics)\n");
    if (job.size() > 1)
      std::fprintf(stderr, "Note: --fine_tune trains on rank 0 alone; the other %d ranks have nothing to do\n",
                   job.size() - 1);
  }

  Sets sets;
  for (auto& cat : sets.by_cat) cat.resize(lists.classes.size());
  for (int k = 0; k < static_cast<int>(lists.classes.size()); ++k)
    for (Category cat : {Category::kTraining, Category::kValidation, Category::kTesting})
      for (const std::string& file : lists.classes[k].of(cat))
        sets.by_cat[cat_index(cat)][k].push_back({k, file, {}, true});
  if (tuner) {
    find_unreadable(sets, lists, f, result);
  } else {
    BottleneckCache cache(c.bottleneck_dir, module_name, module_fingerprint(spec, module_name));
    // Validation and test always use cached bottlenecks (distortions only apply to training batches).
    compute_bottlenecks(job, sets, lists, features, f, cache, c, result);
    if (!job.chief()) return result;  // rank 0 trains the head
  }
  // Every class needs training images (retrain.py stops on an empty category
  // list too); otherwise the head would be trained without that class at all.
  for (size_t k = 0; k < lists.classes.size(); ++k) {
    if (!sets.by_cat[cat_index(Category::kTraining)][k].empty()) continue;
    const ClassImages& ci = lists.classes[k];
    size_t listed = ci.training.size() + ci.validation.size() + ci.testing.size(), readable = 0;
    for (auto& cat : sets.by_cat) readable += cat[k].size();
    throw_error(Code::kInvalidArgument,
                "class '" + ci.label + "' (folder " + (fs::path(c.image_dir) / ci.dir).string() +
                    ") has no readable training images: " + std::to_string(listed - readable) + " of its " +
                    std::to_string(listed) + " images could not be decoded, " + std::to_string(ci.training.size()) +
                    " were assigned to training; add images or remove the folder");
  }

  BottleneckHead head;
  build_head(head, f.dim, classes, c);
  // The head's variables: its own, or with fine-tuning the fine-tuner's
  // (the same names, the same initial values).
  VariableStore head_vars;
  VariableStore& vars = tuner ? tuner->variables() : head_vars;
  if (!tuner) head_vars.initialize(head.graph);
  // On a device backend the head's variables live there too (its updates and
  // the --quantize ranges' moving averages run on the device), and so do the
  // gradients it fetches for the optimizer; what the host reads is copied.
  SessionOptions head_options;
  head_options.fetch_to_host = false;
  Session session(head.graph, &vars, head_options);
  if (!tuner && session.backend().device() != Device::kCPU) move_variables(vars, session.backend().device());
  auto sgd = make_optimizer("sgd", LearningRateSchedule::fixed(c.learning_rate));
  std::mt19937_64 rng(c.seed);
  fs::remove_all(summaries_dir, ec);
  if (ec) throw_error(Code::kIOError, "cannot delete --summaries_dir " + c.summaries_dir + ": " + ec.message());
  train::SummaryWriter train_log((fs::path(c.summaries_dir) / "train").string());
  train_log.graph(tf::display_graph_def(tuner ? tuner->graph() : head.graph).SerializeAsString());
  train::SummaryWriter validation_log((fs::path(c.summaries_dir) / "validation").string());
  const auto& training = sets.by_cat[cat_index(Category::kTraining)];
  const auto& validation = sets.by_cat[cat_index(Category::kValidation)];
  const auto& testing = sets.by_cat[cat_index(Category::kTesting)];
  uint64_t distortion_counter = 0;
  bool features_current = true;  // `features` holds the fine-tuned weights
  auto update_features = [&] {
    if (tuner && !features_current) tuner->copy_module_variables(features);
    features_current = true;
  };
  // Bottlenecks of validation or test images: cached, or with fine-tuning
  // computed now by the inference graph with the current weights.
  auto bottleneck_batch = [&](const std::vector<const Item*>& items) {
    if (!tuner) return make_batch(items, f.dim);
    update_features();
    std::vector<Item> fresh = fresh_bottlenecks(items, lists, features, f, {}, 0, 0, c.bottleneck_batch_size);
    std::vector<const Item*> ptrs;
    for (const Item& it : fresh) ptrs.push_back(&it);
    return make_batch(ptrs, f.dim);
  };
  for (int64_t step = 0; step < c.how_many_training_steps; ++step) {
    std::vector<const Item*> picked = pick(training, c.train_batch_size, rng);
    // As retrain.py's merged summary, run with the training step: the
    // values before the update.
    tensorboard::Summary train_summary = head_summary(head, vars);
    Tensor logits, probabilities, labels;
    float loss = 0;
    // The batch's probabilities after the update (retrain.py's train accuracy).
    std::function<Tensor()> probabilities_after;
    if (tuner) {
      Tensor images = stack_images(f, load_images(picked, lists, f, distortions, c.seed, distortion_counter));
      labels = labels_of(picked);
      loss = tuner->step(images, labels, &logits, &probabilities);
      features_current = false;
      probabilities_after = [&tuner, images] { return tuner->probabilities(images); };
    } else {
      Batch batch;
      if (distortions.any()) {
        // Fresh bottlenecks of distorted images; the cache is bypassed.
        std::vector<Item> distorted = fresh_bottlenecks(picked, lists, features, f, distortions, c.seed,
                                                        distortion_counter, static_cast<int64_t>(picked.size()));
        std::vector<const Item*> ptrs;
        for (const Item& it : distorted) ptrs.push_back(&it);
        batch = make_batch(ptrs, f.dim);
      } else {
        batch = make_batch(picked, f.dim);
      }
      // With --quantize, the first batch sets the head's fresh ranges.
      if (step == 0) slim::initialize_activation_ranges(session, head.graph, vars, {{head.input, batch.x}});
      std::vector<Tensor> before = session.run({{head.input, batch.x}}, {head.head.logits, head.head.probabilities});
      logits = to_host(before[0]);
      probabilities = to_host(before[1]);
      labels = batch.y;
      loss = train_step(session, *sgd, vars, head.grads, head.head.loss,
                        {{head.input, batch.x}, {head.head.labels, batch.y}});
      probabilities_after = [&session, &head, x = batch.x] {
        return to_host(session.run_one({{head.input, x}}, head.head.probabilities));
      };
    }
    if (distortions.any()) distortion_counter += picked.size();
    add_output_summaries(&train_summary, logits, probabilities, labels);
    train::add_scalar(&train_summary, "cross_entropy", loss);
    train_log.write(train_summary, step);
    bool last = step + 1 == c.how_many_training_steps;
    if ((step % c.eval_step_interval) == 0 || last) {
      double train_acc = accuracy(probabilities_after(), labels);
      std::printf("Step %lld: Train accuracy = %.1f%%\n", static_cast<long long>(step), train_acc * 100);
      std::printf("Step %lld: Cross entropy = %f\n", static_cast<long long>(step), loss);
      std::vector<const Item*> vpick = pick(validation, c.validation_batch_size, rng);
      if (!vpick.empty()) {
        Batch vb = bottleneck_batch(vpick);
        std::vector<Tensor> v = session.run({{head.input, vb.x}, {head.head.labels, vb.y}},
                                            {head.head.logits, head.head.probabilities, head.head.loss});
        for (Tensor& t : v) t = to_host(t);
        tensorboard::Summary validation_summary = head_summary(head, vars);
        add_output_summaries(&validation_summary, v[0], v[1], vb.y);
        train::add_scalar(&validation_summary, "cross_entropy", v[2].item<float>());
        validation_log.write(validation_summary, step);
        std::printf("Step %lld: Validation accuracy = %.1f%% (N=%zu)\n", static_cast<long long>(step),
                    accuracy(v[1], vb.y) * 100, vpick.size());
      }
      std::fflush(stdout);
    }
    if (c.intermediate_store_frequency > 0 && step > 0 && step % c.intermediate_store_frequency == 0 && !last) {
      std::string dir =
          (fs::path(c.intermediate_output_graphs_dir) / ("intermediate_" + std::to_string(step))).string();
      fs::create_directories(c.intermediate_output_graphs_dir, ec);
      update_features();
      if (!fs::exists(dir, ec)) export_retrained(dir, features, f, vars, lists, c);
    }
  }
  std::vector<const Item*> tpick = pick(testing, c.test_batch_size, rng);
  if (tpick.empty()) {
    HUB_LOG(Warning) << "the testing set is empty (raise --testing_percentage or add images); no test accuracy";
  } else {
    Batch tb = bottleneck_batch(tpick);
    std::vector<int64_t> predictions;
    result.final_test_accuracy =
        accuracy(to_host(session.run_one({{head.input, tb.x}}, head.head.probabilities)), tb.y, &predictions);
    result.test_examples = static_cast<int64_t>(tpick.size());
    std::printf("Final test accuracy = %.1f%% (N=%zu)\n", result.final_test_accuracy * 100, tpick.size());
    if (c.print_misclassified_test_images) {
      std::printf("=== MISCLASSIFIED TEST IMAGES ===\n");
      for (size_t i = 0; i < tpick.size(); ++i)
        if (predictions[i] != tpick[i]->cls)
          std::printf("%70s  %s\n", lists.path(lists.classes[tpick[i]->cls], tpick[i]->file).c_str(),
                      lists.classes[predictions[i]].label.c_str());
    }
  }
  update_features();
  export_retrained(c.output_graph, features, f, vars, lists, c);
  if (!c.saved_model_dir.empty()) export_retrained(c.saved_model_dir, features, f, vars, lists, c);
  write_labels(c.output_labels, lists);
  return result;
}

}  // namespace

RetrainResult retrain(const RetrainConfig& c, const resolver::Resolver& resolver) {
  train::Job& job = train::job();
  return train::run_on_job(job, [&] { return retrain_on(job, c, resolver); });
}

}  // namespace hub::retrain
