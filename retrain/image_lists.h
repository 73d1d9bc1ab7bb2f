// Image lists for retraining: one sub-folder of image_dir per class, each
// image assigned to training, validation or testing by retrain.py's stable
// hash rule, so a file stays in its set when others are added.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace hub::retrain {

// retrain.py's MAX_NUM_IMAGES_PER_CLASS (2^27 - 1).
inline constexpr int64_t kMaxImagesPerClass = (int64_t{1} << 27) - 1;

enum class Category { kTraining, kValidation, kTesting };
const char* category_name(Category c);

// The split rule: h = SHA-1 of `name` with any "_nohash_..." suffix removed;
// p = (h mod 2^27) * 100 / (2^27 - 1); validation if p < validation_pct,
// testing if p < validation_pct + testing_pct, else training. `name` is the
// image path relative to image_dir ("class_dir/file.jpg").
Category assign_category(const std::string& name, double validation_pct, double testing_pct);
// The p above, for tests and diagnostics.
double percentage_hash(const std::string& name);

// retrain.py's label rule: lower-case, runs of non [a-z0-9] become one space.
std::string label_name(const std::string& dir_name);

struct ClassImages {
  std::string label;                                       // normalized
  std::string dir;                                         // folder name under image_dir
  std::vector<std::string> training, validation, testing;  // file names within dir
  const std::vector<std::string>& of(Category c) const;
};

struct ImageLists {
  std::filesystem::path image_dir;
  std::vector<ClassImages> classes;  // sorted by folder name
  std::vector<std::string> warnings;
  std::filesystem::path path(const ClassImages& c, const std::string& file) const { return image_dir / c.dir / file; }
};

// Scans image_dir's immediate sub-folders (sorted) for *.jpg, *.jpeg and
// *.png (any case). Empty folders and folders with < 20 or > 2^27-1 images
// produce warnings (also logged). Throws NotFound/InvalidArgument naming
// --image_dir when it is missing, not a directory, or has fewer than two
// classes with images; two folders that normalize to one label are an error.
ImageLists create_image_lists(const std::filesystem::path& image_dir, double testing_pct, double validation_pct);

}  // namespace hub::retrain
