#include "retrain/image_lists.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/core/logging.h"

namespace fs = std::filesystem;

namespace hub::retrain {

const char* category_name(Category c) {
  switch (c) {
    case Category::kTraining:
      return "training";
    case Category::kValidation:
      return "validation";
    case Category::kTesting:
      return "testing";
  }
  return "?";
}

const std::vector<std::string>& ClassImages::of(Category c) const {
  return c == Category::kTraining ? training : c == Category::kValidation ? validation : testing;
}

double percentage_hash(const std::string& name) {
  std::string hashed = name;
  auto pos = hashed.find("_nohash_");
  if (pos != std::string::npos) hashed.erase(pos);
  std::string hex = sha1_hex(hashed);
  // int(hex, 16) mod 2^27 is the low 27 bits: the last 7 hex digits, masked.
  uint64_t low = std::stoull(hex.substr(hex.size() - 7), nullptr, 16) & ((uint64_t{1} << 27) - 1);
  return static_cast<double>(low) * (100.0 / static_cast<double>(kMaxImagesPerClass));
}

Category assign_category(const std::string& name, double validation_pct, double testing_pct) {
  double p = percentage_hash(name);
  if (p < validation_pct) return Category::kValidation;
  if (p < testing_pct + validation_pct) return Category::kTesting;
  return Category::kTraining;
}

std::string label_name(const std::string& dir_name) {
  std::string out;
  bool in_run = false;
  for (unsigned char ch : dir_name) {
    char c = static_cast<char>(std::tolower(ch));
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      out += c;
      in_run = false;
    } else if (!in_run) {
      out += ' ';
      in_run = true;
    }
  }
  return out;
}

namespace {
bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}
}  // namespace

ImageLists create_image_lists(const fs::path& image_dir, double testing_pct, double validation_pct) {
  if (testing_pct < 0 || validation_pct < 0 || testing_pct + validation_pct >= 100)
    throw_error(Code::kInvalidArgument, "--testing_percentage (" + std::to_string(testing_pct) +
                                            ") and --validation_percentage (" + std::to_string(validation_pct) +
                                            ") must be >= 0 and sum to less than 100");
  std::error_code ec;
  if (!fs::exists(image_dir, ec)) throw_error(Code::kNotFound, "--image_dir " + image_dir.string() + " does not exist");
  if (!fs::is_directory(image_dir, ec))
    throw_error(Code::kInvalidArgument, "--image_dir " + image_dir.string() + " is not a directory");
  ImageLists lists;
  lists.image_dir = image_dir;
  std::vector<std::string> dirs;
  for (const auto& entry : fs::directory_iterator(image_dir, ec))
    if (entry.is_directory()) dirs.push_back(entry.path().filename().string());
  if (ec) throw_error(Code::kIOError, "cannot list --image_dir " + image_dir.string() + ": " + ec.message());
  std::sort(dirs.begin(), dirs.end());
  std::set<std::string> labels;
  auto warn = [&](const std::string& w) {
    HUB_LOG(Warning) << w;
    lists.warnings.push_back(w);
  };
  for (const std::string& dir : dirs) {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(image_dir / dir, ec))
      if (entry.is_regular_file() && is_image_name(entry.path())) files.push_back(entry.path().filename().string());
    std::sort(files.begin(), files.end());
    if (files.empty()) {
      warn("no images found in " + (image_dir / dir).string());
      continue;
    }
    if (files.size() < 20)
      warn("folder " + (image_dir / dir).string() + " has fewer than 20 images (" + std::to_string(files.size()) +
           "), which may cause issues");
    else if (static_cast<int64_t>(files.size()) > kMaxImagesPerClass)
      warn("folder " + (image_dir / dir).string() + " has more than " + std::to_string(kMaxImagesPerClass) +
           " images; some images will never be selected");
    ClassImages c;
    c.dir = dir;
    c.label = label_name(dir);
    if (!labels.insert(c.label).second)
      throw_error(Code::kInvalidArgument, "folders in --image_dir " + image_dir.string() + " give the same label '" +
                                              c.label + "' (" + dir + ")");
    for (const std::string& f : files) {
      switch (assign_category(dir + "/" + f, validation_pct, testing_pct)) {
        case Category::kTraining:
          c.training.push_back(f);
          break;
        case Category::kValidation:
          c.validation.push_back(f);
          break;
        case Category::kTesting:
          c.testing.push_back(f);
          break;
      }
    }
    lists.classes.push_back(std::move(c));
  }
  if (lists.classes.empty())
    throw_error(Code::kInvalidArgument, "--image_dir " + image_dir.string() +
                                            " has no class folders with images (expected one sub-folder of "
                                            "*.jpg/*.jpeg/*.png per class)");
  if (lists.classes.size() == 1)
    throw_error(Code::kInvalidArgument, "--image_dir " + image_dir.string() + " has only one class ('" +
                                            lists.classes[0].label +
                                            "'); at least two class folders are needed to train a classifier");
  return lists;
}

}  // namespace hub::retrain
